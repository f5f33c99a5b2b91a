/* infer <subcommand> [options] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/log.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} commands[] = {
    {"bench", cmd_bench, "time prefill and decode of one sequence"},
    {"generate", cmd_generate, "generate tokens from a prompt"},
    {"serve", cmd_serve, "serve the OpenAI-compatible HTTP API"},
    {"bench-serve", cmd_bench_serve, "load an OpenAI-compatible server with a named workload and time it"},
    {"logits", cmd_logits, "write the logits of every position of a token sequence"},
    {"info", cmd_info, "describe a checkpoint: architecture, dimensions, parameters"},
    {"gguf-info", cmd_gguf_info, "list a GGUF file's metadata and tensors"},
    {"mkmodel", cmd_mkmodel, "write a random-weight checkpoint from a config.json"},
    {"tokenize", cmd_tokenize, "text to token ids"},
    {"detokenize", cmd_detokenize, "token ids to text"},
    {"template", cmd_template, "render a chat template"},
    {"grammar", cmd_grammar, "compile a structured-output constraint; check texts against it, time its masks"},
    {"worker", cmd_worker, "one rank of a split model (started by --tensor-parallel-size, not by hand)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: infer <command> [options]   (infer <command> --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    const char *lvl = getenv("INFER_LOG");
    if (lvl)
        log_level_current = !strcmp(lvl, "debug") ? LOG_LEVEL_DEBUG
                            : !strcmp(lvl, "info") ? LOG_LEVEL_INFO
                                                   : log_level_current;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "infer: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
