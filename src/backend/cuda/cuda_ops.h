/* The CUDA backend's op implementations (same signatures as struct
 * backend_ops), spread over files by op family, and what they share. */
#ifndef INFER_BACKEND_CUDA_OPS_H
#define INFER_BACKEND_CUDA_OPS_H

#include "backend/cuda/cuda_common.h"

struct sample_stats;

static inline struct cuda_backend *cuda_impl(struct backend *be) { return (struct cuda_backend *)be->impl; }
static inline cudaStream_t cuda_stream(struct backend *be) { return cuda_impl(be)->stream; }

/* cuda_ops_basic.c */
void cuda_op_embed(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
                   int64_t vocab_lo, float scale);
void cuda_op_all_reduce(struct backend *be, void *buf, size_t n);
void cuda_op_gather_logits(struct backend *be, float *out, const float *in, int rows, int cols, const int32_t *logit_cols);
void cuda_op_all_reduce_fold(struct backend *be, void *residual, float *partial, const struct weight *w_delta,
                             void *out, const struct weight *w, int n_rows, float eps, int plus_one);
void cuda_op_rmsnorm(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows, float eps,
                     int plus_one);
void cuda_op_add_rmsnorm(struct backend *be, void *residual, const void *delta, void *out, const struct weight *w,
                         int n_rows, float eps, int plus_one);
void cuda_op_add_normed_rmsnorm(struct backend *be, void *residual, const void *delta, const struct weight *w_delta,
                                void *out, const struct weight *w, int n_rows, float eps, int plus_one);
void cuda_op_qk_rope_kv_write(struct backend *be, void *q_out, const struct qkv_rope *r, const struct fwd_meta *m,
                              const struct attn_shape *s, struct kv_layer *kv);
void cuda_op_gated_act(struct backend *be, void *out, const void *gate, const void *up, int n_rows, int n_cols,
                       int in_stride, enum act_fn act);
void cuda_op_gather_rows(struct backend *be, void *out, const void *x, const struct fwd_meta *m, int n_cols);

/* cuda_gemm.c: cuBLASLt (and a small-M GEMV kernel) */
void cuda_op_matmul(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows);
void cuda_op_matmul_f32(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows);
void cuda_op_logits(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows,
                    float softcap);
/* out[n_rows, F] = act(x . Wg^T) * (x . Wu^T), w = gate|up [2F, K]: the GEMV
 * with the activation in its epilogue for small M, else cuBLASLt + gated_act */
void cuda_op_gated_matmul(struct backend *be, void *out, void *scratch, const void *x, const struct weight *w,
                          int n_rows, enum act_fn act);
/* Frees the cached cuBLASLt plans (at backend destruction). */
void cuda_gemm_release(struct backend *be);

/* cuda_attention.c: paged decode and prefill attention */
void cuda_op_attention_rope(struct backend *be, void *out, void *q_scratch, const struct qkv_rope *r,
                            const struct fwd_meta *m, const struct attn_shape *s, struct kv_layer *kv, int window,
                            float scale, float softcap);
void cuda_op_attention(struct backend *be, void *out, const void *q, const struct fwd_meta *m,
                       const struct attn_shape *s, const struct kv_layer *kv, int window, float scale,
                       float softcap);

/* cuda_sampling.c: the sampler ops (kernels in sampling.cu) */
int cuda_op_sample_init(struct backend *be, int max_rows, int max_logit_rows, int vocab, struct err *e);
int cuda_op_sample_stage(struct backend *be, int n_rows, int pad_rows, int vocab, const struct sample_row *rows,
                         struct err *e);
int cuda_op_sample_enqueue(struct backend *be, const float *logits, int pad_rows, int vocab, struct err *e);
int cuda_op_sample_masks_ready(struct backend *be, struct err *e);
int cuda_op_sample_finish(struct backend *be, int n_rows, struct sample_result *out, struct err *e);
/* sampler_ops.needs_logit_cols: all but the plain greedy, unmasked rows. */
int cuda_sample_needs_logit_cols(const struct sampling_params *p, int masked);
/* Whether the backend's model is split (the gather leaves the statistics). */
int cuda_sample_split(const struct backend *be);
/* Where the gather of rows logit rows leaves their statistics (the
 * sampler's, sized by its init; aborts when it was not). */
struct sample_stats *cuda_sample_gather_stats(struct backend *be, int rows);
/* Frees the sampler's buffers (at backend destruction). */
void cuda_sample_release(struct backend *be);

#endif
