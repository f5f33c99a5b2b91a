#include "engine/graph_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"

int graph_mode_parse(const char *s, enum graph_mode *mode, struct err *e)
{
    if (!strcmp(s, "none"))
        *mode = GRAPH_MODE_NONE;
    else if (!strcmp(s, "decode"))
        *mode = GRAPH_MODE_DECODE;
    else if (!strcmp(s, "piecewise") || !strcmp(s, "full"))
        return err_set(e, "--cuda-graph-mode %s is not available yet (none or decode)", s);
    else
        return err_set(e, "--cuda-graph-mode: unknown mode '%s' (none or decode)", s);
    return 0;
}

int graph_buckets(const struct graph_opts *o, int max_seqs, int max_tokens, int **out, int *n, struct err *e)
{
    const int limit = max_seqs < max_tokens ? max_seqs : max_tokens;
    int *b;
    int k = 0;
    if (o->buckets) {
        if (o->n_buckets < 1)
            return err_set(e, "--cuda-graph-bs: give at least one batch size");
        for (int i = 0; i < o->n_buckets; i++) {
            if (o->buckets[i] < 1)
                return err_set(e, "--cuda-graph-bs: batch sizes must be positive, got %d", o->buckets[i]);
            if (i && o->buckets[i] <= o->buckets[i - 1])
                return err_set(e, "--cuda-graph-bs: batch sizes must be ascending, got %d after %d", o->buckets[i],
                               o->buckets[i - 1]);
            if (o->buckets[i] > max_seqs)
                return err_set(e, "--cuda-graph-bs: batch size %d exceeds --max-num-seqs %d", o->buckets[i],
                               max_seqs);
            if (o->buckets[i] > max_tokens)
                return err_set(e, "--cuda-graph-bs: batch size %d exceeds --max-num-batched-tokens %d",
                               o->buckets[i], max_tokens);
        }
        b = xmalloc((size_t)o->n_buckets * sizeof *b);
        memcpy(b, o->buckets, (size_t)o->n_buckets * sizeof *b);
        k = o->n_buckets;
    } else {
        if (o->max_bs < 1)
            return err_set(e, "--cuda-graph-max-bs must be >= 1, got %d", o->max_bs);
        const int top = o->max_bs < limit ? o->max_bs : limit;
        b = xmalloc((size_t)(top + 8) * sizeof *b);
        static const int head[] = {1, 2, 4, 8, 16, 24, 32};
        for (int i = 0; i < 7 && head[i] <= top; i++)
            b[k++] = head[i];
        for (int s = 48; s <= top; s += 16)
            b[k++] = s;
        if (b[k - 1] != top) /* the limit itself, so every batch up to it replays */
            b[k++] = top;
    }
    *out = b;
    *n = k;
    return 0;
}

void graph_runner_init_padding(struct graph_runner *gr, const struct model *m, struct forward_ws *ws,
                               struct kv_store *kv, int max_bs, int max_blocks_per_seq)
{
    gr->m = m, gr->ws = ws, gr->kv = kv;
    gr->max_blocks_per_seq = max_blocks_per_seq;
    const size_t rows = (size_t)max_bs + 1;
    gr->tokens = xmalloc(rows * sizeof(int32_t)), gr->positions = xmalloc(rows * sizeof(int32_t));
    gr->slots = xmalloc(rows * sizeof(int32_t)), gr->seq_of = xmalloc(rows * sizeof(int32_t));
    gr->query_start = xmalloc(rows * sizeof(int32_t)), gr->kv_len = xmalloc(rows * sizeof(int32_t));
    gr->logit_rows = xmalloc(rows * sizeof(int32_t));
    gr->tables = xcalloc(rows * (size_t)max_blocks_per_seq, sizeof(int32_t));
}

void graph_runner_pad(struct graph_runner *gr, const struct fwd_batch *src, int bs, struct fwd_batch *b)
{
    const int n = src ? src->n_tokens : 0, B = gr->max_blocks_per_seq;
    for (int i = 0; i < bs; i++) {
        const int real = i < n;
        gr->tokens[i] = real ? src->token_ids[i] : 0;
        gr->positions[i] = real ? src->positions[i] : 0;
        gr->slots[i] = real ? src->slot_mapping[i] : -1;
        gr->seq_of[i] = i;
        gr->query_start[i] = i;
        gr->kv_len[i] = real ? src->kv_len[i] : 0;
        gr->logit_rows[i] = i;
        int32_t *row = gr->tables + (size_t)i * B;
        memset(row, 0, (size_t)B * sizeof *row);
        if (real)
            memcpy(row, src->block_tables + (size_t)i * src->max_blocks_per_seq,
                   (size_t)src->max_blocks_per_seq * sizeof *row);
    }
    gr->query_start[bs] = bs;
    *b = (struct fwd_batch){.n_tokens = bs,
                            .n_seqs = bs,
                            .n_logits = bs,
                            .max_blocks_per_seq = B,
                            .token_ids = gr->tokens,
                            .positions = gr->positions,
                            .slot_mapping = gr->slots,
                            .seq_of_token = gr->seq_of,
                            .query_start = gr->query_start,
                            .kv_len = gr->kv_len,
                            .block_tables = gr->tables,
                            .logit_rows = gr->logit_rows,
                            .skip_argmax = 1}; /* the engine's sampler draws after the graph */
}

static int capture(struct graph_runner *gr, int i, struct err *e)
{
    const struct backend_ops *ops = gr->m->be->ops;
    struct backend *be = gr->m->be;
    struct fwd_batch b;
    graph_runner_pad(gr, NULL, gr->buckets[i], &b);
    /* warm-up: plans and lazily loaded kernels outside the capture */
    if (model_forward(gr->m, gr->ws, gr->kv, &b, e) || ops->synchronize(be, e) || ops->graph_begin(be, e))
        return -1;
    struct err end_err;
    int rc = model_forward(gr->m, gr->ws, gr->kv, &b, e);
    if (ops->graph_end(be, &gr->graphs[i], &end_err) && !rc) { /* the capture must end either way */
        *e = end_err;
        rc = -1;
    }
    return rc ? err_prefix(e, "capturing the decode graph of batch size %d", gr->buckets[i]) : 0;
}

int graph_runner_init(struct graph_runner *gr, const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                      const struct graph_opts *o, int max_seqs, int max_tokens, int max_blocks_per_seq,
                      struct err *e)
{
    memset(gr, 0, sizeof *gr);
    gr->m = m, gr->ws = ws, gr->kv = kv, gr->mode = o->mode, gr->padding = o->padding;
    gr->max_blocks_per_seq = max_blocks_per_seq;
    if (o->mode == GRAPH_MODE_NONE)
        return 0;
    const struct backend_ops *ops = m->be->ops;
    if (!ops->graph_begin || !ops->batch_stage)
        return err_set(e, "--cuda-graph-mode needs --device cuda (this backend has no graphs; use none)");
    if (graph_buckets(o, max_seqs, max_tokens, &gr->buckets, &gr->n_buckets, e))
        return -1;
    const int top = gr->buckets[gr->n_buckets - 1];
    graph_runner_init_padding(gr, m, ws, kv, top, max_blocks_per_seq);
    gr->graphs = xcalloc((size_t)gr->n_buckets, sizeof *gr->graphs);
    size_t total = 0;
    ops->mem_info(m->be, &gr->free_before, &total);
    const double t0 = clock_now();
    const int tty = isatty(2);
    for (int i = gr->n_buckets - 1; i >= 0; i--) { /* largest first */
        if (tty) {
            const int done = gr->n_buckets - 1 - i, width = 30, fill = done * width / gr->n_buckets;
            fprintf(stderr, "\rinfer: capturing decode graphs [%.*s%*s] %d/%d", fill,
                    "##############################", width - fill, "", done, gr->n_buckets);
        }
        if (capture(gr, i, e)) {
            if (tty)
                fputc('\n', stderr);
            graph_runner_free(gr);
            return -1;
        }
    }
    gr->capture_seconds = clock_now() - t0;
    ops->mem_info(m->be, &gr->free_after, &total);
    fprintf(stderr,
            "%sinfer: cuda graphs: %d decode graphs (batch sizes %d..%d) captured in %.2f s; device memory free "
            "%.2f GiB before, %.2f GiB after (%.1f MiB for graphs)\n",
            tty ? "\r" : "", gr->n_buckets, gr->buckets[0], top, gr->capture_seconds,
            (double)gr->free_before / (1 << 30), (double)gr->free_after / (1 << 30),
            ((double)gr->free_before - (double)gr->free_after) / (1 << 20));
    return 0;
}

/* The bucket a decode batch of n rows replays, or -1. */
static int bucket_for(const struct graph_runner *gr, int n)
{
    for (int i = 0; i < gr->n_buckets; i++)
        if (gr->buckets[i] >= n)
            return gr->padding || gr->buckets[i] == n ? i : -1;
    return -1;
}

static int is_decode(const struct fwd_batch *b)
{
    if (b->n_tokens != b->n_seqs || b->n_logits != b->n_tokens)
        return 0;
    for (int i = 0; i < b->n_tokens; i++)
        if (b->seq_of_token[i] != i || b->query_start[i] != i || b->logit_rows[i] != i)
            return 0;
    return 1;
}

int graph_runner_forward(struct graph_runner *gr, const struct fwd_batch *b, struct err *e)
{
    const int i = gr->mode == GRAPH_MODE_DECODE && is_decode(b) ? bucket_for(gr, b->n_tokens) : -1;
    if (i < 0) {
        gr->n_eager++;
        return model_forward(gr->m, gr->ws, gr->kv, b, e);
    }
    if (b->max_blocks_per_seq > gr->max_blocks_per_seq)
        return err_set(e, "graph runner: block tables of %d exceed the captured %d", b->max_blocks_per_seq,
                       gr->max_blocks_per_seq);
    struct fwd_batch p;
    graph_runner_pad(gr, b, gr->buckets[i], &p);
    struct backend *be = gr->m->be;
    if (be->ops->batch_stage(be, &p, e) || be->ops->graph_replay(be, gr->graphs[i], e))
        return -1;
    gr->n_replays++;
    return 0;
}

void graph_runner_free(struct graph_runner *gr)
{
    if (gr->graphs)
        for (int i = 0; i < gr->n_buckets; i++)
            if (gr->graphs[i])
                gr->m->be->ops->graph_free(gr->m->be, gr->graphs[i]);
    free(gr->graphs);
    free(gr->buckets);
    free(gr->tokens), free(gr->positions), free(gr->slots), free(gr->seq_of);
    free(gr->query_start), free(gr->kv_len), free(gr->tables), free(gr->logit_rows);
    memset(gr, 0, sizeof *gr);
}
