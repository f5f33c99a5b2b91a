/* One entry point per subcommand (src/cli/cmd_*.c). Each takes the
 * arguments after the subcommand's name and returns the process exit code. */
#ifndef INFER_CLI_COMMANDS_H
#define INFER_CLI_COMMANDS_H

int cmd_mkmodel(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_gguf_info(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_bench_serve(int argc, char **argv);
int cmd_grammar(int argc, char **argv);

#endif
