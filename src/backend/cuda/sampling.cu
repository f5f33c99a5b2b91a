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
#include <float.h>
#include <limits.h>
#include <math.h>

#include "backend/cuda/common.cuh"
#include "sampling/philox.h"
#include "backend/cuda/sampling.h"

#define NT 1024
#define NW (NT / 32)

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

// ---- ordering ----

// Monotone map of a float to uint32 (a < b  <=>  key(a) < key(b)); -0 and +0
// share a key since the CPU compares them equal.
__device__ __forceinline__ uint32_t okey(float f)
{
    uint32_t u = __float_as_uint(f == 0.f ? 0.f : f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// A prefix of sample_token's order: elements with key > k, and those with
// key == k and id <= id.
struct cut {
    uint32_t k;
    int id;
};

__device__ __forceinline__ bool in_cut(uint32_t key, int t, cut c) { return key > c.k || (key == c.k && t <= c.id); }

// (v, i) is ahead of (bv, bi) in the order value descending, id ascending
// (bi < 0: nothing yet).
__device__ __forceinline__ bool ahead(float v, int i, float bv, int bi)
{
    return i >= 0 && (bi < 0 || v > bv || (v == bv && i < bi));
}

// ---- deterministic block reductions (every thread gets the result) ----

__device__ static void block_best(float &v, int &i)
{
    __shared__ float sv[NW];
    __shared__ int si[NW];
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (ahead(ov, oi, v, i))
            v = ov, i = oi;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); // the arrays may still be read by a previous call
    if (lane == 0)
        sv[warp] = v, si[warp] = i;
    __syncthreads();
    v = sv[0], i = si[0];
    for (int w = 1; w < NW; w++)
        if (ahead(sv[w], si[w], v, i))
            v = sv[w], i = si[w];
}

// Sum over the block, added in the same order in every thread (so the
// result is deterministic and every thread agrees).
template <typename T> __device__ static T block_sum_t(T x)
{
    __shared__ T part[NW];
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_down_sync(0xffffffffu, x, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0)
        part[warp] = x;
    __syncthreads();
    T s = 0;
    for (int w = 0; w < NW; w++)
        s += part[w];
    return s;
}


// exp in double, not inlined: sample_kernel combines spans' sums with it in
// two places, and each inlined copy cost it ~150 bytes of spill.
__device__ __noinline__ static double exp_double(double x) { return exp(x); }

// ---- the row's state and the passes over it ----

struct row_state {
    const float *z; // [vocab] penalised, tempered logits (scratch)
    int vocab;
    float mz;       // max of z
    float thr;      // min-p threshold (-inf: off)
    // The row's candidates (prefilter below; only where a cut bounds the
    // draw to them), or n < 0: passes read the whole row
    const float *cz; // [n] their z, in shared memory
    const int *cid;  // [n] their ids
    int n;
};

__device__ __forceinline__ bool alive(float zt, const row_state &s) { return zt > -INFINITY && !(zt < s.thr); }

// sample_token's top-p weight of an element: exp(z - max)
__device__ __forceinline__ float weight(float zt, const row_state &s) { return expf(__fsub_rn(zt, s.mz)); }

// tally's loop over the candidates (CAND) or the whole row: two loops, not
// one choosing its source per element, which made the whole row's passes
// ~1.5x slower (docs/benchmarks.md, "The sampler's candidates").
template <bool CAND>
__device__ __forceinline__ void tally_loop(const row_state &s, cut c, uint32_t k, int mode, int id_max, bool mass,
                                           double &acc, int &n)
{
    for (int j = threadIdx.x; j < (CAND ? s.n : s.vocab); j += NT) {
        const float zt = CAND ? s.cz[j] : s.z[j];
        const int t = CAND ? s.cid[j] : j;
        if (!alive(zt, s))
            continue;
        uint32_t key = okey(zt);
        if (!in_cut(key, t, c))
            continue;
        bool hit = mode == 0 ? key >= k : mode == 1 ? key > k : (key == k && t <= id_max);
        if (hit) {
            if (mass)
                acc += (double)weight(zt, s);
            else
                n++;
        }
    }
}

// Elements alive, inside c and of key >= k (mode 0), > k (1) or == k with id
// <= id_max (2): their count, or their mass when mass is set.
__device__ static double tally(const row_state &s, cut c, uint32_t k, int mode, int id_max, bool mass)
{
    double acc = 0;
    int n = 0;
    if (s.n >= 0)
        tally_loop<true>(s, c, k, mode, id_max, mass, acc, n);
    else
        tally_loop<false>(s, c, k, mode, id_max, mass, acc, n);
    return mass ? block_sum_t<double>(acc) : (double)block_sum_t<int>(n);
}

// Smallest id such that at least need elements of key k inside c have ids <= it.
__device__ static int id_cutoff(const row_state &s, cut c, uint32_t k, int need)
{
    int lo = 0, hi = s.vocab - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (tally(s, c, k, 2, mid, false) >= need)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

// The first top_k elements of the order among those alive.
__device__ static cut top_k_cut(const row_state &s, int top_k)
{
    const cut all = {0u, INT_MAX};
    uint64_t lo = 0, hi = 0xFFFFFFFFull; // largest k with count(key >= k) >= top_k
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (tally(s, all, (uint32_t)mid, 0, 0, false) >= top_k)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint32_t k = (uint32_t)lo;
    int need = top_k - (int)tally(s, all, k, 1, 0, false);
    int ties = (int)tally(s, all, k, 2, INT_MAX, false);
    return cut{k, need >= ties ? INT_MAX : id_cutoff(s, all, k, need)};
}

// sample_token's top-p inside c: keep elements, in order, while the mass
// before them is below top_p times the mass of c. full_total: the whole
// row's alive mass (tally's loop and order: the same bits), the mass of c
// when c is every element.
__device__ static cut top_p_cut(const row_state &s, cut c, float top_p, double full_total)
{
    const bool whole = c.k == 0u && c.id == INT_MAX;
    double total = whole ? full_total : tally(s, c, 0u, 0, 0, true);
    double want = top_p * total;
    uint64_t lo = 0, hi = 0xFFFFFFFFull; // smallest k with mass(key > k) < want
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (tally(s, c, (uint32_t)mid, 1, 0, true) < want)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t k = (uint32_t)lo;
    double cum = tally(s, c, k, 1, 0, true);
    int ties = (int)tally(s, c, k, 2, INT_MAX, false);
    // the tied elements share one weight; add them one at a time as the CPU does
    uint32_t u = k & 0x80000000u ? k & 0x7FFFFFFFu : ~k;
    float w = weight(__uint_as_float(u), s);
    int keep = 0;
    while (keep < ties) {
        cum += (double)w;
        keep++;
        if (cum >= want)
            break;
    }
    return cut{k, keep >= ties ? INT_MAX : id_cutoff(s, c, k, keep)};
}

// ---- the candidates of a top-k / top-p row ----
//
// The cuts' bisections take ~35 whole-row passes each (one SM streaming the
// row, a block reduction a pass: 1.1-2.3 ms a step with both,
// docs/benchmarks.md). Every element either cut keeps lies within a span of
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
// bytes a load (a trained top-p row 0.103 -> 0.101 ms, top 20 log-probs
// 0.068 -> 0.064: one block's pass is not bound by its loads alone).
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

// Exclusive prefix sum of x over the block (thread order), and the total
// (each in every thread: a fixed order of additions, so deterministic).
template <typename T> __device__ static T block_scan_t(T x, T &total)
{
    __shared__ T warp_tot[NW];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    T inc = x;
    for (int o = 1; o < 32; o <<= 1) {
        const T y = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o)
            inc += y;
    }
    __syncthreads(); // warp_tot may still be read by a previous call
    if (lane == 31)
        warp_tot[warp] = inc;
    __syncthreads();
    T before = 0;
    total = 0;
    for (int w = 0; w < NW; w++) {
        before += w < warp ? warp_tot[w] : 0;
        total += warp_tot[w];
    }
    return before + inc - x;
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
// included), divided by T. Where
// top-p alone cuts, their mass must reach top_p * full_total; then they are
// narrowed and sorted into s. Whether they hold the cuts (else s is left).
template <bool TEMPERED>
__device__ __noinline__ static bool take_candidates(row_state &s, const float *row, float T, float bound, int mine, int span,
                                       bool cut_k, int top_k, float top_p, double full_total, float *cz, int *cid)
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
__device__ __noinline__ static bool prefilter_tempered(row_state &s, const float *l, float T, int top_k, float top_p,
                                          const sample_stats *st, const sample_draw *z_mass, int shards,
                                          int splits, float *cz, int *cid, int &n_alive, double &full_total)
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

// ---- the Gumbel draw ----
//
// The elements that can win the draw: alive, inside both cuts, and whose z
// + GUMBEL_SPREAD reaches the best token's draw. On a trained model's row
// they are a few thousand of the vocabulary, scattered, so a warp computing
// the noise wherever one of its lanes passes paid it for nearly every
// element (0.2 ms a 262144-wide row, docs/benchmarks.md "The Gumbel draw
// queued by warp"). Each warp queues its passing elements in shared memory
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
    // trip each of Gemma's 256 elements a lane: ~0.13 ms a row)
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
// One block per row reading all V logits twice took 37 us a step (Llama,
// V = 128256) and 60 us (Gemma, 262144) on an H100: a greedy decode step's
// largest kernel after the GEMVs. stats_kernel spreads that over
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
// Philox and two logf an element that can win: 0.1-0.2 ms a step on one SM
// (docs/benchmarks.md, "The draw with the statistics"); spread over the
// statistics' blocks it is a few microseconds.
// Past SAMPLE_DRAW_MAX_ROWS rows a call leaves the draw to sample_kernel:
// each span prunes with its own best's draw, far below the row's on a
// trained model's rows, so the spans compute many times the noise one
// block does, and past ~32 rows a block a row fills the SMs as well (Gemma 3
// 270M's rows, one H200: 8 rows 0.14 ms in sample_kernel, 0.07 here; 16
// rows 0.15 / 0.10; 32 rows 0.19 / 0.17; 64 rows 0.24 / 0.31).
#define SAMPLE_DRAW_MAX_ROWS 32
__device__ __forceinline__ bool draws_with_stats(const sample_row_dev &p)
{
    return p.temperature != 0.f && p.n_bias == 0 && p.n_seen == 0 && p.top_k <= 0 && !(p.top_p < 1.f) &&
           !(p.min_p > 0.f);
}

// A row whose mass over z stats_kernel sums, span by span (z_mass: the sum
// of exp(z - the span's best z)): top-p without top-k, where
// prefilter_tempered needs the whole row's mass and one block made it at
// ~60 us a trained row (an expf an element on one SM). Not with min-p,
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
                                                      const sample_row_dev *rows, sample_draw *draws)
{
    const int b = blockIdx.x, r = blockIdx.y, span = stats_span(cols, splits);
    const int shard = b / splits, t0 = shard * cols + (b % splits) * span, t1 = min(shard * cols + cols, t0 + span);
    const float *l = logits + (size_t)r * pitch;
    // The row's parameters: host memory no kernel writes (staged before the
    // step), read by one thread (every block's warps reading it over the
    // link cost a batch-64 step ~1 %) before waiting, shared after.
    __shared__ float row_temp;
    __shared__ bool row_mass;
    __shared__ uint64_t row_seed, row_step;
    if (threadIdx.x == 0) {
        row_temp = 0.f, row_mass = false;
        if (rows) {
            const sample_row_dev p = rows[r];
            if (draws_with_stats(p))
                row_temp = p.temperature, row_seed = p.seed, row_step = p.step;
            else if (z_mass_with_stats(p))
                row_temp = p.temperature, row_mass = true;
        }
    }
    pdl_wait(); // the logits are the previous kernel's output
    pdl_launch_dependents();
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
// the way, instead of a second pass; l may be z itself). COPY loads in flight before the first
// store: the compiler orders a load after a store that may alias it (z and
// l), so one load, one store a step costs a round trip an element (a
// thread's ~125 of Llama's vocabulary, 256 of Gemma's). The caller
// synchronises before z is read.
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
            const sample_draw *z_mass = draws && z_mass_with_stats(p) ? draws + (size_t)blockIdx.x * SAMPLE_STATS_MAX_SPLITS
                                                               : nullptr;
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
        for (int j = 0; j < 20; j++) {
            o->top_ids[j] = j < k ? top_ids[j] : 0;
            o->top_logprobs[j] = j < k ? __fsub_rn(top_vals[j], lse) : 0.f;
        }
    }
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
                                draws ? row_params : nullptr, draws);
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
                                     const struct logit_bias *bias, struct sample_result *out, cudaStream_t stream)
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
    cudaError_t rc = have_stats ? cudaSuccess
                                : launch_stats(logits, (size_t)vocab, n_rows, cols, shards, shards, 0, stats, rows,
                                               draws, stream);
    if (rc == cudaSuccess)
        rc = launch_pdl(sample_kernel, n_rows, NT, 0, stream, logits, scratch, vocab, rows, seen, bias,
                        (const sample_stats *)stats, (const sample_draw *)draws, shards, splits, out);
    return rc != cudaSuccess ? rc : cudaGetLastError();
}
