// Per-token fused q/k-norm + RoPE + KV-cache write: q and k of a token (rows
// of a fused q|k|v projection, or separate buffers: strided inputs) are
// normalised per head (Qwen3 / Gemma 3 q_norm and k_norm), rotated in pairs
// (i, i + head_dim/2) at the token's position, and k, v go to the token's
// cache slot (slot_mapping -1: no write, e.g. padding).
//
// head_dim 64, 128, 256: one warp per head, so a decode step spreads over
// (heads / 4) blocks instead of one (a single block took 10-15 us for one
// token). Other head sizes: one block per token, heads staged in shared
// memory. Both round where the CPU twin does.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/rope_head.cuh"

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

// One warp a head (rope_head.cuh).
template <int R>
__global__ void qk_rope_kv_warp_kernel(bf16 *q_out, const bf16 *q_in, const bf16 *k_in, const bf16 *v_in,
                                       int q_stride, int kv_stride, const int32_t *positions,
                                       const int32_t *slot_mapping, int n_heads, int n_kv, const bf16 *q_norm,
                                       const bf16 *k_norm, float eps, int plus_one, const float *inv_freq,
                                       bf16 *k_cache, bf16 *v_cache)
{
    constexpr int HD = 32 * R;
    // Before the wait, what no kernel of this step writes: the position and
    // slot (copied in before the step), the norm weights, the sines and
    // cosines. Only q|k|v comes from the previous kernel (the projection).
    const int t = blockIdx.x, lane = threadIdx.x & 31;
    const int h = blockIdx.y * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const bool is_q = h < n_heads;
    const int kh = h - n_heads;
    float wv[R], sn[R / 2], cs[R / 2];
    int32_t slot = -1;
    if (h < n_heads + n_kv) {
        rope_weights<R>(wv, is_q ? q_norm : k_norm, lane);
        rope_angles<R>(sn, cs, (float)positions[t], inv_freq, lane);
        if (!is_q)
            slot = slot_mapping[t];
    }
    pdl_wait();
    pdl_launch_dependents();
    if (h >= n_heads + n_kv)
        return;
    const bf16 *src = is_q ? q_in + (int64_t)t * q_stride + (int64_t)h * HD
                           : k_in + (int64_t)t * kv_stride + (int64_t)kh * HD;
    // v's row with k's, not between the cache stores below: a load after a
    // store that may alias waits for its own round trip, one an element
    const int64_t v_row = (int64_t)t * kv_stride + (int64_t)kh * HD; // used only for a k head (slot >= 0)
    float x[R];
    bf16 vv[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        x[r] = to_f32(src[lane + 32 * r]);
        if (slot >= 0)
            vv[r] = v_in[v_row + lane + 32 * r];
    }
    rope_head<R>(x, q_norm != nullptr, wv, eps, plus_one, sn, cs);
    if (is_q) {
        bf16 *dst = q_out + ((int64_t)t * n_heads + h) * HD;
#pragma unroll
        for (int r = 0; r < R; r++)
            dst[lane + 32 * r] = to_bf16(x[r]);
        return;
    }
    if (slot < 0)
        return;
    const int64_t at = (int64_t)slot * n_kv * HD + (int64_t)kh * HD;
#pragma unroll
    for (int r = 0; r < R; r++) {
        k_cache[at + lane + 32 * r] = to_bf16(x[r]);
        v_cache[at + lane + 32 * r] = vv[r];
    }
}

template <int R>
static cudaError_t launch_warp_variant(void *q_out, const void *q_in, const void *k_in, const void *v_in,
                                       int q_stride, int kv_stride, const int32_t *positions,
                                       const int32_t *slot_mapping, int n_tokens, int n_heads, int n_kv,
                                       const void *q_norm, const void *k_norm, float eps, int plus_one,
                                       const float *inv_freq, void *k_cache, void *v_cache, cudaStream_t stream)
{
    const int warps = 4;
    dim3 grid((unsigned)n_tokens, (unsigned)((n_heads + n_kv + warps - 1) / warps));
    return launch_pdl(qk_rope_kv_warp_kernel<R>, grid, 32 * warps, 0, stream, (bf16 *)q_out, (const bf16 *)q_in,
                      (const bf16 *)k_in, (const bf16 *)v_in, q_stride, kv_stride, positions, slot_mapping, n_heads,
                      n_kv, (const bf16 *)q_norm, (const bf16 *)k_norm, eps, plus_one, inv_freq, (bf16 *)k_cache,
                      (bf16 *)v_cache);
}

extern "C" cudaError_t launch_qk_rope_kv_write(void *q_out, const void *q_in, const void *k_in, const void *v_in,
                                               int q_stride, int kv_stride, const int32_t *positions,
                                               const int32_t *slot_mapping, int n_tokens, int n_heads, int n_kv,
                                               int head_dim, const void *q_norm, const void *k_norm, float eps,
                                               int plus_one, const float *inv_freq, void *k_cache, void *v_cache,
                                               cudaStream_t stream)
{
    if (n_tokens <= 0)
        return cudaSuccess;
#define WARP_ARGS q_out, q_in, k_in, v_in, q_stride, kv_stride, positions, slot_mapping, n_tokens, n_heads, n_kv, \
                  q_norm, k_norm, eps, plus_one, inv_freq, k_cache, v_cache, stream
    switch (head_dim) {
    case 64: return launch_warp_variant<2>(WARP_ARGS);
    case 128: return launch_warp_variant<4>(WARP_ARGS);
    case 256: return launch_warp_variant<8>(WARP_ARGS);
    default: break;
    }
#undef WARP_ARGS
    size_t smem = (size_t)(n_heads + n_kv) * head_dim * sizeof(float);
    if (smem > 48 * 1024) {
        cudaError_t rc = cudaFuncSetAttribute(qk_rope_kv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)smem);
        if (rc != cudaSuccess)
            return rc;
    }
    return launch_pdl(qk_rope_kv_kernel, n_tokens, 256, smem, stream, (bf16 *)q_out, (const bf16 *)q_in,
                      (const bf16 *)k_in, (const bf16 *)v_in, q_stride, kv_stride, positions, slot_mapping, n_heads,
                      n_kv, head_dim, (const bf16 *)q_norm, (const bf16 *)k_norm, eps, plus_one, inv_freq,
                      (bf16 *)k_cache, (bf16 *)v_cache);
}
