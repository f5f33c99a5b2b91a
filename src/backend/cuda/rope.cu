// Per-token fused q/k-norm + RoPE + KV-cache write. One block per token: q
// and k of the token (rows of a fused q|k|v projection, or separate
// buffers: strided inputs) are staged in shared memory as f32, each warp
// normalises whole heads (Qwen3 / Gemma 3 q_norm and k_norm), then every
// thread rotates pairs (i, i + head_dim/2) at the token's position, and k, v
// go to the token's cache slot (slot_mapping -1: no write, e.g. padding).
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

__global__ void qk_rope_kv_kernel(bf16 *q_out, const bf16 *q_in, const bf16 *k_in, const bf16 *v_in, int q_stride,
                                  int kv_stride, const int32_t *positions, const int32_t *slot_mapping, int n_heads,
                                  int n_kv, int hd, const bf16 *q_norm, const bf16 *k_norm, float eps, int plus_one,
                                  const float *inv_freq, bf16 *k_cache, bf16 *v_cache)
{
    extern __shared__ float sm[]; // (n_heads + n_kv) * hd
    pdl_wait();
    pdl_launch_dependents();
    const int t = blockIdx.x, total = (n_heads + n_kv) * hd, half = hd / 2;
    const bf16 *qt = q_in + (int64_t)t * q_stride, *kt = k_in + (int64_t)t * kv_stride;
    for (int i = threadIdx.x; i < total; i += blockDim.x)
        sm[i] = to_f32(i < n_heads * hd ? qt[i] : kt[i - n_heads * hd]);
    __syncthreads();
    if (q_norm) {
        int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
        for (int h = warp; h < n_heads + n_kv; h += n_warps) {
            float *x = sm + h * hd;
            const bf16 *w = h < n_heads ? q_norm : k_norm;
            float ss = 0.f;
            for (int i = lane; i < hd; i += 32)
                ss += x[i] * x[i];
            float inv = rsqrtf(warp_sum(ss) / hd + eps);
            for (int i = lane; i < hd; i += 32) {
                float y = x[i] * inv, wi = to_f32(w[i]);
                x[i] = round_bf16(plus_one ? y * (1.f + wi) : wi * round_bf16(y));
            }
        }
        __syncthreads();
    }
    const float pos = (float)positions[t];
    for (int p = threadIdx.x; p < (n_heads + n_kv) * half; p += blockDim.x) {
        int h = p / half, i = p % half;
        float s, c;
        sincosf(pos * inv_freq[i], &s, &c);
        float *x = sm + h * hd;
        float a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
    __syncthreads();
    const int32_t slot = slot_mapping[t];
    const int64_t kv_row = (int64_t)n_kv * hd;
    bf16 *qo = q_out + (int64_t)t * n_heads * hd;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
        bf16 val = to_bf16(sm[i]);
        if (i < n_heads * hd) {
            qo[i] = val;
        } else if (slot >= 0) {
            int j = i - n_heads * hd;
            k_cache[slot * kv_row + j] = val;
            v_cache[slot * kv_row + j] = v_in[(int64_t)t * kv_stride + j];
        }
    }
}

extern "C" cudaError_t launch_qk_rope_kv_write(void *q_out, const void *q_in, const void *k_in, const void *v_in,
                                               int q_stride, int kv_stride, const int32_t *positions,
                                               const int32_t *slot_mapping, int n_tokens, int n_heads, int n_kv,
                                               int head_dim, const void *q_norm, const void *k_norm, float eps,
                                               int plus_one, const float *inv_freq, void *k_cache, void *v_cache,
                                               cudaStream_t stream)
{
    size_t smem = (size_t)(n_heads + n_kv) * head_dim * sizeof(float);
    if (smem > 48 * 1024) {
        cudaError_t rc = cudaFuncSetAttribute(qk_rope_kv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)smem);
        if (rc != cudaSuccess)
            return rc;
    }
    if (n_tokens <= 0)
        return cudaSuccess;
    return launch_pdl(qk_rope_kv_kernel, n_tokens, 256, smem, stream, (bf16 *)q_out, (const bf16 *)q_in,
                      (const bf16 *)k_in, (const bf16 *)v_in, q_stride, kv_stride, positions, slot_mapping, n_heads,
                      n_kv, head_dim, (const bf16 *)q_norm, (const bf16 *)k_norm, eps, plus_one, inv_freq,
                      (bf16 *)k_cache, (bf16 *)v_cache);
}
