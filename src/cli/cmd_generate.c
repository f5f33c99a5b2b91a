/* infer generate --model DIR (--prompt TEXT [--chat] | --prompt-ids 1,2,3 | --input FILE.jsonl)
 *                [--max-tokens N] [--stop TEXT] [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed S] [--json]
 * One prompt: greedy generation on its own (the speed on stderr), or through
 * the engine when a sampling flag or --stop is given. --input: a JSONL file of
 * requests through the engine (gen_batch.c), the flags as their defaults.
 * Prints the generated text (or ids when the model has no tokenizer, or the
 * CLI contract's JSON object with --json) on stdout. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/gen_batch.h"
#include "core/fs.h"
#include "engine/greedy.h"
#include "io/gguf.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

/* text: the decoded output, or NULL when the model has no tokenizer */
static void print_result(const struct greedy_result *g, int n_prompt, const char *text, size_t text_len,
                         int as_json)
{
    if (!as_json) {
        if (text) {
            fwrite(text, 1, text_len, stdout);
        } else {
            for (int i = 0; i < g->n_ids; i++)
                printf("%s%d", i ? " " : "", g->ids[i]);
        }
        printf("\n");
        return;
    }
    json_t *ids = json_array();
    for (int i = 0; i < g->n_ids; i++)
        json_array_append_new(ids, json_integer(g->ids[i]));
    json_t *o = json_pack("{s:i, s:o, s:o, s:s, s:i, s:i}", "index", 0, "ids", ids, "text",
                          text ? json_stringn(text, text_len) : json_null(), "finish_reason",
                          finish_reason_name(g->finish), "prompt_tokens", n_prompt, "completion_tokens",
                          g->n_ids);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("%s\n", s);
    free(s);
    json_decref(o);
}

/* The model's tokenizer (a GGUF file's metadata, or the directory's
 * tokenizer.json), if it has one; required for text prompts. */
static int load_tokenizer(const char *dir, int required, struct tokenizer **tok, struct err *e)
{
    char path[4096];
    if (model_path_is_gguf(dir) && !required) { /* ids in and out: a file without a vocabulary is fine */
        struct gguf_file *f = gguf_open(dir, e);
        int has_vocab = f && gguf_find_kv(f, "tokenizer.ggml.model");
        gguf_close(f);
        if (!f)
            return -1;
        if (!has_vocab)
            return 0;
    }
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (!model_path_is_gguf(dir) && !fs_exists(path))
        return required ? err_set(e, "--prompt: %s not found; pass --prompt-ids or add the tokenizer "
                                     "(infer mkmodel --tokenizer DIR)", path)
                        : 0;
    *tok = tokenizer_load(dir, e);
    return *tok ? 0 : -1;
}

/* --chat: the prompt as one user message through the model's chat template
 * (which writes the special tokens itself, so encoding adds none). */
static char *render_chat(const char *model_dir, const char *prompt, struct err *e)
{
    struct chat_template *ct = chat_template_load(model_dir, e);
    if (!ct)
        return NULL;
    json_t *messages = json_pack("[{s:s, s:s}]", "role", "user", "content", prompt);
    char *out = NULL;
    if (!messages)
        err_set(e, "--prompt is not valid UTF-8");
    else if (chat_template_render(ct, messages, NULL, 1, NULL, &out, e))
        out = NULL;
    json_decref(messages);
    chat_template_free(ct);
    return out;
}

static int encode_prompt(const struct tokenizer *tok, const char *text, int add_special, int32_t **ids, int *n,
                         struct err *e)
{
    struct token_ids t = {0};
    if (tokenizer_encode(tok, text, strlen(text), add_special, &t, e))
        return err_prefix(e, "--prompt");
    if (t.n == 0) {
        token_ids_free(&t);
        return err_set(e, "--prompt: the prompt encodes to no tokens");
    }
    *ids = t.ids;
    *n = t.n;
    return 0;
}

/* The per-request defaults the sampling flags set. */
struct sampling_flags {
    double temperature, top_p, min_p;
    int top_k;
    uint64_t seed;
};

static int run_engine(struct model *m, const struct tokenizer *tok, const char *model_dir, const char *input,
                      int32_t *ids, int n_ids, struct engine_flags *f, const struct sampling_flags *sf,
                      const struct cli_opt *seed_opt, int max_tokens, int ignore_eos, const char *stop, int as_json,
                      struct err *e)
{
    struct engine_opts o;
    if (engine_flags_apply(f, m, &o, e))
        return -1;
    struct gen_defaults d = {max_tokens, sampling_params_default(), seed_opt->seen, ignore_eos};
    d.sampling.temperature = (float)sf->temperature;
    d.sampling.top_p = (float)sf->top_p;
    d.sampling.min_p = (float)sf->min_p;
    d.sampling.top_k = sf->top_k;
    d.sampling.seed = sf->seed;
    if (input)
        return gen_batch_run(m, tok, model_dir, input, &d, &o, as_json, e);
    char *stops[1] = {(char *)stop};
    struct gen_request r = {.rq = {.prompt = ids, .n_prompt = n_ids, .max_tokens = max_tokens, .n = 1,
                                   .sampling = d.sampling, .ignore_eos = ignore_eos, .stop = stops,
                                   .n_stop = stop ? 1 : 0}};
    return sampling_params_check(&r.rq.sampling, m->cfg.vocab_size, e) ? err_prefix(e, "infer generate")
                                                                      : gen_batch_run_requests(m, tok, &r, 1, &o,
                                                                                               as_json, e);
}

int cmd_generate(int argc, char **argv)
{
    const char *model_dir = NULL, *device = "cpu", *prompt_ids = NULL, *prompt = NULL, *input = NULL, *stop = NULL;
    int max_tokens = 16, as_json = 0, threads = 0, ignore_eos = 0, chat = 0, batch_invariant = 0;
    char *chat_text = NULL;
    struct engine_flags f = engine_flags_default();
    struct sampling_flags sf = {0.0, 1.0, 0.0, 0, 0};
    struct cli_opt opts[17 + ENGINE_FLAGS_N_OPTS] = {
        {"model", CLI_OPT_STRING, &model_dir, 1, 0, 0, "checkpoint directory or .gguf file", 0},
        {"device", CLI_OPT_STRING, &device, 0, 0, 0,
         "cpu, cuda, or auto (cuda when a GPU is there, else cpu); default cpu", 0},
        {"prompt-ids", CLI_OPT_STRING, &prompt_ids, 0, 0, 0, "prompt as comma-separated token ids", 0},
        {"prompt", CLI_OPT_STRING, &prompt, 0, 0, 0, "prompt text (through the model's tokenizer)", 0},
        {"chat", CLI_OPT_FLAG, &chat, 0, 0, 0, "send --prompt as a user message through the chat template", 0},
        {"max-tokens", CLI_OPT_INT, &max_tokens, 0, 1, 1 << 20, "tokens to generate (default 16)", 0},
        {"ignore-eos", CLI_OPT_FLAG, &ignore_eos, 0, 0, 0, "keep going past end-of-sequence tokens", 0},
        {"stop", CLI_OPT_STRING, &stop, 0, 0, 0, "end the output before this text (needs a tokenizer)", 0},
        {"json", CLI_OPT_FLAG, &as_json, 0, 0, 0, "print the result as one JSON object", 0},
        {"batch-invariant", CLI_OPT_FLAG, &batch_invariant, 0, 0, 0,
         "results independent of the batch (CUDA: slower prefill)", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 0, 1024, "CPU threads (default: all cores)", 0},
        {"input", CLI_OPT_STRING, &input, 0, 0, 0, "JSONL file of requests, all run through the engine at once", 0},
        {"temperature", CLI_OPT_DOUBLE, &sf.temperature, 0, 0, 0, "sampling temperature (default 0: greedy)", 0},
        {"top-p", CLI_OPT_DOUBLE, &sf.top_p, 0, 0, 0, "nucleus sampling mass (default 1: off)", 0},
        {"top-k", CLI_OPT_INT, &sf.top_k, 0, 0, 1 << 30, "sample from the k most likely tokens (default 0: off)", 0},
        {"min-p", CLI_OPT_DOUBLE, &sf.min_p, 0, 0, 0, "drop tokens below min-p times the best (default 0: off)", 0},
        {"seed", CLI_OPT_U64, &sf.seed, 0, 0, 0, "sampling seed (default: one per request)", 0},
    };
    engine_flags_opts(&f, opts + 17);
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    struct err e = {{0}};
    struct tokenizer *tok = NULL;
    struct backend *be = NULL;
    struct model *m = NULL;
    struct seq_runner r = {0};
    struct greedy_result g = {0};
    int32_t *ids = NULL;
    int n_ids = 0;
    enum backend_kind kind;
    int rc = cli_parse(argc, argv, "generate", opts, n_opts, &e);
    if (rc)
        goto done;
    rc = -1;
    if (!!prompt + !!prompt_ids + !!input != 1) {
        err_set(&e, "infer generate: give exactly one of --prompt, --prompt-ids and --input");
        goto done;
    }
    int sampling_flags = 0; /* temperature .. seed: the single form then runs through the engine */
    for (int i = 0; i < n_opts; i++)
        sampling_flags |= opts[i].seen && (opts[i].dst == &sf.temperature || opts[i].dst == &sf.top_p ||
                                           opts[i].dst == &sf.top_k || opts[i].dst == &sf.min_p ||
                                           opts[i].dst == &sf.seed);
    if (stop && (input || !*stop)) {
        err_set(&e, input ? "--stop: give \"stop\" in each line of --input instead" : "--stop: the text is empty");
        goto done;
    }
    if (chat && !prompt) {
        err_set(&e, "--chat needs --prompt (the text of the user message)");
        goto done;
    }
    if ((prompt_ids && cli_parse_int_list(prompt_ids, "prompt-ids", &ids, &n_ids, &e)) ||
        load_tokenizer(model_dir, prompt != NULL, &tok, &e) ||
        (chat && !(chat_text = render_chat(model_dir, prompt, &e))) ||
        (prompt && encode_prompt(tok, chat ? chat_text : prompt, !chat, &ids, &n_ids, &e)) ||
        backend_kind_parse(device, &kind, &e) ||
        !(be = backend_create(kind, threads, &e)) || !(m = model_load(model_dir, be, &e)))
        goto done;
    be->batch_invariant = batch_invariant;
    if (stop && !tok) {
        err_set(&e, "--stop: %s has no tokenizer to match the text with", model_dir);
        goto done;
    }
    if (input || sampling_flags || stop) {
        for (int i = 0; i < n_ids && !input; i++)
            if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size) {
                err_set(&e, "--prompt-ids: token %d is outside the vocabulary (0..%d)", ids[i], m->cfg.vocab_size - 1);
                goto done;
            }
        const struct cli_opt *seed_opt = NULL;
        for (int i = 0; i < n_opts; i++)
            if (opts[i].dst == &sf.seed)
                seed_opt = &opts[i];
        if (run_engine(m, tok, model_dir, input, ids, n_ids, &f, &sf, seed_opt, max_tokens, ignore_eos, stop,
                       as_json, &e))
            goto done;
        rc = 0;
        goto done;
    }
    int context = n_ids + max_tokens;
    if (context > m->cfg.max_positions) {
        err_set(&e, "prompt (%d) + --max-tokens (%d) exceeds the model's %d positions", n_ids,
                max_tokens, m->cfg.max_positions);
        goto done;
    }
    struct seq_runner_opts ro = {context, n_ids < 512 ? n_ids : 512, 1, 16, f.mem_util};
    if (seq_runner_init_opts(&r, m, &ro, &e) ||
        greedy_generate(&r, ids, n_ids, max_tokens, ignore_eos, &g, &e))
        goto done;
    char *text = NULL;
    size_t text_len = 0;
    if (tok && tokenizer_decode(tok, g.ids, g.n_ids, 1, &text, &text_len, &e))
        goto done;
    print_result(&g, n_ids, text, text_len, as_json);
    free(text);
    double decode_tps = g.n_ids > 1 ? (g.n_ids - 1) / g.decode_seconds : 0;
    fprintf(stderr, "prefill %d tokens in %.3f s (%.1f tok/s); decode %d tokens in %.3f s (%.1f tok/s)\n",
            n_ids, g.prefill_seconds, n_ids / g.prefill_seconds, g.n_ids - 1, g.decode_seconds,
            decode_tps);
    rc = 0;
done:
    if (rc < 0)
        fprintf(stderr, "infer generate: %s\n", e.msg);
    free(g.ids);
    free(ids);
    free(chat_text);
    seq_runner_free(&r);
    model_free(m);
    backend_free(be);
    tokenizer_free(tok);
    engine_flags_free(&f);
    return rc < 0 ? 1 : 0;
}
