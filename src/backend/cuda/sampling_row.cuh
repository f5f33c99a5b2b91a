// The sampler's building blocks over one row in one block of NT threads
// (sampling.cu): sample_token's order, deterministic block reductions, the
// row's state, and the cuts found over the whole row by bisection. Included
// by sampling.cu only.
#pragma once

#include <float.h>
#include <limits.h>
#include <math.h>

#include "backend/cuda/common.cuh"

#define NT 1024
#define NW (NT / 32)


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
// ~1.5x slower (docs/kernels/sampling.md).
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
