// Device-side probe (not CI, not part of the build): step (a) of the
// persistent decode kernel plan (docs/kernels/persistent-decode.md): every
// GEMV of a batch-1 decode step in one persistent kernel, built the way the
// plan says the real kernel must be, timed against the first probe
// (tools/dev/persistent_chain.cu) and the engine's step. Findings, figures and
// what to run next: docs/kernels/persistent-decode.md, "Step (a)".
//
// What differs from the first probe:
// - Warp specialization: one producer warp an SM streams the block's weights
//   of every phase, in order, into a ring of shared-memory slots with TMA bulk
//   copies (cp.async.bulk + mbarrier). It waits only for free slots (and, with
//   a cap, for older loads to land), never for data, so the next phase's
//   weights arrive while a phase ends. Each consumer warp owns its own slots
//   and takes whole slots: no block barrier a slot.
// - A block owns whole rows of every matrix (a contiguous byte range), so a
//   row's sum stays in the block: no atomics, the same bits every run. Which
//   block gets one row more turns with the phase.
// - The residual add and the RMS statistics are made by the producing phase:
//   the o and down blocks add their rows to the residual stream and write the
//   partial sum of squares of those rows; the next norm reads the partials in
//   a fixed order, so no block recomputes a row sum of the whole stream.
// - gate|up rows are interleaved (g0, u0, g1, u1, ...): the block that owns a
//   pair writes silu(g) * u, so down reads one bf16 vector.
//
// Two ways to pass a phase's end: layers_kernel (a counter per phase: the
// blocks that finished it, fence + red.release, optionally sent by a warp of
// its own) and ll_kernel (every vector word carries the step's tag, as in
// NCCL's LL protocol; with a relaxed counter as a hint, or polling the words).
// Knobs of layers_kernel's producer: a cap on slot-loads in flight, a cap
// only while it runs ahead of the consumers' phase (cap_ahead: the best form,
// 2), L2 prefetch some slot-loads ahead; and the step as one kernel or as a
// kernel a layer (the engine's pieces), plainly or with PDL.
// `variants` picks the combinations; each is timed in five modes (the step,
// without the waits, also without making inputs, without the fence, the LM
// head alone) and traced once (globaltimer stamps per block and phase).
//
// The chain is per layer: q|k|v (input rmsnorm(x)), o (input: the q part of
// q|k|v, standing in for the attention), gate|up (rmsnorm(x)), down; then the
// LM head. Random bf16 weights of the real shapes. The result is checked
// against a naive reference (a warp a row, one kernel per phase) and for the
// same bits over 32 runs.
//
// Build and run (GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/pl tools/dev/persistent_layers.cu && /tmp/pl [model]
// (PL_SLOT=KIB: another ring slot size, 4..64 KiB; variants that do not fit are skipped;
// PL_VARIANT=i: only the table's variant i; PL_ATTN_PF=KIB: see c_attn_pf; the
// attention's forms PL_ATTN, PL_SPLIT, PL_HEAD_PARTS, PL_QKV_SPARE and the rest: the
// globals below. The best measured on one H200 (docs/kernels/persistent-decode.md,
// "The thirteenth session"): PL_ATTN=1 PL_VUNROLL=1 PL_ATTN_PF=128, Llama PL_SLOT=24
// PL_VARIANT=6, Qwen3 and Gemma PL_SLOT=20 PL_VARIANT=3, Gemma PL_HEAD_PARTS=2; from
// ~500 keys (PL_T) Llama and Qwen3 PL_HEAD_PARTS=4 PL_PART_MERGE=1, "The fourteenth session".)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/backend/cuda/attention.h"
#include "probe.cuh"

// PL_SLOT: a ring slot's size in KiB (20 unless set);
// whole rows a slot, so the bytes a slot-load moves depend on it (Llama's
// gate|up: 2 rows of 6 KiB in 20 KiB, 4 in 24). The host's copy, and the
// kernels' in constant memory (set once, before the first launch).
enum { MAX_SLOTS = 16, MAX_ROWS = 32 };
static int g_slot = 20480;
__constant__ int c_slot;
// PL_ATTN_PF=KIB: when a block's producer reaches the attention phase, it asks
// L2 for this many KiB of its gate|up rows (the ring holds o's weights by
// then; the HBM would otherwise idle while the attention's chain runs).
__constant__ int c_attn_pf;
static int g_attn_pf = 0;
static int g_variant = -1; // PL_VARIANT=i: only variant i of the table (-1: all)
enum { OP_QKV, OP_O, OP_GU, OP_DOWN, OP_HEAD, OP_ATTN };
// Phases a layer: 4 (q|k|v, o, gate|up, down), or 5 with attention after q|k|v
// (PL_ATTN=1: step (b); PL_T keys in each head's cache, default 160).
static int g_ppl = 4;
// PL_SPLIT=0 (default): a block a head, its warps merged in shared memory
// (attn_head). 1: the attention split by slots of keys over the blocks (a unit is
// (head, slot)), partial results merged by the o phase's input; 2: merged by
// the warp that finishes a head's last split (o then reads the heads' output).
static int g_split = 0;
static int g_T = 160;           // PL_T: keys in each head's cache
static int g_kps = 0;           // PL_KPS: keys a slot (a split unit) for the attention, 0: as many as fit
static int g_groups = 0;        // PL_GROUPS=1: a counter a kv group from q|k|v to attention
static int g_sc_fence = 0;      // PL_SC_FENCE=1: a head's merge counts in with fence.sc + atomicAdd + fence.sc
static int g_utrace = 0;        // PL_UTRACE=1: each split unit stamps its stages (ut), printed with the trace
static int g_vunroll = 0;       // PL_VUNROLL=1: a split unit's values 8 keys at a time (phase::v_unroll)
static int g_mbatch = 0;        // PL_MERGE_BATCH=1: a head's merge loads its splits' maxima together
static int g_parts = 1;         // PL_HEAD_PARTS=n: with PL_SPLIT=0, n blocks a head, merged by o's input
static int g_spare = 0;         // PL_QKV_SPARE=1: the attention's blocks take no q|k|v rows (phase::spare)
static int g_rope = 0;          // PL_ROPE=1: the step's own token, q/k norms and RoPE in the attention (phase::rope)
static int g_part_merge = 0;    // PL_PART_MERGE=1: with PL_HEAD_PARTS, a head's last part merges it
static int g_norms = 0;         // PL_NORMS=1: a norm weight array a norm (build_chain), not one for all
static int g_counter_words = 0; // the phase counters, then the group counters (zeroed every launch)
static int g_ib_off = 0, g_ib_bytes = 0; // input_warp: the two input buffers' place and size in shared memory
enum { SKIP_WAITS = 1, SKIP_INPUTS = 2, SKIP_FENCE = 4 };
// A split unit's stages (PL_UTRACE=1): entered, q loaded, its keys' slot full,
// scores and softmax done, values done, counted in, merged (0: not the merger).
enum { UT_START, UT_Q, UT_SLOT, UT_SCORES, UT_VALUES, UT_COUNTED, UT_MERGED, UT_FIELDS = 8 };
// Trace fields, per (block, phase), globaltimer ns
// T_FENCE, T_LOAD, T_RTTS: in the LM head phase (steady streaming), thread 0's
// store + __threadfence and dependent L2 load round trips, summed, and their count.
enum { T_START, T_WAITED, T_INPUT, T_END, T_ISSUE0, T_STALL, T_ISSUE1, T_FENCE, T_LOAD, T_RTTS, T_SCRATCH, T_FIELDS };

struct phase {
    const bf16 *w; // [n, k] row-major
    int n, k, op;
    int rows_per_slot;  // whole rows in one ring slot (even for gate|up)
    const float *x_in;  // the residual stream: the norm's input (QKV, GU, HEAD) or the rows to add (O, DOWN)
    const float *ss_in; // [grid] partial sums of squares of x_in (QKV, GU, HEAD)
    const float *norm;  // [k] norm weight
    const bf16 *vec_in; // [k] the input of O and DOWN
    bf16 *out;          // QKV: [n]; GU: silu(g) * u, [n / 2]
    float *x_out;       // O, DOWN: x_in + the rows, [n]
    float *ss_out;      // O, DOWN: [grid] partial sums of squares of x_out
    float *logits;      // HEAD: [n]
    // The LL kernel's vectors: words that carry the step's tag beside the value
    // (u32: bf16 | tag << 16; u64: f32 | tag << 32), so a reader polls the data
    // itself and no phase needs a fence or a counter.
    const uint64_t *tx_in; // NULL: x_in and ss_in are the step's untagged input
    const uint64_t *tss_in;
    const uint32_t *tvec_in;
    uint32_t *tout;
    uint64_t *tx_out, *tss_out;
    // OP_ATTN (no weights): a unit is a q head; vec_in is q|k|v, out the heads' outputs
    const bf16 *kc, *vc; // [n_kv][T][hd] each, the layer's cache
    int T, n_heads, n_kv, hd;
    int kps;       // ATTN: keys a slot (attn_keys_per_slot, or fewer: PL_KPS)
    int splits;    // ATTN: 0 a unit a head, else units (head, split), partials into part
    float *part;   // ATTN with splits: [n_heads][splits][hd + 4] (acc, m, l, 2 pad: 16-byte rows); O: merged as its input
    // PL_GROUPS=1: a counter a kv head from q|k|v to attention. QKV: grp (n_kv counters) bumped by
    // every block whose rows hold some of a group's q, k or v rows; ATTN: a unit waits for its
    // group's counter to reach grp_expect[g] (the host's count of those blocks), not for all.
    unsigned *grp;
    const int *grp_expect;
    int grp_n_kv, grp_qd, grp_kvd, grp_G, grp_hd;
    unsigned *head_done; // ATTN, PL_SPLIT=2: splits done a head; the warp that finishes a head's last split
                         // merges it into out (splits in order: the same bits whoever merges) and resets it.
                         // PL_PART_MERGE=1: parts done a head, the last part's block merges (merge_parts_if_last)
    int sc_fence;        // ATTN, PL_SPLIT=2: count in with the old fence.sc pair (PL_SC_FENCE=1), not acq_rel
    uint64_t *ut;        // ATTN, PL_UTRACE=1: [units][UT_FIELDS] globaltimer stamps of each unit's stages
    int v_unroll;        // ATTN, PL_VUNROLL=1: the values' loop 8 keys at a time, shuffles first
    int spare;           // PL_QKV_SPARE=1: ATTN: its units on the grid's last blocks, one each; QKV: that
                         // many last blocks take no rows (their rings fill with keys and o's rows)
    int parts;           // ATTN, PL_SPLIT=0: blocks a head (PL_HEAD_PARTS), each a share of its slots;
                         // past 1 each writes a partial into part, merged by o's input (o.splits = parts)
    int m_batch;         // ATTN, PL_MERGE_BATCH=1: the merge's maxima loaded together (S <= 8)
    // ATTN, PL_ROPE=1 (a block a head): the step's own token at position T - 1, as the engine's
    // decode kernel does it: q through the head's RMSNorm (qn, or none) and RoPE (rope_cs);
    // the unit holding the last key makes the new k the same way (kn) and takes k and v in place
    // of the cache's row T - 1, and one unit a kv head writes them there.
    int rope;
    const float *qn, *kn;
    const float2 *rope_cs; // (cos, sin) of position T - 1 for each of the hd / 2 frequencies
};

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t *b, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
}
// A wait that never ends is a bug in this probe: trap after a second rather than hang the machine.
__device__ __forceinline__ uint64_t now_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
// The time once v is in a register (the asm takes v, so it waits for the load).
__device__ __forceinline__ uint64_t now_ns_after(float v)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : "f"(v));
    return t;
}
__device__ __forceinline__ void watchdog(uint64_t t0)
{
    if (now_ns() - t0 > 1000000000ull)
        __trap();
}

__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity)
{
    unsigned done;
    const uint64_t t0 = now_ns();
    do {
        watchdog(t0);
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(smem_u32(b)), "r"(parity)
                     : "memory");
    } while (!done);
}
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}
// Only the consumer warps: the producer never joins a block barrier after the start.
template <int W> __device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;" ::"r"(W * 32) : "memory"); }

// The ring's barriers, empty; thread 0 of the block (a __syncthreads follows).
__device__ __forceinline__ void ring_init(uint64_t *full, uint64_t *empty, int n_slots)
{
    for (int s = 0; s < n_slots; s++) {
        mbar_init(&full[s], 1);
        mbar_init(&empty[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Lane 0 spins until *counter >= target (acquire, or relaxed where the data
// carries its own tags); then the warp goes on.
template <bool ACQUIRE> __device__ __forceinline__ void warp_wait_count(const unsigned *counter, unsigned target)
{
    if ((threadIdx.x & 31) == 0) {
        unsigned v;
        const uint64_t t0 = now_ns();
        do {
            watchdog(t0);
            if (ACQUIRE)
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
            else
                asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
        } while (v < target);
    }
    __syncwarp();
}

// The ring: chunk `it` (the block's it-th slot-load of the step) belongs to
// consumer warp it % W, which has `depth` slots of its own, so every slot's
// fills are consumed in order (an mbarrier parity wait cannot tell fill k
// from fill k - 2).
template <int W> __device__ __forceinline__ int slot_of(unsigned it, int depth)
{
    return (int)(it % W) + W * (int)((it / W) % depth);
}
template <int W> __device__ __forceinline__ unsigned fill_of(unsigned it, int depth) { return it / W / depth; }

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The attention phase: a unit is a q head; its block's producer streams the
// kv head's cached keys and values through the ring like weights (the cache
// before the step's own row does not depend on the step), a slot holding
// up to 32 keys' rows of K then the same keys' rows of V.
static int attn_keys_per_slot(int hd)
{
    const int k = g_slot / (4 * hd);
    return k > 32 ? 32 : k;
}

// Block b's rows of phase p: balanced, whole (g, u) pairs for gate|up. The
// share a block gets turns with the phase, so the blocks given one row more
// are not the same ones in every layer.
__host__ __device__ __forceinline__ void block_rows(const phase &P, int p, int b, int g, int &r0, int &r1)
{
    const int unit = P.op == OP_GU ? 2 : 1,
              n = P.op == OP_ATTN ? P.n_heads * (P.splits ? P.splits : P.parts) : P.n / unit;
    if (P.op == OP_ATTN && P.spare) { // unit b - (g - n) on block b, the grid's last n blocks
        r0 = b >= g - n ? b - (g - n) : 0;
        r1 = b >= g - n ? r0 + 1 : 0;
        return;
    }
    if (P.op == OP_QKV && P.spare) { // the next phase's attention blocks take none
        g -= P.spare;
        if (b >= g) {
            r0 = r1 = 0;
            return;
        }
    }
    b = (b + p * 37) % g;
    r0 = (int)((long)n * b / g) * unit;
    r1 = (int)((long)n * (b + 1) / g) * unit;
}

// The slots [c0, c1) of a head's keys that attention unit u takes: one slot
// (split units), or its part's share (a block a head: PL_SPLIT=0).
__host__ __device__ __forceinline__ void unit_chunks(const phase &P, int u, int &c0, int &c1)
{
    if (P.splits) {
        c0 = u % P.splits;
        c1 = c0 + 1;
        return;
    }
    const int n = (P.T + P.kps - 1) / P.kps, part = u % P.parts;
    c0 = n * part / P.parts;
    c1 = n * (part + 1) / P.parts;
}

// Whether q|k|v rows [r0, r1) hold some of kv group g's q, k or v rows.
__host__ __device__ inline bool qkv_rows_touch_group(const phase &P, int r0, int r1, int g)
{
    const int qa = g * P.grp_G * P.grp_hd, qb = qa + P.grp_G * P.grp_hd;
    const int ka = P.grp_qd + g * P.grp_hd, va = P.grp_qd + P.grp_kvd + g * P.grp_hd;
    return r0 < r1 && ((r0 < qb && qa < r1) || (r0 < ka + P.grp_hd && ka < r1) || (r0 < va + P.grp_hd && va < r1));
}

// What a consumer needs of phase p in its block: its rows [r0, r1) in
// n_chunks slot-loads of R rows, whether the phase adds to the residual
// stream, and thread 0's trace record (else NULL).
struct block_phase {
    int r0, r1, R, n_chunks;
    bool adds;
    uint64_t *tr;
};
__device__ __forceinline__ block_phase block_phase_of(const phase &P, int p, int last, uint64_t *trace, int tid)
{
    block_phase f;
    block_rows(P, p, blockIdx.x, gridDim.x, f.r0, f.r1);
    f.R = P.rows_per_slot;
    f.n_chunks = P.op != OP_ATTN ? (f.r1 - f.r0 + f.R - 1) / f.R : 0;
    for (int u = f.r0; P.op == OP_ATTN && u < f.r1; u++) {
        int c0, c1;
        unit_chunks(P, u, c0, c1);
        f.n_chunks += c1 - c0;
    }
    f.adds = P.op == OP_O || P.op == OP_DOWN;
    f.tr = trace && tid == 0 ? trace + ((size_t)blockIdx.x * last + p) * T_FIELDS : NULL;
    return f;
}

// Asks L2 for rows [r, r + nr) of phase P's matrix (cp.async.bulk.prefetch.L2:
// no data comes back to the SM).
__device__ __forceinline__ void l2_prefetch_rows(const phase &P, int r, int nr)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(P.w + (size_t)r * P.k),
                 "r"((unsigned)nr * P.k * 2)
                 : "memory");
}

// A walk over the block's slot-loads of the step, in the producer's order.
struct chunk_cursor {
    int p, r, r1;
};
__device__ __forceinline__ chunk_cursor cursor_start(const phase *ph, int first, int last)
{
    chunk_cursor c = {first, 0, 0};
    if (first < last)
        block_rows(ph[first], first, blockIdx.x, gridDim.x, c.r, c.r1);
    return c;
}
// Asks the cursor's chunk into L2 and steps past it (nothing past the last phase).
__device__ __forceinline__ void cursor_prefetch_next(const phase *ph, int last, chunk_cursor &c)
{
    while (c.p < last && (c.r >= c.r1 || !ph[c.p].w)) {
        if (++c.p < last)
            block_rows(ph[c.p], c.p, blockIdx.x, gridDim.x, c.r, c.r1);
    }
    if (c.p >= last)
        return;
    const phase &P = ph[c.p];
    l2_prefetch_rows(P, c.r, min(P.rows_per_slot, c.r1 - c.r));
    c.r += P.rows_per_slot;
}

// The producer's wait before slot-load `it`: its slot emptied by the fill
// before, and at most `cap` loads in flight (0: no cap). Returns the slot.
template <int W>
__device__ __forceinline__ int claim_slot(unsigned it, int depth, uint64_t *full, uint64_t *empty, int cap)
{
    const int s = slot_of<W>(it, depth);
    const unsigned fill = fill_of<W>(it, depth);
    if (fill > 0)
        mbar_wait(&empty[s], (fill - 1) & 1);
    if (cap > 0 && it >= (unsigned)cap)
        mbar_wait(&full[slot_of<W>(it - cap, depth)], fill_of<W>(it - cap, depth) & 1);
    return s;
}

template <int W>
// cap > 0: at most cap slot-loads in flight (chunk it waits for chunk it - cap
// to land). Loads in flight beyond what the bandwidth needs only lengthen the
// memory system's queues, which every dependent access (a counter, an input
// vector) then waits behind; landed slots cost nothing.
// cap_ahead > 0: the cap for loads of a phase the consumers have not reached
// yet (cphase: the phase they work on), so little is in flight while a phase's
// end is signalled and its inputs are read, and the full depth inside it.
// prefetch > 0: the chunk that many slot-loads ahead is asked into L2 when a
// slot-load is issued (cp.async.bulk.prefetch.L2: no data comes back to the
// SM), so the HBM keeps streaming while the ring waits at a phase end and the
// ring's loads then come from L2.
__device__ void produce(const phase *ph, int first, int last, unsigned char *ring, int depth, uint64_t *full,
                        uint64_t *empty, uint64_t *trace, int cap, int cap_ahead, const volatile int *cphase,
                        int prefetch)
{
    unsigned it = 0;
    chunk_cursor ahead = cursor_start(ph, first, last);
    for (int i = 0; i < prefetch; i++)
        cursor_prefetch_next(ph, last, ahead);
    for (int p = first; p < last; p++) {
        const phase &P = ph[p];
        if (P.op == OP_ATTN) { // each of the block's heads: its kv head's keys and values
            if (c_attn_pf > 0 && p + 2 < last && ph[p + 2].op == OP_GU && ph[p + 2].w) {
                const phase &G = ph[p + 2];
                int g0, g1;
                block_rows(G, p + 2, blockIdx.x, gridDim.x, g0, g1);
                long budget = (long)c_attn_pf * 1024;
                for (int r = g0; r < g1 && budget > 0; r += G.rows_per_slot) {
                    const int nr = min(G.rows_per_slot, g1 - r);
                    l2_prefetch_rows(G, r, nr);
                    budget -= (long)nr * G.k * 2;
                }
            }
            int h0, h1;
            block_rows(P, p, blockIdx.x, gridDim.x, h0, h1);
            const int kps = P.kps, S = P.splits ? P.splits : P.parts;
            for (int u = h0; u < h1; u++) { // a unit: a head's part, or (split) one slot of a head's keys
                int c0, c1;
                unit_chunks(P, u, c0, c1);
                const int h = u / S, t_end = min(P.T, c1 * kps);
                for (int t0 = c0 * kps; t0 < t_end; t0 += kps, it++) {
                    const int nk = min(kps, P.T - t0);
                    const int s = claim_slot<W>(it, depth, full, empty, cap_ahead > 0 && p > *cphase ? cap_ahead : cap);
                    const unsigned bytes = (unsigned)nk * P.hd * 2;
                    const size_t off = ((size_t)(h / (P.n_heads / P.n_kv)) * P.T + t0) * P.hd;
                    mbar_expect(&full[s], 2 * bytes);
                    bulk_copy(ring + (size_t)s * c_slot, P.kc + off, bytes, &full[s]);
                    bulk_copy(ring + (size_t)s * c_slot + bytes, P.vc + off, bytes, &full[s]);
                }
            }
            continue;
        }
        if (!P.w)
            continue;
        int r0, r1;
        block_rows(P, p, blockIdx.x, gridDim.x, r0, r1);
        uint64_t *tr = trace ? trace + ((size_t)blockIdx.x * last + p) * T_FIELDS : NULL, stall = 0;
        for (int r = r0; r < r1; r += P.rows_per_slot, it++) {
            const int nr = min(P.rows_per_slot, r1 - r);
            const uint64_t t0 = tr ? now_ns() : 0;
            const int s = claim_slot<W>(it, depth, full, empty, cap_ahead > 0 && p > *cphase ? cap_ahead : cap);
            if (tr) {
                const uint64_t t1 = now_ns();
                stall += t1 - t0;
                if (r == r0)
                    tr[T_ISSUE0] = t1;
                tr[T_ISSUE1] = t1;
            }
            const unsigned bytes = (unsigned)nr * P.k * 2;
            mbar_expect(&full[s], bytes);
            bulk_copy(ring + (size_t)s * c_slot, P.w + (size_t)r * P.k, bytes, &full[s]);
            if (prefetch > 0)
                cursor_prefetch_next(ph, last, ahead);
        }
        if (tr)
            tr[T_STALL] = stall;
    }
}

// The phase's input vector into xs (bf16, k values, as the engine's GEMVs
// take it). Every warp sums the norm partials itself in the same order, so no
// barrier is needed for the scale; the stream's values and the norm weight
// are loaded together with the partials.
// Four values of a norm's output, x * inv * w each, as the GEMVs take them (bf16).
__device__ __forceinline__ uint2 normed4(float4 x, float4 w, float inv)
{
    __nv_bfloat162 lo = __floats2bfloat162_rn(x.x * inv * w.x, x.y * inv * w.y);
    __nv_bfloat162 hi = __floats2bfloat162_rn(x.z * inv * w.z, x.w * inv * w.w);
    uint2 v;
    v.x = *reinterpret_cast<unsigned *>(&lo);
    v.y = *reinterpret_cast<unsigned *>(&hi);
    return v;
}

enum { MAX_NORM_LOADS = 8 }; // float4s a thread: k <= 8 * 4 * 32 * W
template <int W> __device__ void make_input(const phase &P, bf16 *xs, int tid)
{
    if (P.op == OP_O && P.part) { // merge the attention's partials: 8 dims of one head a thread
        const int hd = P.hd, S = P.splits;
        enum { MAXS = 8 };
        for (int i = tid * 8; i < P.k; i += W * 32 * 8) {
            const float *ph = P.part + (size_t)(i / hd) * S * (hd + 4);
            float M = -INFINITY, L = 0.f, o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int s0 = 0; s0 < S; s0 += MAXS) { // all loads of up to MAXS splits first
                float2 ml[MAXS];
                float4 a[MAXS], b[MAXS];
#pragma unroll
                for (int k = 0; k < MAXS; k++)
                    if (s0 + k < S) {
                        const float *q = ph + (size_t)(s0 + k) * (hd + 4);
                        ml[k] = __ldcg(reinterpret_cast<const float2 *>(q + hd));
                        a[k] = __ldcg(reinterpret_cast<const float4 *>(q + i % hd));
                        b[k] = __ldcg(reinterpret_cast<const float4 *>(q + i % hd + 4));
                    }
                float M1 = M;
#pragma unroll
                for (int k = 0; k < MAXS; k++)
                    if (s0 + k < S)
                        M1 = fmaxf(M1, ml[k].x);
                const float r = __expf(M - M1); // rescale what came before
                L *= r;
#pragma unroll
                for (int e = 0; e < 8; e++)
                    o[e] *= r;
#pragma unroll
                for (int k = 0; k < MAXS; k++)
                    if (s0 + k < S) {
                        const float f = __expf(ml[k].x - M1);
                        L += ml[k].y * f;
                        o[0] += a[k].x * f, o[1] += a[k].y * f, o[2] += a[k].z * f, o[3] += a[k].w * f;
                        o[4] += b[k].x * f, o[5] += b[k].y * f, o[6] += b[k].z * f, o[7] += b[k].w * f;
                    }
                M = M1;
            }
#pragma unroll
            for (int e = 0; e < 8; e++)
                xs[i + e] = __float2bfloat16(o[e] / L);
        }
        return;
    }
    if (P.op == OP_O || P.op == OP_DOWN) {
        for (int i = tid * 8; i < P.k; i += W * 32 * 8)
            *reinterpret_cast<uint4 *>(xs + i) = __ldcg(reinterpret_cast<const uint4 *>(P.vec_in + i));
        return;
    }
    if (P.k > MAX_NORM_LOADS * 4 * 32 * W)
        __trap();
    float4 x[MAX_NORM_LOADS], w[MAX_NORM_LOADS];
#pragma unroll
    for (int u = 0; u < MAX_NORM_LOADS; u++) {
        const int i = (tid + u * W * 32) * 4;
        if (i < P.k) {
            x[u] = __ldcg(reinterpret_cast<const float4 *>(P.x_in + i));
            w[u] = __ldg(reinterpret_cast<const float4 *>(P.norm + i));
        }
    }
    float ss = 0.f;
    for (int i = tid & 31; i < (int)gridDim.x; i += 32)
        ss += __ldcg(P.ss_in + i);
    const float inv = rsqrtf(warp_sum(ss) / P.k + 1e-6f);
#pragma unroll
    for (int u = 0; u < MAX_NORM_LOADS; u++) {
        const int i = (tid + u * W * 32) * 4;
        if (i < P.k)
            *reinterpret_cast<uint2 *>(xs + i) = normed4(x[u], w[u], inv);
    }
}

// One ring slot (nr whole rows of k) against xs by one warp: the row sums,
// row i's in lane i. Called by the warp that owns the slot.
__device__ __forceinline__ float slot_rows(const unsigned char *slot, const bf16 *xs, int nr, int k, int lane)
{
    const int pieces = k / 8;
    float mine = 0.f;
    for (int r = 0; r < nr; r++) {
        const uint4 *row = reinterpret_cast<const uint4 *>(slot + (size_t)r * k * 2);
        float acc0 = 0.f, acc1 = 0.f;
#pragma unroll 4
        for (int j = lane; j < pieces; j += 32) {
            const uint4 wv = row[j], xv = *reinterpret_cast<const uint4 *>(xs + j * 8);
            const __nv_bfloat162 *w2 = reinterpret_cast<const __nv_bfloat162 *>(&wv);
            const __nv_bfloat162 *x2 = reinterpret_cast<const __nv_bfloat162 *>(&xv);
#pragma unroll
            for (int h = 0; h < 4; h += 2) {
                const float2 a = __bfloat1622float2(w2[h]), xa = __bfloat1622float2(x2[h]);
                const float2 b = __bfloat1622float2(w2[h + 1]), xb = __bfloat1622float2(x2[h + 1]);
                acc0 += a.x * xa.x + a.y * xa.y;
                acc1 += b.x * xb.x + b.y * xb.y;
            }
        }
        const float v = warp_sum(acc0 + acc1);
        if (lane == r)
            mine = v;
    }
    return mine;
}

// The same with the lane's x pieces (j = lane + 32 i) in registers, for
// k <= XP * 256: a 16-byte piece costs one shared load, 8 conversions and 8
// FMAs instead of two loads, 16 conversions and 8 FMAs.
template <int XP>
__device__ __forceinline__ float slot_rows_reg(const unsigned char *slot, const float (&xr)[XP][8], int nr, int k,
                                               int lane)
{
    const int pieces = k / 8;
    float mine = 0.f;
    for (int r = 0; r < nr; r++) {
        const uint4 *row = reinterpret_cast<const uint4 *>(slot + (size_t)r * k * 2);
        float acc0 = 0.f, acc1 = 0.f;
#pragma unroll
        for (int i = 0; i < XP; i++) {
            const int j = lane + 32 * i;
            if (j < pieces) {
                const uint4 wv = row[j];
                const __nv_bfloat162 *w2 = reinterpret_cast<const __nv_bfloat162 *>(&wv);
                const float2 a = __bfloat1622float2(w2[0]), b = __bfloat1622float2(w2[1]);
                const float2 c = __bfloat1622float2(w2[2]), d = __bfloat1622float2(w2[3]);
                acc0 += a.x * xr[i][0] + a.y * xr[i][1] + b.x * xr[i][2] + b.y * xr[i][3];
                acc1 += c.x * xr[i][4] + c.y * xr[i][5] + d.x * xr[i][6] + d.y * xr[i][7];
            }
        }
        const float v = warp_sum(acc0 + acc1);
        if (lane == r)
            mine = v;
    }
    return mine;
}

// The same sums by mma (2026-11-28, H200: the FMA consumer above is the
// probe's bottleneck there, docs/kernels/persistent-decode.md). Two rows at
// once: A's rows 0-7 take row r's pieces, rows 8-15 row r + 1's, B's 8
// columns x's pieces; lane 4g + c gives A's row g and B's column g the same
// 16-byte piece (j0 + lane) of each, so the products that belong to a row sit
// on D's diagonal: D[g][g] (row r) and D[g + 8][g] (row r + 1), held by lane
// 4g + g/2. Consecutive lanes read consecutive pieces: no bank conflicts.
__device__ __forceinline__ float slot_rows_mma(const unsigned char *slot, const bf16 *xs, int nr, int k, int lane)
{
    const int pieces = k / 8, g = lane >> 2, c = lane & 3;
    const uint4 *xv = reinterpret_cast<const uint4 *>(xs), zero = make_uint4(0, 0, 0, 0);
    float mine = 0.f;
    for (int r = 0; r < nr; r += 2) {
        const uint4 *ra = reinterpret_cast<const uint4 *>(slot + (size_t)r * k * 2);
        const uint4 *rb = reinterpret_cast<const uint4 *>(slot + (size_t)min(r + 1, nr - 1) * k * 2);
        float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
        for (int j0 = 0; j0 < pieces; j0 += 32) { // every lane runs every mma (warp-wide)
            const int j = j0 + lane;
            const uint4 a = j < pieces ? ra[j] : zero, b = j < pieces ? rb[j] : zero, x = j < pieces ? xv[j] : zero;
            const uint32_t lo[4] = {a.x, b.x, a.y, b.y}, hi[4] = {a.z, b.z, a.w, b.w};
            attn::mma_bf16(d, lo, x.x, x.y); // the engine's m16n8k16 bf16 wrapper (attention.h)
            attn::mma_bf16(d, hi, x.z, x.w);
        }
        const bool diag = c == (g >> 1);
        const float va = warp_sum(diag ? (g & 1 ? d[1] : d[0]) : 0.f);
        const float vb = warp_sum(diag ? (g & 1 ? d[3] : d[2]) : 0.f);
        if (lane == r)
            mine = va;
        if (lane == r + 1)
            mine = vb;
    }
    return mine;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// PL_GROUPS=1: waits until head h's kv group's q|k|v rows are summed (not the whole phase).
__device__ __forceinline__ void wait_head_group(const phase &P, int h)
{
    const int g = h / (P.n_heads / P.n_kv);
    warp_wait_count<true>(P.grp + g, (unsigned)P.grp_expect[g]);
}

// One slot of a head's keys (Ks, then Vs: nk <= 32 rows of hd) against q (qs:
// hd floats, scaled) by one warp: the slot's max m, its sum of exp l, and the
// unnormalised values (lane's E = hd / 32 dims, lane * E + e). t_scores: the
// stage stamp after the scores (PL_UTRACE), or NULL.
__device__ __forceinline__ void slot_attend(const bf16 *Ks, const bf16 *Vs, int nk, int hd, const float *qs,
                                            int lane, int v_unroll, float &m, float &l, float (&acc)[8],
                                            uint64_t *t_scores)
{
    const int E = hd / 32, C = hd / 8; // dims a lane for the values; 16-byte pieces a key row
    enum { MAXE = 8 };
    // scores: lane j takes key j, its pieces in an order turned by j (no bank conflicts)
    float sc = -INFINITY;
    if (lane < nk) {
        const uint4 *kr = reinterpret_cast<const uint4 *>(Ks + (size_t)lane * hd);
        float a0 = 0.f, a1 = 0.f;
#pragma unroll 4
        for (int c = 0; c < C; c++) {
            const int cc = (c + lane) & (C - 1); // C = hd / 8, a power of two
            const uint4 kv = kr[cc];
            const float4 q0 = *reinterpret_cast<const float4 *>(qs + cc * 8),
                         q1 = *reinterpret_cast<const float4 *>(qs + cc * 8 + 4);
            const __nv_bfloat162 *k2 = reinterpret_cast<const __nv_bfloat162 *>(&kv);
            const float2 k0 = __bfloat1622float2(k2[0]), k1 = __bfloat1622float2(k2[1]),
                         k2f = __bfloat1622float2(k2[2]), k3 = __bfloat1622float2(k2[3]);
            a0 += k0.x * q0.x + k0.y * q0.y + k1.x * q0.z + k1.y * q0.w;
            a1 += k2f.x * q1.x + k2f.y * q1.y + k3.x * q1.z + k3.y * q1.w;
        }
        sc = a0 + a1;
    }
    m = warp_max(sc);
    const float pr = lane < nk ? __expf(sc - m) : 0.f;
    l = warp_sum(pr);
    if (t_scores)
        *t_scores = now_ns_after(l);
    // values: lane takes dims [lane * E, lane * E + E)
#pragma unroll
    for (int e = 0; e < MAXE; e++)
        acc[e] = 0.f;
    // 8 keys at a time: the 8 probabilities shuffled first, then 8 independent
    // loads, so the loop is not one shuffle -> load -> FMA chain a key
    for (int j0 = 0; v_unroll && E == 4 && j0 < nk; j0 += 8) {
        float pj[8];
        uint2 v[8];
#pragma unroll
        for (int t = 0; t < 8; t++) {
            pj[t] = __shfl_sync(0xffffffffu, pr, (j0 + t) & 31);
            v[t] = j0 + t < nk ? *reinterpret_cast<const uint2 *>(Vs + (size_t)(j0 + t) * hd + lane * E)
                               : make_uint2(0, 0);
        }
#pragma unroll
        for (int t = 0; t < 8; t++) {
            const __nv_bfloat162 *v2 = reinterpret_cast<const __nv_bfloat162 *>(&v[t]);
            const float2 a = __bfloat1622float2(v2[0]), b = __bfloat1622float2(v2[1]);
            const float q = j0 + t < nk ? pj[t] : 0.f;
            acc[0] += q * a.x, acc[1] += q * a.y, acc[2] += q * b.x, acc[3] += q * b.y;
        }
    }
    for (int j = 0; !(v_unroll && E == 4) && j < nk; j++) {
        const float pj = __shfl_sync(0xffffffffu, pr, j);
        const bf16 *vr = Vs + (size_t)j * hd + lane * E;
        if (E == 4) {
            const uint2 v = *reinterpret_cast<const uint2 *>(vr);
            const __nv_bfloat162 *v2 = reinterpret_cast<const __nv_bfloat162 *>(&v);
            const float2 a = __bfloat1622float2(v2[0]), b = __bfloat1622float2(v2[1]);
            acc[0] += pj * a.x, acc[1] += pj * a.y, acc[2] += pj * b.x, acc[3] += pj * b.y;
        } else if (E == 8) { // one 16-byte load a key (head size 256)
            const uint4 v = *reinterpret_cast<const uint4 *>(vr);
            const __nv_bfloat162 *v2 = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
            for (int h = 0; h < 4; h++) {
                const float2 f = __bfloat1622float2(v2[h]);
                acc[2 * h] += pj * f.x, acc[2 * h + 1] += pj * f.y;
            }
        } else {
#pragma unroll
            for (int e = 0; e < MAXE; e++)
                if (e < E)
                    acc[e] += pj * __bfloat162float(vr[e]);
        }
    }
}

// PL_PART_MERGE=1: the part of head h that counts in last merges the head's
// parts (in part order: the same bits whichever block is last) into its
// bf16 output, so o reads one vector instead of every head's partials. The
// pattern of the engine's merge_if_last: the consumers' barrier orders their
// partial stores before thread 0's count, whose release is cumulative; its
// acquire, then the barrier, orders the other parts' partials before the
// loads (past L1).
template <int W> __device__ void merge_parts_if_last(const phase &P, int h, int tid)
{
    __shared__ int last;
    consumers_sync<W>();
    if (tid == 0) {
        unsigned done;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(done) : "l"(P.head_done + h) : "memory");
        last = done == (unsigned)P.parts - 1;
        if (last)
            P.head_done[h] = 0; // every part has counted: nothing touches it again this launch
    }
    consumers_sync<W>();
    if (!last)
        return;
    const int hd = P.hd, S = P.parts;
    const float *ph = P.part + (size_t)h * S * (hd + 4);
    float M = -INFINITY;
    for (int sp = 0; sp < S; sp++)
        M = fmaxf(M, __ldcg(ph + (size_t)sp * (hd + 4) + hd));
    for (int i = tid; i < hd; i += W * 32) {
        float L = 0.f, o = 0.f;
        for (int sp = 0; sp < S; sp++) {
            const float *q = ph + (size_t)sp * (hd + 4), f = __expf(__ldcg(q + hd) - M);
            L += __ldcg(q + hd + 1) * f;
            o += __ldcg(q + i) * f;
        }
        P.out[(size_t)h * hd + i] = __float2bfloat16(o / L);
    }
}

// PL_ROPE: one head's row (hd bf16 at src) through the head's RMSNorm (nw: hd
// weights, or NULL) and RoPE (element i with i + hd / 2, as rotate_half; cs:
// the angle's cos and sin for frequency i, made on the host), rounded to bf16,
// by one warp: the lane's values lane + 32 r, r < hd / 32. The reference calls
// it too.
template <int E> // hd / 32, a constant so that x stays in registers
__device__ __forceinline__ void rope_row_e(const bf16 *src, const float *nw, int hd, const float2 *cs, int lane,
                                           float (&x)[8])
{
    // every load first (the row, the norm's weights, the angles): one round trip, not three
    float w[8];
    float2 c[4];
#pragma unroll
    for (int r = 0; r < 8; r++)
        if (r < E) {
            x[r] = __bfloat162float(__ldcg(src + lane + 32 * r));
            w[r] = nw ? __ldg(nw + lane + 32 * r) : 0.f;
        }
#pragma unroll
    for (int r = 0; r < 4; r++)
        if (r < E / 2)
            c[r] = __ldg(cs + lane + 32 * r);
    float ss = 0.f;
#pragma unroll
    for (int r = 0; r < 8; r++)
        if (r < E)
            ss += x[r] * x[r];
    ss = warp_sum(ss);
    if (nw) {
        const float inv = rsqrtf(ss / hd + 1e-6f);
#pragma unroll
        for (int r = 0; r < 8; r++)
            if (r < E)
                x[r] = __bfloat162float(__float2bfloat16(x[r] * inv * w[r]));
    }
#pragma unroll
    for (int r = 0; r < 4; r++)
        if (r < E / 2) {
            const float a = x[r], b = x[r + E / 2];
            x[r] = a * c[r].x - b * c[r].y;
            x[r + E / 2] = b * c[r].x + a * c[r].y;
        }
#pragma unroll
    for (int r = 0; r < 8; r++)
        if (r < E)
            x[r] = __bfloat162float(__float2bfloat16(x[r]));
}
__device__ __forceinline__ void rope_row(const bf16 *src, const float *nw, int hd, const float2 *cs, int lane,
                                         float (&x)[8])
{
    if (hd == 256)
        rope_row_e<8>(src, nw, hd, cs, lane, x);
    else
        rope_row_e<4>(src, nw, hd, cs, lane, x); // hd 128 (the probe's models)
}

// One q head over its kv head's T cached keys: each consumer warp takes its
// slots (slot_attend, the split unit's arithmetic; a warp's slots combined by
// online softmax), then the warps merge in shared memory (qs: hd floats, then
// W * (hd + 2)): no count and no merge through L2. it0: the ring position of
// the head's first slot; [c0, c1) the slots of the head this part takes.
// PL_ROPE=1: q normed and rotated, and the step's own k and v taken in.
template <int W>
__device__ void attn_head(const phase &P, int h, int part, int c0, int c1, unsigned it0, const unsigned char *ring,
                          uint64_t *full, uint64_t *empty, int depth, float *qs, int tid)
{
    const int hd = P.hd, T = P.T, warp = tid >> 5, lane = tid & 31, kps = P.kps, E = hd / 32;
    const int n_chunks = c1 - c0;
    float *wm = qs + hd, *wl = wm + W, *wacc = wl + W;
    const float scale = rsqrtf((float)hd);
    if (P.grp)
        wait_head_group(P, h);
    // PL_ROPE: this part holds the last key (the step's own token) when its slots reach the end
    const int n_all = (T + kps - 1) / kps, G = P.n_heads / P.n_kv, kvh = h / G;
    const bool holds_new = P.rope && c1 == n_all;
    bf16 *knew = reinterpret_cast<bf16 *>(wacc + W * hd), *vnew = knew + hd;
    if (!P.rope) {
        for (int i = tid; i < hd; i += W * 32)
            qs[i] = __bfloat162float(__ldcg(P.vec_in + (size_t)h * hd + i)) * scale;
    } else {
        // q on warp 0, the step's k on warp 1 and v on warp 2 at the same time (fewer warps: warp 0)
        float x[8];
        if (warp == 0) {
            rope_row(P.vec_in + (size_t)h * hd, P.qn, hd, P.rope_cs, lane, x);
#pragma unroll
            for (int r = 0; r < 8; r++)
                if (r < E)
                    qs[lane + 32 * r] = x[r] * scale;
        }
        const bool writer = h % G == 0; // one unit a kv head writes the cache
        const size_t kin = (size_t)P.n_heads * hd + (size_t)kvh * hd, vin = kin + (size_t)P.n_kv * hd;
        const size_t row = ((size_t)kvh * T + T - 1) * hd;
        if (holds_new && warp == (W > 1 ? 1 : 0)) {
            rope_row(P.vec_in + kin, P.kn, hd, P.rope_cs, lane, x);
#pragma unroll
            for (int r = 0; r < 8; r++) {
                if (r >= E)
                    break;
                const int i = lane + 32 * r;
                const bf16 kb = __float2bfloat16(x[r]);
                knew[i] = kb;
                if (writer)
                    const_cast<bf16 *>(P.kc)[row + i] = kb;
            }
        }
        if (holds_new && warp == (W > 2 ? 2 : 0))
            for (int i = lane * 4; i < hd; i += 128) { // 4 values a lane (8 bytes: vnew is 8-aligned)
                const uint2 vb = __ldcg(reinterpret_cast<const uint2 *>(P.vec_in + vin + i));
                *reinterpret_cast<uint2 *>(vnew + i) = vb;
                if (writer)
                    *reinterpret_cast<uint2 *>(const_cast<bf16 *>(P.vc) + row + i) = vb;
            }
    }
    consumers_sync<W>();
    enum { MAXE = 8 }; // hd <= 256
    float acc[MAXE], m = -INFINITY, l = 0.f;
#pragma unroll
    for (int e = 0; e < MAXE; e++)
        acc[e] = 0.f;
    for (int c = (int)((warp - it0 % W + W) % W); c < n_chunks; c += W) {
        const unsigned it = it0 + c;
        const int s = slot_of<W>(it, depth), nk = min(kps, T - (c0 + c) * kps);
        mbar_wait(&full[s], fill_of<W>(it, depth) & 1);
        const bf16 *Ks = reinterpret_cast<const bf16 *>(ring + (size_t)s * c_slot), *Vs = Ks + (size_t)nk * hd;
        if (holds_new && c0 + c == n_all - 1) { // the step's own k and v in place of the cache's row T - 1
            const size_t j = (size_t)(T - 1 - (c0 + c) * kps) * hd;
            for (int i = lane; i < hd; i += 32) {
                const_cast<bf16 *>(Ks)[j + i] = knew[i];
                const_cast<bf16 *>(Vs)[j + i] = vnew[i];
            }
            // these generic writes before the slot's next fill by TMA (the async proxy)
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
        }
        float ms, ls, as[MAXE];
        slot_attend(Ks, Vs, nk, hd, qs, lane, P.v_unroll, ms, ls, as, NULL);
        __syncwarp();
        if (lane == 0)
            mbar_arrive(&empty[s]);
        const float mnew = fmaxf(m, ms), f_old = __expf(m - mnew), f_new = __expf(ms - mnew);
        l = l * f_old + ls * f_new;
#pragma unroll
        for (int e = 0; e < MAXE; e++)
            acc[e] = acc[e] * f_old + as[e] * f_new;
        m = mnew;
    }
    if (lane == 0) {
        wm[warp] = m;
        wl[warp] = l;
    }
#pragma unroll
    for (int e = 0; e < MAXE; e++)
        if (e < E)
            wacc[warp * hd + lane * E + e] = acc[e];
    consumers_sync<W>();
    float M = -INFINITY;
    for (int w = 0; w < W; w++)
        M = fmaxf(M, wm[w]);
    // one part: the head's output; more: this part's partial (unnormalised, max, sum) for o's input
    float *pp = P.parts > 1 ? P.part + ((size_t)h * P.parts + part) * (hd + 4) : NULL;
    for (int i = tid; i < hd; i += W * 32) {
        float L = 0.f, o = 0.f;
        for (int w = 0; w < W; w++)
            if (wm[w] > -INFINITY) {
                const float f = __expf(wm[w] - M);
                L += wl[w] * f;
                o += wacc[w * hd + i] * f;
            }
        if (pp) {
            pp[i] = o;
            if (i == 0)
                pp[hd] = M, pp[hd + 1] = L;
        } else {
            P.out[(size_t)h * hd + i] = __float2bfloat16(o / L);
        }
    }
    if (pp && P.head_done) // PL_PART_MERGE=1: the head's last part merges its parts
        merge_parts_if_last<W>(P, h, tid);
    consumers_sync<W>(); // smem is reused by the next head
}

// A split unit (one slot of one head's keys) by the warp that owns the slot:
// its partial (unnormalised acc, max, sum) for the o phase to merge.
template <int W>
__device__ void attn_unit(const phase &P, int u, unsigned it, const unsigned char *ring, uint64_t *full,
                          uint64_t *empty, int depth, float *qs, int lane)
{
    const int hd = P.hd, S = P.splits, h = u / S, kps = P.kps, nk = min(kps, P.T - u % S * kps);
    const int E = hd / 32; // dims a lane for the values
    if (P.grp)
        wait_head_group(P, h);
    enum { MAXE = 8 };
    uint64_t *ut = P.ut && lane == 0 ? P.ut + (size_t)u * UT_FIELDS : NULL;
    if (ut)
        ut[UT_START] = now_ns(), ut[UT_MERGED] = 0;
    const float scale = rsqrtf((float)hd);
    for (int i = lane; i < hd; i += 32)
        qs[i] = __bfloat162float(__ldcg(P.vec_in + (size_t)h * hd + i)) * scale;
    __syncwarp();
    if (ut)
        ut[UT_Q] = now_ns_after(qs[0]);
    const int s = slot_of<W>(it, depth);
    mbar_wait(&full[s], fill_of<W>(it, depth) & 1);
    if (ut)
        ut[UT_SLOT] = now_ns();
    const bf16 *Ks = reinterpret_cast<const bf16 *>(ring + (size_t)s * c_slot), *Vs = Ks + (size_t)nk * hd;
    float m, l, acc[MAXE];
    slot_attend(Ks, Vs, nk, hd, qs, lane, P.v_unroll, m, l, acc, ut ? ut + UT_SCORES : NULL);
    float *out = P.part + (size_t)u * (hd + 4);
    if (ut)
        ut[UT_VALUES] = now_ns_after(acc[0]);
    __syncwarp();
    if (lane == 0)
        mbar_arrive(&empty[s]);
#pragma unroll
    for (int e = 0; e < MAXE; e++)
        if (e < E)
            out[lane * E + e] = acc[e];
    if (lane == 0) {
        out[hd] = m;
        out[hd + 1] = l;
    }
    if (!P.head_done)
        return;
    // The last split of head h to finish merges the head. __syncwarp orders
    // the lanes' stores before lane 0's count, whose release is cumulative;
    // its acquire, then __syncwarp, orders the other splits' partials before
    // the lanes' loads (docs/kernels/persistent-decode.md, "The phase-end
    // fence"). PL_SC_FENCE=1: the old fence.sc on each side, for the A/B.
    unsigned done = 0;
    __syncwarp();
    if (lane == 0) {
        if (P.sc_fence) {
            __threadfence();
            done = atomicAdd(P.head_done + h, 1u);
            __threadfence();
        } else {
            asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(done) : "l"(P.head_done + h) : "memory");
        }
    }
    __syncwarp();
    if (ut)
        ut[UT_COUNTED] = now_ns_after(__uint_as_float(done));
    if (__shfl_sync(0xffffffffu, done, 0) != (unsigned)S - 1)
        return;
    const float *ph = P.part + (size_t)h * S * (hd + 4);
    // The merge as first built: scalar loads, one split after another. With
    // 16-byte loads and stores (and unrolled by 8 or not) it took longer (Llama
    // 2.65 -> 3.7-4.7 us, Gemma 3.8 -> 5.3-6.2; H200, PL_UTRACE=1), not known why.
    float M = -INFINITY;
    float mv[8]; // PL_MERGE_BATCH=1 (S <= 8): the maxima loaded together, kept for the weights
    const bool batch = P.m_batch && S <= 8;
    if (batch) {
#pragma unroll
        for (int sp = 0; sp < 8; sp++)
            mv[sp] = sp < S ? __ldcg(ph + (size_t)sp * (hd + 4) + hd) : -INFINITY;
#pragma unroll
        for (int sp = 0; sp < 8; sp++)
            M = fmaxf(M, mv[sp]);
    } else {
        for (int sp = 0; sp < S; sp++)
            M = fmaxf(M, __ldcg(ph + (size_t)sp * (hd + 4) + hd));
    }
    float L = 0.f, o[MAXE];
#pragma unroll
    for (int e = 0; e < MAXE; e++)
        o[e] = 0.f;
    auto add_split = [&](int sp, float m_sp) { // split sp's share, weighted by exp(its max - M)
        const float *q = ph + (size_t)sp * (hd + 4), f = __expf(m_sp - M);
        L += __ldcg(q + hd + 1) * f;
#pragma unroll
        for (int e = 0; e < MAXE; e++)
            if (e < E)
                o[e] += __ldcg(q + lane * E + e) * f;
    };
    if (batch) { // unrolled: the compiler may issue later splits' loads early; the same order as below
#pragma unroll
        for (int sp = 0; sp < 8; sp++)
            if (sp < S)
                add_split(sp, mv[sp]);
    } else {
        for (int sp = 0; sp < S; sp++)
            add_split(sp, __ldcg(ph + (size_t)sp * (hd + 4) + hd));
    }
#pragma unroll
    for (int e = 0; e < MAXE; e++)
        if (e < E)
            P.out[(size_t)h * hd + lane * E + e] = __float2bfloat16(o[e] / L);
    if (lane == 0)
        P.head_done[h] = 0;
    if (ut)
        ut[UT_MERGED] = now_ns_after(o[0]);
}

// Whether the input warp brings phase p's input (input_warp): not the launch's
// first phase, not attention (its units read q themselves), not an o phase
// that merges the attention's partials itself.
__device__ __forceinline__ bool input_by_warp(const phase &P, int p, int first)
{
    return p > first && P.op != OP_ATTN && !(P.op == OP_O && P.part);
}

// make_input from what the input warp copied into buf: the same arithmetic in
// the same order (the same bits).
template <int W> __device__ void input_from_buf(const phase &P, const unsigned char *buf, bf16 *xs, int tid)
{
    if (P.op == OP_O || P.op == OP_DOWN) {
        for (int i = tid * 8; i < P.k; i += W * 32 * 8)
            *reinterpret_cast<uint4 *>(xs + i) = *reinterpret_cast<const uint4 *>(buf + (size_t)i * 2);
        return;
    }
    const float *xf = reinterpret_cast<const float *>(buf), *sp = xf + P.k;
    float ss = 0.f;
    for (int i = tid & 31; i < (int)gridDim.x; i += 32)
        ss += sp[i];
    const float inv = rsqrtf(warp_sum(ss) / P.k + 1e-6f);
    for (int i = tid * 4; i < P.k; i += W * 32 * 4) {
        *reinterpret_cast<uint2 *>(xs + i) = normed4(*reinterpret_cast<const float4 *>(xf + i),
                                                     __ldg(reinterpret_cast<const float4 *>(P.norm + i)), inv);
    }
}

// XP > 0: x in registers (slot_rows_reg) for the phases with k <= XP * 256; XP = -1: the mma consumer (slot_rows_mma).
template <int W, int XP>
__global__ void __launch_bounds__(W * 32 + 64, 1)
    layers_kernel(const phase *ph, int first, int last, int depth, unsigned *counters, int skip, uint64_t *trace,
                  int cap, int signal_warp, int cap_ahead, int prefetch, int pdl, int input_warp, int ib_off,
                  int ib_bytes)
{
    const int n_slots = W * depth;
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *ring = smem;
    bf16 *xs = reinterpret_cast<bf16 *>(smem + (size_t)n_slots * c_slot);
    __shared__ uint64_t full[MAX_SLOTS], empty[MAX_SLOTS], in_bar[2];
    __shared__ float warp_ss[W];
    __shared__ int cphase; // the phase the consumers work on (for cap_ahead)
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    if (tid == 0) {
        ring_init(full, empty, n_slots);
        mbar_init(&in_bar[0], 1);
        mbar_init(&in_bar[1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        cphase = first;
    }
    __syncthreads();
    // pdl: launched as a dependent of the previous segment (one kernel a
    // layer): the next segment may start now, the weights stream at once, and
    // only the consumers wait for the previous kernel's stores.
    if (pdl) {
        asm volatile("griddepcontrol.launch_dependents;");
        if (warp != W)
            asm volatile("griddepcontrol.wait;" ::: "memory");
    }
    if (warp == W) {
        if (lane == 0)
            produce<W>(ph, first, last, ring, depth, full, empty, trace, cap, cap_ahead, &cphase, prefetch);
        return;
    }
    if (input_warp && warp == W + 1) { // the input warp: the next phase's input in by TMA at its counter
        for (int p = first + 1; p < last; p++) {
            const phase &P = ph[p];
            if (!input_by_warp(P, p, first))
                continue;
            const int b = p & 1;
            unsigned char *buf = smem + ib_off + (size_t)b * ib_bytes;
            // the buffer's previous use (phase p - 2) is over once phase p - 2 has ended here
            const uint64_t t0 = now_ns();
            while (*(volatile int *)&cphase < p - 1)
                watchdog(t0);
            if (!(skip & SKIP_WAITS))
                warp_wait_count<true>(counters + p - 1, gridDim.x);
            if (lane == 0) {
                // the inputs were written through the generic proxy; TMA reads through the async one
                asm volatile("fence.proxy.async.global;" ::: "memory");
                if (P.op == OP_O || P.op == OP_DOWN) {
                    const unsigned bytes = (unsigned)P.k * 2;
                    mbar_expect(&in_bar[b], bytes);
                    bulk_copy(buf, P.vec_in, bytes, &in_bar[b]);
                } else { // x (f32), then the partial sums of squares
                    const unsigned xb = (unsigned)P.k * 4, sb = (gridDim.x * 4 + 15) & ~15u;
                    mbar_expect(&in_bar[b], xb + sb);
                    bulk_copy(buf, P.x_in, xb, &in_bar[b]);
                    bulk_copy(buf + xb, P.ss_in, sb, &in_bar[b]);
                }
            }
            __syncwarp();
        }
        return;
    }
    if (warp == W + 1) { // the signal warp: no stores of its own outstanding when it fences
        for (int p = first; p < last; p++) {
            asm volatile("bar.sync 2, %0;" ::"r"(W * 32 + 32) : "memory");
            if (lane == 0) {
                if (ph[p].op == OP_O || ph[p].op == OP_DOWN) {
                    float t = 0.f;
                    for (int w = 0; w < W; w++)
                        t += warp_ss[w];
                    ph[p].ss_out[blockIdx.x] = t;
                }
                if (!(skip & SKIP_FENCE))
                    __threadfence();
                asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counters + p), "r"(1u) : "memory");
                *(volatile int *)&cphase = p + 1;
            }
            __syncwarp();
        }
        return;
    }
    unsigned it0 = 0;            // the ring position of the phase's first slot
    unsigned in_parity = 0;       // bit b: the parity of input buffer b's next fill (input_warp)
    for (int p = first; p < last; p++) {
        const phase &P = ph[p];
        const bool by_warp = input_warp && input_by_warp(P, p, first);
        const block_phase F = block_phase_of(P, p, last, trace, tid);
        const int r0 = F.r0, r1 = F.r1, R = F.R, n_chunks = F.n_chunks;
        const bool adds = F.adds;
        uint64_t *tr = F.tr;
        if (tr)
            tr[T_START] = now_ns();
        if (p > first && !(skip & SKIP_WAITS) && !(P.op == OP_ATTN && P.grp) && !by_warp) // each warp for itself
            warp_wait_count<true>(counters + p - 1, gridDim.x);
        if (by_warp) {
            const int b = p & 1;
            mbar_wait(&in_bar[b], (in_parity >> b) & 1);
            in_parity ^= 1u << b;
        }
        if (tr)
            tr[T_WAITED] = now_ns();
        if (P.op == OP_ATTN) {
            if (tr)
                tr[T_INPUT] = now_ns();
            for (int c = (int)((warp - it0 % W + W) % W); P.splits && c < r1 - r0; c += W)
                attn_unit<W>(P, r0 + c, it0 + c, ring, full, empty, depth,
                             reinterpret_cast<float *>(xs) + warp * P.hd, lane);
            unsigned itc = it0; // a block a head (part): its slots follow each other in the ring
            for (int u = r0; !P.splits && u < r1; u++) {
                int c0, c1;
                unit_chunks(P, u, c0, c1);
                attn_head<W>(P, u / P.parts, u % P.parts, c0, c1, itc, ring, full, empty, depth,
                             reinterpret_cast<float *>(xs), tid);
                itc += (unsigned)(c1 - c0);
            }
        } else {
            if (!(skip & SKIP_INPUTS)) {
                if (by_warp)
                    input_from_buf<W>(P, smem + ib_off + (size_t)(p & 1) * ib_bytes, xs, tid);
                else
                    make_input<W>(P, xs, tid);
            }
            consumers_sync<W>();
        }
        if (tr)
            tr[T_INPUT] = now_ns();
        const bool in_regs = XP > 0 && P.k <= XP * 256;
        float xr[XP > 0 ? XP : 1][8];
        if (in_regs) {
#pragma unroll
            for (int i = 0; i < (XP > 0 ? XP : 1); i++) {
                const int j = lane + 32 * i;
                if (j < P.k / 8) {
                    const uint4 xv = *reinterpret_cast<const uint4 *>(xs + j * 8);
                    const __nv_bfloat162 *x2 = reinterpret_cast<const __nv_bfloat162 *>(&xv);
#pragma unroll
                    for (int h = 0; h < 4; h++) {
                        const float2 f = __bfloat1622float2(x2[h]);
                        xr[i][2 * h] = f.x;
                        xr[i][2 * h + 1] = f.y;
                    }
                }
            }
        }
        float ss = 0.f; // this warp's rows of x_out, squared
        uint64_t fence_ns = 0, load_ns = 0, rtts = 0;
        float sink = 0.f;
        const int row_chunks = P.op == OP_ATTN ? 0 : n_chunks; // attn_head took the attention's slots
        for (int c = (int)((warp - it0 % W + W) % W); c < row_chunks; c += W) {
            const unsigned it = it0 + c;
            const int s = slot_of<W>(it, depth), row = r0 + c * R + lane, nr = min(R, r1 - r0 - c * R);
            const float resid = adds && lane < nr ? __ldcg(P.x_in + row) : 0.f;
            if (tr && P.op == OP_HEAD) { // round trips under load (thread 0 only)
                const uint64_t t0 = now_ns();
                tr[T_SCRATCH] = t0;
                __threadfence();
                const uint64_t t1 = now_ns();
                sink += __ldcg(P.x_in + (int)((t1 + it) % (uint64_t)P.k));
                const uint64_t t2 = now_ns_after(sink);
                fence_ns += t1 - t0;
                load_ns += t2 - t1;
                rtts++;
            }
            mbar_wait(&full[s], fill_of<W>(it, depth) & 1);
            float v;
            if constexpr (XP > 0) {
                if (in_regs)
                    v = slot_rows_reg<XP>(ring + (size_t)s * c_slot, xr, nr, P.k, lane);
                else
                    v = slot_rows(ring + (size_t)s * c_slot, xs, nr, P.k, lane);
            } else if constexpr (XP < 0) // XP = -1: the mma consumer
                v = slot_rows_mma(ring + (size_t)s * c_slot, xs, nr, P.k, lane);
            else
                v = slot_rows(ring + (size_t)s * c_slot, xs, nr, P.k, lane);
            __syncwarp();
            if (lane == 0)
                mbar_arrive(&empty[s]);
            if (P.op == OP_GU) {
                const float u = __shfl_down_sync(0xffffffffu, v, 1);
                if (lane < nr && !(lane & 1))
                    P.out[row / 2] = __float2bfloat16(v / (1.f + __expf(-v)) * u);
            } else if (lane < nr) {
                if (P.op == OP_QKV)
                    P.out[row] = __float2bfloat16(v);
                else if (P.op == OP_HEAD)
                    P.logits[row] = v;
                else {
                    const float y = resid + v;
                    P.x_out[row] = y;
                    ss += y * y;
                }
            }
        }
        it0 += n_chunks;
        if (tr && P.op == OP_HEAD) {
            tr[T_FENCE] = fence_ns;
            tr[T_LOAD] = load_ns;
            tr[T_RTTS] = rtts + (sink == 12345.f); // keeps the loads
        }
        if (adds) {
            ss = warp_sum(ss);
            if (lane == 0)
                warp_ss[warp] = ss;
        }
        if (signal_warp) { // hand the stored rows to the signal warp and go on
            if (tr)
                tr[T_END] = now_ns();
            // Without the waits nothing would hold the consumers back from arriving
            // twice before the signal warp syncs once: then they sync too.
            if (skip & SKIP_WAITS)
                asm volatile("bar.sync 2, %0;" ::"r"(W * 32 + 32) : "memory");
            else
                asm volatile("bar.arrive 2, %0;" ::"r"(W * 32 + 32) : "memory");
            continue;
        }
        consumers_sync<W>(); // every warp's rows are stored
        if (tid == 0) {
            if (adds) {
                float t = 0.f;
                for (int w = 0; w < W; w++)
                    t += warp_ss[w];
                P.ss_out[blockIdx.x] = t;
            }
            if (tr)
                tr[T_END] = now_ns();
            if (!(skip & SKIP_FENCE))
                __threadfence();
            asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counters + p), "r"(1u) : "memory");
            if (P.op == OP_QKV && P.grp)
                for (int g = 0; g < P.grp_n_kv; g++)
                    if (qkv_rows_touch_group(P, r0, r1, g))
                        asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(P.grp + g), "r"(1u) : "memory");
            *(volatile int *)&cphase = p + 1;
        }
    }
}

// ---- the LL kernel: tagged words instead of counters ----

__device__ __forceinline__ uint4 ld_words4(const uint32_t *p)
{
    uint4 v;
    asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}
__device__ __forceinline__ ulonglong2 ld_words2(const uint64_t *p)
{
    ulonglong2 v;
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t ld_word(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_word(uint32_t *p, uint32_t v)
{
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_word(uint64_t *p, uint64_t v)
{
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ bool tagged4(uint4 v, unsigned tag16)
{
    return (v.x >> 16) == tag16 && (v.y >> 16) == tag16 && (v.z >> 16) == tag16 && (v.w >> 16) == tag16;
}
__device__ __forceinline__ uint32_t word16(float v, unsigned tag16)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(v)) | tag16 << 16;
}
__device__ __forceinline__ uint64_t word32(float v, unsigned tag) { return (uint64_t)__float_as_uint(v) | (uint64_t)tag << 32; }
__device__ __forceinline__ float value32(uint64_t w) { return __uint_as_float((unsigned)w); }

// The input of O and DOWN: all loads first, then only the words not yet tagged again.
template <int W> __device__ void ll_vector_input(const phase &P, bf16 *xs, int tid, unsigned tag16, bool check)
{
    enum { T = W * 32, N = (10240 + T * 4 - 1) / (T * 4) };
    if (P.k > N * T * 4)
        __trap();
    uint4 v[N];
#pragma unroll
    for (int u = 0; u < N; u++) {
        const int i = (tid + u * T) * 4;
        if (i < P.k)
            v[u] = ld_words4(P.tvec_in + i);
    }
#pragma unroll
    for (int u = 0; u < N; u++) {
        const int i = (tid + u * T) * 4;
        if (i < P.k) {
            const uint64_t t0 = now_ns();
            while (check && !tagged4(v[u], tag16)) {
                watchdog(t0);
                v[u] = ld_words4(P.tvec_in + i);
            }
            uint2 b;
            b.x = (v[u].x & 0xffffu) | v[u].y << 16;
            b.y = (v[u].z & 0xffffu) | v[u].w << 16;
            *reinterpret_cast<uint2 *>(xs + i) = b;
        }
    }
}

// rmsnorm(x) * weight into xs; x and the partial sums are tagged words (or the
// step's plain input for the first layer).
template <int W> __device__ void ll_norm_input(const phase &P, bf16 *xs, int tid, unsigned tag, bool check)
{
    enum { T = W * 32, N = (4096 + T * 2 - 1) / (T * 2) };
    if (P.k > N * T * 2)
        __trap();
    float2 x[N], w[N];
#pragma unroll
    for (int u = 0; u < N; u++) {
        const int i = (tid + u * T) * 2;
        if (i < P.k) {
            w[u] = __ldg(reinterpret_cast<const float2 *>(P.norm + i));
            if (P.tx_in) {
                ulonglong2 v = ld_words2(P.tx_in + i);
                const uint64_t t0 = now_ns();
                while (check && ((v.x >> 32) != tag || (v.y >> 32) != tag)) {
                    watchdog(t0);
                    v = ld_words2(P.tx_in + i);
                }
                x[u] = make_float2(value32(v.x), value32(v.y));
            } else
                x[u] = __ldcg(reinterpret_cast<const float2 *>(P.x_in + i));
        }
    }
    float ss = 0.f;
    for (int i = tid & 31; i < (int)gridDim.x; i += 32) {
        if (P.tss_in) {
            uint64_t v = ld_word(P.tss_in + i);
            const uint64_t t0 = now_ns();
            while (check && (v >> 32) != tag) {
                watchdog(t0);
                v = ld_word(P.tss_in + i);
            }
            ss += value32(v);
        } else
            ss += __ldcg(P.ss_in + i);
    }
    const float inv = rsqrtf(warp_sum(ss) / P.k + 1e-6f);
#pragma unroll
    for (int u = 0; u < N; u++) {
        const int i = (tid + u * T) * 2;
        if (i < P.k)
            *reinterpret_cast<__nv_bfloat162 *>(xs + i) =
                __floats2bfloat162_rn(x[u].x * inv * w[u].x, x[u].y * inv * w[u].y);
    }
}

template <int W>
__global__ void __launch_bounds__(W * 32 + 32, 1)
    ll_kernel(const phase *ph, int first, int last, int depth, unsigned epoch, int skip, uint64_t *trace, int xs_len,
              unsigned *counters, int cap, int cap_ahead)
{
    const int n_slots = W * depth;
    __shared__ int cphase; // the phase the consumers work on (for cap_ahead)
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *ring = smem;
    bf16 *xs_buf = reinterpret_cast<bf16 *>(smem + (size_t)n_slots * c_slot); // two: phases alternate
    __shared__ uint64_t full[MAX_SLOTS], empty[MAX_SLOTS];
    __shared__ float warp_ss[W];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const unsigned tag = epoch, tag16 = epoch & 0xffffu;
    const bool check = !(skip & SKIP_WAITS);
    if (tid == 0) {
        ring_init(full, empty, n_slots);
        cphase = first;
    }
    __syncthreads();
    if (warp == W) {
        if (lane == 0)
            produce<W>(ph, first, last, ring, depth, full, empty, trace, cap, cap_ahead, &cphase, 0);
        return;
    }
    unsigned it0 = 0;
    for (int p = first; p < last; p++) {
        const phase &P = ph[p];
        bf16 *xs = xs_buf + (p & 1) * xs_len;
        const block_phase F = block_phase_of(P, p, last, trace, tid);
        const int r0 = F.r0, r1 = F.r1, R = F.R, n_chunks = F.n_chunks;
        const bool adds = F.adds;
        uint64_t *tr = F.tr;
        if (tr)
            tr[T_START] = now_ns();
        // The counter (relaxed: no fence, so it may run ahead of the words) says
        // when to look; the tags say whether a word is this step's.
        if (counters && p > first && check)
            warp_wait_count<false>(counters + p - 1, gridDim.x);
        if (tr)
            tr[T_WAITED] = now_ns();
        if (!(skip & SKIP_INPUTS)) {
            if (adds)
                ll_vector_input<W>(P, xs, tid, tag16, check);
            else
                ll_norm_input<W>(P, xs, tid, tag, check && p > first);
        }
        consumers_sync<W>();
        if (tr)
            tr[T_INPUT] = now_ns();
        float ss = 0.f;
        for (int c = (int)((warp - it0 % W + W) % W); c < n_chunks; c += W) {
            const unsigned it = it0 + c;
            const int s = slot_of<W>(it, depth), row = r0 + c * R + lane, nr = min(R, r1 - r0 - c * R);
            float resid = 0.f;
            if (adds && lane < nr) {
                if (P.tx_in) {
                    uint64_t v = ld_word(P.tx_in + row);
                    const uint64_t t0 = now_ns();
                    while (check && (v >> 32) != tag) {
                        watchdog(t0);
                        v = ld_word(P.tx_in + row);
                    }
                    resid = value32(v);
                } else
                    resid = __ldcg(P.x_in + row);
            }
            mbar_wait(&full[s], fill_of<W>(it, depth) & 1);
            const float v = slot_rows(ring + (size_t)s * c_slot, xs, nr, P.k, lane);
            __syncwarp();
            if (lane == 0)
                mbar_arrive(&empty[s]);
            if (P.op == OP_GU) {
                const float u = __shfl_down_sync(0xffffffffu, v, 1);
                if (lane < nr && !(lane & 1))
                    st_word(P.tout + row / 2, word16(v / (1.f + __expf(-v)) * u, tag16));
            } else if (lane < nr) {
                if (P.op == OP_QKV)
                    st_word(P.tout + row, word16(v, tag16));
                else if (P.op == OP_HEAD)
                    P.logits[row] = v;
                else {
                    const float y = resid + v;
                    st_word(P.tx_out + row, word32(y, tag));
                    ss += y * y;
                }
            }
        }
        it0 += n_chunks;
        if (tr)
            tr[T_END] = now_ns();
        if (adds) {
            ss = warp_sum(ss);
            if (lane == 0)
                warp_ss[warp] = ss;
        }
        if (adds || counters)
            consumers_sync<W>();
        if (tid == 0) {
            if (adds) {
                float t = 0.f;
                for (int w = 0; w < W; w++)
                    t += warp_ss[w];
                st_word(P.tss_out + blockIdx.x, word32(t, tag));
            }
            if (counters)
                asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counters + p), "r"(1u) : "memory");
            *(volatile int *)&cphase = p + 1;
        }
    }
}

// ---- the naive reference: one kernel per phase, a warp a row ----

// One block a q head, one thread a key for the scores (T <= 1024).
__global__ void ref_attn(phase P)
{
    __shared__ float sc[1024], red[32], qr[256];
    __shared__ bf16 kr[256], vr[256];
    const int h = blockIdx.x, hd = P.hd, T = P.T, g = h / (P.n_heads / P.n_kv);
    const bf16 *q = P.vec_in + (size_t)h * hd, *K = P.kc + (size_t)g * T * hd, *V = P.vc + (size_t)g * T * hd;
    // PL_ROPE: q normed and rotated, and the step's own k and v at T - 1 (made from q|k|v, not read
    // from the cache, which the probe overwrites with them)
    if (!P.rope)
        for (int i = threadIdx.x; i < hd; i += blockDim.x)
            qr[i] = __bfloat162float(q[i]);
    else if (threadIdx.x < 32) {
        const int lane = threadIdx.x, E = hd / 32;
        const size_t kin = (size_t)P.n_heads * hd + (size_t)g * hd, vin = kin + (size_t)P.n_kv * hd;
        float x[8];
        rope_row(q, P.qn, hd, P.rope_cs, lane, x);
        for (int r = 0; r < E; r++)
            qr[lane + 32 * r] = x[r];
        rope_row(P.vec_in + kin, P.kn, hd, P.rope_cs, lane, x);
        for (int r = 0; r < E; r++) {
            kr[lane + 32 * r] = __float2bfloat16(x[r]);
            vr[lane + 32 * r] = P.vec_in[vin + lane + 32 * r];
        }
    }
    __syncthreads();
    for (int t = threadIdx.x; t < T; t += blockDim.x) {
        const bf16 *kt = P.rope && t == T - 1 ? kr : K + (size_t)t * hd;
        float a = 0.f;
        for (int i = 0; i < hd; i++)
            a += qr[i] * rsqrtf((float)hd) * __bfloat162float(kt[i]);
        sc[t] = a;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float m = -INFINITY, l = 0.f;
        for (int t = 0; t < T; t++)
            m = fmaxf(m, sc[t]);
        for (int t = 0; t < T; t++)
            l += (sc[t] = __expf(sc[t] - m));
        red[0] = l;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        float o = 0.f;
        for (int t = 0; t < T; t++)
            o += sc[t] * __bfloat162float(P.rope && t == T - 1 ? vr[i] : V[(size_t)t * hd + i]);
        P.out[(size_t)h * hd + i] = __float2bfloat16(o / red[0]);
    }
}

__global__ void ref_input(phase P, float *xin)
{
    __shared__ float red[32];
    if (P.op == OP_O || P.op == OP_DOWN) {
        for (int i = threadIdx.x; i < P.k; i += blockDim.x)
            xin[i] = __bfloat162float(P.vec_in[i]);
        return;
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < P.k; i += blockDim.x)
        ss += P.x_in[i] * P.x_in[i];
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = ss;
    __syncthreads();
    float t = 0.f;
    for (int i = 0; i < (int)blockDim.x / 32; i++)
        t += red[i];
    const float inv = rsqrtf(t / P.k + 1e-6f);
    for (int i = threadIdx.x; i < P.k; i += blockDim.x)
        xin[i] = __bfloat162float(__float2bfloat16(P.x_in[i] * inv * P.norm[i]));
}

__global__ void ref_rows(phase P, const float *xin, float *y)
{
    const int row = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= P.n)
        return;
    float acc = 0.f;
    for (int i = lane; i < P.k; i += 32)
        acc += __bfloat162float(P.w[(size_t)row * P.k + i]) * xin[i];
    acc = warp_sum(acc);
    if (lane == 0)
        y[row] = acc;
}

__global__ void ref_finish(phase P, const float *y)
{
    for (int row = blockIdx.x * blockDim.x + threadIdx.x; row < P.n; row += gridDim.x * blockDim.x) {
        if (P.op == OP_QKV)
            P.out[row] = __float2bfloat16(y[row]);
        else if (P.op == OP_HEAD)
            P.logits[row] = y[row];
        else if (P.op == OP_GU) {
            if (!(row & 1))
                P.out[row / 2] = __float2bfloat16(y[row] / (1.f + __expf(-y[row])) * y[row + 1]);
        } else
            P.x_out[row] = P.x_in[row] + y[row];
    }
}

__global__ void to_f32(const bf16 *in, float *out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = __bfloat162float(in[i]);
}

// ---- the chain ----

static bf16 *rand_weights(size_t n, uint32_t seed)
{
    enum { PAT = 1 << 24 };
    uint16_t *pat = (uint16_t *)malloc((size_t)PAT * 2);
    probe_pattern(pat, PAT, seed * 2654435761u + 12345);
    bf16 *d = probe_upload_repeated(pat, PAT, n);
    free(pat);
    return d;
}

template <typename T> static T *dev_zeros(size_t n)
{
    T *p;
    CK(cudaMalloc(&p, n * sizeof(T)));
    CK(cudaMemset(p, 0, n * sizeof(T)));
    return p;
}

static int rows_per_slot(int k, int op)
{
    int r = g_slot / (k * 2);
    if (op == OP_GU)
        r &= ~1;
    if (r > MAX_ROWS)
        r = MAX_ROWS;
    return r;
}

// The phases of a step over the given weights, with buffers of their own.
// x0/ss0: the step's input residual stream and its partials (ss0[0] = the sum).
static phase *build_chain(const model_shape &m, bf16 *const *w, bf16 *const *kv_cache, const float *norm,
                          size_t norm_stride, const float *x0, const float *ss0, int grid, float **logits,
                          unsigned *counters)
{
    const int L = m.layers, n_ph = g_ppl * L + 1, qkv = m.qd + 2 * m.kvd;
    phase *ph = (phase *)calloc(n_ph, sizeof(phase));
    // PL_ROPE: Llama no q/k norms, base 500000; Qwen3 and Gemma q/k norms, base 1e6. One (cos, sin)
    // table of position T - 1 for every layer.
    const bool qk_norm = !strstr(m.name, "Llama");
    float2 *rope_cs = NULL;
    if (g_rope && g_ppl == 5) {
        float2 cs[128];
        for (int i = 0; i < m.hd / 2; i++) {
            const double a = (g_T - 1) * pow(qk_norm ? 1e6 : 5e5, -2.0 * i / m.hd);
            cs[i] = make_float2((float)cos(a), (float)sin(a));
        }
        rope_cs = dev_zeros<float2>(m.hd / 2);
        CK(cudaMemcpy(rope_cs, cs, m.hd / 2 * sizeof(float2), cudaMemcpyHostToDevice));
    }
    const float *x = x0, *ss = ss0;
    const uint64_t *tx = NULL, *tss = NULL;
    for (int l = 0; l < L; l++) {
        phase *q = &ph[g_ppl * l], *at = g_ppl == 5 ? q + 1 : NULL, *o = q + 1 + (at != NULL), *gu = o + 1,
              *dn = o + 2;
        uint32_t *tq = dev_zeros<uint32_t>(qkv), *tact = dev_zeros<uint32_t>(m.f);
        uint64_t *txm = dev_zeros<uint64_t>(m.d), *tssm = dev_zeros<uint64_t>(grid), *txn = dev_zeros<uint64_t>(m.d),
                 *tssn = dev_zeros<uint64_t>(grid);
        bf16 *qkv_out = dev_zeros<bf16>(qkv), *act = dev_zeros<bf16>(m.f);
        // the partial sums padded to 16 bytes: the input warp copies them whole
        float *x_mid = dev_zeros<float>(m.d), *ss_mid = dev_zeros<float>(grid + 4), *x_next = dev_zeros<float>(m.d),
              *ss_next = dev_zeros<float>(grid + 4);
        const float *norm_a = norm + 2 * l * norm_stride, *norm_f = norm_a + norm_stride;
        *q = (phase){w[4 * l], qkv, m.d, OP_QKV, 0, x, ss, norm_a, NULL, qkv_out, NULL, NULL, NULL};
        *o = (phase){w[4 * l + 1], m.d, m.qd, OP_O, 0, x, NULL, NULL, qkv_out, NULL, x_mid, ss_mid, NULL};
        *gu = (phase){w[4 * l + 2], 2 * m.f, m.d, OP_GU, 0, x_mid, ss_mid, norm_f, NULL, act, NULL, NULL, NULL};
        *dn = (phase){w[4 * l + 3], m.d, m.f, OP_DOWN, 0, x_mid, NULL, NULL, act, NULL, x_next, ss_next, NULL};
        q->tx_in = tx, q->tss_in = tss, q->tout = tq;
        o->tvec_in = tq, o->tx_in = tx, o->tx_out = txm, o->tss_out = tssm;
        gu->tx_in = txm, gu->tss_in = tssm, gu->tout = tact;
        dn->tvec_in = tact, dn->tx_in = txm, dn->tx_out = txn, dn->tss_out = tssn;
        if (at) { // attention between q|k|v and o: o takes the heads' outputs
            bf16 *attn_out = dev_zeros<bf16>(m.qd);
            *at = (phase){};
            at->op = OP_ATTN;
            at->vec_in = qkv_out;
            at->out = attn_out;
            at->kc = kv_cache[2 * l];
            at->vc = kv_cache[2 * l + 1];
            at->T = g_T;
            at->hd = m.hd;
            at->n_heads = m.qd / m.hd;
            at->n_kv = m.kvd / m.hd;
            at->kps = g_kps > 0 && g_kps < attn_keys_per_slot(m.hd) ? g_kps : attn_keys_per_slot(m.hd);
            if (g_groups) { // the counters of layer l's groups, after the phase counters
                const int n_kv = at->n_kv, pq = g_ppl * l;
                unsigned *grp = counters + (size_t)(g_ppl * L + 1) + (size_t)l * n_kv;
                q->grp = at->grp = grp;
                q->grp_n_kv = n_kv, q->grp_qd = m.qd, q->grp_kvd = m.kvd, q->grp_G = at->n_heads / n_kv;
                q->grp_hd = m.hd;
                int *expect = (int *)calloc(n_kv, sizeof(int));
                for (int b = 0; b < grid; b++) {
                    int r0, r1;
                    block_rows(*q, pq, b, grid, r0, r1);
                    for (int g = 0; g < n_kv; g++)
                        expect[g] += qkv_rows_touch_group(*q, r0, r1, g);
                }
                int *dexp = dev_zeros<int>(n_kv);
                CK(cudaMemcpy(dexp, expect, n_kv * sizeof(int), cudaMemcpyHostToDevice));
                free(expect);
                at->grp_expect = dexp;
            }
            at->v_unroll = g_vunroll;
            if (rope_cs) {
                at->rope = 1;
                at->qn = at->kn = qk_norm ? norm : NULL; // the first hd of the norm weights
                at->rope_cs = rope_cs;
            }
            at->parts = 1;
            if (!g_split && g_parts > 1) { // parts of a head merged by o's input, as PL_SPLIT=1's
                const int n = (g_T + at->kps - 1) / at->kps;
                at->parts = g_parts < n ? g_parts : n;
                at->part = dev_zeros<float>((size_t)at->n_heads * at->parts * (m.hd + 4));
                if (g_part_merge) { // merged by each head's last part; o takes attn_out
                    at->head_done = dev_zeros<unsigned>(at->n_heads);
                } else {
                    o->part = at->part;
                    o->splits = at->parts;
                    o->hd = m.hd;
                }
            }
            if (g_split) {
                at->splits = (g_T + at->kps - 1) / at->kps;
                at->part = dev_zeros<float>((size_t)at->n_heads * at->splits * (m.hd + 4));
                if (g_split == 2) { // the heads merged by their last split; o takes attn_out
                    at->head_done = dev_zeros<unsigned>(at->n_heads);
                    at->sc_fence = g_sc_fence;
                    at->m_batch = g_mbatch;
                    if (g_utrace)
                        at->ut = dev_zeros<uint64_t>((size_t)at->n_heads * at->splits * UT_FIELDS);
                }
                else {
                    o->part = at->part;
                    o->splits = at->splits;
                    o->hd = m.hd;
                }
            }
            const int units = at->n_heads * (at->splits ? at->splits : at->parts);
            if (g_spare && units <= grid / 2) // the attention's units on blocks of their own
                at->spare = 1, q->spare = units;
            o->vec_in = attn_out;
        }
        x = x_next;
        ss = ss_next;
        tx = txn;
        tss = tssn;
    }
    *logits = dev_zeros<float>(m.vocab);
    ph[g_ppl * L] = (phase){w[4 * L], m.vocab, m.d, OP_HEAD, 0, x, ss, norm + 2 * L * norm_stride, NULL, NULL,
                            NULL, NULL, *logits};
    ph[g_ppl * L].tx_in = tx, ph[g_ppl * L].tss_in = tss;
    for (int p = 0; p < n_ph; p++)
        if (ph[p].w)
            ph[p].rows_per_slot = rows_per_slot(ph[p].k, ph[p].op);
    return ph;
}

// The reference's ss partials: one value (the sum) in slot 0, the rest zero.
static void run_reference(const phase *ph, int n_ph, int max_k, int max_n, cudaStream_t st)
{
    float *xin = dev_zeros<float>(max_k), *y = dev_zeros<float>(max_n);
    for (int p = 0; p < n_ph; p++) {
        if (ph[p].op == OP_ATTN) {
            ref_attn<<<ph[p].n_heads, 256, 0, st>>>(ph[p]);
            continue;
        }
        ref_input<<<1, 1024, 0, st>>>(ph[p], xin);
        ref_rows<<<(ph[p].n + 7) / 8, 256, 0, st>>>(ph[p], xin, y);
        ref_finish<<<256, 256, 0, st>>>(ph[p], y);
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaFree(xin));
    CK(cudaFree(y));
}

static double compare(const float *a_dev, const float *b_dev, int n, int *same_bits)
{
    float *a = (float *)malloc(n * 4), *b = (float *)malloc(n * 4);
    CK(cudaMemcpy(a, a_dev, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b, b_dev, n * 4, cudaMemcpyDeviceToHost));
    double md = 0, mb = 0;
    int same = 1;
    for (int i = 0; i < n; i++) {
        md = fmax(md, fabs((double)a[i] - b[i]));
        mb = fmax(mb, fabs((double)b[i]));
        same &= memcmp(&a[i], &b[i], 4) == 0;
    }
    free(a);
    free(b);
    if (same_bits)
        *same_bits = same;
    return md / (mb > 0 ? mb : 1);
}

struct variant {
    int warps, depth, ll; // ll: the tagged-word kernel (2: with relaxed counters as the hint), else counters
    int cap;              // slot-loads in flight at most (0: as many as free slots)
    int signal_warp;      // counters kernel: a warp of its own sends the phase-end signal
    int cap_ahead;        // counters kernel: the cap while the producer runs into the next phase
    int prefetch;         // counters kernel: L2 prefetch this many slot-loads ahead (0: none)
    int segments;         // counters kernel: 0 one kernel a step; 1 a kernel a layer (as the engine's
                          // pieces: o, gate|up, down, next q|k|v), 2 the same launched with PDL
    const char *name;
    const void *fn;
    int input_warp; // counters kernel: a warp brings each phase's input in by TMA at its counter
};

// One step; epoch: the LL kernel's tag (a new one every launch).
static void launch(const variant &v, int sms, size_t smem, phase *dph, int first, int last, unsigned *counters,
                   int skip, uint64_t *trace, int xs_len, cudaStream_t st)
{
    static unsigned epoch = 0;
    int depth = v.depth, threads = v.warps * 32 + 32 + (v.signal_warp || v.input_warp ? 32 : 0), cap = v.cap,
        sig = v.signal_warp, ahead = v.cap_ahead, prefetch = v.prefetch, pdl = 0, iw = v.input_warp,
        ib_off = g_ib_off, ib_bytes = g_ib_bytes;
    if (v.ll) {
        epoch++;
        unsigned *hint = v.ll == 2 ? counters : NULL;
        if (hint)
            CK(cudaMemsetAsync(counters, 0, last * 4, st));
        void *args[] = {&dph, &first, &last, &depth, &epoch, &skip, &trace, &xs_len, &hint, &cap, &ahead};
        CK(cudaLaunchCooperativeKernel(v.fn, sms, threads, args, smem, st));
        return;
    }
    CK(cudaMemsetAsync(counters, 0, (size_t)g_counter_words * 4, st));
    if (!v.segments) {
        void *args[] = {&dph,  &first, &last,     &depth, &counters, &skip, &trace,   &cap,
                        &sig,  &ahead, &prefetch, &pdl,   &iw,       &ib_off, &ib_bytes};
        CK(cudaLaunchCooperativeKernel(v.fn, sms, threads, args, smem, st));
        return;
    }
    // A kernel a piece: [first, 1), then o, gate|up, down of a layer with the next q|k|v (or the LM head).
    for (int a = first; a < last;) {
        int b = a + 1;
        while (b < last && b % g_ppl != 1)
            b++;
        int f = a, l = b;
        pdl = v.segments == 2;
        void *args[] = {&dph, &f,     &l,        &depth, &counters, &skip,   &trace,   &cap,
                        &sig, &ahead, &prefetch, &pdl,   &iw,       &ib_off, &ib_bytes};
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(sms);
        cfg.blockDim = dim3(threads);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = st;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = pdl ? 1 : 0;
        CK(cudaLaunchKernelExC(&cfg, v.fn, args));
        a = b;
    }
}

// PL_UTRACE=1: the attention's split units by stage (mean us over units and
// layers 2..), and when the units start and the last merge ends against the
// q|k|v phase's last block end (the moment the attention's input is whole).
static void unit_stages(const phase *ph, int n_ph, const uint64_t *tr, int sms)
{
    static const char *names[] = {"q", "slot", "scores", "values", "count", "merge"};
    double st[6] = {0}, first = 0, last = 0, n_merge = 0;
    int cnt = 0, nu = 0;
    for (int p = g_ppl + 1; p < n_ph - 1; p += g_ppl) {
        const phase &A = ph[p];
        const int units = A.n_heads * A.splits;
        uint64_t *u = (uint64_t *)malloc((size_t)units * UT_FIELDS * 8);
        CK(cudaMemcpy(u, A.ut, (size_t)units * UT_FIELDS * 8, cudaMemcpyDeviceToHost));
        uint64_t qkv_end = 0, t_first = ~0ull, t_last = 0;
        for (int b = 0; b < sms; b++) {
            const uint64_t e = tr[((size_t)b * n_ph + p - 1) * T_FIELDS + T_END];
            qkv_end = e > qkv_end ? e : qkv_end;
        }
        for (int i = 0; i < units; i++) {
            const uint64_t *t = u + (size_t)i * UT_FIELDS;
            for (int f = 0; f < 5; f++)
                st[f] += (double)(t[f + 1] - t[f]);
            if (t[UT_MERGED])
                st[5] += (double)(t[UT_MERGED] - t[UT_COUNTED]), n_merge++;
            const uint64_t end = t[UT_MERGED] ? t[UT_MERGED] : t[UT_COUNTED];
            t_first = t[UT_START] < t_first ? t[UT_START] : t_first;
            t_last = end > t_last ? end : t_last;
        }
        first += (double)t_first - (double)qkv_end;
        last += (double)t_last - (double)qkv_end;
        nu += units;
        cnt++;
        free(u);
    }
    printf("    units (%d a layer), us a stage:", nu / cnt);
    for (int f = 0; f < 6; f++)
        printf(" %s %.2f", names[f], f < 5 ? st[f] / nu / 1e3 : st[5] / (n_merge > 0 ? n_merge : 1) / 1e3);
    printf("; after q|k|v's last block: first unit starts %.2f, last merge ends %.2f\n", first / cnt / 1e3,
           last / cnt / 1e3);
}

// One traced step: where a phase's time goes, per phase kind, averaged over
// the layers (the first left out) and the blocks.
static void trace_step(const variant &v, int sms, size_t smem, phase *dph, const phase *ph, int n_ph,
                       unsigned *counters, int xs_len, cudaStream_t st)
{
    const size_t n = (size_t)sms * n_ph * T_FIELDS;
    uint64_t *dtr, *tr = (uint64_t *)malloc(n * 8);
    CK(cudaMalloc(&dtr, n * 8));
    CK(cudaMemset(dtr, 0, n * 8));
    launch(v, sms, smem, dph, 0, n_ph, counters, 0, dtr, xs_len, st);
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(tr, dtr, n * 8, cudaMemcpyDeviceToHost));
    static const char *kinds4[4] = {"q|k|v", "o", "gate|up", "down"}, *kinds5[5] = {"q|k|v", "attn", "o", "gate|up", "down"};
    const char *const *kinds = g_ppl == 5 ? kinds5 : kinds4;
    printf("    trace (us a phase, mean over blocks and layers 2..): kind  span  stream-at-2.9TB/s  wait  input  "
           "rows  producer-stalled  first-issue-before-waited  end-spread\n");
    for (int kind = 0; kind < g_ppl; kind++) {
        double span = 0, ideal = 0, wait = 0, input = 0, rows = 0, stall = 0, ahead = 0, spread = 0;
        int cnt = 0;
        for (int p = g_ppl + kind; p < n_ph - 1; p += g_ppl) {
            uint64_t end_prev = 0, end = 0, end_min = ~0ull;
            for (int b = 0; b < sms; b++) {
                const uint64_t *t = tr + ((size_t)b * n_ph + p) * T_FIELDS, *tp = t - T_FIELDS;
                end_prev = tp[T_END] > end_prev ? tp[T_END] : end_prev;
                end = t[T_END] > end ? t[T_END] : end;
                end_min = t[T_END] < end_min ? t[T_END] : end_min;
                wait += (double)(t[T_WAITED] - t[T_START]);
                input += (double)(t[T_INPUT] - t[T_WAITED]);
                rows += (double)(t[T_END] - t[T_INPUT]);
                stall += (double)t[T_STALL];
                ahead += (double)t[T_WAITED] - (double)t[T_ISSUE0];
            }
            span += (double)(end - end_prev);
            spread += (double)(end - end_min);
            ideal += ph[p].w ? (double)ph[p].n * ph[p].k * 2 / 2.9e12 * 1e9 : 0.;
            cnt++;
        }
        const double nb = (double)cnt * sms;
        printf("    %-8s %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f\n", kinds[kind], span / cnt / 1e3,
               ideal / cnt / 1e3, wait / nb / 1e3, input / nb / 1e3, rows / nb / 1e3, stall / nb / 1e3, ahead / nb / 1e3,
               spread / cnt / 1e3);
    }
    if (g_ppl == 5 && ph[1].ut) // the split units' stages, layers 2..
        unit_stages(ph, n_ph, tr, sms);
    double fence = 0, load = 0, n_rtt = 0;
    for (int b = 0; b < sms; b++) {
        const uint64_t *t = tr + ((size_t)b * n_ph + n_ph - 1) * T_FIELDS;
        fence += (double)t[T_FENCE];
        load += (double)t[T_LOAD];
        n_rtt += (double)t[T_RTTS];
    }
    if (n_rtt > 0)
        printf("    under load (LM head phase, thread 0 of every block, %.0f samples): store + fence %.2f us, "
               "L2 load %.2f us\n",
               n_rtt, fence / n_rtt / 1e3, load / n_rtt / 1e3);
    CK(cudaFree(dtr));
    free(tr);
}

static void run(const model_shape &m, int sms)
{
    const int L = m.layers, n_ph = g_ppl * L + 1, qkv = m.qd + 2 * m.kvd;
    bf16 **w = (bf16 **)malloc((4 * L + 1) * sizeof(bf16 *));
    bf16 **kv_cache = (bf16 **)malloc(2 * L * sizeof(bf16 *));
    for (int i = 0; i < 2 * L; i++)
        kv_cache[i] = rand_weights((size_t)m.kvd * g_T, 1000 + i);
    double wbytes = 0;
    for (int l = 0; l < L; l++) {
        const size_t sz[4] = {(size_t)qkv * m.d, (size_t)m.d * m.qd, (size_t)2 * m.f * m.d, (size_t)m.d * m.f};
        for (int j = 0; j < 4; j++) {
            w[4 * l + j] = rand_weights(sz[j], 4 * l + j);
            wbytes += sz[j] * 2.0;
        }
    }
    w[4 * L] = rand_weights((size_t)m.vocab * m.d, 4 * L);
    wbytes += (double)m.vocab * m.d * 2;

    const int max_k = m.f > m.qd ? (m.f > m.d ? m.f : m.d) : (m.qd > m.d ? m.qd : m.d);
    float *norm, *x0, *ss0;
    {
        float *h = (float *)malloc(max_k * 4), *hx = (float *)malloc(m.d * 4), *hs = (float *)calloc(sms, 4);
        for (int i = 0; i < max_k; i++)
            h[i] = 0.75f + 0.5f * (float)((i * 29) % 13) / 13.f;
        double s = 0;
        for (int i = 0; i < m.d; i++) {
            hx[i] = (float)((i * 37) % 17) / 17.f - 0.5f;
            s += (double)hx[i] * hx[i];
        }
        hs[0] = (float)s;
        // PL_NORMS=1: a copy of the norm weights for every norm (as a model has; the same
        // values, so the same results), not one array every norm reads from L2
        norm = dev_zeros<float>((size_t)max_k * (g_norms ? 2 * m.layers + 1 : 1));
        for (int c = 0; c < (g_norms ? 2 * m.layers + 1 : 1); c++)
            CK(cudaMemcpy(norm + (size_t)c * max_k, h, max_k * 4, cudaMemcpyHostToDevice));
        x0 = dev_zeros<float>(m.d);
        ss0 = dev_zeros<float>(sms + 4);
        CK(cudaMemcpy(x0, hx, m.d * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(ss0, hs, sms * 4, cudaMemcpyHostToDevice));
        free(h);
        free(hx);
        free(hs);
    }
    g_counter_words = n_ph + L * 16; // 16 >= kv heads of the probe's models
    unsigned *counters = dev_zeros<unsigned>(g_counter_words);
    float *logits, *ref_logits;
    const size_t norm_stride = g_norms ? (size_t)max_k : 0;
    phase *ph = build_chain(m, w, kv_cache, norm, norm_stride, x0, ss0, sms, &logits, counters);
    phase *ref = build_chain(m, w, kv_cache, norm, norm_stride, x0, ss0, sms, &ref_logits, counters);
    if (g_spare && !ph[1].spare)
        printf("PL_QKV_SPARE=1 not applied: the attention has more units than half the grid\n");
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    run_reference(ref, n_ph, max_k, m.vocab, st);

    phase *dph;
    CK(cudaMalloc(&dph, n_ph * sizeof(phase)));
    CK(cudaMemcpy(dph, ph, n_ph * sizeof(phase), cudaMemcpyHostToDevice));

    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%s: %.1f MB of weights, floor at 3.02 TB/s %.3f ms\n", m.name, wbytes / 1e6, wbytes / 3.02e9);

    // variants: consumer warps x slots a warp
    // warps, slots a warp, ll, cap, signal warp, cap ahead, L2 prefetch distance, segments
    static const variant variants[] = {
        {4, 2, 0, 0, 0, 2, 0, 0, "counters, cap 2 ahead", (const void *)layers_kernel<4, 0>},
        {5, 2, 0, 0, 0, 2, 0, 0, "counters, cap 2 ahead", (const void *)layers_kernel<5, 0>},
        {4, 2, 0, 0, 0, 2, 0, 0, "mma consumer, cap 2 ahead", (const void *)layers_kernel<4, -1>},
        {5, 2, 0, 0, 0, 2, 0, 0, "mma consumer, cap 2 ahead", (const void *)layers_kernel<5, -1>},
        {8, 1, 0, 0, 0, 2, 0, 0, "mma consumer, cap 2 ahead", (const void *)layers_kernel<8, -1>},
        {3, 2, 0, 0, 0, 2, 0, 0, "mma consumer, cap 2 ahead", (const void *)layers_kernel<3, -1>},
        {6, 1, 0, 0, 0, 2, 0, 0, "mma consumer, cap 2 ahead", (const void *)layers_kernel<6, -1>},
        {5, 2, 0, 0, 0, 2, 0, 2, "mma consumer, cap 2 ahead, a kernel a layer, PDL",
         (const void *)layers_kernel<5, -1>}};
    const int n_variants = (int)(sizeof variants / sizeof variants[0]);
    if (g_variant >= n_variants) {
        fprintf(stderr, "PL_VARIANT=%d: the table has variants 0 to %d\n", g_variant, n_variants - 1);
        exit(1);
    }
    for (int si = 0; si < n_variants; si++) {
        if (g_variant >= 0 && si != g_variant)
            continue;
        const variant &V = variants[si];
        if (V.ll && g_ppl == 5) // the tagged-word kernel has no attention phase
            continue;
        const int depth = V.depth, n_slots = V.warps * depth;
        const void *fn = V.fn;
        size_t smem = (size_t)n_slots * g_slot + (size_t)max_k * 2 * (V.ll ? 2 : 1);
        if (V.input_warp) { // two buffers: a bf16 vector, or x (f32) and the partial sums
            const size_t norm_in = (size_t)m.d * 4 + (((size_t)sms * 4 + 15) & ~(size_t)15);
            g_ib_off = (int)((smem + 127) & ~(size_t)127);
            g_ib_bytes = (int)((((size_t)max_k * 2 > norm_in ? (size_t)max_k * 2 : norm_in) + 127) & ~(size_t)127);
            smem = (size_t)g_ib_off + 2 * (size_t)g_ib_bytes;
        }
        int smem_max = 0;
        CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
        if (smem + 1024 > (size_t)smem_max) { // the static arrays too
            printf("  %s, %d warps x %d slots: %zu KiB of shared memory do not fit, skipped\n", V.name, V.warps,
                   V.depth, smem >> 10);
            continue;
        }
        CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        // modes: 0 the step, 1 without the waits (wrong sums: the dependencies' cost), 2 also without making
        // the inputs, 3 the step without the fence before the release, 4 the LM head alone
        enum { MODES = 5 };
        static const int skips[MODES] = {0, SKIP_WAITS, SKIP_WAITS | SKIP_INPUTS, SKIP_FENCE, SKIP_WAITS};
        const int reps = 30;
        float best[MODES], med[MODES];
        float *first_logits = dev_zeros<float>(m.vocab);
        int same_bits = 1;
        uint64_t *no_trace = NULL;
        for (int mode = 0; mode < MODES; mode++) {
            float t[64];
            for (int r = 0; r < reps + 2; r++) {
                CK(cudaEventRecord(e0, st));
                launch(V, sms, smem, dph, mode == 4 ? n_ph - 1 : 0, n_ph, counters, skips[mode], no_trace, max_k, st);
                CK(cudaEventRecord(e1, st));
                CK(cudaStreamSynchronize(st));
                CK(cudaEventElapsedTime(&t[r], e0, e1));
                if ((mode == 0 || mode == 3) && r == 0)
                    CK(cudaMemcpy(first_logits, logits, m.vocab * 4, cudaMemcpyDeviceToDevice));
                if ((mode == 0 || mode == 3) && r == reps + 1) {
                    int sb;
                    compare(logits, first_logits, m.vocab, &sb);
                    same_bits &= sb;
                    const double err = compare(logits, ref_logits, m.vocab, NULL);
                    // the heads' outputs, first and last layer, where the attention writes them (o merges no partials)
                    if (g_ppl == 5 && !ph[2].part)
                        for (int which = 0; which < 2; which++) {
                            const int l = which ? L - 1 : 0;
                            const phase &A = ph[g_ppl * l + 1], &B = ref[g_ppl * l + 1];
                            const int n = A.n_heads * A.hd;
                            float *a = dev_zeros<float>(n), *b = dev_zeros<float>(n);
                            to_f32<<<(n + 255) / 256, 256, 0, st>>>(A.out, a, n);
                            to_f32<<<(n + 255) / 256, 256, 0, st>>>(B.out, b, n);
                            CK(cudaStreamSynchronize(st));
                            printf("    attention output, layer %d: max |out - reference| / max |reference| = %.2e\n", l,
                                   compare(a, b, n, NULL));
                            CK(cudaFree(a));
                            CK(cudaFree(b));
                        }
                    printf("  %s, %d warps x %d slots%s: max |logit - reference| / max |reference| = %.2e (%s), "
                           "%d runs same bits: %s\n",
                           V.name, V.warps, depth, mode == 3 ? " (no fence)" : "", err, err < 2e-2 ? "ok" : "WRONG",
                           reps + 2, same_bits ? "yes" : "NO");
                }
            }
            float s[64];
            memcpy(s, t + 2, reps * 4);
            for (int i = 0; i < reps; i++)
                for (int j = i + 1; j < reps; j++)
                    if (s[j] < s[i]) {
                        float x = s[i];
                        s[i] = s[j];
                        s[j] = x;
                    }
            best[mode] = s[0];
            med[mode] = s[reps / 2];
        }
        const double head = (double)m.vocab * m.d * 2;
        printf("  %s, %d warps x %d slots (%zu KiB smem): step best %.3f ms median %.3f (%.0f GB/s); no fence %.3f; "
               "without waits %.3f ms (%.0f GB/s); also without inputs %.3f; LM head alone %.3f ms (%.0f GB/s)\n",
               V.name, V.warps, depth, smem / 1024, best[0], med[0], wbytes / best[0] / 1e6, best[3], best[1],
               wbytes / best[1] / 1e6, best[2], best[4], head / best[4] / 1e6);
        trace_step(V, sms, smem, dph, ph, n_ph, counters, max_k, st);
        CK(cudaFree(first_logits));
    }
    for (int p = 0; p < 4 * L + 1; p++)
        CK(cudaFree(w[p]));
    free(w);
    for (int i = 0; i < 2 * L; i++)
        CK(cudaFree(kv_cache[i]));
    free(kv_cache);
    CK(cudaFree(dph));
    CK(cudaFree(counters));
    CK(cudaStreamDestroy(st));
    free(ph);
    free(ref);
}

// An integer setting from the environment in [lo, hi], or dflt when unset;
// anything else ends the run naming the variable.
static int env_int(const char *name, int lo, int hi, int dflt)
{
    const char *s = getenv(name);
    if (!s)
        return dflt;
    char *end;
    const long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) {
        fprintf(stderr, "%s=%s: want an integer from %d to %d\n", name, s, lo, hi);
        exit(1);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); // lines reach a log even if the run is cut off
    g_ppl = env_int("PL_ATTN", 0, 1, 0) ? 5 : 4;
    g_split = env_int("PL_SPLIT", 0, 2, 0);
    g_groups = env_int("PL_GROUPS", 0, 1, 0);
    g_sc_fence = env_int("PL_SC_FENCE", 0, 1, 0);
    g_utrace = env_int("PL_UTRACE", 0, 1, 0);
    g_vunroll = env_int("PL_VUNROLL", 0, 1, 0);
    g_mbatch = env_int("PL_MERGE_BATCH", 0, 1, 0);
    g_parts = env_int("PL_HEAD_PARTS", 1, 32, 1);
    g_spare = env_int("PL_QKV_SPARE", 0, 1, 0);
    const char *needs_attn = g_vunroll ? "PL_VUNROLL" : g_mbatch ? "PL_MERGE_BATCH" : g_parts > 1 ? "PL_HEAD_PARTS"
                             : g_spare ? "PL_QKV_SPARE" : NULL;
    if (needs_attn && g_ppl != 5) {
        fprintf(stderr, "%s: only with PL_ATTN=1 (the attention inside the kernel)\n", needs_attn);
        exit(1);
    }
    if (g_parts > 1 && g_split) {
        fprintf(stderr, "PL_HEAD_PARTS=%d: only with PL_SPLIT=0 (a block a head)\n", g_parts);
        exit(1);
    }
    g_rope = env_int("PL_ROPE", 0, 1, 0);
    if (g_rope && (g_ppl != 5 || g_split || g_groups)) {
        fprintf(stderr, "PL_ROPE=1: only with PL_ATTN=1 and PL_SPLIT=0, without PL_GROUPS\n");
        exit(1);
    }
    if (g_rope)
        printf("the step's own token in the attention: q/k norms (Qwen3, Gemma) and RoPE, k and v written\n");
    g_part_merge = env_int("PL_PART_MERGE", 0, 1, 0);
    if (g_part_merge && g_parts < 2) {
        fprintf(stderr, "PL_PART_MERGE=1: only with PL_HEAD_PARTS of 2 or more\n");
        exit(1);
    }
    if (g_mbatch && g_split != 2) {
        fprintf(stderr, "PL_MERGE_BATCH=1: only with PL_SPLIT=2 (a head merged by its last split)\n");
        exit(1);
    }
    if (g_spare)
        printf("the attention's blocks (the grid's last) take no q|k|v rows\n");
    if (g_parts > 1)
        printf("a head over %d blocks (at most its slots), the parts merged by %s\n", g_parts,
               g_part_merge ? "the head's last part" : "o's input");
    if (g_mbatch)
        printf("a head's merge loads its splits' maxima together, its loop unrolled (up to 8 splits)\n");
    if (g_vunroll)
        printf("a split unit's values 8 keys at a time (head size 128)\n");
    g_slot = env_int("PL_SLOT", 4, 64, g_slot / 1024) * 1024;
    g_attn_pf = env_int("PL_ATTN_PF", 0, 4096, 0);
    CK(cudaMemcpyToSymbol(c_attn_pf, &g_attn_pf, sizeof g_attn_pf));
    g_norms = env_int("PL_NORMS", 0, 1, 0);
    if (g_norms)
        printf("a norm weight array for every norm\n");
    g_variant = env_int("PL_VARIANT", -1, 63, -1);
    if (g_attn_pf)
        printf("the attention phase asks L2 for %d KiB of each block's gate|up rows\n", g_attn_pf);
    CK(cudaMemcpyToSymbol(c_slot, &g_slot, sizeof g_slot));
    g_kps = env_int("PL_KPS", 0, 32, 0);
    g_T = env_int("PL_T", 1, 1024, g_T);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; ring slots of %d KiB\n", prop.name, prop.multiProcessorCount, g_slot / 1024);
    const char *only = probe_filter(argc, argv);
    if (g_split)
        printf("attention split by slots of keys over the blocks, merged %s\n",
               g_split == 2 ? "by each head's last split" : "by the o phase's input");
    if (g_groups)
        printf("a counter a kv group from q|k|v to attention\n");
    if (g_split == 2)
        printf("a head's merge counts in with %s\n",
               g_sc_fence ? "fence.sc + atomicAdd + fence.sc" : "one atom.acq_rel.gpu");
    printf("phases a layer %d%s\n", g_ppl, g_ppl == 5 ? " (attention after q|k|v)" : "");
    if (g_ppl == 5)
        printf("attention over %d cached keys a head\n", g_T);
    for (int i = 0; i < PROBE_MODELS; i++)
        if (probe_picked(probe_models[i], only))
            run(probe_models[i], prop.multiProcessorCount);
    return 0;
}
