# Development machine (numpy from the test venv): a model of the GPU
# sampler's top-k / top-p cuts (src/backend/cuda/sampling.cu: tally, the
# bisections, id_cutoff) run over the whole row and over the candidates of
# sample_kernel's prefilter (alive, within the widest of 16, 12, 9, 6 of the
# best z that holds at most 4096, taken only where its conditions hold), on
# model-shaped, flat and plateau rows; prints how many rows took the
# candidate path and how many cuts differ. Checks the argument, not the CUDA
# code.
# Usage: .venv/bin/python tools/dev/sampler_prefilter_model.py [SEED] [VOCAB]
import numpy as np, sys
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
def okey(z):
    u = z.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = np.where(z == 0, 0, u)
    return np.where(u & 0x80000000, (~u) & 0xFFFFFFFF, u | 0x80000000).astype(np.uint64)
def cuts(z, top_k, top_p, cand):
    mz = z.max(); ids = np.arange(len(z))
    w = np.exp((z - mz).astype(np.float32)).astype(np.float64)
    keys = okey(z)
    n_alive = len(z); full_total = w.sum()
    if cand is not None:
        keys_s, ids_s, w_s = keys[cand], ids[cand], w[cand]
    else:
        keys_s, ids_s, w_s = keys, ids, w
    def in_cut(c, k_, i_): return (k_ > c[0]) | ((k_ == c[0]) & (i_ <= c[1]))
    def tally(c, k, mode, id_max, mass):
        m = in_cut(c, keys_s, ids_s)
        hit = m & ((keys_s >= k) if mode == 0 else (keys_s > k) if mode == 1 else ((keys_s == k) & (ids_s <= id_max)))
        return w_s[hit].sum() if mass else int(hit.sum())
    def id_cutoff(c, k, need):
        lo, hi = 0, len(z) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if tally(c, k, 2, mid, False) >= need: hi = mid
            else: lo = mid + 1
        return lo
    ALL = (0, 2**31 - 1)
    ck, cp = ALL, ALL
    if top_k > 0 and top_k < n_alive:
        lo, hi = 0, 0xFFFFFFFF
        while lo < hi:
            mid = lo + (hi - lo + 1) // 2
            if tally(ALL, mid, 0, 0, False) >= top_k: lo = mid
            else: hi = mid - 1
        k = lo; need = top_k - tally(ALL, k, 1, 0, False); ties = tally(ALL, k, 2, 2**31 - 1, False)
        ck = (k, 2**31 - 1 if need >= ties else id_cutoff(ALL, k, need))
    if top_p < 1:
        whole = ck == ALL
        total = full_total if whole else tally(ck, 0, 0, 0, True)
        want = top_p * total
        lo, hi = 0, 0xFFFFFFFF
        while lo < hi:
            mid = lo + (hi - lo) // 2
            if tally(ck, mid, 1, 0, True) < want: hi = mid
            else: lo = mid + 1
        k = lo; cum = tally(ck, k, 1, 0, True); ties = tally(ck, k, 2, 2**31 - 1, False)
        u = (k & 0x7FFFFFFF) if k & 0x80000000 else (~k) & 0xFFFFFFFF
        wv = float(np.exp(np.float32(np.array([u], np.uint32).view(np.float32)[0] - mz)))
        keep = 0
        while keep < ties:
            cum += wv; keep += 1
            if cum >= want: break
        cp = (k, 2**31 - 1 if keep >= ties else id_cutoff(ck, k, keep))
    return ck, cp
def prefilter(z, top_k, top_p):
    mz = z.max()
    w = np.exp((z - mz).astype(np.float32)).astype(np.float64)
    for span in (16, 12, 9, 6):
        cand = np.nonzero(z >= np.float32(mz - np.float32(span)))[0]
        if len(cand) <= 4096: break
    else: return None
    n_alive = len(z); cut_k = top_k > 0 and top_k < n_alive
    k_inside = (not cut_k) or len(cand) >= top_k
    p_inside = not (top_p < 1) or cut_k or w[cand].sum() >= top_p * w.sum() * 1.000001
    return cand if (k_inside and p_inside) else None
V = int(sys.argv[2]) if len(sys.argv) > 2 else 5000; took = diff = 0
for trial in range(300):
    kind = trial % 3
    if kind == 0:
        z = (-12 + 2 * rng.standard_normal(V)); mid = int(rng.choice([0, 60, 300, 1500, 6000]))
        z[rng.integers(0, V, mid)] = 2 * rng.standard_normal(mid)
        z[rng.integers(0, V, 48)] = 5 + 2 * rng.standard_normal(48); z[rng.integers(V)] = 10
    elif kind == 1: z = 3 * rng.standard_normal(V)
    else: z = np.round(rng.standard_normal(V) * 4)  # plateaus of ties
    z = (z / rng.choice([0.6, 1.0, 1.3])).astype(np.float32)
    top_k = int(rng.choice([0, 1, 7, 40, 50, 200])); top_p = float(rng.choice([1.0, 0.2, 0.5, 0.8, 0.9, 0.99]))
    if top_k == 0 and top_p == 1.0: continue
    cand = prefilter(z, top_k, top_p)
    if cand is None: continue
    took += 1
    a = cuts(z, top_k, top_p, None); b = cuts(z, top_k, top_p, cand)
    if a != b: diff += 1; print("DIFF", trial, kind, top_k, top_p, a, b)
print(f"rows on the candidate path: {took}, cuts differing: {diff}")
