// Prefill / extend attention over the paged KV cache: causal, GQA, sliding
// window, any mix of sequences and query lengths in one launch; flash
// attention (v2) on the tensor cores with mma.sync m16n8k16 (bf16 in, f32
// accumulate), online softmax in registers.
//
// Work: one CTA per (query head, query tile of BM rows of one sequence). The
// grid is (n_heads, ceil(n_tokens / BM) + n_seqs), an upper bound on the tile
// count that depends on counts only; each CTA finds its (sequence, tile) by a
// block-wide scan of query_start on the device (tiles beyond the real count
// exit), so a captured graph replays with new lengths. Within a sequence the
// scan hands out the last tile (most keys) first, which balances the tail.
//
// A CTA stages its Q tile once, then streams KV tiles of BN keys (rows
// gathered slot by slot through the block table, 16-byte cp.async, STAGES
// deep) over [min lo, max hi] of its rows; each warp owns 16 query rows and
// skips tiles none of its rows can see; tiles that every row sees entirely
// skip the per-element mask. Rows past a sequence's end are zero and never
// written. K and V of a kv head are re-read by the group's query heads from
// L2 (the CTAs of one tile run head-adjacent).
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/common.cuh"

using namespace attn;

namespace
{

template <int HD, int NW, int BN, int STAGES> constexpr size_t prefill_smem_bytes()
{
    return (size_t)(16 * NW + 2 * STAGES * BN) * (HD + 8) * sizeof(bf16);
}

// Finds this CTA's (sequence, tile) among the batch's query tiles of BM rows;
// false when w is past the last tile. Block-wide; every thread must call it.
template <int NTHREADS, int BM>
__device__ bool find_tile(const int32_t *qs, int n_seqs, int w, int &seq, int &tile)
{
    constexpr int NWARP = NTHREADS / 32;
    __shared__ int s_work[2], s_scan[NWARP];
    if (threadIdx.x == 0)
        s_work[0] = -1, s_work[1] = 0;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int off = 0; /* tiles of the sequences before this round */
    for (int b = 0; b < n_seqs; b += NTHREADS) {
        int s = b + threadIdx.x;
        int cnt = s < n_seqs ? (qs[s + 1] - qs[s] + BM - 1) / BM : 0;
        int x = cnt;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            int y = __shfl_up_sync(0xffffffffu, x, o);
            if (lane >= o)
                x += y;
        }
        __syncthreads(); /* s_scan of the previous round is consumed; s_work initialised */
        if (lane == 31)
            s_scan[wid] = x;
        __syncthreads();
        int before = 0, total = 0;
#pragma unroll
        for (int i = 0; i < NWARP; i++) {
            before += i < wid ? s_scan[i] : 0;
            total += s_scan[i];
        }
        int start = off + before + x - cnt;
        if (cnt > 0 && w >= start && w < start + cnt)
            s_work[0] = s, s_work[1] = cnt - 1 - (w - start); /* last tile first */
        off += total;
        if (off > w)
            break;
    }
    __syncthreads();
    seq = s_work[0], tile = s_work[1];
    return seq >= 0;
}

template <int HD, int NW, int BN, int STAGES>
__global__ void __launch_bounds__(NW * 32) prefill_kernel(const attn_args a)
{
    constexpr int NTHREADS = NW * 32, BM = 16 * NW, LD = HD + 8, KT = HD / 16, NO = HD / 8, NT = BN / 8,
                  CH = HD / 8;
    constexpr bool QREG = HD <= 128;
    static_assert(BN % 16 == 0 && STAGES >= 2, "tile shape");
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem); // [BM][LD]
    bf16 *sK = sQ + BM * LD;                   // [STAGES][BN][LD]
    bf16 *sV = sK + STAGES * BN * LD;          // [STAGES][BN][LD]
    __shared__ int sLo[BM], sHi[BM], sWarp[NW][4];

    int seq, tile;
    if (!find_tile<NTHREADS, BM>(a.query_start, a.n_seqs, blockIdx.y, seq, tile))
        return;
    const int h = blockIdx.x, kvh = h / (a.n_heads / a.n_kv_heads), hd = a.head_dim;
    const int q0 = a.query_start[seq] + tile * BM;
    const int rows = min(BM, a.query_start[seq + 1] - q0);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c4 = lane & 3;

    // Each row's visible keys [lo, hi]; an empty row gets lo = INT_MAX, hi = -1.
    if (threadIdx.x < BM) {
        int r = threadIdx.x, lo = INT_MAX, hi = -1;
        if (r < rows) {
            int p = a.positions[q0 + r];
            hi = min(min(p, a.kv_len[seq] - 1), (a.max_blocks_per_seq << a.block_size_log2) - 1);
            lo = a.window > 0 ? max(0, p - a.window + 1) : 0;
            if (hi < lo)
                lo = INT_MAX, hi = -1;
        }
        sLo[r] = lo, sHi[r] = hi;
    }
    __syncthreads();
    // Per warp: min/max of its rows' lo and hi (skip and no-mask tests).
    int w_lo_min, w_lo_max, w_hi_min, w_hi_max;
    {
        int r = warp * 16 + (lane & 15), lo = sLo[r], hi = sHi[r];
        bool ok = hi >= 0;
        w_lo_min = ok ? lo : INT_MAX, w_lo_max = ok ? lo : INT_MIN;
        w_hi_min = ok ? hi : INT_MAX, w_hi_max = ok ? hi : -1;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            w_lo_min = min(w_lo_min, __shfl_xor_sync(0xffffffffu, w_lo_min, o));
            w_lo_max = max(w_lo_max, __shfl_xor_sync(0xffffffffu, w_lo_max, o));
            w_hi_min = min(w_hi_min, __shfl_xor_sync(0xffffffffu, w_hi_min, o));
            w_hi_max = max(w_hi_max, __shfl_xor_sync(0xffffffffu, w_hi_max, o));
        }
        if (lane == 0)
            sWarp[warp][0] = w_lo_min, sWarp[warp][1] = w_hi_max;
    }
    __syncthreads();
    int jmin = INT_MAX, jmax = -1;
#pragma unroll
    for (int w = 0; w < NW; w++)
        jmin = min(jmin, sWarp[w][0]), jmax = max(jmax, sWarp[w][1]);
    const int n_tiles = jmax >= jmin ? (jmax - jmin) / BN + 1 : 0;

    const bool vec16 = hd % 8 == 0;
    const int64_t q_stride = (int64_t)a.n_heads * hd;
    const bf16 *q = reinterpret_cast<const bf16 *>(a.q) + (int64_t)q0 * q_stride + (int64_t)h * hd;
    bf16 *out = reinterpret_cast<bf16 *>(a.out) + (int64_t)q0 * q_stride + (int64_t)h * hd;
    const int32_t *table = a.block_tables + (int64_t)seq * a.max_blocks_per_seq;
    const int64_t row_stride = (int64_t)a.n_kv_heads * hd, head_off = (int64_t)kvh * hd;
    const bf16 *kc = reinterpret_cast<const bf16 *>(a.k_cache),
               *vc = reinterpret_cast<const bf16 *>(a.v_cache);

    // Q tile (zero rows past the sequence and columns past hd), with KV tile 0.
    for (int idx = threadIdx.x; idx < BM * CH; idx += NTHREADS) {
        int r = idx / CH, c = idx % CH;
        bf16 *d = sQ + r * LD + c * 8;
        const bf16 *src = q + r * q_stride + c * 8;
        if (vec16) {
            bool in = r < rows && c * 8 < hd;
            cp_async16(d, in ? src : q, in ? 16 : 0);
        } else {
#pragma unroll
            for (int e = 0; e < 8; e += 2) {
                bool in = r < rows && c * 8 + e < hd;
                cp_async4(d + e, in ? src + e : q, in ? 4 : 0);
            }
        }
    }
    auto load_tile = [&](int i) {
        const int j0 = jmin + i * BN, st = i % STAGES;
        load_kv_rows<HD, BN, NTHREADS>(sK + st * BN * LD, sV + st * BN * LD, kc, vc, table, j0, jmin, jmax,
                                       a.block_size_log2, row_stride, head_off, hd, vec16);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < n_tiles)
            load_tile(s);
        cp_async_commit();
    }

    float o[NO][4];
#pragma unroll
    for (int i = 0; i < NO; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
    const int rlo[2] = {sLo[warp * 16 + g], sLo[warp * 16 + g + 8]};
    const int rhi[2] = {sHi[warp * 16 + g], sHi[warp * 16 + g + 8]};
    const bf16 *sQw = sQ + warp * 16 * LD;
    uint32_t qf[QREG ? KT : 1][4];

    for (int i = 0; i < n_tiles; i++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); // tile i (and Q) landed; every warp is done with the stage refilled next
        if (i + STAGES - 1 < n_tiles)
            load_tile(i + STAGES - 1);
        cp_async_commit();
        if (QREG && i == 0)
            load_q_frags<QREG ? KT : 1, LD>(qf, sQw);
        const int j0 = jmin + i * BN, st = i % STAGES;
        if (j0 > w_hi_max || j0 + BN - 1 < w_lo_min)
            continue; /* none of this warp's rows sees these keys */
        float s[NT][4];
        qk_mma<QREG, KT, NT, LD>(s, qf, sQw, sK + st * BN * LD);
        if (j0 >= w_lo_max && j0 + BN - 1 <= w_hi_min) {
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    s[nt][e] = score_log2(s[nt][e], a.scale, a.softcap);
        } else {
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int j = j0 + nt * 8 + 2 * c4 + (e & 1), r = e >> 1;
                    s[nt][e] =
                        j >= rlo[r] && j <= rhi[r] ? score_log2(s[nt][e], a.scale, a.softcap) : -INFINITY;
                }
        }
        softmax_update<NT, NO>(s, o, m, l);
        pv_mma<BN / 16, HD / 16, LD>(o, s, sV + st * BN * LD);
    }
    cp_async_wait<0>();
    __syncthreads(); /* with no KV tile, other threads' Q copies may still be landing */

    // Normalise; stage the warp's 16 rows in its own rows of sQ, then store
    // them with wide writes.
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        l[r] = l[r] > 0.f ? 1.f / l[r] : 0.f;
    }
    __syncwarp();
    bf16 *sOw = sQ + warp * 16 * LD;
#pragma unroll
    for (int nt = 0; nt < NO; nt++) {
        int d = nt * 8 + 2 * c4;
        *reinterpret_cast<uint32_t *>(sOw + g * LD + d) = pack_bf16(o[nt][0] * l[0], o[nt][1] * l[0]);
        *reinterpret_cast<uint32_t *>(sOw + (g + 8) * LD + d) = pack_bf16(o[nt][2] * l[1], o[nt][3] * l[1]);
    }
    __syncwarp();
    for (int idx = lane; idx < 16 * CH; idx += 32) {
        int r = idx / CH, c = idx % CH, row = warp * 16 + r;
        if (row >= rows || c * 8 >= hd)
            continue;
        bf16 *dst = out + row * q_stride + c * 8;
        const bf16 *src = sOw + r * LD + c * 8;
        if (vec16) {
            *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
        } else {
            for (int e = 0; e < 8 && c * 8 + e < hd; e += 2)
                *reinterpret_cast<uint32_t *>(dst + e) = *reinterpret_cast<const uint32_t *>(src + e);
        }
    }
}

template <int HD, int NW, int BN, int STAGES>
cudaError_t launch_prefill_cfg(const attn_args &a, cudaStream_t stream)
{
    constexpr size_t smem = prefill_smem_bytes<HD, NW, BN, STAGES>();
    cudaError_t rc = cudaFuncSetAttribute(prefill_kernel<HD, NW, BN, STAGES>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (rc != cudaSuccess)
        return rc;
    constexpr int BM = 16 * NW;
    dim3 grid(a.n_heads, (a.n_tokens + BM - 1) / BM + a.n_seqs);
    prefill_kernel<HD, NW, BN, STAGES><<<grid, NW * 32, smem, stream>>>(a);
    return cudaGetLastError();
}

// Tile shapes per padded head dimension: 8 warps (128 query rows, K/V tiles
// shared by more rows) when that still gives a CTA to every SM, else 4 warps
// (64 rows: more CTAs for short or few-head steps). The choice depends on
// counts only. attention_prefill_set_variant (bench_attention_prefill's
// hook, not the engine's) forces one shape for head dims 128 and 256: 1 = 4
// warps, 2 = 8 warps, 3 = 8 warps with 3 stages of 32 keys.
template <int HD> cudaError_t launch_prefill_hd(const attn_args &a, int variant, cudaStream_t stream)
{
    if constexpr (HD == 256 || HD == 128) {
        constexpr int BN = HD == 256 ? 32 : 64;
        if (variant == 0) {
            long tiles8 = (long)a.n_heads * ((a.n_tokens + 127) / 128);
            variant = tiles8 >= a.sm_count ? 2 : 1;
        }
        if (variant == 1)
            return launch_prefill_cfg<HD, 4, BN, 2>(a, stream);
        if (variant == 3)
            return launch_prefill_cfg<HD, 8, 32, 3>(a, stream);
        return launch_prefill_cfg<HD, 8, BN, 2>(a, stream);
    } else {
        (void)variant;
        return launch_prefill_cfg<HD, 4, 64, 2>(a, stream);
    }
}

} // namespace

// Tuning variant for bench_attention_prefill (tests/gpu); 0 in production.
static int prefill_variant;
extern "C" void attention_prefill_set_variant(int v) { prefill_variant = v; }

extern "C" cudaError_t launch_attention_prefill(const struct attn_args *a, cudaStream_t stream)
{
    if (a->head_dim > 256)
        return cudaErrorInvalidValue;
    if (a->n_tokens == 0)
        return cudaSuccess;
    const int variant = prefill_variant;
    if (a->head_dim <= 32)
        return launch_prefill_hd<32>(*a, variant, stream);
    if (a->head_dim <= 64)
        return launch_prefill_hd<64>(*a, variant, stream);
    if (a->head_dim <= 128)
        return launch_prefill_hd<128>(*a, variant, stream);
    return launch_prefill_hd<256>(*a, variant, stream);
}
