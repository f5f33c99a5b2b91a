// Per-head q/k-norm + RoPE of one token on one warp, R = head_dim / 32 values
// a lane: element lane + 32 r in slot r, so the pair (i, i + head_dim / 2) of
// slot r is slot r + R / 2 and the rotation stays in registers. Shared by the
// RoPE kernel (rope.cu) and the decode attention that does RoPE itself
// (attention_decode.cu), so both give the same bits.
#pragma once

#include "backend/cuda/common.cuh"

// The norm weights of this lane's slots (0 without a norm).
template <int R> __device__ __forceinline__ void rope_weights(float (&wv)[R], const bf16 *w, int lane)
{
#pragma unroll
    for (int r = 0; r < R; r++)
        wv[r] = w ? to_f32(w[lane + 32 * r]) : 0.f;
}

// The sines and cosines of this lane's pairs at position pos.
template <int R>
__device__ __forceinline__ void rope_angles(float (&sn)[R / 2], float (&cs)[R / 2], float pos, const float *inv_freq,
                                            int lane)
{
#pragma unroll
    for (int r = 0; r < R / 2; r++)
        sincosf(pos * inv_freq[lane + 32 * r], &sn[r], &cs[r]);
}

// x: the head's values; norm: RMSNorm with wv first (transformers' rounding:
// plus_one ? y * (1 + w) : w * bf16(y), then bf16), then the rotation.
template <int R>
__device__ __forceinline__ void rope_head(float (&x)[R], bool norm, const float (&wv)[R], float eps, int plus_one,
                                          const float (&sn)[R / 2], const float (&cs)[R / 2])
{
    constexpr int HD = 32 * R;
    if (norm) {
        float ss = 0.f;
#pragma unroll
        for (int r = 0; r < R; r++)
            ss += x[r] * x[r];
        float inv = rsqrtf(warp_sum(ss) / HD + eps);
#pragma unroll
        for (int r = 0; r < R; r++) {
            float y = x[r] * inv, wi = wv[r];
            x[r] = round_bf16(plus_one ? y * (1.f + wi) : wi * round_bf16(y));
        }
    }
#pragma unroll
    for (int r = 0; r < R / 2; r++) {
        float a = x[r], b = x[r + R / 2];
        x[r] = a * cs[r] - b * sn[r];
        x[r + R / 2] = b * cs[r] + a * sn[r];
    }
}
