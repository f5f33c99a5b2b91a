// Sampling on the device: one block of 1024 threads per logits row, with
// exactly sample_token's semantics (src/backend/sampling.c), so that a seed
// gives the same tokens on both backends.
//
// Pipeline per row (vocab V up to 262144, ~256 elements a thread):
//   raw logits -> max, log-sum-exp, top_logprobs   (the model's distribution;
//     max and log-sum-exp from stats_kernel's partials, see below)
//   z = logits (scratch); bias, penalties on the listed tokens only
//   greedy: argmax z, lowest id on ties
//   else: z /= T; min-p mask; top-k and top-p cuts; Gumbel-max draw (a row
//     with T alone, in calls of up to 32 rows: drawn by stats_kernel's spans)
// The cuts: where the row's candidates (the elements near its best z)
// provably hold them, the candidates are sorted in shared memory into
// sample_token's order (z descending, id ascending) and the cuts are
// places in it. Otherwise they are found over the whole row without
// sorting: an element's place in that order is a monotone function of
// (ordered bits of z, id), so the k-th element, and the element where the
// running mass of that order crosses top_p * total, are found by bisection
// over the 32-bit key (one block reduction a step: counts for top-k, masses
// for top-p), then over ids among equal values. Every reduction has a fixed
// order, so the result is deterministic.
//
// Bit-exactness with the CPU: every step that decides a token uses the
// same IEEE operations in the same order (explicit _rn intrinsics, so nvcc
// cannot contract them into FMAs). What can differ: logf in the Gumbel noise
// (CUDA's is within 1 ulp, glibc's correctly rounded), and exp in the top-p
// masses (float here, double there) — both only matter when two candidates
// are within float rounding of each other.
#include "backend/cuda/sampling_row.cuh"
#include "backend/cuda/sampling_candidates.cuh"
#include "sampling/philox.h"

// The noise -log(-log(u)) lies in [-2.86, 17.33] for the u the CPU draws
// (u in [2^-25, 1 - 2^-25]); a token whose z + GUMBEL_SPREAD is below the
// best token's draw cannot win, so its noise is never computed (real logits
// spread far wider than this, which makes the draw cheap).
#define GUMBEL_SPREAD 17.5f

// Whether an element of value zt can still beat the draw floor_v (its noise is below GUMBEL_SPREAD).
__device__ __forceinline__ bool may_win(float zt, float floor_v) { return !(__fadd_rn(zt, GUMBEL_SPREAD) < floor_v); }

__device__ static float gumbel(uint64_t seed, uint64_t step, int32_t token)
{
    uint32_t r[4];
    philox4x32_10(seed, step, (uint64_t)(uint32_t)token, r);
    float u = __fmul_rn(__fadd_rn((float)(r[0] >> 8), 0.5f), 1.0f / 16777216.0f);
    return -logf(-logf(u));
}

// ---- the Gumbel draw ----
//
// The elements that can win the draw: alive, inside both cuts, and whose z
// + GUMBEL_SPREAD reaches the best token's draw. On a trained model's row
// they are a few thousand of the vocabulary, scattered, so a warp computing
// the noise wherever one of its lanes passes paid it for nearly every
// element (docs/kernels/sampling.md). Each warp queues its passing elements in shared memory
// instead and draws them 32 at a time (a warp whose lanes all pass draws at
// once: random weights' flat rows): the same draws, and the same winner (the
// largest, the lowest id on ties, whatever thread holds it).
struct gumbel_args {
    const float *l; // the raw logits (NO_Z: z = l / temperature)
    float temperature;
    cut ck, cp;
    float floor_v; // the best token's draw
    uint64_t seed, step;
};

// Keeps the draw v of token t where it beats this thread's best (gv, gi):
// larger, or equal with a lower id.
__device__ __forceinline__ void keep_better_draw(float v, int t, float &gv, int &gi)
{
    if (gi < 0 || v > gv || (v == gv && t < gi))
        gv = v, gi = t;
}

// Lanes below m draw the warp's queued elements.
__device__ __forceinline__ void draw_queued(const float *qz, const int *qt, int m, const gumbel_args &g, float &gv,
                                            int &gi)
{
    const int lane = threadIdx.x & 31;
    __syncwarp(); // the queue's stores are visible
    if (lane < m) {
        const int t = qt[lane];
        keep_better_draw(__fadd_rn(qz[lane], gumbel(g.seed, g.step, t)), t, gv, gi);
    }
    __syncwarp(); // read before the queue is refilled
}

// This thread's best draw over the candidates (CAND) or the whole row, z
// read from the scratch row or (NO_Z) made from the logits.
template <bool CAND, bool NO_Z>
__device__ __forceinline__ void gumbel_best(const row_state &s, const gumbel_args &g, float &gv, int &gi)
{
    __shared__ float queue_z[NW][32];
    __shared__ int queue_t[NW][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float *qz = queue_z[warp];
    int *qt = queue_t[warp];
    const int n = CAND ? s.n : s.vocab;
    int queued = 0; // the same in every lane
    // LOADS elements a lane in flight before the first ballot: a ballot
    // each 32 elements otherwise holds a lane to one load at a time (a round
    // trip for each of Gemma's 256 elements a lane)
    constexpr int LOADS = 8;
    for (int base = warp * 32; base < n; base += LOADS * NT) { // a warp's lanes run the same trips
        float zs[LOADS];
#pragma unroll
        for (int u = 0; u < LOADS; u++) {
            const int j = base + u * NT + lane;
            zs[u] = j < n ? (CAND ? s.cz[j] : NO_Z ? g.l[j] : s.z[j]) : 0.f;
        }
#pragma unroll
        for (int u = 0; u < LOADS; u++) {
            if (base + u * NT >= n) // the same in every lane
                break;
            const int j = base + u * NT + lane;
            const float zt = NO_Z ? __fdiv_rn(zs[u], g.temperature) : zs[u];
            const int t = CAND ? s.cid[j < n ? j : 0] : j;
            bool pass = false;
            if (j < n && alive(zt, s) && may_win(zt, g.floor_v)) {
                const uint32_t key = okey(zt);
                pass = in_cut(key, t, g.ck) && in_cut(key, t, g.cp);
            }
            const unsigned ballot = __ballot_sync(0xffffffffu, pass);
            if (ballot == 0xffffffffu) { // every lane passes (flat rows): drawn where they are
                keep_better_draw(__fadd_rn(zt, gumbel(g.seed, g.step, t)), t, gv, gi);
                continue;
            }
            const int count = __popc(ballot);
            if (queued + count > 32) {
                draw_queued(qz, qt, queued, g, gv, gi);
                queued = 0;
            }
            if (pass) {
                const int at = queued + __popc(ballot & ((1u << lane) - 1u));
                qz[at] = zt, qt[at] = t;
            }
            queued += count;
        }
    }
    draw_queued(qz, qt, queued, g, gv, gi);
}

// ---- the row's max and log-sum-exp, over many blocks ----
//
// One block per row reading all V logits twice was a greedy decode step's
// largest kernel after the GEMVs (one SM streaming 0.5-1 MB a row).
// stats_kernel spreads that over
// SAMPLE_STATS_SPLITS(V) blocks a row: each finds its span's best (value
// descending, id ascending) and sum of exp(l - its max) in double;
// sample_kernel combines them (the best exactly; the sum as
// sum_b s_b * exp(m_b - max), within float rounding of one pass).

// A row of a model split over ranks (tensor parallelism) is cut the same
// way whichever rank computes its statistics: into `shards` equal parts
// (each rank's vocabulary columns), each part into `splits` spans, so that
// per-rank statistics (stats_kernel over one shard) and rank 0's over the
// gathered row are the same numbers in the same order.


// A row whose Gumbel-max draw stats_kernel makes: tempered, with nothing to
// add or cut (sample_kernel's no_z rows without min-p, whose threshold
// needs the row's max first). One block a row drew it over the whole row,
// Philox and two logf an element that can win, on one SM; spread over the
// statistics' blocks it is a few microseconds.
// Past SAMPLE_DRAW_MAX_ROWS rows a call leaves the draw to sample_kernel:
// each span prunes with its own best's draw, far below the row's on a
// trained model's rows, so the spans compute many times the noise one
// block does, and past ~32 rows a block a row fills the SMs as well: the
// crossing point on a trained model's rows (docs/kernels/sampling.md).
#define SAMPLE_DRAW_MAX_ROWS 32
__device__ __forceinline__ bool draws_with_stats(const sample_row_dev &p)
{
    return p.temperature != 0.f && p.n_bias == 0 && p.n_seen == 0 && p.top_k <= 0 && !(p.top_p < 1.f) &&
           !(p.min_p > 0.f);
}

// A row whose mass over z stats_kernel sums, span by span (z_mass: the sum
// of exp(z - the span's best z)): top-p without top-k, where
// prefilter_tempered needs the whole row's mass and one block made it
// slowly (an expf an element on one SM). Not with min-p,
// whose threshold needs the row's max.
__device__ __forceinline__ bool z_mass_with_stats(const sample_row_dev &p)
{
    return p.temperature != 0.f && p.n_bias == 0 && p.n_seen == 0 && p.top_k <= 0 && p.top_p < 1.f &&
           !(p.min_p > 0.f);
}

// Block (b, r): row r's span b % splits of shard b / splits, of l's rows of
// `pitch` floats holding shards x cols logits; ids from id_base; into
// stats[r * stride + b]. With rows, a row that draws_with_stats also gets
// its span's best draw in draws[r * stride + b]: sample_kernel's draw over
// the span (z = l / T; an element is drawn where z + GUMBEL_SPREAD reaches
// the draw of the span's best, which bounds the span's winner as the row's
// best bounds the row's), so the best of the spans' draws is its token.
__global__ void __launch_bounds__(NT, 2) stats_kernel(const float *logits, size_t pitch, int cols, int splits,
                                                      int id_base, sample_stats *stats, int stride,
                                                      const sample_row_dev *rows, sample_draw *draws,
                                                      int masked_only)
{
    const int b = blockIdx.x, r = blockIdx.y, span = stats_span(cols, splits);
    const int shard = b / splits, t0 = shard * cols + (b % splits) * span, t1 = min(shard * cols + cols, t0 + span);
    const float *l = logits + (size_t)r * pitch;
    // The row's parameters: host memory no kernel writes (staged before the
    // step), read by one thread (every block's warps reading it over the
    // link cost a large batch's step measurably) before waiting, shared after.
    __shared__ float row_temp;
    __shared__ bool row_mass, row_skip;
    __shared__ uint64_t row_seed, row_step;
    if (threadIdx.x == 0) {
        row_temp = 0.f, row_mass = false, row_skip = false;
        if (rows) {
            const sample_row_dev p = rows[r];
            row_skip = masked_only && p.mask_at < 0; // its statistics are the gather's, still right
            if (!draws)
                ;
            else if (draws_with_stats(p))
                row_temp = p.temperature, row_seed = p.seed, row_step = p.step;
            else if (z_mass_with_stats(p))
                row_temp = p.temperature, row_mass = true;
        }
    }
    pdl_wait(); // the logits are the previous kernel's output
    pdl_launch_dependents();
    __syncthreads();
    if (row_skip)
        return;
    float mv = -INFINITY;
    int mi = -1;
#pragma unroll 8
    for (int t = t0 + threadIdx.x; t < t1; t += NT) {
        const float v = l[t];
        if (ahead(v, t, mv, mi))
            mv = v, mi = t;
    }
    block_best(mv, mi); // synchronises: the row's parameters are shared
    const float temp = row_temp;
    double acc = 0;
    float gv = -INFINITY;
    int gi = -1;
    double z_mass = 0;
    if (temp == 0.f) {
#pragma unroll 8
        for (int t = t0 + threadIdx.x; t < t1; t += NT)
            acc += (double)expf(__fsub_rn(l[t], mv));
    } else if (row_mass) { // sample_kernel's weight of z = l / T, from the span's best z
        const float zb = __fdiv_rn(mv, temp);
#pragma unroll 8
        for (int t = t0 + threadIdx.x; t < t1; t += NT) {
            const float v = l[t];
            acc += (double)expf(__fsub_rn(v, mv));
            z_mass += (double)expf(__fsub_rn(__fdiv_rn(v, temp), zb));
        }
        z_mass = block_sum_t<double>(z_mass);
    } else {
        // Which of this thread's elements can win is marked in the sum's
        // pass (its loads together, no noise yet: Philox in that loop needs
        // more registers than two blocks an SM leave, and one load at a time
        // is a round trip an element); the noise only for those after.
        const uint64_t seed = row_seed, step = row_step;
        const float floor_v = mi >= 0 ? __fadd_rn(__fdiv_rn(mv, temp), gumbel(seed, step, mi + id_base)) : INFINITY;
        uint32_t can_win = 0; // bit k: the thread's element k (past 31: checked again below)
#pragma unroll 8
        for (int t = t0 + threadIdx.x, k = 0; t < t1; t += NT, k++) {
            const float v = l[t];
            acc += (double)expf(__fsub_rn(v, mv));
            const float zt = __fdiv_rn(v, temp);
            if (zt > -INFINITY && may_win(zt, floor_v))
                can_win |= 1u << (k & 31);
        }
#pragma unroll 1
        for (int t = t0 + threadIdx.x, k = 0; t < t1; t += NT, k++) {
            if (k < 32 && !(can_win >> k & 1u))
                continue;
            const float zt = __fdiv_rn(l[t], temp);
            if (zt > -INFINITY && may_win(zt, floor_v))
                keep_better_draw(__fadd_rn(zt, gumbel(seed, step, t + id_base)), t + id_base, gv, gi);
        }
        block_best(gv, gi);
    }
    acc = block_sum_t<double>(acc);
    if (threadIdx.x == 0) {
        if (mv == -INFINITY) // a span a grammar's mask took whole: no element, no mass (exp(-inf - -inf) is NaN)
            mi = -1, acc = 0;
        stats[(size_t)r * stride + b] = sample_stats{mv, mi < 0 ? mi : mi + id_base, acc};
        if (temp != 0.f)
            draws[(size_t)r * stride + b] = sample_draw{gv, gi, z_mass};
    }
}

// ---- the top log-probabilities' candidates ----
//
// k of them (OpenAI's top_logprobs, up to 20) took k whole-row passes, each
// ending in a block reduction. The first k of the raw order all lie at or
// above any value that at least k elements reach, so where the widest of
// the SPANS widths below the max holding at most PREFILTER_CAP elements holds at
// least k, the passes run over those, copied to shared memory: the same
// elements, found in another order (the order's ties broken by id alike).
#define TOP_CANDIDATES_FROM 3 // below, the whole row costs as few passes
__constant__ const float top_span[SPANS] = {16.f, 8.f, 4.f, 2.f};

// Their count (copied into cz / cid), or -1: the whole row. The narrowest
// span holding k, since they are sorted.
__device__ __noinline__ static int top_candidates(const float *l, int vocab, float mx, int k, float *cz, int *cid)
{
    float lo[SPANS];
#pragma unroll
    for (int w = 0; w < SPANS; w++)
        lo[w] = __fsub_rn(mx, top_span[w]);
    int n_in[SPANS] = {0};
    for_row(l, vocab, [&](float v, int) {
#pragma unroll
        for (int w = 0; w < SPANS; w++)
            n_in[w] += v >= lo[w];
    });
    int count_in[SPANS];
    span_counts(n_in, count_in);
    const int span = narrowest_holding(count_in, k);
    if (span == SPANS)
        return -1; // every thread decides alike: the counts are the block's
    const float lo_c = __fsub_rn(mx, top_span[span]);
    int count;
    int at = block_scan_t<int>(span_entry(n_in, span), count);
    __syncthreads(); // cz / cid may still be read by the draw over a top-k / top-p row's candidates
    for_row(l, vocab, [&](float v, int t) {
        if (v >= lo_c)
            cz[at] = v, cid[at] = t, at++;
    });
    __syncthreads();
    return count;
}

// This thread's first element after (pv, pi) in the raw order of the row.
__device__ __forceinline__ void next_in_order(const float *v, int n, float pv, int pi, float &bv, int &bi)
{
    for (int t = threadIdx.x; t < n; t += NT) {
        const float x = v[t];
        const bool after = pi < 0 || x < pv || (x == pv && t > pi);
        if (after && ahead(x, t, bv, bi))
            bv = x, bi = t;
    }
}

// The best (value descending, id ascending) of n spans' bests (their m and
// i: sample_stats or sample_draw), in every thread.
template <typename SPAN> __device__ __forceinline__ void best_of_spans(const SPAN *sp, int n, float &v, int &i)
{
    v = -INFINITY, i = -1;
    for (int b = threadIdx.x; b < n; b += NT)
        if (ahead(sp[b].m, sp[b].i, v, i))
            v = sp[b].m, i = sp[b].i;
    block_best(v, i);
}

// z = l into scratch (direct: z = l / T, and its best (dbv, dbi) found on
// the way, instead of a second pass; l may be z itself). COPY loads in
// flight before the first store: the compiler orders a load after a store
// that may alias it (z and l), so one load, one store a step costs a round
// trip an element (a thread's ~125 of Llama's vocabulary, 256 of Gemma's).
// The caller synchronises before z is read.
__device__ static void copy_z(const float *l, float *z, int vocab, bool direct, float T, float &dbv, int &dbi)
{
    constexpr int COPY = ROW_LOADS;
    for (int t0 = threadIdx.x; t0 < vocab; t0 += COPY * NT) {
        float v[COPY];
#pragma unroll
        for (int u = 0; u < COPY; u++)
            v[u] = t0 + u * NT < vocab ? l[t0 + u * NT] : 0.f;
#pragma unroll
        for (int u = 0; u < COPY; u++) {
            const int t = t0 + u * NT;
            if (t >= vocab)
                break;
            if (direct) {
                v[u] = __fdiv_rn(v[u], T);
                if (ahead(v[u], t, dbv, dbi))
                    dbv = v[u], dbi = t;
            }
            z[t] = v[u];
        }
    }
}

// ---- the kernel ----

__global__ void __launch_bounds__(NT) sample_kernel(const float *logits, float *scratch, int vocab,
                                                    const sample_row_dev *rows, const sample_seen *seen,
                                                    const logit_bias *bias, const sample_stats *stats,
                                                    const sample_draw *draws, int shards, int splits,
                                                    sample_result *out)
{
    // The row's parameters are host memory that no kernel writes (the
    // host staged them before the step): read before waiting, so the
    // link's latency passes while the statistics finish.
    const sample_row_dev p = rows[blockIdx.x];
    const float *l = logits + (size_t)blockIdx.x * vocab;
    float *z = scratch + (size_t)blockIdx.x * vocab;
    const sample_stats *st = stats + (size_t)blockIdx.x * SAMPLE_STATS_MAX_SPLITS;
    pdl_wait(); // the statistics (and, through them, the logits)
    pdl_launch_dependents();

    // the model's distribution: max, log-sum-exp (stats_kernel's spans combined)
    float mv;
    int mi;
    best_of_spans(st, splits, mv, mi);
    const int raw_best = mi;
    const float mx = mv;
    double acc = 0;
    for (int b = threadIdx.x; b < splits; b += NT)
        acc += st[b].s * exp_double((double)st[b].m - (double)mx);
    // A plain greedy row (no bias, no penalties) draws raw_best: z is never needed.
    const bool plain = p.temperature == 0.f && p.n_bias == 0 && p.n_seen == 0;
    // Tempered with nothing to add first: z = l / T in the copy, its best
    // token found there too, instead of a second pass over z.
    const bool direct = p.temperature != 0.f && p.n_bias == 0 && p.n_seen == 0;
    // With no top-k or top-p either (min-p aside), z is never needed as a
    // row: the draw divides l in place (the same bits), and the best z is
    // max(l) / T at raw_best (division by T > 0 keeps the order; where two
    // logits round to one quotient, raw_best's draw still bounds the winner's).
    const bool no_z = direct && p.top_k <= 0 && !(p.top_p < 1.f);
    // a top-k / top-p row's candidates (prefilter), then the top log-probs'
    __shared__ __align__(8) float cand_z[PREFILTER_CAP]; // also span_z_masses' partial sums
    static_assert(SAMPLE_STATS_MAX_SPLITS * NW * sizeof(double) <= sizeof cand_z, "span_z_masses' part");
    __shared__ int cand_id[PREFILTER_CAP];
    float dbv = -INFINITY;
    int dbi = -1;
    // a tempered cut row with nothing added finds its candidates without z (prefilter_tempered)
    const bool tempered_cut = direct && !no_z;
    if (!plain && !no_z && !tempered_cut)
        copy_z(l, z, vocab, direct, p.temperature, dbv, dbi);
    const float lse = __fadd_rn(mx, (float)log(block_sum_t<double>(acc))); // block_sum_t synchronises: z is written

    // logit bias (a token's entries in list order), then the penalties
    for (int i = threadIdx.x; i < p.n_bias; i += NT) {
        const logit_bias *b = bias + p.bias_at;
        if (i > 0 && b[i - 1].token == b[i].token)
            continue; // the first entry of the run applies it
        float v = z[b[i].token];
        for (int j = i; j < p.n_bias && b[j].token == b[i].token; j++)
            v = __fadd_rn(v, b[j].bias);
        z[b[i].token] = v;
    }
    __syncthreads();
    const bool freq = p.presence != 0.f || p.frequency != 0.f;
    for (int i = threadIdx.x; i < p.n_seen; i += NT) {
        const sample_seen e = seen[p.seen_at + i];
        float v = z[e.token];
        uint32_t n_out = e.count >> 1;
        if (p.repetition != 1.f) // every listed token is seen then (sample_seen_build)
            v = v > 0.f ? __fdiv_rn(v, p.repetition) : __fmul_rn(v, p.repetition);
        if (freq && n_out > 0)
            v = __fsub_rn(v, __fadd_rn(p.presence, __fmul_rn(p.frequency, (float)n_out)));
        z[e.token] = v;
    }
    __syncthreads();

    int token;
    if (plain) {
        token = raw_best;
    } else if (p.temperature == 0.f) {
        float bv = -INFINITY;
        int bi = -1;
        for (int t = threadIdx.x; t < vocab; t += NT)
            if (ahead(z[t], t, bv, bi))
                bv = z[t], bi = t;
        block_best(bv, bi);
        token = bi;
    } else if (draws && draws_with_stats(p)) { // drawn by stats_kernel: the best of its spans' draws
        float gv;
        int gi;
        best_of_spans(draws + (size_t)blockIdx.x * SAMPLE_STATS_MAX_SPLITS, splits, gv, gi);
        token = gi >= 0 ? gi : raw_best;
    } else {
        const float mz = __fdiv_rn(mx, p.temperature); // the best z where nothing is added
        row_state s = {z, vocab, mz, p.min_p > 0.f ? __fadd_rn(mz, p.log_min_p) : -INFINITY, NULL, NULL, -1};
        cut ck = {0u, INT_MAX}, cp = {0u, INT_MAX};
        float bv = mz;
        int bi = raw_best;
        int n_alive;
        double full_total;
        bool cut_done = false;
        if (tempered_cut) {
            const sample_draw *z_mass =
                draws && z_mass_with_stats(p) ? draws + (size_t)blockIdx.x * SAMPLE_STATS_MAX_SPLITS : nullptr;
            cut_done = prefilter_tempered(s, l, p.temperature, p.top_k, p.top_p, st, z_mass, shards, splits, cand_z,
                                          cand_id, n_alive, full_total);
            if (cut_done) {
                bi = cand_id[0]; // the best z's lowest id: the first in order
                sorted_cuts(s, p.top_k > 0 && p.top_k < n_alive, p.top_k, p.top_p, full_total, ck, cp);
            } else {
                copy_z(l, z, vocab, true, p.temperature, dbv, dbi); // synchronised by block_best below
            }
        }
        if (!cut_done) {
            bv = no_z ? mz : dbv;
            bi = no_z ? raw_best : dbi;
            if (!direct) // after the bias and penalties: z /= T in place
                copy_z(z, z, vocab, true, p.temperature, bv, bi);
            block_best(bv, bi); // synchronises: z is written
            s = row_state{z, vocab, bv, p.min_p > 0.f ? __fadd_rn(bv, p.log_min_p) : -INFINITY, NULL, NULL, -1};
            if (p.top_k > 0 || p.top_p < 1.f) {
                prefilter(s, p.top_k, p.top_p, cand_z, cand_id, n_alive, full_total);
                const bool cut_k = p.top_k > 0 && p.top_k < n_alive;
                if (s.n >= 0) {
                    sorted_cuts(s, cut_k, p.top_k, p.top_p, full_total, ck, cp);
                } else {
                    if (cut_k)
                        ck = top_k_cut(s, p.top_k);
                    if (p.top_p < 1.f)
                        cp = top_p_cut(s, ck, p.top_p, full_total);
                }
            }
        }
        // Gumbel-max; the best token's draw bounds what others can reach
        const float floor_v = __fadd_rn(bv, gumbel(p.seed, p.step, bi));
        float gv = -INFINITY;
        int gi = -1;
        const gumbel_args g = {l, p.temperature, ck, cp, floor_v, p.seed, p.step};
        if (s.n >= 0) // every element inside the cuts is a candidate (prefilter)
            gumbel_best<true, false>(s, g, gv, gi);
        else if (no_z)
            gumbel_best<false, true>(s, g, gv, gi);
        else
            gumbel_best<false, false>(s, g, gv, gi);
        block_best(gv, gi);
        token = gi >= 0 ? gi : raw_best;
    }

    // top_logprobs: the raw row's candidates sorted where at least k of them
    // hold them (then they hold its first k: two passes over the row and a
    // sort instead of k passes), else the next element of the raw order, k times
    __shared__ int top_ids[20];
    __shared__ float top_vals[20];
    const int k = p.top_logprobs < vocab ? p.top_logprobs : vocab;
    const int n_top = k >= TOP_CANDIDATES_FROM ? top_candidates(l, vocab, mx, k, cand_z, cand_id) : -1;
    if (n_top >= 0) { // sorted, the first k are the answer
        sort_candidates(cand_z, cand_id, n_top);
        if (threadIdx.x < k)
            top_ids[threadIdx.x] = cand_id[threadIdx.x], top_vals[threadIdx.x] = cand_z[threadIdx.x];
        __syncthreads();
    }
    float pv = INFINITY;
    int pi = -1;
    for (int j = 0; j < (n_top >= 0 ? 0 : k); j++) {
        float bv = -INFINITY;
        int bi = -1;
        next_in_order(l, vocab, pv, pi, bv, bi);
        block_best(bv, bi);
        if (threadIdx.x == 0)
            top_ids[j] = bi, top_vals[j] = bv;
        pv = bv, pi = bi;
    }
    if (threadIdx.x == 0) {
        sample_result *o = &out[blockIdx.x];
        o->token = token;
        o->logprob = __fsub_rn(plain ? mx : l[token], lse); // the same bits: a plain row's token holds the max
        for (int j = 0; j < 20; j++) { // past the tokens a grammar's mask allows: -1, as sample_token
            const bool has = j < k && top_vals[j] > -INFINITY;
            o->top_ids[j] = has ? top_ids[j] : j < k ? -1 : 0;
            o->top_logprobs[j] = has ? __fsub_rn(top_vals[j], lse) : j < k ? -INFINITY : 0.f;
        }
    }
}

static __device__ uint32_t load_acquire_system(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

static __device__ uint64_t global_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The wait for the host's masks (gate): one thread of one block, after the logits, for the whole
// call; its verdict goes to open (device memory), which the mask kernel's blocks read once it has
// finished (griddepcontrol.wait: this grid's writes are visible then). No row with a mask: open at once.
__global__ void __launch_bounds__(32) gate_kernel(const sample_row_dev *rows, int n_rows, sample_mask_gate *gate,
                                                  uint32_t *open)
{
    bool any = false;
    for (int r = threadIdx.x; r < n_rows; r += 32) // the rows' parameters before the logits, as elsewhere
        any |= rows[r].mask_at >= 0;
    any = __any_sync(0xffffffffu, any);
    pdl_wait();
    pdl_launch_dependents(); // the mask kernel still waits for this grid to finish
    if (threadIdx.x != 0)
        return;
    uint32_t ok = 1;
    if (any) {
        const uint32_t want = load_acquire_system(&gate->ticket);
        const uint64_t start = global_ns();
        while (load_acquire_system(&gate->ready) != want) {
            if (global_ns() - start > SAMPLE_MASK_WAIT_NS) {
                *(volatile uint32_t *)&gate->timed_out = 1u; // host memory: no system atomics needed
                __threadfence_system();
                ok = 0;
                break;
            }
            __nanosleep(256);
        }
    }
    *open = ok;
}

// A grammar's mask, applied in place: row r's logits whose bit in masks[mask_at ..] is 0 become -inf (rows
// with mask_at < 0 are left as they are). Block (b, r) covers MASK_SPAN logits of row r; it reads its row's
// mask_at before waiting, as the other kernels read their parameters, then gate_kernel's verdict (the host
// writes the masks while the forward pass runs). Mask words are loaded uncached (__ldcv: the host rewrites
// them every step), all of a block's at once.
#define MASK_SPAN (NT * 8)
__global__ void __launch_bounds__(NT) mask_kernel(float *logits, int vocab, const sample_row_dev *rows,
                                                  const uint32_t *masks, const uint32_t *open)
{
    const int r = blockIdx.y, t0 = blockIdx.x * MASK_SPAN;
    __shared__ int32_t at;
    if (threadIdx.x == 0)
        at = rows[r].mask_at;
    pdl_wait();
    pdl_launch_dependents();
    __syncthreads();
    if (at < 0 || !*open)
        return;
    // the span's words at once, a word a thread (each load crosses PCIe: in parallel, one latency)
    __shared__ uint32_t words[MASK_SPAN / 32];
    const int end = min(vocab, t0 + MASK_SPAN), n_words = (end - t0 + 31) / 32;
    if (threadIdx.x < n_words)
        words[threadIdx.x] = __ldcv(masks + at + t0 / 32 + threadIdx.x);
    __syncthreads();
    float *l = logits + (size_t)r * vocab;
    for (int t = t0 + threadIdx.x; t < end; t += NT)
        if (!(words[(t - t0) >> 5] >> (t & 31) & 1u))
            l[t] = -INFINITY;
}

// launch_logit_stats, with rows and draws for the rows that draw there (or NULL).
static cudaError_t launch_stats(const float *logits, size_t pitch, int rows, int cols, int shards, int ranks,
                                int id_base, sample_stats *stats, const sample_row_dev *row_params,
                                sample_draw *draws, cudaStream_t stream)
{
    if (rows <= 0)
        return cudaSuccess;
    if (ranks < 1 || ranks > SAMPLE_STATS_MAX_SPLITS)
        return cudaErrorInvalidValue;
    const int splits = SAMPLE_STATS_SHARD_SPLITS(cols, ranks);
    if (rows > 65535 || shards < 1 || shards * splits > SAMPLE_STATS_MAX_SPLITS)
        return cudaErrorInvalidValue;
    cudaError_t rc = launch_pdl(stats_kernel, dim3((unsigned)(shards * splits), (unsigned)rows), NT, 0, stream,
                                logits, pitch, cols, splits, id_base, stats, SAMPLE_STATS_MAX_SPLITS,
                                draws ? row_params : nullptr, draws, 0);
    return rc != cudaSuccess ? rc : cudaGetLastError();
}

extern "C" cudaError_t launch_logit_stats(const float *logits, size_t pitch, int rows, int cols, int shards,
                                          int ranks, int id_base, struct sample_stats *stats, cudaStream_t stream)
{
    return launch_stats(logits, pitch, rows, cols, shards, ranks, id_base, stats, nullptr, nullptr, stream);
}

extern "C" cudaError_t launch_sample(const float *logits, float *scratch, struct sample_stats *stats, int have_stats,
                                     int shards, struct sample_draw *draws, int n_rows, int vocab,
                                     const struct sample_row_dev *rows, const struct sample_seen *seen,
                                     const struct logit_bias *bias, const uint32_t *masks,
                                     struct sample_mask_gate *gate, uint32_t *gate_open,
                                     struct sample_result *out, cudaStream_t stream)
{
    if (n_rows <= 0)
        return cudaSuccess;
    if (n_rows > 65535 || shards < 1 || vocab % shards)
        return cudaErrorInvalidValue;
    // PDL (common.cuh): the statistics start while the LM head finishes, the
    // draw while the statistics do; rows, seen, bias and out may be mapped
    // host memory (cuda_sampling.c), which the kernels read and write in place.
    const int cols = vocab / shards, splits = shards * SAMPLE_STATS_SHARD_SPLITS(cols, shards);
    if (have_stats || n_rows > SAMPLE_DRAW_MAX_ROWS) // the ranks made them, without the rows; or many rows
        draws = nullptr;
    cudaError_t rc = cudaSuccess;
    if (masks) { // every step alike (a graph replays it): rows without a mask return at once
        rc = launch_pdl(gate_kernel, 1, 32, 0, stream, rows, n_rows, gate, gate_open);
        if (rc == cudaSuccess)
            rc = launch_pdl(mask_kernel, dim3((unsigned)((vocab + MASK_SPAN - 1) / MASK_SPAN), (unsigned)n_rows), NT,
                            0, stream, (float *)logits, vocab, rows, masks, (const uint32_t *)gate_open);
    }
    // a split model's gathered statistics are of the unmasked row: a masked row's are made again here
    if (rc == cudaSuccess && (!have_stats || masks))
        rc = launch_pdl(stats_kernel, dim3((unsigned)splits, (unsigned)n_rows), NT, 0, stream, logits,
                        (size_t)vocab, cols, SAMPLE_STATS_SHARD_SPLITS(cols, shards), 0, stats,
                        SAMPLE_STATS_MAX_SPLITS, have_stats ? rows : (draws ? rows : nullptr), draws,
                        have_stats ? 1 : 0);
    if (rc == cudaSuccess)
        rc = launch_pdl(sample_kernel, n_rows, NT, 0, stream, logits, scratch, vocab, rows, seen, bias,
                        (const sample_stats *)stats, (const sample_draw *)draws, shards, splits, out);
    return rc != cudaSuccess ? rc : cudaGetLastError();
}
