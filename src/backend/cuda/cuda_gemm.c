/* The CUDA backend's GEMMs: out[M, N] = x[M, K] . W^T with W bf16 [N, K]
 * (HF Linear layout), fp32 accumulation; bf16 output (matmul) or f32 output
 * with an optional tanh soft-cap (logits).
 *
 * Two paths:
 * - decode (M <= GEMM_GEMV_MAX_M, K % 8 == 0, 16-byte aligned x and W):
 *   gemv.cu's tensor-core GEMV, one pass over W, soft-cap fused into its
 *   epilogue; its variant comes from gemv_table for the measured shapes
 *   (which also sends a few shapes to cuBLASLt, where that was faster),
 *   else from the launcher's own choice;
 * - everything else: cuBLASLt. Row-major out = x . W^T is column-major
 *   out^T = W^T(op T on a K x N matrix) . x^T (K x M): a "TN" GEMM with
 *   A = W, B = x, C = D = out (N x M), bf16 inputs, CUBLAS_COMPUTE_32F.
 *
 * Plans (matmul descriptor, the three layouts and the heuristic's algorithm)
 * are made once per (M bucket, N, K, output type, pointer alignment) and
 * cached in a table hanging off cb->gemm; the bucket is the next power of
 * two >= M, the algorithm is chosen for the bucket's M, and a call only
 * writes its real M into the B and C layouts. After the first call of a
 * bucket nothing is allocated and the heuristic is not run again.
 *
 * gated_matmul (out[M, F] = act(x . Wg^T) * (x . Wu^T), W = gate|up [2F, K]):
 * the GEMV path fuses the activation into the GEMV's epilogue (one kernel,
 * F outputs written); otherwise the projection goes through cuda_op_matmul
 * into the caller's scratch [M, 2F] and launch_gated_act combines its halves. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels.h"

/* gemv.cu (declared here: kernels.h is shared). config 0 = the launcher's
 * choice, 1..16 = a variant, 17 = the launcher's choice without PDL. */
cudaError_t launch_gemv(void *out, int out_f32, const void *x, const void *w, int m, int n, int k,
                        float softcap, int config, int n_sms, cudaStream_t stream);
/* out[m, f] = act(x . W[0:f]^T) * (x . W[f:2f]^T), act 0 = SiLU, 1 = GELU-tanh; same configs. */
cudaError_t launch_gemv_gated(void *out, const void *x, const void *w, int m, int f, int k, int act, int config,
                              int n_sms, cudaStream_t stream);

/* Test hooks (tests/gpu/test_gemm.c): path 0 = automatic, 1 = cuBLASLt
 * always, 2 = the GEMV wherever it can run, with launch_gemv's gemv_config
 * (0 = its own choice); path 0 with gemv_config 17 = automatic without PDL. */
void cuda_gemm_force(struct backend *be, int path, int gemv_config);
int cuda_gemm_plan_count(struct backend *be);
int cuda_gemm_last_choice(struct backend *be);

/* Largest M the GEMV takes; above it cuBLASLt (docs/kernels/gemm.md). */
#define GEMM_GEMV_MAX_M 16
/* launch_gemv config: chosen by the launcher, and the same without PDL */
#define GEMV_CONFIG_AUTO 0
#define GEMV_CONFIG_NO_PDL 17
#define GEMV_USE_LT (-1)

/* The decode shapes of the target models (and their fused q|k|v and
 * gate|up), measured on H100 2026-11-25 (docs/kernels/gemm.md): the best
 * launch_gemv variant for M <= 8 and for 8 < M <= 16, or GEMV_USE_LT where
 * cuBLASLt was faster. Other shapes: the launcher's own choice. */
static const struct gemv_tuned {
    int32_t n, k;
    int8_t small, large;
} gemv_table[] = {
    {256, 1152, 2, 1},    {1024, 1152, 2, 4},   {1024, 2560, 4, 8},   {1024, 3072, 4, 4},
    {1152, 1024, 1, 4},   {1152, 6912, 6, 6},   {1536, 1152, 5, 1},   {2560, 4096, 6, 3},
    {2560, 9728, 6, -1},  {3072, 3072, 6, 6},   {3072, 8192, 7, 6},   {4096, 2560, -1, -1},
    {5120, 3072, 7, 6},   {6144, 2560, 3, -1},  {6912, 1152, 5, -1},  {8192, 3072, -1, -1},
    {9728, 2560, 6, 6},   {13824, 1152, 8, -1}, {16384, 3072, 8, 8},  {19456, 2560, 6, 6},
    {128256, 3072, 8, 8}, {151936, 2560, 7, 8}, {262144, 1152, 6, 6},
};

enum gemm_path { GEMM_PATH_AUTO, GEMM_PATH_LT, GEMM_PATH_GEMV };

/* Aborts with the location and the status name: a failing cuBLASLt call
 * inside a step is a broken invariant. */
#define LT_CHECK(call)                                                                                       \
    do {                                                                                                     \
        cublasStatus_t st_ = (call);                                                                         \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                                  \
            fprintf(stderr, "infer: fatal: %s failed at %s:%d: %s\n", #call, __FILE__, __LINE__,             \
                    cublasLtGetStatusName(st_));                                                             \
            abort();                                                                                         \
        }                                                                                                    \
    } while (0)

struct gemm_plan {
    int64_t m_bucket, n, k;
    int align;               /* bytes every pointer is aligned to (<= 256) */
    cudaDataType_t out_type; /* CUDA_R_16BF or CUDA_R_32F */
    int64_t cur_m;           /* the M the B and C layouts describe now */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a; /* W: K x N column-major, ld K, op T */
    cublasLtMatrixLayout_t b; /* x: K x M, ld K */
    cublasLtMatrixLayout_t c; /* out: N x M, ld N (also D) */
    cublasLtMatmulAlgo_t algo;
};

struct gemm_cache {
    struct gemm_plan *plans; /* grows by doubling when a new key appears */
    int n_plans, cap;
    int force_path;  /* enum gemm_path */
    int gemv_config; /* launch_gemv's config */
    int last_choice; /* the last call's gemv_choice (tests and benchmarks report it) */
};

static struct gemm_cache *gemm_cache(struct backend *be)
{
    struct cuda_backend *cb = cuda_impl(be);
    if (!cb->gemm)
        cb->gemm = xcalloc(1, sizeof(struct gemm_cache));
    return cb->gemm;
}

static int64_t m_bucket(int64_t m)
{
    int64_t b = 1;
    while (b < m)
        b <<= 1;
    return b;
}

/* Largest power of two <= 256 dividing every address. */
static int pointer_align(const void *a, const void *b, const void *c)
{
    uintptr_t v = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c;
    int al = 256;
    while (al > 1 && v % (uintptr_t)al)
        al >>= 1;
    return al;
}

/* Makes the plan for a key: descriptors, layouts, and the heuristic's best
 * algorithm for M = the bucket, within the backend's cuBLASLt workspace. */
static void plan_init(struct cuda_backend *cb, struct gemm_plan *p)
{
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    const uint64_t m = (uint64_t)p->m_bucket, n = (uint64_t)p->n, k = (uint64_t)p->k;
    LT_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t));
    LT_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, k, n, (int64_t)k));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, k, m, (int64_t)k));
    LT_CHECK(cublasLtMatrixLayoutCreate(&p->c, p->out_type, n, m, (int64_t)n));
    p->cur_m = p->m_bucket;

    cublasLtMatmulPreference_t pref;
    const uint64_t ws = cb->lt_workspace_bytes;
    const uint32_t al = (uint32_t)p->align;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al,
                                                  sizeof al));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al,
                                                  sizeof al));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al,
                                                  sizeof al));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al,
                                                  sizeof al));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    memset(&res, 0, sizeof res);
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(cb->lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &res, &found));
    LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (found < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr,
                "infer: fatal: cuBLASLt has no algorithm for M %lld (bucket) N %lld K %lld out %s at %s:%d\n",
                (long long)p->m_bucket, (long long)p->n, (long long)p->k,
                p->out_type == CUDA_R_32F ? "f32" : "bf16", __FILE__, __LINE__);
        abort();
    }
    p->algo = res.algo;
}

static struct gemm_plan *plan_get(struct backend *be, int64_t m, int64_t n, int64_t k,
                                  cudaDataType_t out_type, int align)
{
    struct gemm_cache *gc = gemm_cache(be);
    const int64_t mb = m_bucket(m);
    for (int i = 0; i < gc->n_plans; i++) {
        struct gemm_plan *p = &gc->plans[i];
        if (p->m_bucket == mb && p->n == n && p->k == k && p->out_type == out_type && p->align == align)
            return p;
    }
    if (gc->n_plans == gc->cap) {
        gc->cap = gc->cap ? 2 * gc->cap : 32;
        gc->plans = xrealloc(gc->plans, (size_t)gc->cap * sizeof *gc->plans);
    }
    struct gemm_plan *p = &gc->plans[gc->n_plans];
    *p = (struct gemm_plan){
        .m_bucket = mb, .n = n, .k = k, .align = align, .out_type = out_type};
    plan_init(cuda_impl(be), p);
    gc->n_plans++;
    return p;
}

/* out = x . W^T with cuBLASLt. */
static void lt_matmul(struct backend *be, void *out, cudaDataType_t out_type, const void *x,
                      const struct weight *w, int m)
{
    struct cuda_backend *cb = cuda_impl(be);
    struct gemm_plan *p = plan_get(be, m, w->rows, w->cols, out_type, pointer_align(out, x, w->data));
    if (p->cur_m != m) {
        const uint64_t cols = (uint64_t)m;
        LT_CHECK(cublasLtMatrixLayoutSetAttribute(p->b, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols));
        LT_CHECK(cublasLtMatrixLayoutSetAttribute(p->c, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols));
        p->cur_m = m;
    }
    const float alpha = 1.f, beta = 0.f;
    LT_CHECK(cublasLtMatmul(cb->lt, p->desc, &alpha, w->data, p->a, x, p->b, &beta, out, p->c, out, p->c,
                            &p->algo, cb->lt_workspace, cb->lt_workspace_bytes, cb->stream));
}

static int gemv_fits(const void *x, const struct weight *w, int m)
{
    return m <= GEMM_GEMV_MAX_M && w->cols >= 8 && w->cols % 8 == 0 && w->cols <= INT32_MAX &&
           w->rows <= 65535 * 8 && ((uintptr_t)x | (uintptr_t)w->data) % 16 == 0;
}

/* The launch_gemv config for this call, or GEMV_USE_LT. */
static int gemv_choice(const struct gemm_cache *gc, const void *x, const struct weight *w, int m)
{
    if (gc->force_path == GEMM_PATH_LT || !gemv_fits(x, w, m))
        return GEMV_USE_LT;
    if (gc->force_path == GEMM_PATH_GEMV)
        return gc->gemv_config;
    int cfg = GEMV_CONFIG_AUTO;
    for (size_t i = 0; i < sizeof gemv_table / sizeof gemv_table[0]; i++)
        if (gemv_table[i].n == w->rows && gemv_table[i].k == w->cols) {
            cfg = m <= 8 ? gemv_table[i].small : gemv_table[i].large;
            break;
        }
    if (cfg != GEMV_USE_LT && gc->gemv_config == GEMV_CONFIG_NO_PDL) /* test hook: the same without PDL */
        cfg = cfg == GEMV_CONFIG_AUTO ? GEMV_CONFIG_NO_PDL : cfg + 8;
    return cfg;
}

/* gemv.cu: config 0's choice at m rows as an explicit config. */
int gemv_auto_config(int m, int n, int k, int n_sms);
int gemv_gated_auto_config(int m, int f, int k, int n_sms);

/* Batch-invariant mode (be->batch_invariant): every M goes through the GEMV
 * in 16-row tiles with one variant per (N, K) — the table's M <= 8 entry,
 * else the launcher's choice at M = 1 — so the order of a row's sums never
 * depends on the other rows of the step (cuBLASLt picks its algorithm by
 * M). Prefill pays for it: every 16-row tile reads the weights (neighbouring
 * tiles share them through L2). */
static int invariant_config(struct backend *be, const void *x, const struct weight *w, int gated)
{
    if (!gemv_fits(x, w, 1)) {
        fprintf(stderr, "infer: fatal: batch-invariant mode needs the GEMV, which cannot take a [%lld, %lld] weight with "
                        "input at %p (K %% 8 and 16-byte alignment)\n",
                (long long)w->rows, (long long)w->cols, x);
        abort();
    }
    for (size_t i = 0; i < sizeof gemv_table / sizeof gemv_table[0]; i++)
        if (gemv_table[i].n == w->rows && gemv_table[i].k == w->cols && gemv_table[i].small > 0)
            return gemv_table[i].small;
    const int sms = cuda_impl(be)->prop.multiProcessorCount;
    return gated ? gemv_gated_auto_config(1, (int)(w->rows / 2), (int)w->cols, sms)
                 : gemv_auto_config(1, (int)w->rows, (int)w->cols, sms);
}

static void invariant_run(struct backend *be, void *out, int out_f32, const void *x, const struct weight *w, int m,
                          float softcap, int gated, int act01)
{
    struct cuda_backend *cb = cuda_impl(be);
    const int cfg = invariant_config(be, x, w, gated); /* x's rows keep its alignment: K % 8 == 0 */
    const int64_t n_out = gated ? w->rows / 2 : w->rows, K = w->cols;
    const size_t out_row = (size_t)n_out * (out_f32 ? 4 : 2), x_row = (size_t)K * 2;
    /* one launch takes 16-row tiles of all M as far as grid y allows */
    const long tiles_per_launch = 65535 / ((n_out + 7) / 8);
    const int step = (int)(tiles_per_launch < 1 ? 1 : tiles_per_launch > 4096 ? 4096 : tiles_per_launch) * 16;
    for (int r0 = 0; r0 < m; r0 += step) {
        const int rows = m - r0 < step ? m - r0 : step;
        char *o = (char *)out + (size_t)r0 * out_row;
        const char *xi = (const char *)x + (size_t)r0 * x_row;
        if (gated)
            CUDA_CHECK(launch_gemv_gated(o, xi, w->data, rows, (int)n_out, (int)K, act01, cfg,
                                         cb->prop.multiProcessorCount, cb->stream));
        else
            CUDA_CHECK(launch_gemv(o, out_f32, xi, w->data, rows, (int)n_out, (int)K, softcap, cfg,
                                   cb->prop.multiProcessorCount, cb->stream));
    }
}

/* out = x . W^T; then tanh soft-cap when softcap > 0 (f32 output only). */
static void gemm_run(struct backend *be, void *out, int out_f32, const void *x, const struct weight *w, int m,
                     float softcap)
{
    if (m <= 0 || w->rows <= 0)
        return;
    if (w->dtype != DTYPE_BF16) {
        fprintf(stderr, "infer: fatal: cuda matmul wants bf16 weights, got %s at %s:%d\n",
                dtype_name(w->dtype), __FILE__, __LINE__);
        abort();
    }
    if (be->batch_invariant) {
        invariant_run(be, out, out_f32, x, w, m, softcap, 0, 0);
        return;
    }
    struct gemm_cache *gc = gemm_cache(be);
    const int cfg = gc->last_choice = gemv_choice(gc, x, w, m);
    if (cfg != GEMV_USE_LT) {
        struct cuda_backend *cb = cuda_impl(be);
        CUDA_CHECK(launch_gemv(out, out_f32, x, w->data, m, (int)w->rows, (int)w->cols, softcap, cfg,
                               cb->prop.multiProcessorCount, cb->stream));
        return;
    }
    lt_matmul(be, out, out_f32 ? CUDA_R_32F : CUDA_R_16BF, x, w, m);
    if (out_f32 && softcap > 0)
        CUDA_CHECK(launch_softcap(out, (int64_t)m * w->rows, softcap, cuda_stream(be)));
}

void cuda_op_matmul(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows)
{
    gemm_run(be, out, 0, x, w, n_rows, 0.f);
}

void cuda_op_logits(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows,
                    float softcap)
{
    gemm_run(be, out, 1, x, w, n_rows, softcap);
}

/* gated_matmul shapes (F, K) where the gated GEMV lost to the plain fused
 * GEMM + gated_act on H100 (docs/kernels/gemm.md, bench_gemm_gated), per M
 * class (M <= 8, 8 < M <= 16): GATED_UNFUSED there, 0 = the gated GEMV. */
#define GATED_UNFUSED (-2)
static const struct gemv_tuned gated_table[] = {
    {9728, 2560, GATED_UNFUSED, 0}, /* Qwen3-4B: 37.8 vs 36.7 us at M = 1 */
};

/* The launch_gemv_gated config for a fused gate|up weight, GEMV_USE_LT, or
 * GATED_UNFUSED. The main table's entry for the [2F, K] shape gives U and the
 * prefetch hint; where it sent that shape to cuBLASLt the gated GEMV is still
 * taken (it also saves the activation kernel), with the launcher's own choice. */
static int gated_choice(const struct gemm_cache *gc, const void *x, const struct weight *w, int m)
{
    if (gc->force_path == GEMM_PATH_LT || !gemv_fits(x, w, m))
        return GEMV_USE_LT;
    if (gc->force_path == GEMM_PATH_GEMV)
        return gc->gemv_config;
    for (size_t i = 0; i < sizeof gated_table / sizeof gated_table[0]; i++)
        if (2 * (int64_t)gated_table[i].n == w->rows && gated_table[i].k == w->cols &&
            (m <= 8 ? gated_table[i].small : gated_table[i].large) == GATED_UNFUSED)
            return GATED_UNFUSED;
    int cfg = GEMV_CONFIG_AUTO;
    for (size_t i = 0; i < sizeof gemv_table / sizeof gemv_table[0]; i++)
        if (gemv_table[i].n == w->rows && gemv_table[i].k == w->cols) {
            cfg = m <= 8 ? gemv_table[i].small : gemv_table[i].large;
            break;
        }
    if (cfg == GEMV_USE_LT)
        cfg = GEMV_CONFIG_AUTO;
    if (gc->gemv_config == GEMV_CONFIG_NO_PDL) /* test hook: the same without PDL */
        cfg = cfg == GEMV_CONFIG_AUTO ? GEMV_CONFIG_NO_PDL : (cfg > 8 ? cfg : cfg + 8);
    return cfg;
}

void cuda_op_gated_matmul(struct backend *be, void *out, void *scratch, const void *x, const struct weight *w,
                          int n_rows, enum act_fn act)
{
    if (n_rows <= 0 || w->rows <= 0)
        return;
    if (w->dtype != DTYPE_BF16 || w->rows % 2) {
        fprintf(stderr, "infer: fatal: cuda gated_matmul wants a bf16 [2F, K] weight, got %s [%lld, %lld] at %s:%d\n",
                dtype_name(w->dtype), (long long)w->rows, (long long)w->cols, __FILE__, __LINE__);
        abort();
    }
    const int act01 = act == ACT_FN_SILU ? 0 : 1;
    if (be->batch_invariant) {
        invariant_run(be, out, 0, x, w, n_rows, 0.f, 1, act01);
        return;
    }
    struct cuda_backend *cb = cuda_impl(be);
    struct gemm_cache *gc = gemm_cache(be);
    const int64_t F = w->rows / 2, K = w->cols;
    const int cfg = gc->last_choice = gated_choice(gc, x, w, n_rows);
    if (cfg != GEMV_USE_LT && cfg != GATED_UNFUSED) {
        CUDA_CHECK(launch_gemv_gated(out, x, w->data, n_rows, (int)F, (int)K, act01, cfg,
                                     cb->prop.multiProcessorCount, cb->stream));
        return;
    }
    /* the fused projection into the caller's scratch, then the activation */
    cuda_op_matmul(be, scratch, x, w, n_rows);
    CUDA_CHECK(launch_gated_act(out, scratch, (char *)scratch + (size_t)F * 2, n_rows, (int)F, (int)(2 * F), act01,
                                cb->stream));
}

void cuda_gemm_force(struct backend *be, int path, int gemv_config)
{
    struct gemm_cache *gc = gemm_cache(be);
    gc->force_path = path;
    gc->gemv_config = gemv_config;
}

int cuda_gemm_plan_count(struct backend *be)
{
    return cuda_impl(be)->gemm ? ((struct gemm_cache *)cuda_impl(be)->gemm)->n_plans : 0;
}

int cuda_gemm_last_choice(struct backend *be)
{
    return cuda_impl(be)->gemm ? ((struct gemm_cache *)cuda_impl(be)->gemm)->last_choice : GEMV_USE_LT;
}

void cuda_gemm_release(struct backend *be)
{
    struct cuda_backend *cb = cuda_impl(be);
    struct gemm_cache *gc = cb->gemm;
    if (!gc)
        return;
    for (int i = 0; i < gc->n_plans; i++) { /* teardown: report, don't abort */
        struct gemm_plan *p = &gc->plans[i];
        if (cublasLtMatrixLayoutDestroy(p->c) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatrixLayoutDestroy(p->b) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatrixLayoutDestroy(p->a) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulDescDestroy(p->desc) != CUBLAS_STATUS_SUCCESS)
            fprintf(stderr, "infer: warning: releasing a cuBLASLt plan failed\n");
    }
    free(gc->plans);
    free(gc);
    cb->gemm = NULL;
}
