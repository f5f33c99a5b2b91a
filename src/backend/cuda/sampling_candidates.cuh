// A top-k / top-p row's candidates (sampling.cu): the elements near its
// best z copied to shared memory, checked to hold the cuts, narrowed,
// sorted, and the cuts as places in that order. Included by sampling.cu
// only, after sampling_row.cuh.
#pragma once

#include "backend/cuda/sampling.h"
#include "backend/cuda/sampling_row.cuh"

// ---- the candidates of a top-k / top-p row ----
//
// The cuts' bisections take ~35 whole-row passes each (one SM streaming the
// row, a block reduction a pass: milliseconds a step with both). Every element either cut keeps lies within a span of
// the best z when (a) at least top_k alive elements do and (b) their mass is
// at least top_p times the row's; then those candidates, copied to shared
// memory and sorted, give the same cuts as the whole row: the top-k cut is
// the top_k-th of them, and the running mass reaches top_p times the total
// inside them (masses summed in another order: within double rounding).
// Otherwise, or past PREFILTER_CAP candidates, the whole row's bisections.
//
// The copy takes the widest of the SPANS widths whose candidates fit the
// cap (the likeliest to hold (a) and (b)); the narrowest of them that still
// holds them is what gets sorted (narrow_and_sort): a trained model's rows
// (Gemma 3 270M, 233 positions of English text) have a median of 5910
// elements within 16 of the best z at temperature 1, 110 within 8, and
// 90 % of their mass within 8 in every row (docs/kernels/sampling.md).
#define PREFILTER_CAP 4096
#define SPANS 4 // widths of the candidates, here and for the top log-probabilities below
__constant__ const float prefilter_span[SPANS] = {16.f, 12.f, 9.f, 6.f};
// Candidates' mass over the wanted mass: far above the relative difference
// of two summation orders of up to PREFILTER_CAP positive doubles (~1e-12).
#define PREFILTER_MARGIN 1.000001
// Elements a thread loads before it uses them in the copy and the
// candidates' passes over the row: one at a time, a pass waits a round trip
// an element (the compiler will not hoist a load above a store that may
// alias it). tally's passes keep plain loops: the same batching there lost
// 13-24 % of a top-k + top-p step on the whole row (docs/kernels/sampling.md).
#define ROW_LOADS 8

// Calls f(v, t) for each element t of row[0, n) this thread visits (in
// order; every pass over the same row visits the same ones): the scalar
// loop's elements (ROW_LOADS loads in flight), or, where the row is 16-byte
// aligned and n a multiple of 4, VEC_LOADS float4s in flight: four times the
// bytes a load, a small gain only, since one block's pass is not bound by
// its loads alone (docs/kernels/sampling.md).
// The passes that use it are not inlined into sample_kernel: inlined, its
// float4s pushed the kernel's other live values to ~1.4 KB of spill loads.
#define VEC_LOADS 4
template <typename F> __device__ __forceinline__ void for_row(const float *row, int n, F f)
{
    if ((n & 3) == 0 && ((uintptr_t)row & 15) == 0) {
        const float4 *r4 = (const float4 *)row;
        const int n4 = n >> 2;
        for (int j0 = threadIdx.x; j0 < n4; j0 += VEC_LOADS * NT) {
            float4 v[VEC_LOADS]; // loaded before f's stores, which may alias them
#pragma unroll
            for (int u = 0; u < VEC_LOADS; u++)
                if (j0 + u * NT < n4)
                    v[u] = r4[j0 + u * NT];
#pragma unroll
            for (int u = 0; u < VEC_LOADS; u++) {
                const int j = j0 + u * NT;
                if (j >= n4) // past the row (f holds no warp-wide step)
                    break;
                f(v[u].x, 4 * j), f(v[u].y, 4 * j + 1), f(v[u].z, 4 * j + 2), f(v[u].w, 4 * j + 3);
            }
        }
        return;
    }
    for (int t0 = threadIdx.x; t0 < n; t0 += ROW_LOADS * NT) {
        float v[ROW_LOADS];
#pragma unroll
        for (int u = 0; u < ROW_LOADS; u++)
            if (t0 + u * NT < n)
                v[u] = row[t0 + u * NT];
#pragma unroll
        for (int u = 0; u < ROW_LOADS; u++) {
            if (t0 + u * NT >= n)
                break;
            f(v[u], t0 + u * NT);
        }
    }
}

// The block's counts of the four spans from each thread's n_in.
__device__ __forceinline__ void span_counts(const int (&n_in)[SPANS], int (&count_in)[SPANS])
{
    // two spans' counts a sum (each < 2^32): half the block reductions
    const unsigned long long wide = block_sum_t<unsigned long long>(n_in[0] | (unsigned long long)n_in[1] << 32);
    const unsigned long long narrow = block_sum_t<unsigned long long>(n_in[2] | (unsigned long long)n_in[3] << 32);
    count_in[0] = (int)(wide & 0xFFFFFFFFu), count_in[1] = (int)(wide >> 32);
    count_in[2] = (int)(narrow & 0xFFFFFFFFu), count_in[3] = (int)(narrow >> 32);
}

// The narrowest span (spans run widest first) holding at least `need` and
// at most PREFILTER_CAP elements (SPANS: none): the fewest to sort.
__device__ __forceinline__ int narrowest_holding(const int (&count_in)[SPANS], int need)
{
    int span = SPANS;
#pragma unroll
    for (int w = 0; w < SPANS; w++) // unrolled: count_in stays in registers
        if (count_in[w] <= PREFILTER_CAP && count_in[w] >= need)
            span = w;
    return span;
}

// The widest such span: the likeliest to hold a top-p row's mass, which
// only the copy measures (narrow_and_sort then narrows it).
__device__ __forceinline__ int widest_holding(const int (&count_in)[SPANS], int need)
{
    int span = SPANS;
#pragma unroll
    for (int w = SPANS - 1; w >= 0; w--)
        if (count_in[w] <= PREFILTER_CAP && count_in[w] >= need)
            span = w;
    return span;
}

// v[span] without indexing by a variable (that puts the array in local memory).
template <typename T> __device__ __forceinline__ T span_entry(const T (&v)[SPANS], int span)
{
    T x = v[0];
#pragma unroll
    for (int w = 1; w < SPANS; w++)
        x = span == w ? v[w] : x;
    return x;
}

// ---- the candidates in order ----
//
// Candidates (at most PREFILTER_CAP, in shared memory) sorted into
// sample_token's order, z descending, id ascending (bitonic: log2(N) *
// (log2(N) + 1) / 2 steps of one compare-exchange a pair and one barrier).
// The cuts are then places in that order, found by one scan instead of
// ~35 count or mass passes each ending in a block reduction (most of a
// trained row's top-k + top-p time; docs/kernels/sampling.md).

// (za, ia) comes before (zb, ib) in sample_token's order.
__device__ __forceinline__ bool before(float za, int ia, float zb, int ib)
{
    const uint32_t ka = okey(za), kb = okey(zb);
    return ka > kb || (ka == kb && ia < ib);
}

// Sorts cz / cid[0, n) in place; [n, N) (N the power of two from 64 up
// holding n) hold -inf padding, after every real element.
__device__ static void sort_candidates(float *cz, int *cid, int n)
{
    int N = 64;
    while (N < n)
        N <<= 1;
    __syncthreads(); // the candidates are stored
    for (int j = n + threadIdx.x; j < N; j += NT)
        cz[j] = -INFINITY, cid[j] = INT_MAX;
    __syncthreads();
    for (int k = 2; k <= N; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int q = threadIdx.x; q < N / 2; q += NT) {
                const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1)), o = i + j;
                const float zi = cz[i], zo = cz[o];
                const int ii = cid[i], io = cid[o];
                // runs with (i & k) == 0 in order, the others reversed
                if (before(zo, io, zi, ii) == ((i & k) == 0))
                    cz[i] = zo, cz[o] = zi, cid[i] = io, cid[o] = ii;
            }
            __syncthreads();
        }
}

// The cut keeping the first m of the sorted candidates (m >= 1).
__device__ __forceinline__ cut cut_at(const row_state &s, int m)
{
    return cut{okey(s.cz[m - 1]), s.cid[m - 1]};
}

// sample_token's top-p over the first `keep` sorted candidates: the number
// of them whose mass before them (in order) is below top_p * total, where
// total is their mass (with_total) or full_total (the row's). Each thread
// sums a run of consecutive places, so the masses are sums in the order's
// runs (within double rounding of the CPU's one running sum).
__device__ static int sorted_top_p(const row_state &s, int keep, float top_p, bool with_total, double full_total)
{
    constexpr int RUN = (PREFILTER_CAP + NT - 1) / NT;
    const int first = threadIdx.x * RUN;
    double w[RUN], mine = 0;
#pragma unroll
    for (int r = 0; r < RUN; r++) {
        w[r] = first + r < keep ? (double)weight(s.cz[first + r], s) : 0.0;
        mine += w[r];
    }
    double total;
    double cum = block_scan_t<double>(mine, total);
    const double want = top_p * (with_total ? total : full_total);
    int kept = 0;
#pragma unroll
    for (int r = 0; r < RUN; r++) {
        kept += first + r < keep && cum < want;
        cum += w[r];
    }
    return block_sum_t<int>(kept);
}

// The candidates cz / cid[0, n), copied from span `from`, cut down to the
// narrowest span that still holds what the cuts need ((a) top_k elements
// with a top-k cut, else (b) a mass of want), then sorted: their count. The
// sort's cost grows with the count (4096 elements cost more than ten passes
// over them), and a trained row's top-p mass mostly lies much closer to the
// best z than its widest span reaches.
__device__ static int narrow_and_sort(const row_state &s, float *cz, int *cid, int n, int from, bool cut_k,
                                      int top_k, double want)
{
    int span = from;
    for (int w = SPANS - 1; w > from; w--) { // narrowest first
        const float lo = __fsub_rn(s.mz, prefilter_span[w]);
        int c = 0;
        double m = 0;
        for (int j = threadIdx.x; j < n; j += NT)
            if (cz[j] >= lo) {
                c++;
                m += (double)weight(cz[j], s);
            }
        if (cut_k ? block_sum_t<int>(c) >= top_k : block_sum_t<double>(m) >= want * PREFILTER_MARGIN) {
            span = w;
            break; // every thread decides alike: the sums are the block's
        }
    }
    if (span != from) { // keep the narrower span's: read, then written back compacted
        constexpr int RUN = PREFILTER_CAP / NT;
        const float lo = __fsub_rn(s.mz, prefilter_span[span]);
        float z[RUN];
        int id[RUN], mine = 0;
#pragma unroll
        for (int r = 0; r < RUN; r++) {
            const int j = threadIdx.x + r * NT;
            z[r] = j < n ? cz[j] : -INFINITY;
            id[r] = j < n ? cid[j] : 0;
            mine += z[r] >= lo;
        }
        int at = block_scan_t<int>(mine, n); // synchronises: every thread has read its candidates
#pragma unroll
        for (int r = 0; r < RUN; r++)
            if (z[r] >= lo)
                cz[at] = z[r], cid[at] = id[r], at++;
    }
    sort_candidates(cz, cid, n);
    return n;
}

// The cuts of a row whose candidates are sorted (holding top_k of them
// where a top-k cut applies): places in the order.
__device__ static void sorted_cuts(const row_state &s, bool cut_k, int top_k, float top_p, double full_total,
                                   cut &ck, cut &cp)
{
    const int keep = cut_k ? top_k : s.n;
    if (cut_k)
        ck = cut_at(s, keep);
    if (top_p < 1.f)
        cp = cut_at(s, sorted_top_p(s, keep, top_p, cut_k, full_total));
}

// The candidates of span `span` (this thread's count of them: mine, made
// over the same elements) copied from the row into cz / cid: z elements
// alive and at least `bound`, or (TEMPERED) logits at least `bound` (alive
// included), divided by T. Where top-p alone cuts, their mass must reach
// top_p * full_total; then they are narrowed and sorted into s. Whether
// they hold the cuts (else s is left).
template <bool TEMPERED>
__device__ __noinline__ static bool take_candidates(row_state &s, const float *row, float T, float bound, int mine,
                                                    int span, bool cut_k, int top_k, float top_p, double full_total,
                                                    float *cz, int *cid)
{
    int count;
    int at = block_scan_t<int>(mine, count);
    double acc_c = 0;
    if constexpr (TEMPERED) { // the elements a thread of prefilter_tempered's count
        for_row(row, s.vocab, [&](float v, int t) {
            if (v >= bound) {
                const float zt = __fdiv_rn(v, T);
                cz[at] = zt, cid[at] = t, at++;
                acc_c += (double)weight(zt, s);
            }
        });
    } else { // those of prefilter's count (tally's loop)
        for (int t0 = threadIdx.x; t0 < s.vocab; t0 += ROW_LOADS * NT) {
            float v[ROW_LOADS]; // loaded before the stores, which may alias them
#pragma unroll
            for (int u = 0; u < ROW_LOADS; u++)
                v[u] = t0 + u * NT < s.vocab ? row[t0 + u * NT] : -INFINITY;
#pragma unroll
            for (int u = 0; u < ROW_LOADS; u++)
                if (alive(v[u], s) && v[u] >= bound) {
                    cz[at] = v[u], cid[at] = t0 + u * NT, at++;
                    acc_c += (double)weight(v[u], s);
                }
        }
    }
    const double want = (double)top_p * full_total;
    // with a top-k cut, top-p's cut lies inside it, so inside the candidates
    if (top_p < 1.f && !cut_k && block_sum_t<double>(acc_c) < want * PREFILTER_MARGIN)
        return false;
    s.n = narrow_and_sort(s, cz, cid, count, span, cut_k, top_k, want);
    s.cz = cz, s.cid = cid;
    return true;
}

// The whole row's alive count and mass (tally's loop and order), and, where
// (a) and (b) above hold, the candidates copied into cz / cid and sorted:
// s.n set to their count (else left < 0).
__device__ static void prefilter(row_state &s, int top_k, float top_p, float *cz, int *cid, int &n_alive,
                                 double &full_total)
{
    float lo[SPANS]; // unrolled: registers
#pragma unroll
    for (int w = 0; w < SPANS; w++)
        lo[w] = __fsub_rn(s.mz, prefilter_span[w]);
    double acc = 0;
    int n = 0, n_in[SPANS] = {0};
    for (int t0 = threadIdx.x; t0 < s.vocab; t0 += ROW_LOADS * NT) {
        float v[ROW_LOADS]; // each thread's elements still in tally's order
#pragma unroll
        for (int u = 0; u < ROW_LOADS; u++)
            v[u] = t0 + u * NT < s.vocab ? s.z[t0 + u * NT] : -INFINITY;
#pragma unroll
        for (int u = 0; u < ROW_LOADS; u++) {
            const float zt = v[u];
            if (!alive(zt, s))
                continue;
            n++;
            acc += (double)weight(zt, s);
#pragma unroll
            for (int w = 0; w < SPANS; w++)
                n_in[w] += zt >= lo[w];
        }
    }
    n_alive = block_sum_t<int>(n);
    full_total = block_sum_t<double>(acc);
    int count_in[SPANS];
    span_counts(n_in, count_in);
    const bool cut_k = top_k > 0 && top_k < n_alive;
    // no cut at all (top_k past the alive count, top_p 1): nothing bounds
    // the draw to the candidates
    if (!cut_k && !(top_p < 1.f))
        return;
    const int span = widest_holding(count_in, cut_k ? top_k : 1);
    if (span == SPANS)
        return; // every thread decides alike: the counts are the block's
    take_candidates<false>(s, s.z, 1.f, __fsub_rn(s.mz, prefilter_span[span]), span_entry(n_in, span), span, cut_k,
                           top_k, top_p, full_total, cz, cid);
}

// The least float l with l / T (rounded to nearest) >= tau, for T > 0:
// division by T is monotone in l, so z >= tau <=> l >= it. NaN where a
// few steps from tau * T do not find it (the caller then copies z).
__device__ static float l_threshold(float tau, float T)
{
    if (!(tau > -INFINITY))
        return -INFINITY;
    float x = __fmul_rn(tau, T);
    for (int i = 0; i < 16; i++) {
        if (__fdiv_rn(x, T) >= tau) {
            const float down = nextafterf(x, -INFINITY);
            if (!(__fdiv_rn(down, T) >= tau))
                return x;
            x = down;
        } else {
            x = nextafterf(x, INFINITY);
        }
    }
    return NAN;
}

// Logits a statistics span holds (the last of a shard may hold fewer).
__device__ __forceinline__ int stats_span(int cols, int splits) { return (cols + splits - 1) / splits; }

// Each statistics span's sum of exp(z - the span's best z) as stats_kernel
// makes it (the same elements a thread, in the same order, and block_sum_t's
// sum: each warp's by shuffles, then the warps' in order; the same bits),
// for a row whose statistics did not (a call of more than
// SAMPLE_DRAW_MAX_ROWS rows, or a split model's): a row's draw must not
// depend on how many rows its call holds. The warps' partial sums of every
// span wait in `part` ([splits][NW] doubles: the candidates' space, unused
// yet), so the spans take one barrier, not two each. Into mass[b].
__device__ static void span_z_masses(const float *l, float T, const sample_stats *st, int vocab, int shards,
                                     int splits, double *part, double *mass)
{
    const int cols = vocab / shards, per = splits / shards, span = stats_span(cols, per);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); // part may still be read (the candidates of an earlier pass)
    for (int b = 0; b < splits; b++) {
        const int shard = b / per, t0 = shard * cols + (b % per) * span;
        const int t1 = min(shard * cols + cols, t0 + span);
        const float zb = __fdiv_rn(st[b].m, T);
        double m = 0;
#pragma unroll 8
        for (int t = t0 + threadIdx.x; t < t1; t += NT)
            m += (double)expf(__fsub_rn(__fdiv_rn(l[t], T), zb));
        for (int o = 16; o > 0; o >>= 1)
            m += __shfl_down_sync(0xffffffffu, m, o);
        if (lane == 0)
            part[b * NW + warp] = m;
    }
    __syncthreads();
    for (int b = threadIdx.x; b < splits; b += NT) {
        double sum = 0;
        for (int w = 0; w < NW; w++)
            sum += part[b * NW + w];
        mass[b] = sum;
    }
    __syncthreads();
}

// prefilter for a tempered row with nothing added (z = l / T), without a
// copy of z: its passes compare l with the spans' bounds carried back
// through the division, and only the candidates are divided (the copy and
// the mass of every element were most of a trained top-p row's time on its
// one SM). The row's mass, which top-p without top-k needs, comes from
// stats_kernel's spans (z_mass; NULL: not made for this row, then made
// here the same way: span_z_masses). Returns
// whether the candidates hold the cuts (s.n set, sorted); if not, the
// caller copies z and runs prefilter.
__device__ __noinline__ static bool prefilter_tempered(row_state &s, const float *l, float T, int top_k,
                                                       float top_p, const sample_stats *st, const sample_draw *z_mass,
                                                       int shards, int splits, float *cz, int *cid, int &n_alive,
                                                       double &full_total)
{
    // alive: z > -inf (z >= -FLT_MAX) and not below the min-p threshold
    const float l_alive = l_threshold(s.thr > -INFINITY ? s.thr : -FLT_MAX, T);
    float l_in[SPANS];
    bool bounds = !isnan(l_alive);
#pragma unroll
    for (int w = 0; w < SPANS; w++) {
        const float b = l_threshold(__fsub_rn(s.mz, prefilter_span[w]), T);
        bounds = bounds && !isnan(b);
        l_in[w] = fmaxf(b, l_alive);
    }
    if (!bounds)
        return false; // alike in every thread: the same arithmetic
    int n = 0, n_in[SPANS] = {0};
    for_row(l, s.vocab, [&](float v, int) {
        n += v >= l_alive;
#pragma unroll
        for (int w = 0; w < SPANS; w++)
            n_in[w] += v >= l_in[w];
    });
    n_alive = block_sum_t<int>(n);
    int count_in[SPANS];
    span_counts(n_in, count_in);
    const bool cut_k = top_k > 0 && top_k < n_alive;
    // top-p alone needs the row's mass; with min-p, of the alive elements only (the old path's pass)
    if (!cut_k && (!(top_p < 1.f) || s.thr > -INFINITY))
        return false;
    const int span = widest_holding(count_in, cut_k ? top_k : 1);
    if (span == SPANS)
        return false; // before the mass: flat rows overflow every span
    full_total = 0;
    if (!cut_k) { // sum_b mass_b * exp(z_b - max z), z_b = the span's best l / T: in a fixed order
        __shared__ double mass[SAMPLE_STATS_MAX_SPLITS];
        if (z_mass) {
            for (int b = threadIdx.x; b < splits; b += NT)
                mass[b] = z_mass[b].z_mass;
            __syncthreads();
        } else {
            span_z_masses(l, T, st, s.vocab, shards, splits, (double *)cz, mass);
        }
        double acc = 0;
        for (int b = threadIdx.x; b < splits; b += NT)
            if (st[b].i >= 0)
                acc += mass[b] * exp_double((double)__fdiv_rn(st[b].m, T) - (double)s.mz);
        full_total = block_sum_t<double>(acc);
    }
    return take_candidates<true>(s, l, T, span_entry(l_in, span), span_entry(n_in, span), span, cut_k, top_k, top_p,
                                 full_total, cz, cid);
}
