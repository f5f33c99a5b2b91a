// The logits' gather over CUDA IPC (logits_gather.h).
#include "backend/cuda/common.cuh"
#include "backend/cuda/lamport.cuh"
#include "backend/cuda/logits_gather.h"

namespace
{

constexpr int LG_THREADS = 512;

struct lg_args {
    lg_sync *sync[AR_MAX_RANKS];
    float *landing;
    int rank, size;
};

// Peer `rank`'s part of the landing: rows x cols floats after rank - 1 others.
__device__ __forceinline__ uint4 *part_of(float *landing, int rank, size_t n)
{
    return reinterpret_cast<uint4 *>(landing + (size_t)(rank - 1) * n);
}

__device__ __forceinline__ uint32_t load_acquire(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_release(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// A peer's push of its call k waits until rank 0 has placed call k - 1.
// Every block counts every call (count_call), so each knows k.
__global__ void __launch_bounds__(LG_THREADS) lg_push_kernel(lg_args g, const float *in, size_t n)
{
    lg_sync *s = g.sync[g.rank];
    const uint32_t call = count_call(s->epoch, LG_MAX_BLOCKS);
    if (threadIdx.x == 0)
        while (load_acquire(&s->done) < call - 1)
            ;
    __syncthreads();
    pdl_wait(); // in is the LM head's output
    pdl_launch_dependents();
    uint4 *dst = part_of(g.landing, g.rank, n);
    const uint4 *src = reinterpret_cast<const uint4 *>(in);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n / 4;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = push_word(src[i]);
}

// Thread i takes vector c of row `row` of every rank: its own from in, the
// peers' polls all in flight before the first wait. The last block to
// finish tells the peers the call is placed (its emptied landing too: every
// block's stores are ordered before its count by the fence, and the count
// before the signal).
__global__ void __launch_bounds__(LG_THREADS)
    lg_place_kernel(lg_args g, float *out, const float *in, int rows, int cols)
{
    pdl_wait(); // in is the LM head's output
    pdl_launch_dependents();
    const int size = g.size;
    const size_t cv = (size_t)cols / 4, n = (size_t)rows * cols;
    const uint4 *src = reinterpret_cast<const uint4 *>(in);
    uint4 *dst = reinterpret_cast<uint4 *>(out);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)rows * cv;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / cv, c = i % cv, out_row = row * (size_t)size * cv;
        uint4 v[AR_MAX_RANKS];
#pragma unroll
        for (int r = 1; r < AR_MAX_RANKS; r++)
            if (r < size)
                v[r] = await_first(part_of(g.landing, r, n) + i);
        dst[out_row + c] = src[i];
#pragma unroll
        for (int r = 1; r < AR_MAX_RANKS; r++)
            if (r < size)
                dst[out_row + (size_t)r * cv + c] = take_vec(part_of(g.landing, r, n) + i, v[r]);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        lg_sync *s = g.sync[0];
        __threadfence();
        if (atomicAdd(&s->blocks_done, 1u) == gridDim.x - 1) {
            s->blocks_done = 0;
            const uint32_t call = ++s->calls;
            __threadfence_system();
            for (int r = 1; r < size; r++)
                store_release(&g.sync[r]->done, call);
        }
    }
}

unsigned blocks_for(size_t vecs)
{
    const size_t need = (vecs + LG_THREADS - 1) / LG_THREADS;
    return need < 1 ? 1u : need < LG_MAX_BLOCKS ? (unsigned)need : (unsigned)LG_MAX_BLOCKS;
}

int args_of(const struct lg_group *g, lg_args *a)
{
    if (g->size < 2 || g->size > AR_MAX_RANKS || g->rank < 0 || g->rank >= g->size || !g->landing ||
        ((uintptr_t)g->landing & 15))
        return -1;
    *a = lg_args{};
    for (int r = 0; r < g->size; r++)
        a->sync[r] = g->sync[r];
    a->landing = g->landing;
    a->rank = g->rank;
    a->size = g->size;
    return 0;
}

} // namespace

extern "C" int lg_fits(int size, int rows, int cols, size_t landing_bytes)
{
    return size >= 2 && size <= AR_MAX_RANKS && rows >= 1 && cols >= 4 && cols % 4 == 0 &&
           (size_t)(size - 1) * (size_t)rows * (size_t)cols * sizeof(float) <= landing_bytes;
}

extern "C" cudaError_t launch_lg_push(const struct lg_group *g, const float *in, int rows, int cols,
                                      cudaStream_t stream)
{
    lg_args a;
    if (args_of(g, &a) || g->rank < 1 || !lg_fits(g->size, rows, cols, (size_t)-1) || ((uintptr_t)in & 15))
        return cudaErrorInvalidValue;
    const size_t n = (size_t)rows * cols;
    return launch_pdl(lg_push_kernel, blocks_for(n / 4), LG_THREADS, 0, stream, a, in, n);
}

extern "C" cudaError_t launch_lg_place(const struct lg_group *g, float *out, const float *in, int rows,
                                       int cols, cudaStream_t stream)
{
    lg_args a;
    if (args_of(g, &a) || g->rank != 0 || !lg_fits(g->size, rows, cols, (size_t)-1) || ((uintptr_t)in & 15) ||
        ((uintptr_t)out & 15))
        return cudaErrorInvalidValue;
    return launch_pdl(lg_place_kernel, blocks_for((size_t)rows * cols / 4), LG_THREADS, 0, stream, a, out, in,
                      rows, cols);
}

extern "C" cudaError_t lg_load_kernels(void)
{
    cudaFuncAttributes attr;
    cudaError_t rc = cudaFuncGetAttributes(&attr, lg_push_kernel);
    return rc == cudaSuccess ? cudaFuncGetAttributes(&attr, lg_place_kernel) : rc;
}
