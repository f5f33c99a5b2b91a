// The one-shot all-reduce over CUDA IPC buffers (allreduce.h).
//
// Block b of every rank copies its share of the elements (the same share on
// every rank: a fixed grid, a grid-stride loop) into its rank's buffer, then
// meets block b of each peer at a flag barrier, then reads that share from
// every rank's buffer and adds it up. Only blocks with elements take part in
// the barrier; every block counts the call, so all blocks agree which half
// of the buffer a call uses.
#include "backend/cuda/allreduce.h"
#include "backend/cuda/common.cuh"

namespace {

constexpr size_t signal_bytes() { return (sizeof(ar_signal) + 255) / 256 * 256; }

struct ar_args {
    char *buf[AR_MAX_RANKS];
    int rank, size;
    size_t half;
};

__device__ __forceinline__ void store_release(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t load_acquire(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void add8(float (&acc)[8], uint4 v)
{
    const bf16 *h = reinterpret_cast<const bf16 *>(&v);
#pragma unroll
    for (int k = 0; k < 8; k++)
        acc[k] += to_f32(h[k]);
}

__device__ __forceinline__ uint4 pack8(const float (&acc)[8])
{
    uint4 v;
    bf16 *h = reinterpret_cast<bf16 *>(&v);
#pragma unroll
    for (int k = 0; k < 8; k++)
        h[k] = to_bf16(acc[k]);
    return v;
}

__global__ void __launch_bounds__(AR_THREADS) ar_one_shot_kernel(ar_args g, bf16 *out, const bf16 *in, size_t n)
{
    ar_signal *self = reinterpret_cast<ar_signal *>(g.buf[g.rank]);
    __shared__ uint32_t epoch;
    if (threadIdx.x == 0)
        epoch = ++self->epoch[blockIdx.x];
    __syncthreads();
    const size_t n_vec = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool tail = blockIdx.x == 0 && n % 8; // block 0 also takes the last n % 8 elements
    if ((size_t)blockIdx.x * blockDim.x >= n_vec && !tail)
        return; // no elements: nobody waits for this block
    const size_t data = signal_bytes() + (epoch & 1) * g.half;

    bf16 *mine = reinterpret_cast<bf16 *>(g.buf[g.rank] + data);
    for (size_t i = first; i < n_vec; i += stride)
        reinterpret_cast<uint4 *>(mine)[i] = reinterpret_cast<const uint4 *>(in)[i];
    if (tail)
        for (size_t i = n_vec * 8 + threadIdx.x; i < n; i += blockDim.x)
            mine[i] = in[i];
    __syncthreads();
    if (threadIdx.x < (unsigned)g.size) { // thread r signals peer r and waits for it
        ar_signal *peer = reinterpret_cast<ar_signal *>(g.buf[threadIdx.x]);
        __threadfence_system();
        store_release(&peer->arrived[blockIdx.x][g.rank], epoch);
        while ((int32_t)(load_acquire(&self->arrived[blockIdx.x][threadIdx.x]) - epoch) < 0) {
        }
    }
    __syncthreads();

    for (size_t i = first; i < n_vec; i += stride) {
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int r = 0; r < g.size; r++)
            add8(acc, __ldcg(reinterpret_cast<const uint4 *>(g.buf[r] + data) + i));
        reinterpret_cast<uint4 *>(out)[i] = pack8(acc);
    }
    if (tail)
        for (size_t i = n_vec * 8 + threadIdx.x; i < n; i += blockDim.x) {
            float acc = 0;
            for (int r = 0; r < g.size; r++)
                acc += to_f32(reinterpret_cast<const bf16 *>(g.buf[r] + data)[i]);
            out[i] = to_bf16(acc);
        }
}

__global__ void ar_sum_parts_kernel(bf16 *out, const bf16 *parts, int size, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float acc = 0;
        for (int r = 0; r < size; r++)
            acc += to_f32(parts[(size_t)r * n + i]);
        out[i] = to_bf16(acc);
    }
}

} // namespace

extern "C" size_t ar_buffer_bytes(size_t half_bytes) { return signal_bytes() + 2 * half_bytes; }

extern "C" cudaError_t launch_ar_one_shot(const struct ar_group *g, void *out, const void *in, size_t n,
                                          cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    if (g->size < 1 || g->size > AR_MAX_RANKS || n * sizeof(bf16) > g->half_bytes || ((uintptr_t)in & 15) ||
        ((uintptr_t)out & 15))
        return cudaErrorInvalidValue;
    ar_args a = {};
    for (int r = 0; r < g->size; r++)
        a.buf[r] = g->buf[r];
    a.rank = g->rank;
    a.size = g->size;
    a.half = g->half_bytes;
    ar_one_shot_kernel<<<AR_BLOCKS, AR_THREADS, 0, stream>>>(a, static_cast<bf16 *>(out),
                                                             static_cast<const bf16 *>(in), n);
    return cudaGetLastError();
}

extern "C" cudaError_t launch_ar_sum_parts(void *out, const void *parts, int size, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    const unsigned blocks = (unsigned)((n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024);
    ar_sum_parts_kernel<<<blocks, 256, 0, stream>>>(static_cast<bf16 *>(out), static_cast<const bf16 *>(parts),
                                                   size, n);
    return cudaGetLastError();
}
