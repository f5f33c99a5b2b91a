// The one-shot all-reduce over CUDA IPC buffers (allreduce.h).
//
// Push, then sum locally, with no flags (the Lamport scheme of TensorRT-LLM's
// low-latency all-reduce): an empty slot holds AR_EMPTY in every 32-bit word,
// block b of every rank writes its share of the elements (the same share on
// every rank: a grid set by the message size, a grid-stride loop) into slot
// `rank` of each peer's buffer, and each thread polls the words it will add in its own
// buffer until none is AR_EMPTY, adds its own value and the peers' in rank
// order, and writes AR_EMPTY back. One crossing of the link a call, where a
// flag barrier needs the data's, a fence's round trip and the flag's.
//
// Why a slot is empty again before a peer writes it: consecutive calls
// alternate halves, so a peer writes this half next two calls on, after it
// has this rank's data of the call between, which this rank sends after
// this kernel has ended (every kernel waits for the one before, PDL
// included), its clearing stores done. Data that looks like AR_EMPTY is sent
// as -0.0 instead (push_word): a negative f32 denormal, or two bf16 -0.0s of
// which the first becomes +0.0, so a sum can differ from the exact rank-order
// sum in the sign of a zero at most; every rank adds the same values, so the
// ranks agree bit for bit. Messages are bf16 or f32, summed in f32.
#include "backend/cuda/allreduce.h"
#include "backend/cuda/common.cuh"
#include "backend/cuda/lamport.cuh"

namespace {

constexpr size_t signal_bytes() { return (sizeof(ar_signal) + 255) / 256 * 256; }
constexpr uint32_t EMPTY = AR_EMPTY;

struct ar_args {
    char *buf[AR_MAX_RANKS];
    int rank, size;
    size_t half, slot; // bytes of a half, of one rank's slot in it
};

// Counts this block's call; every thread gets its number. Every block's
// count stays the same (count_call), so consecutive calls alternate halves
// wherever their elements fall.
__device__ __forceinline__ uint32_t begin_call(const ar_args &g)
{
    __shared__ uint32_t epoch;
    ar_signal *s = reinterpret_cast<ar_signal *>(g.buf[g.rank]);
    const uint32_t mine = count_call(s->epoch, AR_BLOCKS);
    if (threadIdx.x == 0)
        epoch = mine;
    __syncthreads();
    return epoch;
}

// Rank r's slot of the call's half, in buffer `of`.
__device__ __forceinline__ char *slot(const ar_args &g, int of, uint32_t epoch, int r)
{
    return g.buf[of] + signal_bytes() + (epoch & 1) * g.half + (size_t)r * g.slot;
}

// The scalar forms, for the tail of a message that is not whole vectors: a
// bf16 element's empty value is AR_EMPTY's half, 0x8000 (-0.0).
__device__ __forceinline__ float push_scalar(float x)
{
    return __uint_as_float(push_word(__float_as_uint(x)));
}
__device__ __forceinline__ bf16 push_scalar(bf16 x)
{
    const uint16_t u = __bfloat16_as_ushort(x);
    return __ushort_as_bfloat16(u == 0x8000u ? 0 : u);
}
__device__ __forceinline__ bool arrived_scalar(float x) { return __float_as_uint(x) != EMPTY; }
__device__ __forceinline__ bool arrived_scalar(bf16 x) { return __bfloat16_as_ushort(x) != 0x8000u; }
__device__ __forceinline__ float load_volatile(const float *p) { return *reinterpret_cast<const volatile float *>(p); }
__device__ __forceinline__ bf16 load_volatile(const bf16 *p)
{
    return __ushort_as_bfloat16(*reinterpret_cast<const volatile unsigned short *>(p));
}
template <typename T> __device__ __forceinline__ T empty_scalar();
template <> __device__ __forceinline__ float empty_scalar<float>() { return __uint_as_float(EMPTY); }
template <> __device__ __forceinline__ bf16 empty_scalar<bf16>() { return __ushort_as_bfloat16(0x8000u); }

// Elements of T in a 16-byte vector, and T to and from f32.
template <typename T> constexpr int per_vec() { return (int)(16 / sizeof(T)); }
__device__ __forceinline__ float as_f32(bf16 x) { return to_f32(x); }
__device__ __forceinline__ float as_f32(float x) { return x; }
template <typename T> __device__ __forceinline__ T of_f32(float x);
template <> __device__ __forceinline__ bf16 of_f32<bf16>(float x) { return to_bf16(x); }
template <> __device__ __forceinline__ float of_f32<float>(float x) { return x; }

// Vector i of this rank's message into its slot of every peer's buffer
// (its own is read from src again when summing).
__device__ __forceinline__ void push_vec(const ar_args &g, uint32_t epoch, const void *src, size_t i)
{
    const uint4 v = push_word(reinterpret_cast<const uint4 *>(src)[i]);
    for (int r = 0; r < g.size; r++)
        if (r != g.rank)
            reinterpret_cast<uint4 *>(slot(g, r, epoch, g.rank))[i] = v;
}

template <typename T> __device__ __forceinline__ void push1(const ar_args &g, uint32_t epoch, const T *src, size_t i)
{
    const T v = push_scalar(src[i]);
    for (int r = 0; r < g.size; r++)
        if (r != g.rank)
            reinterpret_cast<T *>(slot(g, r, epoch, g.rank))[i] = v;
}

// The rank-order f32 sums of vector i's elements: this rank's from src, as
// pushed, the peers' from this rank's buffer once there; their slots are
// emptied for the call after next.
template <typename T>
__device__ __forceinline__ void sum_vec(const ar_args &g, uint32_t epoch, const void *src, size_t i, float *acc)
{
    uint4 v[AR_MAX_RANKS];
    const uint4 *p[AR_MAX_RANKS];
#pragma unroll
    for (int r = 0; r < AR_MAX_RANKS; r++) // every load in flight before the first wait
        if (r < g.size) {
            p[r] = reinterpret_cast<const uint4 *>(slot(g, g.rank, epoch, r)) + i;
            v[r] = r == g.rank ? push_word(reinterpret_cast<const uint4 *>(src)[i]) : await_first(p[r]);
        }
#pragma unroll
    for (int r = 0; r < AR_MAX_RANKS; r++)
        if (r < g.size && r != g.rank)
            v[r] = take_vec(const_cast<uint4 *>(p[r]), v[r]);
#pragma unroll
    for (int k = 0; k < per_vec<T>(); k++)
        acc[k] = 0.f;
#pragma unroll
    for (int r = 0; r < AR_MAX_RANKS; r++)
        if (r < g.size) {
            const T *h = reinterpret_cast<const T *>(&v[r]);
#pragma unroll
            for (int k = 0; k < per_vec<T>(); k++)
                acc[k] += as_f32(h[k]);
        }
}

template <typename T> __device__ __forceinline__ float sum1(const ar_args &g, uint32_t epoch, const T *src, size_t i)
{
    float acc = 0;
    for (int r = 0; r < g.size; r++) {
        if (r == g.rank) {
            acc += as_f32(push_scalar(src[i]));
            continue;
        }
        T *p = reinterpret_cast<T *>(slot(g, g.rank, epoch, r)) + i;
        T x;
        do
            x = load_volatile(p);
        while (!arrived_scalar(x));
        *p = empty_scalar<T>();
        acc += as_f32(x);
    }
    return acc;
}

template <typename T>
__global__ void __launch_bounds__(AR_THREADS) ar_one_shot_kernel(ar_args g, T *out, const T *in, size_t n)
{
    constexpr int V = per_vec<T>();
    const uint32_t epoch = begin_call(g);
    pdl_wait(); // in is the previous kernel's output (common.cuh: PDL)
    const size_t n_vec = n / V, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool tail = blockIdx.x == 0 && n % V; // block 0 also takes the last n % V elements
    if ((size_t)blockIdx.x * blockDim.x >= n_vec && !tail)
        return; // no elements
    for (size_t i = first; i < n_vec; i += stride)
        push_vec(g, epoch, in, i);
    if (tail)
        for (size_t i = n_vec * V + threadIdx.x; i < n; i += blockDim.x)
            push1(g, epoch, in, i);
    pdl_launch_dependents(); // the next kernel may load its weights while this one waits and sums
    for (size_t i = first; i < n_vec; i += stride) { // in[i] is read before out[i] is written (out may be in)
        float acc[V];
        sum_vec<T>(g, epoch, in, i, acc);
        uint4 o;
        T *h = reinterpret_cast<T *>(&o);
#pragma unroll
        for (int k = 0; k < V; k++)
            h[k] = of_f32<T>(acc[k]);
        reinterpret_cast<uint4 *>(out)[i] = o;
    }
    if (tail)
        for (size_t i = n_vec * V + threadIdx.x; i < n; i += blockDim.x)
            out[i] = of_f32<T>(sum1<T>(g, epoch, in, i));
}

// The two-shot form, for large messages at 4 ranks and more: the vectors in
// N slices, slice j summed by rank j (reduce-scatter: each rank sends slice
// j of its message to rank j only), then sent to every rank (all-gather):
// (N - 1) / N of the message out of each rank twice, where the one-shot
// sends N - 1 whole copies. Rank j sums its slice in rank order, as the
// one-shot does, so the bits are the one-shot's. In a slot, vectors [0, L)
// take the reduce-scatter's data and [L, 2L) the all-gather's. The host uses
// it only where every slice has vectors (n_vec >= N * N), so every rank
// waits for every other each call, as the one-shot's halves need.
template <typename T>
__global__ void __launch_bounds__(AR_THREADS) ar_two_shot_kernel(ar_args g, T *out, const T *in, size_t n_vec)
{
    const uint32_t epoch = begin_call(g);
    pdl_wait(); // in is the previous kernel's output
    const size_t L = (n_vec + g.size - 1) / g.size, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint4 *src = reinterpret_cast<const uint4 *>(in);
    uint4 *dst = reinterpret_cast<uint4 *>(out);
    // each thread keeps the same i through the phases, so out may be in
    for (size_t i = first; i < L; i += stride)
        for (int j = 0; j < g.size; j++)
            if (j != g.rank && (size_t)j * L + i < n_vec)
                reinterpret_cast<uint4 *>(slot(g, j, epoch, g.rank))[i] = push_word(src[(size_t)j * L + i]);
    for (size_t i = first; i < L && (size_t)g.rank * L + i < n_vec; i += stride) {
        const size_t v = (size_t)g.rank * L + i;
        float acc[per_vec<T>()];
        sum_vec<T>(g, epoch, src + (size_t)g.rank * L, i, acc); // the peers' slice vectors sit at i
        uint4 o;
        T *h = reinterpret_cast<T *>(&o);
#pragma unroll
        for (int k = 0; k < per_vec<T>(); k++)
            h[k] = of_f32<T>(acc[k]);
        o = push_word(o); // what the peers get, so every rank writes the same bits
        for (int r = 0; r < g.size; r++)
            if (r != g.rank)
                reinterpret_cast<uint4 *>(slot(g, r, epoch, g.rank))[L + i] = o;
        dst[v] = o;
    }
    pdl_launch_dependents();
    for (size_t i = first; i < L; i += stride)
        for (int q = 0; q < g.size; q++)
            if (q != g.rank && (size_t)q * L + i < n_vec) {
                uint4 *p = reinterpret_cast<uint4 *>(slot(g, g.rank, epoch, q)) + L + i;
                dst[(size_t)q * L + i] = take_vec(p, await_first(p));
            }
}

template <typename T> __global__ void ar_sum_parts_kernel(T *out, const T *parts, int size, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float acc = 0;
        for (int r = 0; r < size; r++)
            acc += as_f32(parts[(size_t)r * n + i]);
        out[i] = of_f32<T>(acc);
    }
}

int args_of(const struct ar_group *g, ar_args *a)
{
    if (g->size < 1 || g->size > AR_MAX_RANKS || g->rank < 0 || g->rank >= g->size)
        return -1;
    *a = ar_args{};
    for (int r = 0; r < g->size; r++)
        a->buf[r] = g->buf[r];
    a->rank = g->rank;
    a->size = g->size;
    a->half = g->half_bytes;
    a->slot = g->half_bytes / (size_t)g->size / 16 * 16;
    return 0;
}

} // namespace

extern "C" cudaError_t ar_load_kernels(void)
{
    cudaFuncAttributes attr;
    cudaError_t rc = cudaFuncGetAttributes(&attr, ar_one_shot_kernel<bf16>);
    if (rc == cudaSuccess)
        rc = cudaFuncGetAttributes(&attr, ar_one_shot_kernel<float>);
    if (rc == cudaSuccess)
        rc = cudaFuncGetAttributes(&attr, ar_two_shot_kernel<bf16>);
    if (rc == cudaSuccess)
        rc = cudaFuncGetAttributes(&attr, ar_two_shot_kernel<float>);
    return rc;
}

extern "C" size_t ar_buffer_bytes(size_t half_bytes) { return signal_bytes() + 2 * half_bytes; }

namespace {
__global__ void fill_empty_kernel(uint32_t *p, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = EMPTY;
}
} // namespace

extern "C" cudaError_t ar_buffer_init(void *buf, size_t half_bytes, cudaStream_t stream)
{
    if (((uintptr_t)buf & 15) || half_bytes % 16)
        return cudaErrorInvalidValue;
    cudaError_t rc = cudaMemsetAsync(buf, 0, signal_bytes(), stream);
    if (rc != cudaSuccess)
        return rc;
    return ar_fill_empty(static_cast<char *>(buf) + signal_bytes(), 2 * half_bytes, stream);
}

extern "C" cudaError_t ar_fill_empty(void *p, size_t bytes, cudaStream_t stream)
{
    if (((uintptr_t)p & 3) || bytes % 4)
        return cudaErrorInvalidValue;
    fill_empty_kernel<<<1024, 256, 0, stream>>>(static_cast<uint32_t *>(p), bytes / 4);
    return cudaGetLastError();
}

// Blocks for a call of `vecs` 16-byte vectors: one a thread, at most AR_BLOCKS.
static unsigned blocks_for(size_t vecs)
{
    const size_t need = (vecs + AR_THREADS - 1) / AR_THREADS;
    return need < AR_BLOCKS ? (unsigned)need : (unsigned)AR_BLOCKS;
}

template <typename T> static cudaError_t one_shot(const struct ar_group *g, void *out, const void *in, size_t n,
                                                  cudaStream_t stream)
{
    ar_args a;
    if (args_of(g, &a) || ((uintptr_t)in & 15) || ((uintptr_t)out & 15))
        return cudaErrorInvalidValue;
    const size_t piece = a.slot / sizeof(T);
    for (size_t at = 0; at < n; at += piece) { // a call per slot-sized piece (whole vectors, so in stays aligned)
        const size_t k = n - at < piece ? n - at : piece;
        cudaError_t rc = launch_pdl(ar_one_shot_kernel<T>, blocks_for((k + per_vec<T>() - 1) / per_vec<T>()),
                                    AR_THREADS, 0, stream, a,
                                    static_cast<T *>(out) + at, static_cast<const T *>(in) + at, k);
        if (rc != cudaSuccess)
            return rc;
    }
    return cudaSuccess;
}

extern "C" int ar_two_shot_fits(const struct ar_group *g, size_t n, size_t elem_bytes)
{
    const size_t per = 16 / elem_bytes, N = (size_t)g->size;
    return N >= 2 && n % per == 0 && n / per >= N * N && g->half_bytes / N / 16 / 2 * N >= 2 * N * N;
}

template <typename T> static cudaError_t two_shot(const struct ar_group *g, void *out, const void *in, size_t n,
                                                  cudaStream_t stream)
{
    ar_args a;
    if (args_of(g, &a) || ((uintptr_t)in & 15) || ((uintptr_t)out & 15) || !ar_two_shot_fits(g, n, sizeof(T)))
        return cudaErrorInvalidValue;
    const size_t n_vec = n / per_vec<T>(), N = (size_t)a.size;
    const size_t per_call = a.slot / 16 / 2 * N; // a slot holds a slice twice
    for (size_t at = 0, k; at < n_vec; at += k) {
        k = n_vec - at < per_call ? n_vec - at : per_call;
        if (n_vec - at - k != 0 && n_vec - at - k < N * N) // no last call of fewer than N * N vectors
            k -= N * N;
        cudaError_t rc = launch_pdl(ar_two_shot_kernel<T>, blocks_for((k + N - 1) / N), AR_THREADS, 0, stream, a,
                                    static_cast<T *>(out) + at * per_vec<T>(),
                                    static_cast<const T *>(in) + at * per_vec<T>(), k);
        if (rc != cudaSuccess)
            return rc;
    }
    return cudaSuccess;
}

extern "C" cudaError_t launch_ar_two_shot(const struct ar_group *g, void *out, const void *in, size_t n,
                                          cudaStream_t stream)
{
    return two_shot<bf16>(g, out, in, n, stream);
}

extern "C" cudaError_t launch_ar_two_shot_f32(const struct ar_group *g, float *out, const float *in, size_t n,
                                              cudaStream_t stream)
{
    return two_shot<float>(g, out, in, n, stream);
}

extern "C" cudaError_t launch_ar_one_shot(const struct ar_group *g, void *out, const void *in, size_t n,
                                          cudaStream_t stream)
{
    return one_shot<bf16>(g, out, in, n, stream);
}

extern "C" cudaError_t launch_ar_one_shot_f32(const struct ar_group *g, float *out, const float *in, size_t n,
                                              cudaStream_t stream)
{
    return one_shot<float>(g, out, in, n, stream);
}

template <typename T> static cudaError_t sum_parts(void *out, const void *parts, int size, size_t n,
                                                   cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    const unsigned blocks = (unsigned)((n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024);
    ar_sum_parts_kernel<T><<<blocks, 256, 0, stream>>>(static_cast<T *>(out), static_cast<const T *>(parts), size, n);
    return cudaGetLastError();
}

extern "C" cudaError_t launch_ar_sum_parts(void *out, const void *parts, int size, size_t n, cudaStream_t stream)
{
    return sum_parts<bf16>(out, parts, size, n, stream);
}

extern "C" cudaError_t launch_ar_sum_parts_f32(float *out, const float *parts, int size, size_t n,
                                               cudaStream_t stream)
{
    return sum_parts<float>(out, parts, size, n, stream);
}
