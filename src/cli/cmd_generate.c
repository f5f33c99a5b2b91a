/* infer generate --model M (--prompt TEXT [--chat] | --prompt-ids 1,2,3 | --input FILE.jsonl)
 *                [--max-tokens N] [--stop TEXT] [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed
 * S]
 *                [--json] [model and engine flags]
 * Every form runs through the engine (generate_run.c): one prompt as one
 * request, or a JSONL file of requests with the flags as their defaults.
 * Prints the generated text (or ids when the model has no tokenizer, or the
 * CLI contract's JSON object with --json) on stdout, and the engine's
 * summary (speed, prefix cache, graph replays) on stderr. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/generate_run.h"
#include "cli/model_flags.h"
#include "cli/sampling_flags.h"
#include "core/fs.h"
#include "io/gguf.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

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
        return required ? err_set(e,
                                  "--prompt: %s not found; pass --prompt-ids or add the tokenizer "
                                  "(infer mkmodel --tokenizer DIR)",
                                  path)
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

static int encode_prompt(const struct tokenizer *tok, const char *text, int add_special, int32_t **ids,
                         int *n, struct err *e)
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

/* The single prompt as a request; ids are handed over. */
static void single_request(struct request_fields *r, int32_t *ids, int n_ids,
                           const struct generate_defaults *d, char **stop)
{
    *r = (struct request_fields){.prompt = ids, .stop = stop};
    r->submit = (struct engine_request){.prompt = ids,
                                        .n_prompt = n_ids,
                                        .max_tokens = d->max_tokens,
                                        .n = 1,
                                        .sampling = d->sampling,
                                        .ignore_eos = d->ignore_eos,
                                        .stop = stop,
                                        .n_stop = stop ? 1 : 0};
}

int cmd_generate(int argc, char **argv)
{
    const char *prompt_ids = NULL, *prompt = NULL, *input = NULL, *stop = NULL;
    int max_tokens = 16, as_json = 0, ignore_eos = 0, chat = 0;
    char *chat_text = NULL;
    int node_status = 0;
    struct launch_opts mf = launch_opts_default();
    struct engine_flags f = engine_flags_default();
    struct sampling_flags sf = sampling_flags_default();
    enum { N_OWN = 8 + SAMPLING_FLAGS_N_OPTS };
    struct cli_opt opts[N_OWN + MODEL_FLAGS_N_OPTS + ENGINE_FLAGS_N_OPTS] = {
        {"prompt-ids", CLI_OPT_STRING, &prompt_ids, 0, 0, 0, "prompt as comma-separated token ids", 0},
        {"prompt", CLI_OPT_STRING, &prompt, 0, 0, 0, "prompt text (through the model's tokenizer)", 0},
        {"chat", CLI_OPT_FLAG, &chat, 0, 0, 0, "send --prompt as a user message through the chat template",
         0},
        {"input", CLI_OPT_STRING, &input, 0, 0, 0,
         "JSONL file of requests, all run through the engine at once", 0},
        {"max-tokens", CLI_OPT_INT, &max_tokens, 0, 1, 1 << 20, "tokens to generate", 0},
        {"ignore-eos", CLI_OPT_FLAG, &ignore_eos, 0, 0, 0, "keep going past end-of-sequence tokens", 0},
        {"stop", CLI_OPT_STRING, &stop, 0, 0, 0, "end the output before this text (needs a tokenizer)", 0},
        {"json", CLI_OPT_FLAG, &as_json, 0, 0, 0, "print the result as one JSON object", 0},
    };
    sampling_flags_opts(&sf, opts + N_OWN - SAMPLING_FLAGS_N_OPTS, "sampling seed (default: one per request)");
    model_flags_opts(&mf, opts + N_OWN);
    engine_flags_opts(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS);
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    struct err e = {{0}};
    struct tokenizer *tok = NULL;
    struct loaded_model lm = {0};
    int32_t *ids = NULL;
    int n_ids = 0;
    int rc = cli_parse(argc, argv, "generate", opts, n_opts, &e);
    if (rc)
        goto done;
    rc = -1;
    const struct generate_defaults d = {max_tokens, sampling_flags_params(&sf), cli_given(opts, n_opts, "seed"),
                                        ignore_eos};
    /* every value on its own first: nothing loads for a bad flag */
    if (launch_check(&mf, &e) || engine_flags_check(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS, &e) ||
        sampling_flags_check(&sf, &e))
        goto done;
    const int other_node = launch_other_node(&mf, &node_status, &e); /* its ranks of a split model only */
    if (other_node) {
        rc = other_node < 0 ? -1 : 0;
        goto done;
    }
    if (!!prompt + !!prompt_ids + !!input != 1) {
        err_set(&e, "infer generate: give exactly one of --prompt, --prompt-ids and --input");
        goto done;
    }
    if (stop && (input || !*stop)) {
        err_set(&e, input ? "--stop: give \"stop\" in each line of --input instead"
                          : "--stop: the text is empty");
        goto done;
    }
    if (chat && !prompt) {
        err_set(&e, "--chat needs --prompt (the text of the user message)");
        goto done;
    }
    if ((prompt_ids && cli_parse_int_list(prompt_ids, "prompt-ids", &ids, &n_ids, &e)) ||
        load_tokenizer(mf.model, prompt != NULL, &tok, &e) ||
        (chat && !(chat_text = render_chat(mf.model, prompt, &e))) ||
        (prompt && encode_prompt(tok, chat ? chat_text : prompt, !chat, &ids, &n_ids, &e)) ||
        launch_model(&mf, &lm, &e))
        goto done;
    struct model *m = lm.m;
    if (stop && !tok) {
        err_set(&e, "--stop: %s has no tokenizer to match the text with", mf.model);
        goto done;
    }
    struct engine_opts o;
    if (engine_flags_apply(&f, m, &o, &e))
        goto done;
    o.relay = loaded_model_relay(&lm);
    if (input) {
        rc = generate_run_file(m, tok, mf.model, input, &d, &o, as_json, &e);
        goto done;
    }
    for (int i = 0; i < n_ids; i++)
        if (ids[i] >= m->cfg.vocab_size) {
            err_set(&e, "--prompt-ids: token %d is outside the vocabulary (0..%d)", ids[i],
                    m->cfg.vocab_size - 1);
            goto done;
        }
    char *stops[1] = {(char *)stop};
    struct request_fields r;
    single_request(&r, ids, n_ids, &d, stop ? stops : NULL);
    if (!d.have_seed) /* a seed of its own, as a line of --input without "seed" gets */
        r.submit.sampling.seed = (uint64_t)time(NULL) * 0x2545F4914F6CDD1Dull;
    rc = generate_run_requests(m, tok, &r, 1, &o, as_json, 1, &e);
done:
    if (rc < 0)
        fprintf(stderr, "infer generate: %s\n", e.msg);
    free(ids);
    free(chat_text);
    loaded_model_free(&lm);
    tokenizer_free(tok);
    engine_flags_free(&f);
    return rc < 0 ? 1 : node_status;
}
