// RMSNorm of one row by one block, math in f32, for the norm kernels
// (norm.cu): the plain norm and the folds, which round exactly alike
// through these helpers. Rounding follows
// transformers' bf16 modules: the residual sum is rounded to bf16;
// Llama/Qwen3 round the normalised value before multiplying by w, Gemma
// multiplies by (1 + w) in f32 and rounds once.
#pragma once

#include "backend/cuda/common.cuh"

// Normalises the block's row (row[] its f32 values, ss this thread's share
// of their squares): bf16 of (plus_one ? y * (1 + w) : w * bf16(y)), y = row
// / rms, written to out, or (out NULL) back into row as bf16-rounded floats.
__device__ __forceinline__ void norm_row(float *row, float ss, int d, float eps, const bf16 *w, int plus_one,
                                         bf16 *out)
{
    ss = block_sum(ss);
    float inv = rsqrtf(ss / d + eps);
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        float y = row[i] * inv, wi = to_f32(w[i]);
        float o = plus_one ? y * (1.f + wi) : wi * round_bf16(y);
        if (out)
            out[i] = to_bf16(o);
        else
            row[i] = round_bf16(o);
    }
}

// row[] holds a sub-block's output (bf16 values as f32; scratch after):
// SANDWICH (Gemma) first normalises it with wd, rounded to bf16; then
// residual += row (rounded to bf16), out = norm(residual; w). Each thread
// touches elements threadIdx.x + k * blockDim.x only, before and after.
template <bool SANDWICH>
__device__ __forceinline__ void fold_row(bf16 *out, bf16 *residual, float *row, const bf16 *w, const bf16 *wd, int d,
                                         float eps, int plus_one)
{
    if (SANDWICH) {
        float ss = 0.f;
        for (int i = threadIdx.x; i < d; i += blockDim.x)
            ss += row[i] * row[i];
        norm_row(row, ss, d, eps, wd, plus_one, nullptr);
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        float v = round_bf16(to_f32(residual[i]) + row[i]);
        residual[i] = to_bf16(v);
        row[i] = v;
        ss += v * v;
    }
    norm_row(row, ss, d, eps, w, plus_one, out);
}

// The fold on a row held in registers (rows of d <= NORM_PRE * blockDim.x):
// element i = threadIdx.x + e * blockDim.x in slot e. fold_row's arithmetic
// in the same order, so the same bits; its inputs that do not come from the
// previous kernel (residual, weights) can be loaded before waiting for it.
#define NORM_PRE 4

template <bool SANDWICH>
__device__ __forceinline__ void fold_load_inputs(float (&r)[NORM_PRE], float (&wv)[NORM_PRE], float (&wdv)[NORM_PRE],
                                                 const bf16 *residual, const bf16 *w, const bf16 *wd, int d)
{
#pragma unroll
    for (int e = 0; e < NORM_PRE; e++) {
        const int i = threadIdx.x + e * blockDim.x;
        const bool ok = i < d;
        r[e] = ok ? to_f32(residual[i]) : 0.f;
        wv[e] = ok ? to_f32(w[i]) : 0.f;
        wdv[e] = SANDWICH && ok ? to_f32(wd[i]) : 0.f;
    }
}

// v: the delta (bf16 values as f32; 0 past d); writes residual and out.
template <bool SANDWICH>
__device__ __forceinline__ void fold_regs(bf16 *out, bf16 *residual, float (&v)[NORM_PRE], const float (&r)[NORM_PRE],
                                          const float (&wv)[NORM_PRE], const float (&wdv)[NORM_PRE], int d, float eps,
                                          int plus_one)
{
    if (SANDWICH) { // norm_row(row, ss, d, eps, wd, plus_one, nullptr)
        float ss = 0.f;
#pragma unroll
        for (int e = 0; e < NORM_PRE; e++)
            if (threadIdx.x + e * blockDim.x < d)
                ss += v[e] * v[e];
        ss = block_sum(ss);
        const float inv = rsqrtf(ss / d + eps);
#pragma unroll
        for (int e = 0; e < NORM_PRE; e++) {
            const float y = v[e] * inv;
            v[e] = round_bf16(plus_one ? y * (1.f + wdv[e]) : wdv[e] * round_bf16(y));
        }
    }
    float ss = 0.f;
#pragma unroll
    for (int e = 0; e < NORM_PRE; e++) {
        const int i = threadIdx.x + e * blockDim.x;
        if (i < d) {
            const float x = round_bf16(r[e] + v[e]);
            residual[i] = to_bf16(x);
            v[e] = x;
            ss += x * x;
        }
    }
    ss = block_sum(ss);
    const float inv = rsqrtf(ss / d + eps);
#pragma unroll
    for (int e = 0; e < NORM_PRE; e++) {
        const int i = threadIdx.x + e * blockDim.x;
        if (i < d) {
            const float y = v[e] * inv;
            out[i] = to_bf16(plus_one ? y * (1.f + wv[e]) : wv[e] * round_bf16(y));
        }
    }
}

// Threads of a norm block for rows of d: the split of each row's sum of
// squares over threads, which the rounding of rsqrt's input depends on.
static inline int norm_threads(int d) { return d >= 1024 ? 1024 : ((d + 31) / 32) * 32; }
