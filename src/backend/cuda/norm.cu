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

template <int MODE, typename DeltaT = bf16>
__global__ void rmsnorm_kernel(bf16 *out, bf16 *residual, const bf16 *x, const DeltaT *delta, const bf16 *w,
                               const bf16 *wd, int d, float eps, int plus_one)
{
    extern __shared__ float row[]; // d floats
    pdl_wait();
    pdl_launch_dependents();
    int64_t base = (int64_t)blockIdx.x * d;
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
                      (const bf16 *)nullptr, d, eps, plus_one);
}

extern "C" cudaError_t launch_add_rmsnorm(void *residual, const void *delta, void *out, const void *w, int rows,
                                          int d, float eps, int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<1>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, (const bf16 *)delta, (const bf16 *)w,
                      (const bf16 *)nullptr, d, eps, plus_one);
}

extern "C" cudaError_t launch_add_normed_rmsnorm(void *residual, const void *delta, const void *w_delta, void *out,
                                                 const void *w, int rows, int d, float eps, int plus_one,
                                                 cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<2>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, (const bf16 *)delta, (const bf16 *)w,
                      (const bf16 *)w_delta, d, eps, plus_one);
}

extern "C" cudaError_t launch_add_rmsnorm_f32(void *residual, const float *delta, void *out, const void *w, int rows,
                                              int d, float eps, int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<1, float>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, delta, (const bf16 *)w, (const bf16 *)nullptr, d, eps,
                      plus_one);
}

extern "C" cudaError_t launch_add_normed_rmsnorm_f32(void *residual, const float *delta, const void *w_delta,
                                                     void *out, const void *w, int rows, int d, float eps,
                                                     int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<2, float>, rows, norm_threads(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, delta, (const bf16 *)w, (const bf16 *)w_delta, d, eps,
                      plus_one);
}
