/* infer logits --model M (--ids 1,2,3 | --ids-file F) --out FILE [--prefill N] [model and engine flags]
 * Runs a token sequence through the engine and writes the logits of every
 * position (f32 [T, vocab], tensor "logits", plus "ids") to a safetensors
 * file: the first N tokens as the prompt (prefilled in chunks of
 * --max-num-batched-tokens), the rest fed one per step as decode steps (a
 * forced continuation). This is what the parity checks against
 * transformers compare. Nothing is written when anything fails. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/model_flags.h"
#include "core/fs.h"
#include "engine/score.h"
#include "io/safetensors.h"

static int read_ids_file(const char *path, int32_t **ids, int *n, struct err *e)
{
    char *text;
    size_t len;
    if (fs_read_file(path, 64u << 20, &text, &len, e))
        return err_prefix(e, "--ids-file");
    json_error_t jerr;
    json_t *arr = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        json_decref(arr);
        return err_set(e, "--ids-file %s: expected a non-empty JSON array of token ids", path);
    }
    *n = (int)json_array_size(arr);
    *ids = xmalloc((size_t)*n * sizeof **ids);
    for (int i = 0; i < *n; i++) {
        json_t *v = json_array_get(arr, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
            json_decref(arr);
            free(*ids);
            return err_set(e, "--ids-file %s: element %d is not a token id", path, i);
        }
        (*ids)[i] = (int32_t)json_integer_value(v);
    }
    json_decref(arr);
    return 0;
}

static int write_logits(const char *out, const int32_t *ids, int n, const float *rows, int vocab,
                        struct err *e)
{
    int64_t shape[2] = {n, vocab}, ids_shape[1] = {n};
    struct st_writer *w = st_writer_create(out, e);
    if (!w || st_writer_declare(w, "ids", DTYPE_I32, 1, ids_shape, e) ||
        st_writer_declare(w, "logits", DTYPE_F32, 2, shape, e) ||
        st_writer_write(w, ids, (size_t)n * sizeof(int32_t), e) ||
        st_writer_write(w, rows, (size_t)n * vocab * sizeof(float), e)) {
        if (w)
            st_writer_abort(w);
        return -1;
    }
    return st_writer_finish(w, e);
}

int cmd_logits(int argc, char **argv)
{
    const char *ids_arg = NULL, *ids_file = NULL, *out = NULL;
    int prefill = 0;
    struct launch_opts mf = launch_opts_default();
    struct engine_flags f = engine_flags_default();
    enum { N_OWN = 4 };
    struct cli_opt opts[N_OWN + MODEL_FLAGS_N_OPTS + ENGINE_FLAGS_N_OPTS] = {
        {"ids", CLI_OPT_STRING, &ids_arg, 0, 0, 0, "token ids, comma-separated", 0},
        {"ids-file", CLI_OPT_STRING, &ids_file, 0, 0, 0, "a JSON array of token ids", 0},
        {"out", CLI_OPT_STRING, &out, 1, 0, 0, "safetensors file to write", 0},
        {"prefill", CLI_OPT_INT, &prefill, 0, 1, 1 << 24,
         "tokens run as the prompt (default: all); the rest are fed one per step", 0},
    };
    model_flags_opts(&mf, opts + N_OWN);
    engine_flags_opts(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS);
    struct err e = {{0}};
    struct loaded_model lm = {0};
    int node_status = 0;
    int32_t *ids = NULL;
    float *rows = NULL;
    int n = 0;
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(argc, argv, "logits", opts, n_opts, &e);
    if (rc)
        goto done;
    rc = -1;
    if (launch_check(&mf, &e) || engine_flags_check(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS, &e))
        goto done;
    const int other_node = launch_other_node(&mf, &node_status, &e); /* its ranks of a split model only */
    if (other_node) {
        rc = other_node < 0 ? -1 : 0;
        goto done;
    }
    if (!ids_arg == !ids_file) {
        err_set(&e, "infer logits: give exactly one of --ids and --ids-file");
        goto done;
    }
    if (ids_arg ? cli_parse_int_list(ids_arg, "ids", &ids, &n, &e) : read_ids_file(ids_file, &ids, &n, &e))
        goto done;
    if (prefill > n) {
        err_set(&e, "--prefill %d exceeds the %d tokens given", prefill, n);
        goto done;
    }
    if (prefill == 0)
        prefill = n;
    if (launch_model(&mf, &lm, &e))
        goto done;
    struct model *m = lm.m;
    for (int i = 0; i < n; i++)
        if (ids[i] >= m->cfg.vocab_size) {
            err_set(&e, "%s: token id %d at index %d is outside the vocabulary (0..%d)",
                    ids_arg ? "--ids" : "--ids-file", ids[i], i, m->cfg.vocab_size - 1);
            goto done;
        }
    /* every token is fed, then one more position is drawn */
    if (n + 1 > m->cfg.max_positions) {
        err_set(
            &e,
            "%s: %d tokens; the model's %d positions hold at most %d here (the last token's draw takes one)",
            ids_arg ? "--ids" : "--ids-file", n, m->cfg.max_positions, m->cfg.max_positions - 1);
        goto done;
    }
    struct engine_opts o;
    if (engine_flags_apply(&f, m, &o, &e))
        goto done;
    o.relay = loaded_model_relay(&lm);
    if (!cli_given(opts, n_opts, "max-num-seqs")) /* one sequence runs */
        o.max_seqs = 1;
    if (o.max_context == 0)
        o.max_context = n + 1;
    else if (o.max_context < n + 1) {
        err_set(&e, "--max-model-len %d is too short for %d tokens (at least %d)", o.max_context, n, n + 1);
        goto done;
    }
    rows = xmalloc((size_t)n * m->cfg.vocab_size * sizeof(float));
    if (engine_score(m, &o, ids, n, prefill, rows, &e) ||
        write_logits(out, ids, n, rows, m->cfg.vocab_size, &e))
        goto done;
    rc = 0;
done:
    if (rc < 0)
        fprintf(stderr, "infer logits: %s\n", e.msg);
    free(ids);
    free(rows);
    loaded_model_free(&lm);
    engine_flags_free(&f);
    return rc < 0 ? 1 : node_status;
}
