// The logits' gather over CUDA IPC (logits_gather.h).
#include "backend/cuda/common.cuh"
#include "backend/cuda/lamport.cuh"
#include "backend/cuda/logits_gather.h"

namespace
{

constexpr int GATHER_THREADS = 512;

struct gather_args {
    gather_sync *sync[AR_MAX_RANKS];
    float *landing;
    int rank, size;
};

// A call's shape: rows x cols floats a rank (cv vectors a row), and rows x
// recs.n records a rank, two vectors each, ahead of the columns in a part.
struct gather_shape {
    gather_records recs;
    const int32_t *want_cols;
    size_t cv, rec_vecs, col_vecs; // cols / 4; vectors of records and of columns a part
};

// Peer `rank`'s part of the landing: its records' vectors, then its columns'.
__device__ __forceinline__ uint4 *part_of(float *landing, int rank, const gather_shape &c)
{
    return reinterpret_cast<uint4 *>(landing) + (size_t)(rank - 1) * (c.rec_vecs + c.col_vecs);
}

__device__ __forceinline__ bool want_cols(const gather_shape &c) { return !c.want_cols || *c.want_cols != 0; }

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

// Record vector i (half i % 2 of record i / 2, in row-major order) of this
// rank, where it sits (mine) or where rank 0 keeps rank `from`'s.
__device__ __forceinline__ uint2 *rec_half(const gather_shape &c, size_t i, int from)
{
    const size_t k = i / 2, row = k / (size_t)c.recs.n, j = k % (size_t)c.recs.n;
    uint4 *rec = reinterpret_cast<uint4 *>(c.recs.at) + row * (size_t)c.recs.stride + (size_t)from * c.recs.n + j;
    return reinterpret_cast<uint2 *>(rec) + (i & 1);
}

// Two words of any bits as four, 16 bits each under a tag bit: never AR_EMPTY.
__device__ __forceinline__ uint4 tag_pair(uint2 w)
{
    return make_uint4((w.x & 0xffffu) | 0x10000u, (w.x >> 16) | 0x10000u, (w.y & 0xffffu) | 0x10000u,
                      (w.y >> 16) | 0x10000u);
}
__device__ __forceinline__ uint2 untag_pair(uint4 v)
{
    return make_uint2((v.x & 0xffffu) | (v.y << 16), (v.z & 0xffffu) | (v.w << 16));
}

// A peer's push of its call k waits until rank 0 has placed call k - 1.
// Every block counts every call (count_call), so each knows k.
__global__ void __launch_bounds__(GATHER_THREADS) gather_push_kernel(gather_args g, const float *in, gather_shape c)
{
    gather_sync *s = g.sync[g.rank];
    const uint32_t call = count_call(s->epoch, GATHER_MAX_BLOCKS);
    if (threadIdx.x == 0)
        while (load_acquire(&s->done) < call - 1)
            ;
    __syncthreads();
    pdl_wait(); // in and the records are the previous kernels' output
    pdl_launch_dependents();
    uint4 *dst = part_of(g.landing, g.rank, c);
    const uint4 *src = reinterpret_cast<const uint4 *>(in);
    const size_t n = c.rec_vecs + (want_cols(c) ? c.col_vecs : 0);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = i < c.rec_vecs ? tag_pair(*rec_half(c, i, 0)) : push_word(src[i - c.rec_vecs]);
}

// Thread i takes vector c of row `row` of every rank: its own from in, the
// peers' polls all in flight before the first wait (records likewise, one
// vector of each peer). The last block to finish tells the peers the call
// is placed (its emptied landing too: every block's stores are ordered
// before its count by the fence, and the count before the signal).
__global__ void __launch_bounds__(GATHER_THREADS) gather_place_kernel(gather_args g, float *out, const float *in, gather_shape c)
{
    pdl_wait(); // in is the LM head's output
    pdl_launch_dependents();
    const int size = g.size;
    const uint4 *src = reinterpret_cast<const uint4 *>(in);
    uint4 *dst = reinterpret_cast<uint4 *>(out);
    const size_t n = c.rec_vecs + (want_cols(c) ? c.col_vecs : 0);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v[AR_MAX_RANKS];
#pragma unroll
        for (int r = 1; r < AR_MAX_RANKS; r++)
            if (r < size)
                v[r] = await_first(part_of(g.landing, r, c) + i);
        if (i < c.rec_vecs) {
#pragma unroll
            for (int r = 1; r < AR_MAX_RANKS; r++)
                if (r < size)
                    *rec_half(c, i, r) = untag_pair(take_vec(part_of(g.landing, r, c) + i, v[r]));
            continue;
        }
        const size_t k = i - c.rec_vecs, row = k / c.cv, col = k % c.cv, out_row = row * (size_t)size * c.cv;
        dst[out_row + col] = src[k];
#pragma unroll
        for (int r = 1; r < AR_MAX_RANKS; r++)
            if (r < size)
                dst[out_row + (size_t)r * c.cv + col] = take_vec(part_of(g.landing, r, c) + i, v[r]);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        gather_sync *s = g.sync[0];
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
    const size_t need = (vecs + GATHER_THREADS - 1) / GATHER_THREADS;
    return need < 1 ? 1u : need < GATHER_MAX_BLOCKS ? (unsigned)need : (unsigned)GATHER_MAX_BLOCKS;
}

int args_of(const struct gather_group *g, gather_args *a)
{
    if (g->size < 2 || g->size > AR_MAX_RANKS || g->rank < 0 || g->rank >= g->size || !g->landing ||
        ((uintptr_t)g->landing & 15))
        return -1;
    *a = gather_args{};
    for (int r = 0; r < g->size; r++)
        a->sync[r] = g->sync[r];
    a->landing = g->landing;
    a->rank = g->rank;
    a->size = g->size;
    return 0;
}

size_t part_vecs(int rows, int cols, int recs) { return (size_t)rows * ((size_t)cols / 4 + 2 * (size_t)recs); }

int shape_of(const struct gather_group *g, struct gather_records recs, const int32_t *want_cols, int rows, int cols,
             gather_shape *c)
{
    if (!gather_fits(g->size, rows, cols, recs.at ? recs.n : 0, (size_t)-1))
        return -1;
    if (recs.at && (recs.n < 1 || recs.stride < g->size * recs.n || ((uintptr_t)recs.at & 15)))
        return -1;
    *c = gather_shape{};
    c->recs = recs;
    c->want_cols = want_cols;
    c->cv = (size_t)cols / 4;
    c->rec_vecs = recs.at ? 2 * (size_t)rows * recs.n : 0;
    c->col_vecs = (size_t)rows * c->cv;
    return 0;
}

} // namespace

extern "C" int gather_fits(int size, int rows, int cols, int recs, size_t landing_bytes)
{
    return size >= 2 && size <= AR_MAX_RANKS && rows >= 1 && cols >= 4 && cols % 4 == 0 && recs >= 0 &&
           (size_t)(size - 1) * part_vecs(rows, cols, recs) * 16 <= landing_bytes;
}

extern "C" cudaError_t launch_gather_push(const struct gather_group *g, const float *in, struct gather_records recs,
                                      const int32_t *want_cols, int rows, int cols, cudaStream_t stream)
{
    gather_args a;
    gather_shape c;
    if (args_of(g, &a) || g->rank < 1 || shape_of(g, recs, want_cols, rows, cols, &c) || ((uintptr_t)in & 15))
        return cudaErrorInvalidValue;
    if (recs.at) // the push reads this rank's records at their start
        c.recs.at = reinterpret_cast<uint4 *>(recs.at) + (size_t)g->rank * recs.n;
    return launch_pdl(gather_push_kernel, blocks_for(c.rec_vecs + c.col_vecs), GATHER_THREADS, 0, stream, a, in, c);
}

extern "C" cudaError_t launch_gather_place(const struct gather_group *g, float *out, const float *in, struct gather_records recs,
                                       const int32_t *want_cols, int rows, int cols, cudaStream_t stream)
{
    gather_args a;
    gather_shape c;
    if (args_of(g, &a) || g->rank != 0 || shape_of(g, recs, want_cols, rows, cols, &c) || ((uintptr_t)in & 15) ||
        ((uintptr_t)out & 15))
        return cudaErrorInvalidValue;
    return launch_pdl(gather_place_kernel, blocks_for(c.rec_vecs + c.col_vecs), GATHER_THREADS, 0, stream, a, out, in, c);
}

extern "C" cudaError_t gather_load_kernels(void)
{
    cudaFuncAttributes attr;
    cudaError_t rc = cudaFuncGetAttributes(&attr, gather_push_kernel);
    return rc == cudaSuccess ? cudaFuncGetAttributes(&attr, gather_place_kernel) : rc;
}
