/* extern "C" launchers of the CUDA kernels (one .cu file per op family).
 * Pointers are device pointers; activations are bf16 (passed as void *),
 * logits and RoPE frequencies f32, indices int32. Each launcher queues its
 * kernel on stream and returns cudaGetLastError(). The decode GEMV's
 * launchers and named variants are in gemv.h. */
#ifndef INFER_BACKEND_CUDA_KERNELS_H
#define INFER_BACKEND_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[t] = table[ids[t] - vocab_lo] * scale, rows of d; zeros for ids outside
 * the table's rows (another rank's share of the vocabulary) */
cudaError_t launch_embed(void *out, const int32_t *ids, int n_tokens, const void *table, int64_t vocab_lo,
                         int64_t rows, int d, float scale, cudaStream_t stream);
/* out[r] = rmsnorm(x[r]) * (w or 1 + w); out may equal x */
cudaError_t launch_rmsnorm(void *out, const void *x, const void *w, int rows, int d, float eps, int plus_one,
                           cudaStream_t stream);
/* residual[r] += delta[r]; out[r] = rmsnorm(residual[r]) */
cudaError_t launch_add_rmsnorm(void *residual, const void *delta, void *out, const void *w, int rows, int d,
                               float eps, int plus_one, cudaStream_t stream);
/* residual += rmsnorm(delta; w_delta); out = rmsnorm(residual; w): the two ops in one kernel, bit for bit */
cudaError_t launch_add_normed_rmsnorm(void *residual, const void *delta, const void *w_delta, void *out,
                                      const void *w, int rows, int d, float eps, int plus_one, cudaStream_t stream);
/* The fold launchers above and below load the residual and weights before
 * waiting for the previous kernel where a row fits (norm.cu); tests turn
 * that off for later launches (0) to compare the two forms, and on again
 * (1 or -1). */
void cuda_norm_preload_set(int on);
/* add_rmsnorm / add_normed_rmsnorm of an f32 delta (a split model's summed
 * partial products), each element rounded to bf16 first: the same bits as
 * the bf16 launchers on the rounded delta. */
cudaError_t launch_add_rmsnorm_f32(void *residual, const float *delta, void *out, const void *w, int rows, int d,
                                   float eps, int plus_one, cudaStream_t stream);
cudaError_t launch_add_normed_rmsnorm_f32(void *residual, const float *delta, const void *w_delta, void *out,
                                          const void *w, int rows, int d, float eps, int plus_one,
                                          cudaStream_t stream);
/* Per-head q/k norm (q_norm NULL = none), RoPE at positions; q to q_out
 * (contiguous), k/v into the paged cache at slot_mapping (-1 skips). Input
 * rows have q_stride / kv_stride elements. Caches: [slots, n_kv, head_dim]. */
cudaError_t launch_qk_rope_kv_write(void *q_out, const void *q_in, const void *k_in, const void *v_in,
                                    int q_stride, int kv_stride, const int32_t *positions,
                                    const int32_t *slot_mapping, int n_tokens, int n_heads, int n_kv,
                                    int head_dim, const void *q_norm, const void *k_norm, float eps,
                                    int plus_one, const float *inv_freq, void *k_cache, void *v_cache,
                                    cudaStream_t stream);
/* out[r] = act(gate[r]) * up[r] for rows x cols (gate/up rows in_stride
 * apart, out contiguous); act 0 = SiLU, 1 = GELU-tanh */
cudaError_t launch_gated_act(void *out, const void *gate, const void *up, int rows, int cols, int in_stride,
                             int act, cudaStream_t stream);
/* out[i] = x[rows[i]], rows of d */
cudaError_t launch_gather_rows(void *out, const void *x, const int32_t *rows, int n, int d, cudaStream_t stream);
/* logits[i] = tanh(logits[i] / cap) * cap */
cudaError_t launch_softcap(float *logits, int64_t n, float cap, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
