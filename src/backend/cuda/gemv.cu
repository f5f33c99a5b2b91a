// Small-M GEMM for decode: out[m, n] = sum_k x[m, k] * W[n, k], x [M, K] bf16
// (M <= 16), W [N, K] bf16 row-major (HF Linear), fp32 accumulation, bf16 or
// f32 output, optional tanh soft-cap fused into the epilogue (logits).
//
// Why it is fast: at M <= 16 the product is one pass over W (N*K*2 bytes),
// so the kernel is a memory stream. The arithmetic goes to the tensor cores
// (mma.sync m16n8k16, bf16 in, f32 accumulate) with the roles swapped: A is
// x (16 rows: the M tokens, padded), B is W^T (8 weight rows as columns), so
// one warp consumes 8 weight rows x 32 k per mma pair and the ALUs stay idle.
// A dot product does not care in which order its k terms are summed, so each
// lane loads 16 contiguous bytes (8 k) of its weight row and of its x row
// and feeds them to the mma as if they were the fragment's k slots; A and B
// use the same permutation, so the sum is exact. Four lanes then read 64
// contiguous bytes of a row, a full line over two unrolled steps.
//
// Work split: a block of 4 warps owns 8*NT weight rows; its warps (and the
// other blocks of its thread-block cluster, for split-K) take interleaved
// chunks of U*32 k each. Each lane keeps the next chunk's U*NT 16-byte
// weight loads in flight while the current chunk's mma's run. Partials are
// summed in shared memory, then across the cluster through distributed
// shared memory (Hopper), so split-K needs no global scratch, no atomics and
// no second launch, and the result is deterministic. Weight loads bypass L1
// (read once); x loads go through L1, where the block's warps share them.
//
// Launch overhead: kernels are launched with programmatic dependent launch
// (PDL, common.cuh). A block loads its first weight chunk, then waits for the
// previous kernel (pdl_wait) before reading x or writing out, and at once
// lets the next kernel launch; so the next GEMV's blocks fill SMs as this
// one's drain and fetch their weights while it finishes.
//
// Variants (struct gemv_variant, gemv.h: NT = tiles 1|2, U = unroll 2|4, the
// L2 256-byte prefetch hint, PDL) are picked per shape by the host's table of
// measured shapes (cuda_gemm.c), else by busy_share below.
//
// Gated (launch_gemv_gated): W is a fused gate|up weight [2F, K] (gate rows
// first) and out[m, j] = act(x.Wg[j]) * (x.Wu[j]) for j < F. A block's two
// 8-row tiles are gate rows j0..j0+7 and up rows F+j0..F+j0+7, so the
// epilogue holds both sums of each output column: it rounds each to bf16,
// applies the activation in f32, rounds it, multiplies and rounds (as the
// unfused matmul + gated_act do) and writes F columns instead of 2F.
#include <cooperative_groups.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/gemv.h"

namespace cg = cooperative_groups;

#define GEMV_WARPS 4
#define GEMV_THREADS (GEMV_WARPS * 32)
#define GEMV_MAX_SPLIT 8

template <bool HINT> __device__ __forceinline__ uint4 load_weight(const bf16 *p)
{
    uint4 v;
    if (HINT)
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    else
        asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    return v;
}

// d += A (16x16, rows a0/a2 = row g, a1/a3 = row g+8) * B (16x8, column g)
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// act(gate) * up with the unfused path's roundings (matmul output bf16,
// gated_act_kernel: act in f32, rounded, times up); act 0 = SiLU, 1 = GELU-tanh.
__device__ __forceinline__ float gated_value(float gate, float up, int act)
{
    const float g = round_bf16(gate), u = round_bf16(up);
    float a;
    if (act == 0) {
        a = g / (1.f + __expf(-g));
    } else {
        const float kk = 0.7978845608028654f; // sqrt(2 / pi)
        a = 0.5f * g * (1.f + tanhf(kk * (g + 0.044715f * g * g * g)));
    }
    return round_bf16(a) * u;
}

__device__ __forceinline__ void store_out(float *p, float v) { *p = v; }
__device__ __forceinline__ void store_out(bf16 *p, float v) { *p = __float2bfloat16(v); }

// The U*NT weight vectors of chunk q (zeros past the end of the row).
template <int NT, int U, bool HINT>
__device__ __forceinline__ void load_chunk(uint4 (&wv)[U][NT], const bf16 *const (&wp)[NT], int q, int k,
                                           int c)
{
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int kk = (q * U + u) * 32;
        const bool ok = kk + 8 * c < k; // k % 8 == 0: a vector is wholly in or out
#pragma unroll
        for (int t = 0; t < NT; t++)
            wv[u][t] = ok ? load_weight<HINT>(wp[t] + kk) : make_uint4(0, 0, 0, 0);
    }
}

// grid (split, ceil(N / (8*NT))), cluster (split, 1, 1) when split > 1.
// M16: rows 8..15 of x are live (M > 8).
// GATED: n = F, W has 2F rows; tiles t < NT/2 are gate rows, the others the
// matching up rows (F + the same rows); grid y = ceil(F / (8*NT/2)).
// MINB: resident blocks an SM the registers are budgeted for (4; 5 for the
// gated variant that needs its grid in fewer waves).
template <int NT, int U, bool HINT, bool M16, typename OutT, bool GATED, int MINB = 4>
__global__ void __launch_bounds__(GEMV_THREADS, MINB)
    gemv_kernel(OutT *__restrict__ out, const bf16 *__restrict__ x, const bf16 *__restrict__ w, int m_rows,
                int n, int k, int split, float softcap, int act, int m_tiles)
{
    static_assert(!GATED || NT % 2 == 0, "a gated tile pairs gate and up rows");
    constexpr int ROWS = 8 * NT, MR = M16 ? 16 : 8;
    constexpr int HALF = GATED ? NT / 2 : NT; // tiles of distinct output columns
    constexpr int OUTS = 8 * HALF;            // output columns per block
    __shared__ float red[GEMV_WARPS][MR][ROWS]; // per-warp partials, [m][row]
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
    // m_tiles > 1 (batch-invariant mode): 16-row tiles of x, neighbours in
    // grid y, so the tiles of one weight tile run together and share it in L2.
    const int mt = blockIdx.y % m_tiles, n0 = (blockIdx.y / m_tiles) * OUTS;
    x += (int64_t)mt * 16 * k;
    out += (int64_t)mt * 16 * n;
    m_rows = min(16, m_rows - 16 * mt);

    const bf16 *wp[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const int tt = t < HALF ? t : t - HALF;
        const int64_t base = t < HALF ? 0 : n; // GATED: up rows follow the F gate rows
        wp[t] = w + (base + min(n0 + 8 * tt + g, n - 1)) * k + 8 * c;
    }
    const bf16 *xlo = x + (int64_t)min(g, m_rows - 1) * k + 8 * c;
    const bf16 *xhi = x + (int64_t)min(g + 8, m_rows - 1) * k + 8 * c;

    float acc[NT][4];
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;

    // The first chunk's weights are loaded before waiting for the previous
    // kernel (they do not depend on it); then each iteration issues the next
    // chunk's weight loads before the current chunk's mma's.
    const int chunks = (k + 32 * U - 1) / (32 * U), stride = split * GEMV_WARPS;
    int q = blockIdx.x * GEMV_WARPS + warp;
    uint4 wv[U][NT];
    if (q < chunks)
        load_chunk<NT, U, HINT>(wv, wp, q, k, c);
    pdl_wait(); // x is the previous kernel's output; out may still be read by it
    pdl_launch_dependents();
    for (; q < chunks; q += stride) {
        uint4 xa[U], xb[U], wn[U][NT];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int kk = (q * U + u) * 32;
            const bool ok = kk + 8 * c < k;
            const uint4 zero = make_uint4(0, 0, 0, 0);
            xa[u] = ok ? __ldg(reinterpret_cast<const uint4 *>(xlo + kk)) : zero;
            xb[u] = M16 && ok ? __ldg(reinterpret_cast<const uint4 *>(xhi + kk)) : zero;
        }
        const bool more = q + stride < chunks;
        if (more)
            load_chunk<NT, U, HINT>(wn, wp, q + stride, k, c);
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int t = 0; t < NT; t++) {
                mma_bf16(acc[t], xa[u].x, xb[u].x, xa[u].y, xb[u].y, wv[u][t].x, wv[u][t].y);
                mma_bf16(acc[t], xa[u].z, xb[u].z, xa[u].w, xb[u].w, wv[u][t].z, wv[u][t].w);
            }
        if (more)
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int t = 0; t < NT; t++)
                    wv[u][t] = wn[u][t];
    }

    // acc[t][0..1]: (m = g, rows 8t + 2c, +1); acc[t][2..3]: m = g + 8
#pragma unroll
    for (int t = 0; t < NT; t++) {
        red[warp][g][8 * t + 2 * c] = acc[t][0];
        red[warp][g][8 * t + 2 * c + 1] = acc[t][1];
        if (M16) {
            red[warp][g + 8][8 * t + 2 * c] = acc[t][2];
            red[warp][g + 8][8 * t + 2 * c + 1] = acc[t][3];
        }
    }
    __syncthreads();
    float *part = &red[0][0][0]; // the block's partial, [MR][ROWS]
    for (int i = threadIdx.x; i < MR * ROWS; i += GEMV_THREADS) {
        float s = 0.f;
#pragma unroll
        for (int v = 0; v < GEMV_WARPS; v++)
            s += (&red[v][0][0])[i];
        part[i] = s;
    }

    int first = threadIdx.x, step = GEMV_THREADS;
    cg::cluster_group cluster = cg::this_cluster();
    if (split > 1) {
        cluster.sync(); // every block's partial is in its shared memory
        first += (int)cluster.block_rank() * GEMV_THREADS;
        step *= split;
    } else {
        __syncthreads();
    }
    for (int i = first; i < MR * OUTS; i += step) {
        const int m = i / OUTS, col = i % OUTS, at = m * ROWS + col; // GATED: up at at + OUTS
        float s = 0.f, su = 0.f;
        if (split > 1) {
            for (int r = 0; r < split; r++) {
                const float *pr = cluster.map_shared_rank(part, r);
                s += pr[at];
                if (GATED)
                    su += pr[at + OUTS];
            }
        } else {
            s = part[at];
            if (GATED)
                su = part[at + OUTS];
        }
        const int row = n0 + col;
        if (m < m_rows && row < n) {
            if (GATED)
                s = gated_value(s, su, act);
            else if (softcap > 0.f)
                s = tanhf(s / softcap) * softcap;
            store_out(out + (int64_t)m * n + row, s);
        }
    }
    // Keep this block's shared memory alive until all have read it: an
    // execution barrier only. cluster.sync()'s release arrive compiles to
    // MEMBAR.ALL.GPU, which here waits for the output stores just issued;
    // the peers' reads of this block's partials were consumed before their
    // own arrive, so a relaxed arrive orders what this needs.
    if (split > 1)
        asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

template <int NT, int U, bool HINT, bool M16, typename OutT, bool GATED = false, int MINB = 4>
static cudaError_t launch_one(void *out, const void *x, const void *w, int m, int n, int k, float softcap,
                              int split, int pdl, cudaStream_t stream, int act = 0)
{
    constexpr int OUTS = 8 * (GATED ? NT / 2 : NT);
    const int m_tiles = (m + 15) / 16;
    const dim3 grid((unsigned)split, (unsigned)((n + OUTS - 1) / OUTS * m_tiles), 1);
    cudaError_t rc = launch_kernel_ex(gemv_kernel<NT, U, HINT, M16, OutT, GATED, MINB>, grid, GEMV_THREADS, 0,
                                      stream, split, pdl, (OutT *)out, (const bf16 *)x, (const bf16 *)w, m, n,
                                      k, split, softcap, act, m_tiles);
    return rc != cudaSuccess ? rc : cudaGetLastError();
}

// Blocks of an instantiation that fit on one SM (asked once, then cached).
template <int NT, int U, bool HINT, bool M16, typename OutT, bool GATED = false, int MINB = 4>
static cudaError_t occupancy(int *blocks)
{
    static int cached = 0;
    if (!cached) {
        cudaError_t rc = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &cached, gemv_kernel<NT, U, HINT, M16, OutT, GATED, MINB>, GEMV_THREADS, 0);
        if (rc != cudaSuccess)
            return rc;
        cached = max(cached, 1);
    }
    *blocks = cached;
    return cudaSuccess;
}

// One entry point per (NT, U, HINT): the launch, or (blocks != NULL) the occupancy query.
template <int NT, int U, bool HINT>
static cudaError_t variant(int *blocks, void *out, int out_f32, const void *x, const void *w, int m, int n,
                           int k, float softcap, int split, int pdl, cudaStream_t stream)
{
    if (blocks)
        return m > 8 ? (out_f32 ? occupancy<NT, U, HINT, true, float>(blocks)
                                : occupancy<NT, U, HINT, true, bf16>(blocks))
                     : (out_f32 ? occupancy<NT, U, HINT, false, float>(blocks)
                                : occupancy<NT, U, HINT, false, bf16>(blocks));
    if (m > 8)
        return out_f32 ? launch_one<NT, U, HINT, true, float>(out, x, w, m, n, k, softcap, split, pdl, stream)
                       : launch_one<NT, U, HINT, true, bf16>(out, x, w, m, n, k, softcap, split, pdl, stream);
    return out_f32 ? launch_one<NT, U, HINT, false, float>(out, x, w, m, n, k, softcap, split, pdl, stream)
                   : launch_one<NT, U, HINT, false, bf16>(out, x, w, m, n, k, softcap, split, pdl, stream);
}

typedef cudaError_t (*variant_fn)(int *blocks, void *out, int out_f32, const void *x, const void *w, int m,
                                  int n, int k, float softcap, int split, int pdl, cudaStream_t stream);

// The instantiation of each variant, [tiles - 1][unroll == 4][l2_hint].
static const variant_fn variants[2][2][2] = {
    {{variant<1, 2, false>, variant<1, 2, true>}, {variant<1, 4, false>, variant<1, 4, true>}},
    {{variant<2, 2, false>, variant<2, 2, true>}, {variant<2, 4, false>, variant<2, 4, true>}},
};

static variant_fn instance(const struct gemv_variant *v)
{
    return variants[v->tiles - 1][v->unroll == 4][v->l2_hint];
}

// The values gemv.h allows (gated: tiles 2 only).
static bool variant_valid(const struct gemv_variant *v, bool gated)
{
    return (v->tiles == 2 || (v->tiles == 1 && !gated)) &&
           (v->blocks5 == 1 ? gated && v->unroll == 3
                            : v->blocks5 == 0 && (v->unroll == 2 || v->unroll == 4)) &&
           (v->l2_hint == 0 || v->l2_hint == 1) && (v->pdl == 0 || v->pdl == 1);
}

// split-K: enough warps for ~16 per SM, at least one chunk per warp, and the
// chunks shared out evenly among the split's warps.
static int split_for(int tiles, int chunks, int n_sms)
{
    int split = (n_sms * 16 + tiles * GEMV_WARPS - 1) / (tiles * GEMV_WARPS);
    split = min(split, GEMV_MAX_SPLIT);
    split = min(split, max(1, chunks / GEMV_WARPS));
    split = max(split, 1);
    const int per_warp = (chunks + split * GEMV_WARPS - 1) / (split * GEMV_WARPS);
    return max(1, min(split, (chunks + per_warp * GEMV_WARPS - 1) / (per_warp * GEMV_WARPS)));
}

// The share of the launch's warp-slot time that does work: blocks beyond one
// wave of resident blocks cost a whole extra wave, and warps wait for the
// busiest warp of their tile (chunks not divisible among them).
static double busy_share(int tiles, int chunks, int split, int per_sm, int n_sms)
{
    const double cap = (double)per_sm * n_sms;
    const double waves = ceil((double)tiles * split / cap);
    const int per_warp = (chunks + split * GEMV_WARPS - 1) / (split * GEMV_WARPS);
    return (double)tiles * chunks / (waves * cap * GEMV_WARPS * per_warp);
}

// The launcher's own choice (variant NULL; shapes the host's table lacks):
// among tiles/unroll 1/2, 2/2 and 1/4, with the prefetch hint and PDL, the
// one whose grid keeps the most warp-slot time busy (busy_share): on H100 a
// grid that spills a little past one wave of resident blocks, or splits K
// unevenly, costs more than any other difference seen (docs/kernels/gemm.md).
// The occupancy asked is that of the M class of m.
extern "C" cudaError_t gemv_variant_auto(int m, int n, int k, int n_sms, struct gemv_variant *out)
{
    static const int cand[3][2] = {{1, 2}, {2, 2}, {1, 4}};
    double best = -1;
    for (int i = 0; i < 3; i++) {
        const struct gemv_variant v = {
            .tiles = cand[i][0], .unroll = cand[i][1], .l2_hint = 1, .pdl = 1, .blocks5 = 0};
        const int tiles = (n + 8 * v.tiles - 1) / (8 * v.tiles),
                  chunks = (k + 32 * v.unroll - 1) / (32 * v.unroll);
        int per_sm = 0;
        cudaError_t rc = instance(&v)(&per_sm, NULL, 0, NULL, NULL, m, n, k, 0.f, 1, 1, 0);
        if (rc != cudaSuccess)
            return rc;
        const double b = busy_share(tiles, chunks, split_for(tiles, chunks, n_sms), per_sm, n_sms);
        if (b > best)
            best = b, *out = v;
    }
    return cudaSuccess;
}

extern "C" cudaError_t launch_gemv(void *out, int out_f32, const void *x, const void *w, int m, int n, int k,
                                   float softcap, const struct gemv_variant *variant, int n_sms,
                                   cudaStream_t stream)
{
    // m > 16: 16-row tiles (an explicit variant only: batch-invariant mode)
    if (m < 1 || (m > 16 && !variant) || k < 8 || k % 8 || n < 1 ||
        (variant && !variant_valid(variant, false)) || (long)(n + 7) / 8 * ((m + 15) / 16) > 65535)
        return cudaErrorInvalidValue;
    struct gemv_variant v;
    if (variant) {
        v = *variant;
    } else {
        cudaError_t rc = gemv_variant_auto(m, n, k, n_sms, &v);
        if (rc != cudaSuccess)
            return rc;
    }
    const int tiles = (n + 8 * v.tiles - 1) / (8 * v.tiles),
              chunks = (k + 32 * v.unroll - 1) / (32 * v.unroll);
    return instance(&v)(NULL, out, out_f32, x, w, m, n, k, softcap, split_for(tiles, chunks, n_sms), v.pdl,
                        stream);
}

// The gated GEMV's variants: NT 2 (one gate and one up tile), U 2|4 with
// registers for 4 blocks an SM, or U 3 for 5 (MINB 5: 92 registers, no
// spills; U 4 spills there and lost 10-14 % a step), with or without the
// prefetch hint; the launch, or (blocks != NULL) the occupancy.
template <int U, bool HINT, int MINB = 4>
static cudaError_t gated_variant(int *blocks, void *out, const void *x, const void *w, int m, int f, int k,
                                 int act, int split, int pdl, cudaStream_t stream)
{
    if (blocks)
        return m > 8 ? occupancy<2, U, HINT, true, bf16, true, MINB>(blocks)
                     : occupancy<2, U, HINT, false, bf16, true, MINB>(blocks);
    if (m > 8)
        return launch_one<2, U, HINT, true, bf16, true, MINB>(out, x, w, m, f, k, 0.f, split, pdl, stream,
                                                              act);
    return launch_one<2, U, HINT, false, bf16, true, MINB>(out, x, w, m, f, k, 0.f, split, pdl, stream, act);
}

typedef cudaError_t (*gated_variant_fn)(int *blocks, void *out, const void *x, const void *w, int m, int f,
                                        int k, int act, int split, int pdl, cudaStream_t stream);

// [unroll == 4][l2_hint] (tiles is always 2)
static const gated_variant_fn gated_variants[2][2] = {
    {gated_variant<2, false>, gated_variant<2, true>},
    {gated_variant<4, false>, gated_variant<4, true>},
};
// blocks5 (unroll 3, 5 blocks an SM): [l2_hint]
static const gated_variant_fn gated_variants5[2] = {gated_variant<3, false, 5>, gated_variant<3, true, 5>};

static gated_variant_fn gated_instance(const struct gemv_variant *v)
{
    return v->blocks5 ? gated_variants5[v->l2_hint] : gated_variants[v->unroll == 4][v->l2_hint];
}

// The gated launcher's own choice (tiles 2, prefetch hint, PDL): unroll 2 or
// 4, or at up to 8 rows the 5-blocks-an-SM variant, by busy_share at the M
// class of m. 5 blocks pay where 4 leave a grid's last wave short: on 132
// SMs Qwen3-4B's 1216 blocks are 2.3 waves of 528 and 1.84 of 660, while
// Llama's 1024 are 1.94 waves and stay at 4 (docs/kernels/gemm.md).
extern "C" cudaError_t gemv_gated_variant_auto(int m, int f, int k, int n_sms, struct gemv_variant *out)
{
    const int tiles = (f + 7) / 8, n_cand = m <= 8 ? 3 : 2;
    double best = -1;
    static const int unrolls[3] = {2, 4, 3}; // the last at 5 blocks an SM
    for (int c = 0; c < n_cand; c++) {
        const struct gemv_variant v = {
            .tiles = 2, .unroll = unrolls[c], .l2_hint = 1, .pdl = 1, .blocks5 = c == 2};
        const int u = v.unroll;
        const int chunks = (k + 32 * u - 1) / (32 * u);
        int per_sm = 0;
        cudaError_t rc = gated_instance(&v)(&per_sm, NULL, NULL, NULL, m, f, k, 0, 1, 1, 0);
        if (rc != cudaSuccess)
            return rc;
        const double b = busy_share(tiles, chunks, split_for(tiles, chunks, n_sms), per_sm, n_sms);
        if (b > best)
            best = b, *out = v;
    }
    return cudaSuccess;
}

// out[m, F] (bf16) = act(x . Wg^T) * (x . Wu^T), w = gate|up [2F, K]; act 0 =
// SiLU, 1 = GELU-tanh. variant as launch_gemv's (NULL = chosen here), with
// tiles 2: a gated block always pairs one gate and one up tile.
extern "C" cudaError_t launch_gemv_gated(void *out, const void *x, const void *w, int m, int f, int k,
                                         int act, const struct gemv_variant *variant, int n_sms,
                                         cudaStream_t stream)
{
    if (m < 1 || (m > 16 && !variant) || k < 8 || k % 8 || f < 1 || act < 0 || act > 1 ||
        (variant && !variant_valid(variant, true)) || (long)(f + 7) / 8 * ((m + 15) / 16) > 65535)
        return cudaErrorInvalidValue;
    struct gemv_variant v;
    if (variant) {
        v = *variant;
    } else {
        cudaError_t rc = gemv_gated_variant_auto(m, f, k, n_sms, &v);
        if (rc != cudaSuccess)
            return rc;
    }
    const int tiles = (f + 7) / 8, chunks = (k + 32 * v.unroll - 1) / (32 * v.unroll);
    return gated_instance(&v)(NULL, out, x, w, m, f, k, act, split_for(tiles, chunks, n_sms), v.pdl, stream);
}
