// RMSNorm and fused residual-add + RMSNorm, one block per row, math in f32.
// Rounding follows transformers' bf16 modules: the residual sum is rounded to
// bf16; Llama/Qwen3 round the normalised value before multiplying by w,
// Gemma multiplies by (1 + w) in f32 and rounds once.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

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

// MODE 0: out = norm(x); 1: residual += delta, out = norm(residual); 2 (Gemma's
// sandwich norms): residual += norm_wd(delta), out = norm(residual) — the
// normed delta rounded to bf16 as rmsnorm's output is, so that 2 gives
// exactly what mode 0 into a buffer and then mode 1 give, in one kernel.
template <int MODE>
__global__ void rmsnorm_kernel(bf16 *out, bf16 *residual, const bf16 *x, const bf16 *delta, const bf16 *w,
                               const bf16 *wd, int d, float eps, int plus_one)
{
    extern __shared__ float row[]; // d floats
    pdl_wait();
    pdl_launch_dependents();
    int64_t base = (int64_t)blockIdx.x * d;
    if (MODE == 2) { // row = bf16(norm_wd(delta)); each thread keeps its own elements
        float ss = 0.f;
        for (int i = threadIdx.x; i < d; i += blockDim.x) {
            float v = to_f32(delta[base + i]);
            row[i] = v;
            ss += v * v;
        }
        norm_row(row, ss, d, eps, wd, plus_one, nullptr);
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        float v;
        if (MODE >= 1) {
            v = round_bf16(to_f32(residual[base + i]) + (MODE == 2 ? row[i] : to_f32(delta[base + i])));
            residual[base + i] = to_bf16(v);
        } else {
            v = to_f32(x[base + i]);
        }
        row[i] = v;
        ss += v * v;
    }
    norm_row(row, ss, d, eps, w, plus_one, out + base);
}

static int threads_for(int d) { return d >= 1024 ? 1024 : ((d + 31) / 32) * 32; }

extern "C" cudaError_t launch_rmsnorm(void *out, const void *x, const void *w, int rows, int d, float eps,
                                      int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<0>, rows, threads_for(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)nullptr, (const bf16 *)x, (const bf16 *)nullptr, (const bf16 *)w,
                      (const bf16 *)nullptr, d, eps, plus_one);
}

extern "C" cudaError_t launch_add_rmsnorm(void *residual, const void *delta, void *out, const void *w, int rows,
                                          int d, float eps, int plus_one, cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<1>, rows, threads_for(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, (const bf16 *)delta, (const bf16 *)w,
                      (const bf16 *)nullptr, d, eps, plus_one);
}

extern "C" cudaError_t launch_add_normed_rmsnorm(void *residual, const void *delta, const void *w_delta, void *out,
                                                 const void *w, int rows, int d, float eps, int plus_one,
                                                 cudaStream_t stream)
{
    return launch_pdl(rmsnorm_kernel<2>, rows, threads_for(d), d * sizeof(float), stream, (bf16 *)out,
                      (bf16 *)residual, (const bf16 *)nullptr, (const bf16 *)delta, (const bf16 *)w,
                      (const bf16 *)w_delta, d, eps, plus_one);
}
