// RMSNorm and fused residual-add + RMSNorm, one block per row (norm_row.cuh).
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/norm_row.cuh"

// MODE 0: out = norm(x); 1: residual += delta, out = norm(residual); 2 (Gemma's
// sandwich norms): residual += norm_wd(delta), out = norm(residual) — the
// normed delta rounded to bf16 as rmsnorm's output is, so that 2 gives
// exactly what mode 0 into a buffer and then mode 1 give, in one kernel.
// The delta as the f32 value of a bf16: an f32 delta (a split model's summed
// partial products) is rounded to bf16 first, as one GPU's projection is.
__device__ __forceinline__ float delta_value(bf16 x) { return to_f32(x); }
__device__ __forceinline__ float delta_value(float x) { return round_bf16(x); }

// The preloaded fold (modes 1 and 2, rows of d <= NORM_PRE * blockDim.x):
// fold_row's arithmetic, in the same order, on a row held in registers,
// with the residual and the weights loaded before waiting for the previous
// kernel. That is safe because the previous kernel writes only delta (the
// projection, or the sum over ranks); the residual stream was last written
// by an earlier fold, which completed before the previous kernel got past
// its own wait. So one dependent load (delta) is left after the wait
// instead of three (delta, residual, w): ~1 us less a norm at batch 1.
static int norm_preload = 1; // tests turn it off (cuda_norm_preload_set) to compare the two forms

extern "C" void cuda_norm_preload_set(int on) { norm_preload = on != 0; }

template <bool SANDWICH, typename DeltaT>
__device__ __forceinline__ void fold_preloaded(bf16 *out, bf16 *residual, const DeltaT *delta, const bf16 *w,
                                               const bf16 *wd, int d, float eps, int plus_one)
{
    float r[NORM_PRE], wv[NORM_PRE], wdv[NORM_PRE], v[NORM_PRE];
    fold_load_inputs<SANDWICH>(r, wv, wdv, residual, w, wd, d);
    pdl_wait(); // delta is the previous kernel's output
    pdl_launch_dependents();
#pragma unroll
    for (int e = 0; e < NORM_PRE; e++) {
        const int i = threadIdx.x + e * blockDim.x;
        v[e] = i < d ? delta_value(delta[i]) : 0.f;
    }
    fold_regs<SANDWICH>(out, residual, v, r, wv, wdv, d, eps, plus_one);
}

template <int MODE, typename DeltaT = bf16>
__global__ void rmsnorm_kernel(bf16 *out, bf16 *residual, const bf16 *x, const DeltaT *delta, const bf16 *w,
                               const bf16 *wd, int d, float eps, int plus_one, int preload)
{
    extern __shared__ float row[]; // d floats
    int64_t base = (int64_t)blockIdx.x * d;
    if constexpr (MODE != 0) {
        if (preload) {
            fold_preloaded<MODE == 2>(out + base, residual + base, delta + base, w, wd, d, eps, plus_one);
            return;
        }
    }
    pdl_wait();
    pdl_launch_dependents();
    if constexpr (MODE == 0) {
        float ss = 0.f;
        for (int i = threadIdx.x; i < d; i += blockDim.x) {
            float v = to_f32(x[base + i]);
            row[i] = v;
            ss += v * v;
        }
        norm_row(row, ss, d, eps, w, plus_one, out + base);
    } else {
        for (int i = threadIdx.x; i < d; i += blockDim.x)
            row[i] = delta_value(delta[base + i]);
        fold_row<MODE == 2>(out + base, residual + base, row, w, wd, d, eps, plus_one);
    }
}

extern "C" cudaError_t launch_rmsnorm(void *out, const void *x, const void *w, int rows, int d, float eps,
                                      int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<0>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)nullptr, (const bf16 *)x, (const bf16 *)nullptr, (const bf16 *)w,
                      (const bf16 *)nullptr, d, eps, plus_one, 0);
}

// The preloaded fold where the row fits the registers (and it is on).
static int cuda_fold_preloads(int d) { return d <= NORM_PRE * norm_threads(d) && norm_preload; }

extern "C" cudaError_t launch_add_rmsnorm(void *residual, const void *delta, void *out, const void *w, int rows,
                                          int d, float eps, int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<1>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, (const bf16 *)delta, (const bf16 *)w,
                      (const bf16 *)nullptr, d, eps, plus_one, cuda_fold_preloads(d));
}

extern "C" cudaError_t launch_add_normed_rmsnorm(void *residual, const void *delta, const void *w_delta, void *out,
                                                 const void *w, int rows, int d, float eps, int plus_one,
                                                 cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<2>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, (const bf16 *)delta, (const bf16 *)w,
                      (const bf16 *)w_delta, d, eps, plus_one, cuda_fold_preloads(d));
}

extern "C" cudaError_t launch_add_rmsnorm_f32(void *residual, const float *delta, void *out, const void *w, int rows,
                                              int d, float eps, int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<1, float>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, delta, (const bf16 *)w, (const bf16 *)nullptr, d, eps,
                      plus_one, cuda_fold_preloads(d));
}

extern "C" cudaError_t launch_add_normed_rmsnorm_f32(void *residual, const float *delta, const void *w_delta,
                                                     void *out, const void *w, int rows, int d, float eps,
                                                     int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<2, float>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, delta, (const bf16 *)w, (const bf16 *)w_delta, d, eps,
                      plus_one, cuda_fold_preloads(d));
}
