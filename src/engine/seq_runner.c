#include "engine/seq_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_plan.h"

int seq_runner_init_opts(struct seq_runner *r, const struct model *m, const struct seq_runner_opts *o,
                         struct err *e)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    r->block_size = o->block_size;
    r->max_context = o->max_context;
    if (!(o->gpu_memory_utilization > 0 && o->gpu_memory_utilization <= 1))
        return err_set(e, "--gpu-memory-utilization must be in (0, 1], got %g", o->gpu_memory_utilization);
    const int per_seq = (o->max_context + o->block_size - 1) / o->block_size;
    if (forward_ws_init(&r->ws, m, o->chunk_tokens, o->max_logits, e))
        return -1;
    struct meta_caps caps = {o->chunk_tokens, 1, per_seq, o->max_logits};
    int n_blocks;
    size_t free_before;
    if (m->be->ops->meta_init(m->be, &caps, e) ||
        kv_plan_blocks(m, per_seq + 1, per_seq + 1, o->block_size, o->gpu_memory_utilization, &n_blocks,
                       &free_before, e) ||
        kv_store_init(&r->kv, &m->cfg, m->be, n_blocks, o->block_size, e)) {
        forward_ws_free(&r->ws, m);
        return -1;
    }
    block_pool_init(&r->pool, n_blocks, 1);
    size_t bytes = (size_t)o->chunk_tokens * sizeof(int32_t);
    r->positions = xmalloc(bytes);
    r->slots = xmalloc(bytes);
    r->seq_of = xcalloc((size_t)o->chunk_tokens, sizeof(int32_t));
    r->logit_rows = xmalloc(bytes);
    size_t free_after = 0, total = 0;
    m->be->ops->mem_info(m->be, &free_after, &total);
    if (total)
        fprintf(stderr, "infer: memory plan: KV cache %.2f GiB (%d blocks of %d tokens) of %.2f GiB free; %.2f GiB "
                        "left\n",
                (double)r->kv.bytes / (1 << 30), n_blocks, o->block_size, (double)free_before / (1 << 30),
                (double)free_after / (1 << 30));
    return 0;
}

int seq_runner_init(struct seq_runner *r, const struct model *m, int max_context, int chunk_tokens,
                    int max_logits, int block_size, struct err *e)
{
    struct seq_runner_opts o = {max_context, chunk_tokens, max_logits, block_size, 0.90};
    return seq_runner_init_opts(r, m, &o, e);
}

void seq_runner_free(struct seq_runner *r)
{
    if (!r->m)
        return;
    seq_runner_reset(r);
    seq_blocks_free(&r->blocks);
    block_pool_free(&r->pool);
    forward_ws_free(&r->ws, r->m);
    kv_store_free(&r->kv, r->m->be);
    free(r->positions);
    free(r->slots);
    free(r->seq_of);
    free(r->logit_rows);
    memset(r, 0, sizeof *r);
}

void seq_runner_reset(struct seq_runner *r)
{
    seq_blocks_release(&r->blocks, &r->pool);
    r->n_cached = 0;
}

/* The batch of one chunk: rows [0, n) at positions n_cached.. */
static void build_batch(struct seq_runner *r, const int32_t *tokens, int n, int all_rows, int want_last,
                        struct fwd_batch *b)
{
    int n_logits = 0;
    for (int i = 0; i < n; i++) {
        r->positions[i] = r->n_cached + i;
        r->slots[i] = seq_blocks_slot(&r->blocks, r->n_cached + i, r->block_size);
        if (all_rows || (want_last && i == n - 1))
            r->logit_rows[n_logits++] = i;
    }
    r->query_start[0] = 0;
    r->query_start[1] = n;
    r->kv_len[0] = r->n_cached + n;
    *b = (struct fwd_batch){
        .n_tokens = n, .n_seqs = 1, .n_logits = n_logits, .max_blocks_per_seq = r->blocks.n,
        .token_ids = tokens, .positions = r->positions, .slot_mapping = r->slots,
        .seq_of_token = r->seq_of, .query_start = r->query_start, .kv_len = r->kv_len,
        .block_tables = r->blocks.ids, .logit_rows = r->logit_rows,
    };
}

int seq_runner_prepare_step(struct seq_runner *r, const int32_t *token, struct fwd_batch *b, struct err *e)
{
    if (r->n_cached + 1 > r->max_context)
        return err_set(e, "sequence of %d tokens exceeds the context of %d", r->n_cached + 1, r->max_context);
    if (seq_blocks_reserve(&r->blocks, &r->pool, r->n_cached + 1, r->block_size))
        return err_set(e, "KV cache out of blocks");
    build_batch(r, token, 1, 0, 1, b);
    return 0;
}

/* One chunk: rows [0, n) at positions n_cached.. */
static int run_chunk(struct seq_runner *r, const int32_t *tokens, int n, int all_rows, int want_last,
                     float *logits_out, int32_t *argmax_out, struct err *e)
{
    struct backend *be = r->m->be;
    const int V = r->m->cfg.vocab_size;
    struct fwd_batch b;
    build_batch(r, tokens, n, all_rows, want_last, &b);
    const int n_logits = b.n_logits;
    if (model_forward(r->m, &r->ws, &r->kv, &b, e))
        return -1;
    r->n_cached += n;
    if (n_logits && logits_out &&
        be->ops->copy_to_host(be, logits_out, r->ws.logits, (size_t)n_logits * V * sizeof(float), e))
        return -1;
    if (n_logits && argmax_out &&
        be->ops->copy_to_host(be, argmax_out, r->ws.argmax, (size_t)n_logits * sizeof(int32_t), e))
        return -1;
    return be->ops->synchronize(be, e);
}

int seq_runner_feed(struct seq_runner *r, const int32_t *tokens, int n, int all_rows,
                    float *logits_out, int32_t *argmax_out, struct err *e)
{
    if (n < 1)
        return err_set(e, "no tokens to run");
    if (r->n_cached + n > r->max_context)
        return err_set(e, "sequence of %d tokens exceeds the context of %d", r->n_cached + n,
                       r->max_context);
    if (seq_blocks_reserve(&r->blocks, &r->pool, r->n_cached + n, r->block_size))
        return err_set(e, "KV cache out of blocks");
    const int V = r->m->cfg.vocab_size;
    for (int done = 0; done < n;) {
        int c = n - done < r->ws.max_tokens ? n - done : r->ws.max_tokens;
        int last = done + c == n;
        float *lo = logits_out ? logits_out + (all_rows ? (size_t)done * V : 0) : NULL;
        int32_t *ao = argmax_out ? argmax_out + (all_rows ? done : 0) : NULL;
        if (run_chunk(r, tokens + done, c, all_rows, last, lo, ao, e))
            return -1;
        done += c;
    }
    return 0;
}
