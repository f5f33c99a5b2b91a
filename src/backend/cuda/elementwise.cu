// Small per-element and per-row kernels: embedding lookup, gated
// activations, row gather, logit soft-capping.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

__global__ void embed_kernel(bf16 *out, const int32_t *ids, const bf16 *table, int64_t vocab_lo, int64_t rows, int d,
                             float scale)
{
    int t = blockIdx.x;
    const int64_t row = ids[t] - vocab_lo;
    bf16 *dst = out + (int64_t)t * d;
    if (row < 0 || row >= rows) { // another rank's share of the vocabulary: its sum is the other rank's
        for (int i = threadIdx.x; i < d; i += blockDim.x)
            dst[i] = __float2bfloat16(0.f);
        return;
    }
    const bf16 *src = table + row * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        dst[i] = scale == 1.f ? src[i] : to_bf16(to_f32(src[i]) * scale);
}

extern "C" cudaError_t launch_embed(void *out, const int32_t *ids, int n_tokens, const void *table,
                                    int64_t vocab_lo, int64_t rows, int d, float scale, cudaStream_t stream)
{
    // The scale (Gemma's sqrt(hidden)) in f32, as the CPU backend (the oracle), llama.cpp and
    // transformers in f32 apply it. transformers in bf16 rounds it to bf16 first (25.25 for 25.30
    // at hidden 640), a 0.2% bias on every embedding that the CPU does not have (docs/testing.md).
    embed_kernel<<<n_tokens, 256, 0, stream>>>((bf16 *)out, ids, (const bf16 *)table, vocab_lo, rows, d, scale);
    return cudaGetLastError();
}

__device__ __forceinline__ float gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; // sqrt(2 / pi)
    return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}

__global__ void gated_act_kernel(bf16 *out, const bf16 *gate, const bf16 *up, int64_t n, int cols, int stride,
                                 int act)
{
    pdl_wait();
    pdl_launch_dependents();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t in = (i / cols) * stride + i % cols;
        float g = to_f32(gate[in]);
        float a = act == 0 ? g / (1.f + __expf(-g)) : gelu_tanh(g);
        out[i] = to_bf16(round_bf16(a) * to_f32(up[in]));
    }
}

static unsigned grid_for(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 65535 * 8 ? 65535 * 8 : (b < 1 ? 1 : b));
}

extern "C" cudaError_t launch_gated_act(void *out, const void *gate, const void *up, int rows, int cols,
                                        int in_stride, int act, cudaStream_t stream)
{
    int64_t n = (int64_t)rows * cols;
    if (n <= 0)
        return cudaSuccess;
    return launch_pdl(gated_act_kernel, grid_for(n, 256), 256, 0, stream, (bf16 *)out, (const bf16 *)gate,
                      (const bf16 *)up, n, cols, in_stride, act);
}

__global__ void gather_rows_kernel(bf16 *out, const bf16 *x, const int32_t *rows, int d)
{
    const bf16 *src = x + (int64_t)rows[blockIdx.x] * d;
    bf16 *dst = out + (int64_t)blockIdx.x * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        dst[i] = src[i];
}

extern "C" cudaError_t launch_gather_rows(void *out, const void *x, const int32_t *rows, int n, int d,
                                          cudaStream_t stream)
{
    if (n > 0)
        gather_rows_kernel<<<n, 256, 0, stream>>>((bf16 *)out, (const bf16 *)x, rows, d);
    return cudaGetLastError();
}

__global__ void softcap_kernel(float *x, int64_t n, float cap)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = tanhf(x[i] / cap) * cap;
}

extern "C" cudaError_t launch_softcap(float *logits, int64_t n, float cap, cudaStream_t stream)
{
    softcap_kernel<<<grid_for(n, 256), 256, 0, stream>>>(logits, n, cap);
    return cudaGetLastError();
}
