/* The CPU reference backend: fp32 math over bf16/f16/f32 weights, f32
 * activations and KV cache, loops spread over a thread pool. Shared by the
 * cpu_*.c files that implement its ops. */
#ifndef INFER_BACKEND_CPU_BACKEND_H
#define INFER_BACKEND_CPU_BACKEND_H

#include "backend/ops.h"
#include "core/threadpool.h"

struct cpu_sampler;

struct cpu_backend {
    struct threadpool *pool;
    void **owned; /* buffers of stacked (fused) weights, freed with the backend */
    int n_owned;
    struct cpu_sampler *sampler; /* cpu_sample.c's state between stage and finish */
};

static inline struct threadpool *cpu_pool(struct backend *be)
{
    return ((struct cpu_backend *)be->impl)->pool;
}

/* Converts n elements of a float tensor (any dtype) starting at index i0 to f32. */
void cpu_to_f32(float *dst, const void *src, enum dtype dtype, int64_t i0, int64_t n);

struct backend *cpu_backend_create(int n_threads, struct err *e);
/* The reference's op table, for the fast CPU backend (backend/cpu_fast),
 * which keeps the ops it has no faster kernel for. */
const struct backend_ops *cpu_reference_ops(void);
/* A backend over cb (its pool set; cb may be the first member of a larger
 * impl) with ops; cpu_backend_destroy, its free_impl, frees cb's parts and cb. */
struct backend *cpu_backend_wrap(struct cpu_backend *cb, const struct backend_ops *ops);
void cpu_backend_destroy(struct backend *be);
/* p (a weight's buffer) freed with the backend. */
void cpu_backend_own(struct cpu_backend *cb, void *p);

/* op implementations, one file each */
void cpu_embed(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
               int64_t vocab_lo, float scale);
/* The embedding's loop (rows out of the rank's share zeroed, the scale
 * applied), each table row as read_row gives it in f32. */
void cpu_embed_rows(void *out, const struct fwd_meta *m, const struct weight *table, int64_t vocab_lo, float scale,
                    void (*read_row)(const struct weight *table, int64_t row, float *out));
void cpu_rmsnorm(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows,
                 float eps, int plus_one);
void cpu_add_rmsnorm(struct backend *be, void *residual, const void *delta, void *out,
                     const struct weight *w, int n_rows, float eps, int plus_one);
void cpu_matmul(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows);
void cpu_logits(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows,
                float softcap);
/* out[n_rows, F] = act(x . Wg^T) * (x . Wu^T), w = gate|up [2F, K] */
void cpu_gated_matmul(struct backend *be, void *out, void *scratch, const void *x, const struct weight *w,
                      int n_rows, enum act_fn act);
void cpu_qk_rope_kv_write(struct backend *be, void *q_out, const struct qkv_rope *r, const struct fwd_meta *m,
                          const struct attn_shape *s, struct kv_layer *kv);
void cpu_attention(struct backend *be, void *out, const void *q, const struct fwd_meta *m,
                   const struct attn_shape *s, const struct kv_layer *kv, int window, float scale,
                   float softcap);
void cpu_attention_rope(struct backend *be, void *out, void *q_scratch, const struct qkv_rope *r,
                        const struct fwd_meta *m, const struct attn_shape *s, struct kv_layer *kv, int window,
                        float scale, float softcap);
void cpu_gated_act(struct backend *be, void *out, const void *gate, const void *up, int n_rows,
                   int n_cols, int in_stride, enum act_fn act);
void cpu_gather_rows(struct backend *be, void *out, const void *x, const struct fwd_meta *m,
                     int n_cols);
int cpu_sample_init(struct backend *be, int max_rows, int max_logit_rows, int vocab, struct err *e);
int cpu_sample_stage(struct backend *be, int n_rows, int pad_rows, int vocab, const struct sample_row *rows,
                     struct err *e);
int cpu_sample_enqueue(struct backend *be, const float *logits, int pad_rows, int vocab, struct err *e);
int cpu_sample_finish(struct backend *be, int n_rows, struct sample_result *out, struct err *e);
void cpu_sample_release(struct backend *be);

#endif
