/* infer logits --model DIR (--ids 1,2,3 | --ids-file F) --out FILE [--prefill N] [--chunk C] [--device D]
 * Runs a token sequence through the model and writes the logits of every
 * position (f32 [T, vocab], tensor "logits", plus "ids") to a safetensors
 * file: the first N tokens as prefill (in chunks of C rows), the rest one at
 * a time as decode steps. This is what the parity checks against
 * transformers compare. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/fs.h"
#include "engine/seq_runner.h"
#include "io/safetensors.h"

static int read_ids_file(const char *path, int32_t **ids, int *n, struct err *e)
{
    char *text;
    size_t len;
    if (fs_read_file(path, 64u << 20, &text, &len, e))
        return -1;
    json_error_t jerr;
    json_t *arr = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        json_decref(arr);
        return err_set(e, "%s: expected a non-empty JSON array of token ids", path);
    }
    *n = (int)json_array_size(arr);
    *ids = xmalloc((size_t)*n * sizeof **ids);
    for (int i = 0; i < *n; i++) {
        json_t *v = json_array_get(arr, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
            json_decref(arr);
            free(*ids);
            return err_set(e, "%s: element %d is not a token id", path, i);
        }
        (*ids)[i] = (int32_t)json_integer_value(v);
    }
    json_decref(arr);
    return 0;
}

static int write_logits(struct seq_runner *r, const int32_t *ids, int n, int prefill, const char *out,
                        struct err *e)
{
    const int V = r->m->cfg.vocab_size;
    int64_t shape[2] = {n, V}, ids_shape[1] = {n};
    struct st_writer *w = st_writer_create(out, e);
    if (!w || st_writer_declare(w, "ids", DTYPE_I32, 1, ids_shape, e) ||
        st_writer_declare(w, "logits", DTYPE_F32, 2, shape, e) ||
        st_writer_write(w, ids, (size_t)n * sizeof(int32_t), e))
        goto fail;
    float *rows = xmalloc((size_t)(prefill > 1 ? prefill : 1) * V * sizeof(float));
    int rc = seq_runner_feed(r, ids, prefill, 1, rows, NULL, e) ||
             st_writer_write(w, rows, (size_t)prefill * V * sizeof(float), e);
    for (int i = prefill; i < n && !rc; i++)
        rc = seq_runner_feed(r, ids + i, 1, 1, rows, NULL, e) || st_writer_write(w, rows, (size_t)V * sizeof(float), e);
    free(rows);
    if (rc)
        goto fail;
    return st_writer_finish(w, e);
fail:
    if (w)
        st_writer_abort(w);
    return -1;
}

int cmd_logits(int argc, char **argv)
{
    const char *model_dir = NULL, *device = "cpu", *ids_arg = NULL, *ids_file = NULL, *out = NULL;
    int prefill = -1, chunk = 512, threads = 0, batch_invariant = 0;
    double mem_util = 0.90;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model_dir, 1, 0, 0, "checkpoint directory", 0},
        {"device", CLI_OPT_STRING, &device, 0, 0, 0, "cpu, cuda, or auto (cuda when a GPU is there, else cpu); default cpu", 0},
        {"ids", CLI_OPT_STRING, &ids_arg, 0, 0, 0, "token ids, comma-separated", 0},
        {"ids-file", CLI_OPT_STRING, &ids_file, 0, 0, 0, "a JSON array of token ids", 0},
        {"out", CLI_OPT_STRING, &out, 1, 0, 0, "safetensors file to write", 0},
        {"prefill", CLI_OPT_INT, &prefill, 0, 1, 1 << 24, "tokens run as prefill (default all); the rest decode", 0},
        {"chunk", CLI_OPT_INT, &chunk, 0, 1, 1 << 16, "prefill chunk in tokens (default 512)", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 0, 1024, "CPU threads (default: all cores)", 0},
        {"gpu-memory-utilization", CLI_OPT_DOUBLE, &mem_util, 0, 0, 0,
         "share of the GPU memory left after weights for the KV cache (default 0.90)", 0},
        {"batch-invariant", CLI_OPT_FLAG, &batch_invariant, 0, 0, 0,
         "results independent of the batch (CUDA: slower prefill)", 0},
    };
    struct err e = {{0}};
    struct backend *be = NULL;
    struct model *m = NULL;
    struct seq_runner r = {0};
    int32_t *ids = NULL;
    int n = 0;
    enum backend_kind kind;
    int rc = cli_parse(argc, argv, "logits", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc)
        goto done;
    rc = -1;
    if (!ids_arg == !ids_file) {
        err_set(&e, "infer logits: give exactly one of --ids and --ids-file");
        goto done;
    }
    if ((ids_arg ? cli_parse_int_list(ids_arg, "ids", &ids, &n, &e) : read_ids_file(ids_file, &ids, &n, &e)) ||
        backend_kind_parse(device, &kind, &e) || !(be = backend_create(kind, threads, &e)) ||
        !(m = model_load(model_dir, be, &e)))
        goto done;
    be->batch_invariant = batch_invariant;
    if (prefill < 0 || prefill > n)
        prefill = n;
    for (int i = 0; i < n; i++)
        if (ids[i] >= m->cfg.vocab_size) {
            err_set(&e, "token id %d at index %d is outside the vocabulary (0..%d)", ids[i], i, m->cfg.vocab_size - 1);
            goto done;
        }
    if (n > m->cfg.max_positions) {
        err_set(&e, "%d tokens exceed the model's %d positions", n, m->cfg.max_positions);
        goto done;
    }
    const int rows = chunk < prefill ? chunk : prefill;
    struct seq_runner_opts ro = {n, rows, rows, 16, mem_util};
    if (seq_runner_init_opts(&r, m, &ro, &e) || write_logits(&r, ids, n, prefill, out, &e))
        goto done;
    rc = 0;
done:
    if (rc < 0)
        fprintf(stderr, "infer logits: %s\n", e.msg);
    free(ids);
    seq_runner_free(&r);
    model_free(m);
    backend_free(be);
    return rc < 0 ? 1 : 0;
}
