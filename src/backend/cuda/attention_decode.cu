// Paged decode attention: one query token per row, split-KV (flash decoding),
// GQA-packed, on the tensor cores.
//
// Grid (split, kv head x row group, token). A CTA of NW warps takes the query
// heads of one GQA group (up to 16, padded to the 16 rows of an mma tile) and
// one contiguous part of the token's visible keys [lo, hi]: K and V of a kv
// head are read once for the whole group. KV tiles of 16 * NW tokens (each
// warp takes 16 of them) stream through a cp.async pipeline of 2-4 stages,
// 16-byte copies; slots come from the block table row by row, so any
// power-of-two block size and scrambled tables cost nothing extra, and a
// sliding window simply starts the range at pos - window + 1 (blocks before it
// are never touched). Each warp keeps its own online softmax; the warps merge
// through shared memory at the end. With n_splits == 1 the CTA writes the output;
// otherwise it writes an unnormalised partial (acc, running max, sum) to the
// scratch and decode_combine_kernel merges the parts.
//
// Graph-safety: the split length is derived on the device from the token's
// range and the launch's n_splits (a count fixed by the host from SMs and the
// block-table capacity), so a captured launch replays with any lengths;
// splits past a short range exit at once.
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/common.cuh"
#include "backend/cuda/rope_head.cuh"

using namespace attn;

namespace
{

constexpr int CHUNK = ATTN_DECODE_MIN_CHUNK;

// Tokens per split for a range of n tokens: a multiple of CHUNK (whole KV
// tiles for every warp count), the same in both kernels.
__device__ __forceinline__ int decode_chunk(int n, int n_splits)
{
    int c = (n + n_splits - 1) / n_splits;
    c = (c + CHUNK - 1) / CHUNK * CHUNK;
    return c < CHUNK ? CHUNK : c;
}

__device__ __forceinline__ int decode_active_splits(int n, int n_splits)
{
    return n > 0 ? (n + decode_chunk(n, n_splits) - 1) / decode_chunk(n, n_splits) : 0;
}

template <int HD, int NW, int STAGES> constexpr size_t decode_smem_bytes()
{
    return (size_t)(16 + 2 * STAGES * 16 * NW) * (HD + 8) * sizeof(bf16);
}

// The split merge inside the decode kernel: every split CTA of a (token, kv
// head, row group) counts itself in once its partials are stored; the last
// one merges them, in split order (the same bits whichever CTA is last), and
// sets the counter back to 0 for the next launch. One kernel boundary a layer
// fewer than the combine kernel. The merge is two rounds of loads issued
// together (each row's maxima and sums, a warp a row; then the partial rows,
// 16 bytes a load), not a chain of dependent loads a thread: sw is shared
// memory for 2 * 16 * n_active + 16 floats (the finished KV tiles').
template <int THREADS>
__device__ __forceinline__ void merge_if_last(const attn_args &a, unsigned *counters, int t, int h0, int n_rows,
                                              int n_splits, int n_active, const float *part_o,
                                              const float2 *part_ml, float *sw)
{
    // The CTA's stores, then one thread's count with acquire-release
    // semantics at GPU scope: the barrier orders the CTA's stores before the
    // count, whose release is cumulative (CUTLASS's inter-CTA barrier
    // publishes a CTA's writes the same way), and the last CTA's acquire
    // sees every split's partials, read past L1 below. No fence.sc: the
    // persistent-kernel probe measured a __threadfence before a release at
    // ~1 us a phase end (docs/kernels/persistent-decode.md).
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *c = counters + (blockIdx.z * gridDim.y + blockIdx.y), before;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(c) : "memory");
        last = before == (unsigned)n_active - 1;
        if (last)
            *c = 0; // every active split has counted: nothing touches it again this launch
    }
    __syncthreads();
    if (!last)
        return;
    const int hd = a.head_dim, lane = threadIdx.x & 31;
    float *sl = sw + 16 * n_active, *sinv = sl + 16 * n_active; // sw: maxima, then weights
    for (int r = threadIdx.x >> 5; r < n_rows; r += THREADS / 32) {
        const int64_t base = ((int64_t)t * a.n_heads + h0 + r) * n_splits;
        float mx = -INFINITY;
        for (int s = lane; s < n_active; s += 32) {
            const float2 ml = __ldcg(part_ml + base + s);
            sw[r * n_active + s] = ml.x, sl[r * n_active + s] = ml.y;
            mx = fmaxf(mx, ml.x);
        }
        for (int o = 16; o > 0; o >>= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float sum = 0.f;
        for (int s = lane; s < n_active; s += 32) {
            const float e = fast_exp2(sw[r * n_active + s] - mx);
            sw[r * n_active + s] = e;
            sum += sl[r * n_active + s] * e;
        }
        sum = warp_sum(sum);
        if (lane == 0)
            sinv[r] = 1.f / sum;
    }
    __syncthreads();
    bf16 *out = reinterpret_cast<bf16 *>(a.out);
    const int vec = hd % 4 == 0 ? 4 : 2, per_row = hd / vec; // hd is even
    for (int i = threadIdx.x; i < n_rows * per_row; i += THREADS) {
        const int r = i / per_row, d = (i % per_row) * vec;
        const int64_t row = (int64_t)t * a.n_heads + h0 + r;
        const float *p = part_o + row * n_splits * hd + d;
        const float *w = sw + r * n_active;
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        if (vec == 4) {
#pragma unroll 4
            for (int s = 0; s < n_active; s++) {
                const float4 v = __ldcg(reinterpret_cast<const float4 *>(p + (int64_t)s * hd));
                acc[0] += w[s] * v.x, acc[1] += w[s] * v.y, acc[2] += w[s] * v.z, acc[3] += w[s] * v.w;
            }
        } else {
#pragma unroll 4
            for (int s = 0; s < n_active; s++) {
                const float2 v = __ldcg(reinterpret_cast<const float2 *>(p + (int64_t)s * hd));
                acc[0] += w[s] * v.x, acc[1] += w[s] * v.y;
            }
        }
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (k < vec)
                out[row * hd + d + k] = __float2bfloat16(acc[k] * sinv[r]);
    }
}

// early: the first tiles' keys and values before the wait. Only the row of
// the token's own position comes from the previous kernel (RoPE writes each
// step's new rows), so the other rows of the first STAGES - 1 tiles are
// copied first and that one row after the wait. Valid where each sequence
// has one row in the step (the split path: cuda_attention.c launches it for
// n_tokens == n_seqs only); the metadata (positions, tables, lengths) comes
// from copies before the step's first kernel.
//
// ROPE (with early; head_dim == HD >= 64): the kernel does RoPE
// itself (rope_head.cuh): the previous kernel is the q|k|v projection; q
// rows are rotated into sQ, and the split that holds the token's position
// rotates its k, writes k and v to the cache (row group 0) and takes them
// into its tile from shared memory (sHK, sHV) instead of from the cache.
//
// MERGE: the last split merges the head group's partials (merge_if_last);
// a template flag so that the combine path's kernel is compiled as before.
template <int HD, int NW, int STAGES, bool ROPE = false, bool MERGE = false>
__global__ void __launch_bounds__(NW * 32)
    decode_kernel(const attn_args a, int n_splits, float *part_o, float2 *part_ml, int early, const attn_rope rp,
                  unsigned *merge_counters)
{
    constexpr int DEC_WARPS = NW, DEC_THREADS = 32 * NW, DEC_BN = 16 * NW;
    static_assert(CHUNK % DEC_BN == 0, "a split is whole KV tiles");
    constexpr int LD = HD + 8, KT = HD / 16, NO = HD / 8;
    constexpr bool QREG = HD <= 128;
    static_assert(NW * 16 * HD * sizeof(float) <= 2 * STAGES * DEC_BN * LD * sizeof(bf16),
                  "merge fits the tiles");
    static_assert((2 * 16 * ATTN_DECODE_MAX_SPLITS + 16) * sizeof(float) <= 2 * STAGES * DEC_BN * LD * sizeof(bf16),
                  "the split merge's weights fit the tiles");
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem); // [16][LD]
    bf16 *sK = sQ + 16 * LD;                   // [STAGES][DEC_BN][LD]
    bf16 *sV = sK + STAGES * DEC_BN * LD;      // [STAGES][DEC_BN][LD]
    __shared__ float sM[DEC_WARPS][16], sL[DEC_WARPS][16];
    static_assert(!ROPE || HD >= 64, "RoPE in the kernel: head sizes 64, 128, 256");
    constexpr int R = ROPE ? HD / 32 : 2; // RoPE values a lane
    __shared__ __align__(16) bf16 sHK[ROPE ? HD : 8], sHV[ROPE ? HD : 8];
    if (!early) {
        pdl_wait(); // q and the KV cache come from the previous kernel (common.cuh: PDL)
        pdl_launch_dependents();
    }

    const int split = blockIdx.x, t = blockIdx.z, hd = a.head_dim;
    const int group = a.n_heads / a.n_kv_heads, n_rg = (group + 15) / 16;
    const int kvh = blockIdx.y / n_rg, rg = blockIdx.y % n_rg;
    const int h0 = kvh * group + rg * 16, n_rows = min(16, group - rg * 16);
    bf16 *out = reinterpret_cast<bf16 *>(a.out);

    int lo, hi;
    token_kv_range(a, t, lo, hi);
    const int n = hi - lo + 1;
    const int n_active = decode_active_splits(n, n_splits);
    if (split >= n_active) {
        if (early)
            pdl_wait(); // out may still be read by an earlier kernel's tail
        // nothing visible (a padding row): zeros, as the combine writes
        if (n_splits == 1 || (MERGE && n_active == 0 && split == 0))
            for (int i = threadIdx.x; i < n_rows * hd; i += DEC_THREADS)
                out[((int64_t)t * a.n_heads + h0 + i / hd) * hd + i % hd] = __float2bfloat16(0.f);
        return;
    }
    const int chunk = decode_chunk(n, n_splits);
    const int jb = lo + split * chunk, je = min(jb + chunk, hi + 1); // this split: [jb, je)
    const int n_tiles = (je - jb + DEC_BN - 1) / DEC_BN;
    const int32_t *table = a.block_tables + (int64_t)a.seq_of_token[t] * a.max_blocks_per_seq;
    const int64_t row_stride = (int64_t)a.n_kv_heads * hd, head_off = (int64_t)kvh * hd;
    const bool vec16 = hd % 8 == 0;
    const bf16 *kc = reinterpret_cast<const bf16 *>(a.k_cache),
               *vc = reinterpret_cast<const bf16 *>(a.v_cache);

    // the row the previous kernel writes, if it is this split's: loaded after the wait (early)
    const int held = early && hi >= jb && hi < je ? hi : -1;
    constexpr bool roped = ROPE;
    auto load_tile = [&](int tile) {
        const int j0 = jb + tile * DEC_BN, st = tile % STAGES;
        const bool before_wait = tile < STAGES - 1;
        load_kv_rows<HD, DEC_BN, DEC_THREADS>(sK + st * DEC_BN * LD, sV + st * DEC_BN * LD, kc, vc, table, j0,
                                              jb, je - 1, a.block_size_log2, row_stride, head_off, hd, vec16,
                                              before_wait || roped ? held : -1,
                                              !before_wait && roped ? sHK : nullptr, sHV);
    };
    // RoPE's inputs that no kernel of this step writes, before the wait
    const int rl = threadIdx.x & 31;
    float rwq[R], rwk[R], rsn[R / 2], rcs[R / 2];
    int32_t rslot = -1;
    if (roped) {
        rope_weights<R>(rwq, reinterpret_cast<const bf16 *>(rp.q_norm), rl);
        rope_angles<R>(rsn, rcs, (float)a.positions[t], rp.inv_freq, rl);
        if (held >= 0) {
            rope_weights<R>(rwk, reinterpret_cast<const bf16 *>(rp.k_norm), rl);
            rslot = rp.slot_mapping[t];
        }
    }
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < n_tiles)
            load_tile(s);
        cp_async_commit();
    }
    const int held_tile = (held - jb) / DEC_BN, held_at = (held_tile * DEC_BN + (held - jb) % DEC_BN) * LD;
    if (early) {
        pdl_wait(); // q and the held row come from the previous kernel
        pdl_launch_dependents();
        if (!roped && held >= 0 && held_tile < STAGES - 1 && held_tile < n_tiles) // held back above: copy it now
            load_kv_row<HD, DEC_THREADS>(sK + held_at, sV + held_at, kc, vc, table, held, a.block_size_log2,
                                         row_stride, head_off, hd);
    }

    if (roped) { // the group's query rows rotated, zero-padded to 16 rows x HD; the token's own k and v
        const int w = threadIdx.x >> 5;
        const bool kv_warp = held >= 0 && w == DEC_WARPS - 1;
        // The token's k and v rows are loaded before the q rows, all in flight
        // together: stores to the cache between v's loads would order each
        // load after the store before it (the pointers may alias), a round
        // trip an element (2-5 us of the split holding the token).
        float xk[R];
        bf16 vk[R];
        if (kv_warp) {
            const int64_t in_row = (int64_t)t * rp.kv_stride + (int64_t)kvh * HD;
            const bf16 *ks = reinterpret_cast<const bf16 *>(rp.k_in) + in_row,
                       *vs = reinterpret_cast<const bf16 *>(rp.v_in) + in_row;
#pragma unroll
            for (int r = 0; r < R; r++) {
                xk[r] = to_f32(ks[rl + 32 * r]);
                vk[r] = vs[rl + 32 * r];
            }
        }
        for (int row = w; row < 16; row += DEC_WARPS) {
            float x[R] = {};
            if (row < n_rows) {
                const bf16 *src = reinterpret_cast<const bf16 *>(rp.q_in) + (int64_t)t * rp.q_stride +
                                  (int64_t)(h0 + row) * HD;
#pragma unroll
                for (int r = 0; r < R; r++)
                    x[r] = to_f32(src[rl + 32 * r]);
                rope_head<R>(x, rp.q_norm != nullptr, rwq, rp.eps, rp.plus_one, rsn, rcs);
            }
#pragma unroll
            for (int r = 0; r < R; r++)
                sQ[row * LD + rl + 32 * r] = row < n_rows ? to_bf16(x[r]) : __float2bfloat16(0.f);
        }
        if (kv_warp) {
            rope_head<R>(xk, rp.q_norm != nullptr, rwk, rp.eps, rp.plus_one, rsn, rcs);
            const bool write = rg == 0 && rslot >= 0; // one CTA of the kv head writes the cache
            bf16 *kw = reinterpret_cast<bf16 *>(rp.k_cache) + (int64_t)rslot * row_stride + head_off,
                 *vw = reinterpret_cast<bf16 *>(rp.v_cache) + (int64_t)rslot * row_stride + head_off;
#pragma unroll
            for (int r = 0; r < R; r++) {
                const bf16 kb = to_bf16(xk[r]);
                sHK[rl + 32 * r] = kb;
                sHV[rl + 32 * r] = vk[r];
                if (write) {
                    kw[rl + 32 * r] = kb;
                    vw[rl + 32 * r] = vk[r];
                }
            }
        }
    } else {
        // The group's query rows, zero-padded to 16 rows x HD.
        const bf16 *q = reinterpret_cast<const bf16 *>(a.q) + ((int64_t)t * a.n_heads + h0) * hd;
        for (int i = threadIdx.x; i < 16 * (HD / 2); i += DEC_THREADS) {
            int r = i / (HD / 2), d = (i % (HD / 2)) * 2;
            uint32_t v = 0;
            if (r < n_rows && d < hd)
                v = *reinterpret_cast<const uint32_t *>(q + r * hd + d);
            *reinterpret_cast<uint32_t *>(sQ + r * LD + d) = v;
        }
    }
    __syncthreads(); // sQ (and the held row, or sHK / sHV)
    if (roped && held >= 0 && held_tile < STAGES - 1 && held_tile < n_tiles) // into the tile loaded before the wait
        for (int c = threadIdx.x; c < HD / 8; c += DEC_THREADS) {
            *reinterpret_cast<uint4 *>(sK + held_at + c * 8) = *reinterpret_cast<const uint4 *>(sHK + c * 8);
            *reinterpret_cast<uint4 *>(sV + held_at + c * 8) = *reinterpret_cast<const uint4 *>(sHV + c * 8);
        }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c4 = lane & 3;
    uint32_t qf[QREG ? KT : 1][4];
    if (QREG)
        load_q_frags<QREG ? KT : 1, LD>(qf, sQ);

    float o[NO][4];
#pragma unroll
    for (int i = 0; i < NO; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

    for (int i = 0; i < n_tiles; i++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); // tile i landed; every warp is done with the stage refilled next
        if (i + STAGES - 1 < n_tiles)
            load_tile(i + STAGES - 1);
        cp_async_commit();
        const int st = i % STAGES, jw = jb + i * DEC_BN + warp * 16; // this warp's 16 keys
        if (jw >= je)
            continue;
        float s[2][4];
        qk_mma<QREG, KT, 2, LD>(s, qf, sQ, sK + (st * DEC_BN + warp * 16) * LD);
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int j = jw + nt * 8 + 2 * c4 + (e & 1);
                s[nt][e] = j < je ? score_log2(s[nt][e], a.scale, a.softcap) : -INFINITY;
            }
        softmax_update<2, NO>(s, o, m, l);
        pv_mma<1, HD / 16, LD>(o, s, sV + (st * DEC_BN + warp * 16) * LD);
    }
    cp_async_wait<0>();
    __syncthreads(); // the tiles' memory becomes the merge buffer

    // Merge the 4 warps' softmax states.
    float *sO = reinterpret_cast<float *>(sK); // [DEC_WARPS][16][HD]
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    if (c4 == 0) {
        sM[warp][g] = m[0], sM[warp][g + 8] = m[1];
        sL[warp][g] = l[0], sL[warp][g + 8] = l[1];
    }
#pragma unroll
    for (int nt = 0; nt < NO; nt++) {
        int d = nt * 8 + 2 * c4;
        *reinterpret_cast<float2 *>(sO + (warp * 16 + g) * HD + d) = make_float2(o[nt][0], o[nt][1]);
        *reinterpret_cast<float2 *>(sO + (warp * 16 + g + 8) * HD + d) = make_float2(o[nt][2], o[nt][3]);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n_rows * hd; i += DEC_THREADS) {
        int r = i / hd, d = i % hd;
        float mx = -INFINITY;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; w++)
            mx = fmaxf(mx, sM[w][r]);
        float sum = 0.f, acc = 0.f;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; w++) {
            float e = fast_exp2(sM[w][r] - mx); /* 0 for a warp that saw no keys */
            sum += sL[w][r] * e;
            acc += sO[(w * 16 + r) * HD + d] * e;
        }
        int64_t row = (int64_t)t * a.n_heads + h0 + r;
        if (n_splits == 1) {
            out[row * hd + d] = __float2bfloat16(acc / sum);
        } else {
            int64_t part = row * n_splits + split;
            part_o[part * hd + d] = acc;
            if (d == 0)
                part_ml[part] = make_float2(mx, sum);
        }
    }
    if (MERGE && n_splits > 1)
        merge_if_last<DEC_THREADS>(a, merge_counters, t, h0, n_rows, n_splits, n_active, part_o, part_ml, sO);
}

__device__ __forceinline__ float block_max(float v)
{
    __shared__ float partial[32];
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        partial[warp] = v;
    __syncthreads();
    float r = -INFINITY;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++)
        r = fmaxf(r, partial[w]);
    return r;
}

// Merges the active splits' partials. Grid (head, token, 64-column slice of
// the head): the weights exp2(m_s - max) come first (one split a thread),
// then groups of threads sum interleaved splits of the slice with wide loads
// (many independent loads in flight, not one split after another), and the
// groups' sums meet in shared memory.
constexpr int COMB_THREADS = 256, COMB_COLS = 64;
static_assert(ATTN_DECODE_MAX_SPLITS <= COMB_THREADS, "one split a thread for the weights");

__global__ void __launch_bounds__(COMB_THREADS)
    decode_combine_kernel(const attn_args a, int n_splits, const float *part_o, const float2 *part_ml)
{
    __shared__ float weight[ATTN_DECODE_MAX_SPLITS];
    __shared__ float4 red[COMB_THREADS];
    // the step's metadata (copied in before its first kernel) before the wait
    const int h = blockIdx.x, t = blockIdx.y, hd = a.head_dim;
    const int c0 = blockIdx.z * COMB_COLS, cols = min(COMB_COLS, hd - c0);
    int lo, hi;
    token_kv_range(a, t, lo, hi);
    const int n_active = decode_active_splits(hi - lo + 1, n_splits);
    pdl_wait(); // the split partials come from decode_kernel
    pdl_launch_dependents();
    bf16 *out = reinterpret_cast<bf16 *>(a.out) + ((int64_t)t * a.n_heads + h) * hd + c0;
    if (n_active == 0) {
        for (int d = threadIdx.x; d < cols; d += COMB_THREADS)
            out[d] = __float2bfloat16(0.f);
        return;
    }
    const int64_t base = ((int64_t)t * a.n_heads + h) * n_splits;
    const int s = threadIdx.x;
    float2 ml = s < n_active ? part_ml[base + s] : make_float2(-INFINITY, 0.f);
    float mx = block_max(ml.x);
    float e = s < n_active ? fast_exp2(ml.x - mx) : 0.f;
    if (s < ATTN_DECODE_MAX_SPLITS)
        weight[s] = e;
    const float inv = 1.f / block_sum(ml.y * e); /* its barriers publish weight[] */

    const int vec = hd % 4 == 0 ? 4 : 2; /* hd is even */
    const int lanes = (cols + vec - 1) / vec, groups = COMB_THREADS / lanes;
    const int g = threadIdx.x / lanes, li = threadIdx.x % lanes;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (g < groups) {
        const float *p = part_o + base * hd + c0 + li * vec;
        if (vec == 4) {
#pragma unroll 4
            for (int k = g; k < n_active; k += groups) {
                float w = weight[k];
                float4 v = *reinterpret_cast<const float4 *>(p + (int64_t)k * hd);
                acc.x += w * v.x, acc.y += w * v.y, acc.z += w * v.z, acc.w += w * v.w;
            }
        } else {
#pragma unroll 4
            for (int k = g; k < n_active; k += groups) {
                float w = weight[k];
                float2 v = *reinterpret_cast<const float2 *>(p + (int64_t)k * hd);
                acc.x += w * v.x, acc.y += w * v.y;
            }
        }
    }
    red[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x < lanes) {
        float4 r = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int k = 0; k < groups; k++) {
            float4 v = red[k * lanes + threadIdx.x];
            r.x += v.x, r.y += v.y, r.z += v.z, r.w += v.w;
        }
        const float rv[4] = {r.x, r.y, r.z, r.w};
        for (int i = 0; i < vec; i++)
            out[threadIdx.x * vec + i] = __float2bfloat16(rv[i] * inv);
    }
}

// Resident CTAs of one decode kernel per SM (for the split count).
template <int HD, int NW, int STAGES> int decode_occupancy()
{
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, decode_kernel<HD, NW, STAGES>, NW * 32,
                                                      decode_smem_bytes<HD, NW, STAGES>()) != cudaSuccess)
        return 1;
    return n < 1 ? 1 : n;
}

// RoPE in the decode kernel: 0 never, 1 (the engine's rule) where it is
// faster than the separate RoPE kernel, 2 at any batch; tests set 0 and 2
// (attention_decode_rope_mode) to check both forms at every batch.
static int rope_mode = 1;

extern "C" void attention_decode_rope_mode(int mode) { rope_mode = mode < 0 ? 1 : mode; }

// Who merges the splits: 0 the combine kernel, 2 the last split
// (merge_if_last), 1 (the engine's rule) the last split where that is
// faster; tests set 0 and 2 (attention_decode_merge_mode).
static int merge_mode = 1;

extern "C" void attention_decode_merge_mode(int mode) { merge_mode = mode < 0 ? 1 : mode; }

// The last split's merge saves the combine kernel, but its fence, count
// and merge come after the last split: that wins once several rows keep
// the splits busy (4 or more) at head size 128, and loses at one or two
// rows and at Gemma's 256, whose merge is twice the work
// (docs/kernels/attention.md has the figures).
static bool merge_in_kernel_wins(int head_dim, int n_tokens)
{
    return merge_mode == 2 || (merge_mode == 1 && head_dim <= 128 && n_tokens >= 4);
}

template <int HD, int NW, int STAGES, bool ROPE, bool MERGE>
cudaError_t launch_decode_kernel(dim3 grid, size_t smem, cudaStream_t stream, const attn_args &a, int n_splits,
                                 float *part_o, float2 *part_ml, int early, const attn_rope &rope,
                                 unsigned *merge_counters)
{
    cudaError_t rc = cudaSuccess;
    if (ROPE || MERGE) // the plain instance's was set by launch_decode_cfg (its occupancy needs it first)
        rc = cudaFuncSetAttribute(decode_kernel<HD, NW, STAGES, ROPE, MERGE>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (rc == cudaSuccess)
        rc = launch_pdl(decode_kernel<HD, NW, STAGES, ROPE, MERGE>, grid, NW * 32, smem, stream, a, n_splits,
                        part_o, part_ml, early, rope, merge_counters);
    return rc;
}

template <int HD, int NW, int STAGES>
cudaError_t launch_decode_cfg(const attn_args &a, const attn_rope *rope, long max_range, float *scratch,
                              size_t scratch_floats, const attn_merge *merge, int *n_splits_out, cudaStream_t stream)
{
    constexpr size_t smem = decode_smem_bytes<HD, NW, STAGES>();
    cudaError_t rc = cudaFuncSetAttribute(decode_kernel<HD, NW, STAGES>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (rc != cudaSuccess)
        return rc;
    static const int per_sm = decode_occupancy<HD, NW, STAGES>(); /* same on every device of a host */
    const int group = a.n_heads / a.n_kv_heads, n_rg = (group + 15) / 16;
    // One wave: as many splits as fit the free CTA slots.
    long ctas = (long)a.n_tokens * a.n_kv_heads * n_rg, slots = (long)a.sm_count * per_sm;
    long splits = slots / ctas;
    long by_range = (max_range + CHUNK - 1) / CHUNK;
    long by_scratch =
        scratch ? (long)(scratch_floats / ((size_t)a.n_tokens * a.n_heads * (a.head_dim + 2))) : 1;
    splits = splits < by_range ? splits : by_range;
    splits = splits < by_scratch ? splits : by_scratch;
    splits = splits < ATTN_DECODE_MAX_SPLITS ? splits : ATTN_DECODE_MAX_SPLITS;
    const int n_splits = splits < 1 ? 1 : (int)splits;
    if (n_splits_out)
        *n_splits_out = n_splits;
    float *part_o = scratch;
    float2 *part_ml =
        reinterpret_cast<float2 *>(scratch + (size_t)a.n_tokens * a.n_heads * n_splits * a.head_dim);
    dim3 grid(n_splits, a.n_kv_heads * n_rg, a.n_tokens);
    // the last split merges where every CTA group has a counter and it wins
    const bool merge_in_kernel = n_splits > 1 && merge && merge->counters && ctas <= (long)merge->n &&
                                 merge_in_kernel_wins(a.head_dim, a.n_tokens);
    unsigned *counters = merge_in_kernel ? merge->counters : nullptr;
    const int early = scratch && a.head_dim % 8 == 0;
    if (rope && (!early || HD < 64 || a.head_dim != HD))
        return cudaErrorNotSupported;
    if (rope && HD >= 64) { // the split count above is the plain kernel's, so the sums split alike
        constexpr bool R = HD >= 64;
        rc = merge_in_kernel ? launch_decode_kernel<HD, NW, STAGES, R, true>(grid, smem, stream, a, n_splits, part_o,
                                                                            part_ml, early, *rope, counters)
                             : launch_decode_kernel<HD, NW, STAGES, R, false>(grid, smem, stream, a, n_splits,
                                                                             part_o, part_ml, early, *rope, nullptr);
    } else {
        const attn_rope none{};
        rc = merge_in_kernel ? launch_decode_kernel<HD, NW, STAGES, false, true>(grid, smem, stream, a, n_splits,
                                                                                part_o, part_ml, early, none, counters)
                             : launch_decode_kernel<HD, NW, STAGES, false, false>(grid, smem, stream, a, n_splits,
                                                                                 part_o, part_ml, early, none, nullptr);
    }
    if (n_splits > 1 && !merge_in_kernel && rc == cudaSuccess) {
        dim3 cgrid(a.n_heads, a.n_tokens, (a.head_dim + COMB_COLS - 1) / COMB_COLS);
        rc = launch_pdl(decode_combine_kernel, cgrid, COMB_THREADS, 0, stream, a, n_splits,
                        (const float *)part_o, (const float2 *)part_ml);
    }
    return rc;
}

} // namespace

// Tuning variant for bench_attention_decode (tests/gpu); 0 in production.
static int decode_variant;
extern "C" void attention_decode_set_variant(int v) { decode_variant = v; }

// RoPE inside the kernel saves the RoPE kernel's launch and pass but has
// every CTA of a row group rotate its q rows again: it wins at one row for
// every head size and up to 8 rows at head size 128, not at 256, where the
// repeated rotation outweighs the kernel it saves (docs/kernels/attention.md).
extern "C" int attention_decode_does_rope(int head_dim, int n_tokens)
{
    if (!(head_dim == 64 || head_dim == 128 || head_dim == 256) || rope_mode == 0)
        return 0;
    return rope_mode == 2 || n_tokens <= (head_dim <= 128 ? 8 : 1);
}

// Warps and pipeline depth per padded head dimension; the variant picks another.
static cudaError_t launch_decode(const struct attn_args *a, const attn_rope *rope, long max_range, float *scratch,
                                 size_t scratch_floats, const attn_merge *merge, int *n_splits, cudaStream_t stream)
{
    if (a->head_dim > 256 || a->sm_count < 1)
        return cudaErrorInvalidValue;
    if (a->n_tokens == 0)
        return cudaSuccess;
    const int v = decode_variant;
    if (a->head_dim <= 32)
        return launch_decode_cfg<32, 4, 4>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
    if (a->head_dim <= 64)
        return launch_decode_cfg<64, 4, 4>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
    if (a->head_dim <= 128) {
        if (v == 1)
            return launch_decode_cfg<128, 2, 4>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
        if (v == 2)
            return launch_decode_cfg<128, 4, 2>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
        return launch_decode_cfg<128, 4, 3>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
    }
    /* 256: 2 warps, 2 stages (76 KB) lets two CTAs share an SM, which beats
     * one CTA of 4 warps once the batch fills the GPU; but when every split of
     * every CTA group fits one CTA per SM (batch 1, short contexts) the 4-warp
     * CTA, one 64-key tile a split, is quicker (bench_attention_decode;
     * docs/kernels/attention.md). Counts only, so graphs stay valid; never
     * without scratch (batch-invariant mode: one kernel shape for any batch). */
    const long groups = (long)a->n_tokens * a->n_kv_heads * ((a->n_heads / a->n_kv_heads + 15) / 16);
    if (v == 0 && scratch && groups * ((max_range + CHUNK - 1) / CHUNK) <= a->sm_count)
        return launch_decode_cfg<256, 4, 2>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
    if (v == 1)
        return launch_decode_cfg<256, 2, 3>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
    if (v == 2)
        return launch_decode_cfg<256, 4, 2>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
    return launch_decode_cfg<256, 2, 2>(*a, rope, max_range, scratch, scratch_floats, merge, n_splits, stream);
}

extern "C" cudaError_t launch_attention_decode(const struct attn_args *a, long max_range, float *scratch,
                                               size_t scratch_floats, const struct attn_merge *merge, int *n_splits,
                                               cudaStream_t stream)
{
    return launch_decode(a, nullptr, max_range, scratch, scratch_floats, merge, n_splits, stream);
}

extern "C" cudaError_t launch_attention_decode_rope(const struct attn_args *a, const struct attn_rope *rope,
                                                    long max_range, float *scratch, size_t scratch_floats,
                                                    const struct attn_merge *merge, cudaStream_t stream)
{
    if (!rope || !rope->q_in || !scratch || !attention_decode_does_rope(a->head_dim, a->n_tokens))
        return cudaErrorNotSupported;
    return launch_decode(a, rope, max_range, scratch, scratch_floats, merge, nullptr, stream);
}
