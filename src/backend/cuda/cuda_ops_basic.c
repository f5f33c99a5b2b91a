/* The CUDA backend's simple ops: argument plumbing from the op table to the
 * kernel launchers, on the backend's stream. A failed launch is a broken
 * invariant (bad shapes or a sick device), so it aborts with the location. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/sampling.h"

void cuda_op_embed(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
                   int64_t vocab_lo, float scale)
{
    CUDA_CHECK(launch_embed(out, m->token_ids, m->n_tokens, table->data, vocab_lo, table->rows, (int)table->cols,
                            scale, cuda_stream(be)));
}

void cuda_op_all_reduce(struct backend *be, void *buf, size_t n)
{
    be->comm->ops->all_reduce(be->comm, buf, n, DTYPE_BF16, cuda_stream(be));
}

/* Every rank's span statistics of its own columns (launch_logit_stats: the
 * spans rank 0 would cut the gathered row into), moved with the columns
 * only where the step wants them (the communicator's gather with records);
 * else the columns through the communicator and rank 0 finds every shard's
 * statistics. Either way into the sampler's statistics. */
void cuda_op_gather_logits(struct backend *be, float *out, const float *in, int rows, int cols,
                           const int32_t *logit_cols)
{
    struct comm *c = be->comm;
    cudaStream_t s = cuda_stream(be);
    const int splits = SAMPLE_STATS_SHARD_SPLITS(cols, c->size);
    struct sample_stats *st = cuda_sample_gather_stats(be, rows);
    if (c->ops->records_fit && c->ops->records_fit(c, rows, cols, splits)) {
        CUDA_CHECK(launch_logit_stats(in, (size_t)cols, rows, cols, 1, c->size, c->rank * cols, st + c->rank * splits, s));
        const struct comm_records recs = {st, SAMPLE_STATS_MAX_SPLITS, splits};
        c->ops->gather_records(c, out, in, recs, logit_cols, rows, cols, s);
        return;
    }
    c->ops->gather_cols(c, out, in, rows, cols, s);
    if (c->rank == 0)
        CUDA_CHECK(launch_logit_stats(out, (size_t)cols * c->size, rows, cols, c->size, c->size, 0, st, s));
}

void cuda_op_all_reduce_fold(struct backend *be, void *residual, float *partial, const struct weight *w_delta,
                             void *out, const struct weight *w, int n_rows, float eps, int plus_one)
{
    CHECK(!w_delta || w_delta->cols == w->cols);
    const int d = (int)w->cols;
    be->comm->ops->all_reduce(be->comm, partial, (size_t)n_rows * (size_t)d, DTYPE_F32, cuda_stream(be));
    if (w_delta)
        CUDA_CHECK(launch_add_normed_rmsnorm_f32(residual, partial, w_delta->data, out, w->data, n_rows, d, eps,
                                                 plus_one, cuda_stream(be)));
    else
        CUDA_CHECK(launch_add_rmsnorm_f32(residual, partial, out, w->data, n_rows, d, eps, plus_one, cuda_stream(be)));
}

void cuda_op_rmsnorm(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows, float eps,
                     int plus_one)
{
    CUDA_CHECK(launch_rmsnorm(out, x, w->data, n_rows, (int)w->cols, eps, plus_one, cuda_stream(be)));
}

void cuda_op_add_rmsnorm(struct backend *be, void *residual, const void *delta, void *out, const struct weight *w,
                         int n_rows, float eps, int plus_one)
{
    CUDA_CHECK(launch_add_rmsnorm(residual, delta, out, w->data, n_rows, (int)w->cols, eps, plus_one,
                                  cuda_stream(be)));
}

void cuda_op_add_normed_rmsnorm(struct backend *be, void *residual, const void *delta, const struct weight *w_delta,
                                void *out, const struct weight *w, int n_rows, float eps, int plus_one)
{
    CHECK(w_delta->cols == w->cols);
    CUDA_CHECK(launch_add_normed_rmsnorm(residual, delta, w_delta->data, out, w->data, n_rows, (int)w->cols, eps,
                                         plus_one, cuda_stream(be)));
}

void cuda_op_qk_rope_kv_write(struct backend *be, void *q_out, const struct qkv_rope *r, const struct fwd_meta *m,
                              const struct attn_shape *s, struct kv_layer *kv)
{
    CUDA_CHECK(launch_qk_rope_kv_write(q_out, r->q_in, r->k_in, r->v_in, r->q_stride, r->kv_stride, m->positions,
                                       m->slot_mapping, m->n_tokens, s->n_heads, s->n_kv_heads, s->head_dim,
                                       r->q_norm ? r->q_norm->data : NULL, r->k_norm ? r->k_norm->data : NULL, r->eps,
                                       r->plus_one, r->inv_freq, kv->k, kv->v, cuda_stream(be)));
}

void cuda_op_gated_act(struct backend *be, void *out, const void *gate, const void *up, int n_rows, int n_cols,
                       int in_stride, enum act_fn act)
{
    CUDA_CHECK(launch_gated_act(out, gate, up, n_rows, n_cols, in_stride, act == ACT_FN_SILU ? 0 : 1,
                                cuda_stream(be)));
}

void cuda_op_gather_rows(struct backend *be, void *out, const void *x, const struct fwd_meta *m, int n_cols)
{
    CUDA_CHECK(launch_gather_rows(out, x, m->logit_rows, m->n_logits, n_cols, cuda_stream(be)));
}
