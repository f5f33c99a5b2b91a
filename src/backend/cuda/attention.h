/* Private to the attention kernels (attention_decode.cu, attention_prefill.cu)
 * and their host dispatch (cuda_attention.c): the argument block both kernels
 * take by value, their extern "C" launchers, and (for the .cu files only) the
 * tensor-core and async-copy helpers they share.
 *
 * Layouts: q and out bf16 [n_tokens, n_heads, head_dim]; each cache bf16
 * [slots, n_kv_heads, head_dim] with slot = block_tables[seq][j / bs] * bs +
 * j % bs. Per-step values (positions, kv_len, block tables, query_start) are
 * read from device memory; launch arguments are counts and shapes only, so a
 * captured graph replays correctly with new lengths. */
#ifndef INFER_BACKEND_CUDA_ATTENTION_H
#define INFER_BACKEND_CUDA_ATTENTION_H

#include <cuda_runtime_api.h>
#include <stdint.h>

/* Decode splits the KV range of one (token, kv head) into at most this many
 * parts; a part is a multiple of ATTN_DECODE_MIN_CHUNK tokens. */
#define ATTN_DECODE_MAX_SPLITS 256
#define ATTN_DECODE_MIN_CHUNK 64

struct attn_args {
    void *out;                   /* bf16 [n_tokens, n_heads, head_dim] */
    const void *q;               /* bf16 [n_tokens, n_heads, head_dim] */
    const void *k_cache;         /* bf16 [slots, n_kv_heads, head_dim] */
    const void *v_cache;         /* bf16 [slots, n_kv_heads, head_dim] */
    const int32_t *positions;    /* [n_tokens] */
    const int32_t *seq_of_token; /* [n_tokens] */
    const int32_t *query_start;  /* [n_seqs + 1] */
    const int32_t *kv_len;       /* [n_seqs] */
    const int32_t *block_tables; /* [n_seqs, max_blocks_per_seq] */
    int n_tokens, n_seqs, max_blocks_per_seq;
    int n_heads, n_kv_heads, head_dim;
    int block_size_log2;
    int window;    /* 0 = unlimited */
    float scale;   /* applied to q.k */
    float softcap; /* > 0: s = softcap * tanh(s / softcap) */
    int sm_count;  /* multiprocessors (launch shapes) */
};

/* Split decode's merge counters: one a (token, kv head, row group) CTA group,
 * all 0 between launches; the last split to count merges the group's partials
 * and sets it back to 0. NULL, or fewer than the groups: the combine kernel
 * merges. Not in attn_args, so that the kernels that never merge (the combine
 * kernel, the prefill kernels) compile as they did without it. */
struct attn_merge {
    unsigned *counters;
    int n;
};

/* RoPE done by the decode kernel (launch_attention_decode_rope): what the
 * RoPE kernel (launch_qk_rope_kv_write) takes. q_in, k_in, v_in bf16 rows of
 * q_stride / kv_stride elements; q_norm, k_norm bf16 [head_dim] or both NULL. */
struct attn_rope {
    const void *q_in, *k_in, *v_in;
    int q_stride, kv_stride;
    const void *q_norm, *k_norm;
    float eps;
    int plus_one;
    const float *inv_freq;       /* [head_dim / 2] */
    const int32_t *slot_mapping; /* [n_tokens]; -1: no cache write */
    void *k_cache, *v_cache;     /* the caches of attn_args, written */
};

#ifdef __cplusplus
extern "C" {
#endif

/* One query token per row, any batch: split-KV; with more than one split the
 * last split of each (token, kv head group) merges the partials (where merge
 * has a counter for every group and the merge mode picks it), else a combine
 * kernel does. The split count comes from counts only: one
 * wave of CTAs (SMs x resident CTAs of the kernel) over n_tokens x kv heads,
 * capped by max_range / ATTN_DECODE_MIN_CHUNK (max_range: the most keys a
 * token can see, from the block-table capacity or the window), by
 * ATTN_DECODE_MAX_SPLITS and by the scratch: n_tokens * n_heads * splits *
 * (head_dim + 2) floats must fit in scratch_floats. *n_splits (if not NULL)
 * receives the count used. */
cudaError_t launch_attention_decode(const struct attn_args *a, long max_range, float *scratch,
                                    size_t scratch_floats, const struct attn_merge *merge, int *n_splits,
                                    cudaStream_t stream);
/* The same with RoPE, the per-head norms and the cache write of each token's
 * own k and v done inside (a->q unused): the same bits as
 * launch_qk_rope_kv_write then launch_attention_decode. Only where
 * attention_decode_does_rope(head_dim, n_tokens) and with scratch (else
 * cudaErrorNotSupported). */
cudaError_t launch_attention_decode_rope(const struct attn_args *a, const struct attn_rope *rope, long max_range,
                                         float *scratch, size_t scratch_floats, const struct attn_merge *merge,
                                         cudaStream_t stream);
/* 1 where the decode kernel does RoPE for n_tokens rows of this head size:
 * head sizes 64, 128, 256, at the batches where that is faster than the
 * RoPE kernel. attention_decode_rope_mode (tests) forces it off (0) or on
 * at any batch (2); -1 gives the engine's rule back. */
int attention_decode_does_rope(int head_dim, int n_tokens);
void attention_decode_rope_mode(int mode);
/* Who merges the splits: 0 the combine kernel, 2 the last split's CTA, 1
 * (the engine's rule) the last split's CTA where that is faster (head sizes
 * up to 128, 4 rows or more); attention_decode_merge_mode sets it for tests
 * (-1: the engine's rule again). */
void attention_decode_merge_mode(int mode);
/* Any batch (several query tokens per sequence, cached prefixes): tiled
 * flash attention over the paged cache with mma.sync. */
cudaError_t launch_attention_prefill(const struct attn_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <math.h>

namespace attn
{

/* Shared-memory rows of HD bf16 are padded by 8 elements (16 bytes): with
 * HD a multiple of 16 the 8 row addresses of one ldmatrix fall in 8
 * different 16-byte bank groups, so tile reads are conflict-free. */
template <int HD> struct tile_ld {
    static constexpr int value = HD + 8;
};

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16-byte async copy; bytes < 16 zero-fills the rest (0 = all zeros). */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(bytes));
}
/* 4-byte async copy (any even head_dim: rows are only 4-byte aligned). */
__device__ __forceinline__ void cp_async4(void *dst, const void *src, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                          uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

/* d += a . b, m16n8k16, bf16 in, f32 accumulate. */
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float fast_tanh(float x)
{
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Raw q.k to the softmax's log2 domain: scale, optional soft-cap, log2(e). */
__device__ __forceinline__ float score_log2(float s, float scale, float softcap)
{
    const float log2e = 1.4426950408889634f;
    if (softcap > 0.f)
        return softcap * fast_tanh(s * scale / softcap) * log2e;
    return s * (scale * log2e);
}

/* The cache row (slot) of key j of a sequence, through its block table. */
__device__ __forceinline__ int64_t kv_slot(const int32_t *table, int j, int bs_log2)
{
    return ((int64_t)table[j >> bs_log2] << bs_log2) | (j & ((1 << bs_log2) - 1));
}

/* Copies K and V rows j0 .. j0 + ROWS - 1 of one kv head into shared tiles
 * [ROWS][HD + 8] (async; the caller commits). Rows outside [jlo, jhi] and
 * columns at or past hd are zero-filled, so masked keys never feed NaN or
 * stale values into P.V. vec16: hd % 8 == 0 (rows 16-byte aligned). Each
 * thread keeps one 16-byte column and walks rows, one table lookup a row.
 * Row held (a row the previous kernel is still writing) is skipped: the
 * caller copies it after its wait with load_kv_row; or, given held_k and
 * held_v (shared rows of HD, vec16), copied from there. */
template <int HD, int ROWS, int NTHREADS>
__device__ __forceinline__ void load_kv_rows(__nv_bfloat16 *dk, __nv_bfloat16 *dv, const __nv_bfloat16 *kc,
                                             const __nv_bfloat16 *vc, const int32_t *table, int j0, int jlo,
                                             int jhi, int bs_log2, int64_t row_stride, int64_t head_off,
                                             int hd, bool vec16, int held = -1,
                                             const __nv_bfloat16 *held_k = nullptr,
                                             const __nv_bfloat16 *held_v = nullptr)
{
    constexpr int CH = HD / 8, LD = HD + 8, STEP = NTHREADS / CH;
    static_assert(NTHREADS % CH == 0 && ROWS % STEP == 0, "loader shape");
    const int c = threadIdx.x % CH, r0 = threadIdx.x / CH;
    const bool col_in = c * 8 < hd;
#pragma unroll
    for (int i = 0; i < ROWS / STEP; i++) {
        const int r = r0 + i * STEP, j = j0 + r;
        if (j == held) { // row j is copied later (load_kv_row), or from shared memory
            if (held_k) {
                *reinterpret_cast<uint4 *>(dk + r * LD + c * 8) = *reinterpret_cast<const uint4 *>(held_k + c * 8);
                *reinterpret_cast<uint4 *>(dv + r * LD + c * 8) = *reinterpret_cast<const uint4 *>(held_v + c * 8);
            }
            continue;
        }
        const bool ok = j >= jlo && j <= jhi;
        int64_t off = head_off + c * 8;
        if (ok)
            off += kv_slot(table, j, bs_log2) * row_stride;
        __nv_bfloat16 *sk = dk + r * LD + c * 8, *sv = dv + r * LD + c * 8;
        if (vec16) {
            const bool in = ok && col_in;
            cp_async16(sk, in ? kc + off : kc, in ? 16 : 0);
            cp_async16(sv, in ? vc + off : vc, in ? 16 : 0);
        } else {
#pragma unroll
            for (int e = 0; e < 8; e += 2) {
                const bool in = ok && c * 8 + e < hd;
                cp_async4(sk + e, in ? kc + off + e : kc, in ? 4 : 0);
                cp_async4(sv + e, in ? vc + off + e : vc, in ? 4 : 0);
            }
        }
    }
}

// Key and value row j of one kv head into dk / dv (HD wide, hd % 8 == 0), with
// plain loads and stores: the threads of the block take its 16-byte pieces.
template <int HD, int NTHREADS>
__device__ __forceinline__ void load_kv_row(__nv_bfloat16 *dk, __nv_bfloat16 *dv, const __nv_bfloat16 *kc,
                                            const __nv_bfloat16 *vc, const int32_t *table, int j, int bs_log2,
                                            int64_t row_stride, int64_t head_off, int hd)
{
    const int64_t off = head_off + kv_slot(table, j, bs_log2) * row_stride;
    for (int c = threadIdx.x; c < HD / 8; c += NTHREADS) {
        const bool in = c * 8 < hd;
        *reinterpret_cast<uint4 *>(dk + c * 8) = in ? *reinterpret_cast<const uint4 *>(kc + off + c * 8) : uint4{};
        *reinterpret_cast<uint4 *>(dv + c * 8) = in ? *reinterpret_cast<const uint4 *>(vc + off + c * 8) : uint4{};
    }
}

/* S[NT][4] = Q . K^T for one warp: Q is 16 rows x 16*KT (in registers as
 * ldmatrix A fragments when QREG, else read from the shared rows at sq),
 * K is NT*8 shared rows at sk. C-fragment layout: s[nt][0..1] are row
 * lane/4, columns nt*8 + 2*(lane%4) + {0,1}; s[nt][2..3] the same of row
 * lane/4 + 8. */
template <bool QREG, int KT, int NT, int LD>
__device__ __forceinline__ void qk_mma(float (&s)[NT][4], const uint32_t (&qf)[QREG ? KT : 1][4],
                                       const __nv_bfloat16 *sq, const __nv_bfloat16 *sk)
{
    const int lane = threadIdx.x & 31, lrow = lane & 7, lmat = lane >> 3;
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
        s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KT; kk++) {
        uint32_t a[4];
        if (QREG) {
#pragma unroll
            for (int x = 0; x < 4; x++)
                a[x] = qf[QREG ? kk : 0][x];
        } else {
            ldsm_x4(a[0], a[1], a[2], a[3],
                    smem_addr(sq + (lrow + (lmat & 1) * 8) * LD + kk * 16 + (lmat >> 1) * 8));
        }
#pragma unroll
        for (int np = 0; np < NT / 2; np++) {
            uint32_t b0, b1, b2, b3;
            ldsm_x4(b0, b1, b2, b3,
                    smem_addr(sk + (np * 16 + (lmat >> 1) * 8 + lrow) * LD + kk * 16 + (lmat & 1) * 8));
            mma_bf16(s[2 * np], a, b0, b1);
            mma_bf16(s[2 * np + 1], a, b2, b3);
        }
    }
}

/* Loads a warp's Q A-fragments (16 rows at sq) into registers. */
template <int KT, int LD>
__device__ __forceinline__ void load_q_frags(uint32_t (&qf)[KT][4], const __nv_bfloat16 *sq)
{
    const int lane = threadIdx.x & 31, lrow = lane & 7, lmat = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < KT; kk++)
        ldsm_x4(qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3],
                smem_addr(sq + (lrow + (lmat & 1) * 8) * LD + kk * 16 + (lmat >> 1) * 8));
}

/* Online softmax over one tile of scores already in the log2 domain (masked
 * entries -inf): updates the running row maxima m and partial sums l of the
 * thread's two rows, rescales o, and turns s into probabilities. l is this
 * thread's share (the quad is summed at the end). */
template <int NT, int NO>
__device__ __forceinline__ void softmax_update(float (&s)[NT][4], float (&o)[NO][4], float (&m)[2],
                                               float (&l)[2])
{
    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        mx[0] = fmaxf(mx[0], fmaxf(s[nt][0], s[nt][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[nt][2], s[nt][3]));
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        base[r] = mx[r] == -INFINITY ? 0.f : mx[r]; /* a row with nothing visible yet */
        float alpha = fast_exp2(m[r] - base[r]);
        m[r] = mx[r];
        l[r] *= alpha;
#pragma unroll
        for (int no = 0; no < NO; no++) {
            o[no][2 * r] *= alpha;
            o[no][2 * r + 1] *= alpha;
        }
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            s[nt][e] = fast_exp2(s[nt][e] - base[e >> 1]);
            l[e >> 1] += s[nt][e];
        }
    }
}

/* o[2*DT][4] += P . V for one warp: P is the probabilities of 16 rows x
 * 16*KS tokens in C-fragment layout (reused as A fragments), V is 16*KS
 * shared rows at sv of 16*DT columns. */
template <int KS, int DT, int LD>
__device__ __forceinline__ void pv_mma(float (&o)[2 * DT][4], const float (&p)[2 * KS][4],
                                       const __nv_bfloat16 *sv)
{
    const int lane = threadIdx.x & 31, lrow = lane & 7, lmat = lane >> 3;
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        const uint32_t a[4] = {pack_bf16(p[2 * ks][0], p[2 * ks][1]), pack_bf16(p[2 * ks][2], p[2 * ks][3]),
                               pack_bf16(p[2 * ks + 1][0], p[2 * ks + 1][1]),
                               pack_bf16(p[2 * ks + 1][2], p[2 * ks + 1][3])};
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            uint32_t v0, v1, v2, v3;
            ldsm_x4_t(v0, v1, v2, v3,
                      smem_addr(sv + (ks * 16 + lrow + (lmat & 1) * 8) * LD + dt * 16 + (lmat >> 1) * 8));
            mma_bf16(o[2 * dt], a, v0, v1);
            mma_bf16(o[2 * dt + 1], a, v2, v3);
        }
    }
}

/* Keys visible to token t, inclusive [lo, hi] (empty when hi < lo): its
 * position's window, clipped to its sequence's cache and block table. */
__device__ __forceinline__ void token_kv_range(const attn_args &a, int t, int &lo, int &hi)
{
    int seq = a.seq_of_token[t], pos = a.positions[t];
    if (seq < 0 || seq >= a.n_seqs) {
        lo = 0, hi = -1;
        return;
    }
    hi = min(pos, a.kv_len[seq] - 1);
    hi = min(hi, (a.max_blocks_per_seq << a.block_size_log2) - 1);
    lo = a.window > 0 ? max(0, pos - a.window + 1) : 0;
}

} // namespace attn
#endif

#endif
