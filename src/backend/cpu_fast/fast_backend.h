/* The fast CPU backend, `--device cpu`: weights kept as the checkpoint holds
 * them (GGUF blocks or bf16 / f16 / f32, in the file's mapping), matmuls
 * through backend/quant's SIMD dot products (activations quantised once
 * per matmul to the weights' partner), an f16 KV cache read by a one-pass
 * attention, a thread pool that spins between the ops of a step. Every op it has no faster kernel for is the
 * reference's (backend/cpu), which stays the oracle (`--device
 * cpu-reference`). Shared by the fast_*.c files. */
#ifndef INFER_BACKEND_CPU_FAST_FAST_BACKEND_H
#define INFER_BACKEND_CPU_FAST_FAST_BACKEND_H

#include "backend/cpu/cpu_backend.h"
#include "backend/quant/quant.h"

struct fast_backend {
    struct cpu_backend base; /* first: the reference's ops take be->impl as theirs */
    const struct quant_kernels *k;
    void *scratch; /* quantised activations, grown to the largest matmul's */
    size_t scratch_bytes;
};

static inline struct fast_backend *fast_of(struct backend *be) { return be->impl; }

struct backend *cpu_fast_backend_create(int n_threads, struct err *e);

void fast_matmul(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows);
void fast_logits(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows, float softcap);
void fast_attention(struct backend *be, void *out, const void *q, const struct fwd_meta *m, const struct attn_shape *s,
                    const struct kv_layer *kv, int window, float scale, float softcap);
void fast_attention_rope(struct backend *be, void *out, void *q_scratch, const struct qkv_rope *r,
                         const struct fwd_meta *m, const struct attn_shape *s, struct kv_layer *kv, int window,
                         float scale, float softcap);
void fast_gated_act(struct backend *be, void *out, const void *gate, const void *up, int n_rows, int n_cols,
                    int in_stride, enum act_fn act);
void fast_embed(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
                int64_t vocab_lo, float scale);

#endif
