/* The CUDA backend's GEMMs: out[M, N] = x[M, K] . W^T with W bf16 [N, K]
 * (HF Linear layout), fp32 accumulation; bf16 output (matmul) or f32 output
 * with an optional tanh soft-cap (logits).
 *
 * Two paths:
 * - decode (M <= GEMM_GEMV_MAX_M, K % 8 == 0, 16-byte aligned x and W):
 *   gemv.cu's tensor-core GEMV, one pass over W, soft-cap fused into its
 *   epilogue; its variant (struct gemv_variant, gemv.h) comes from
 *   gemv_table for the measured shapes (which also sends a few shapes to
 *   cuBLASLt, where that was faster), else from the launcher's own choice;
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
#include "backend/cuda/gemv.h"
#include "backend/cuda/kernels.h"

/* Largest M the GEMV takes; above it cuBLASLt (docs/kernels/gemm.md). */
#define GEMM_GEMV_MAX_M 16

/* The GEMV variants the measurements picked, by name: T = tiles, U =
 * unroll, HINT = the L2::256B prefetch hint; all with PDL. */
/* clang-format off */
#define T1_U2 {.tiles = 1, .unroll = 2, .l2_hint = 0, .pdl = 1}
#define T2_U2 {.tiles = 2, .unroll = 2, .l2_hint = 0, .pdl = 1}
#define T1_U4 {.tiles = 1, .unroll = 4, .l2_hint = 0, .pdl = 1}
#define T2_U4 {.tiles = 2, .unroll = 4, .l2_hint = 0, .pdl = 1}
#define T1_U2_HINT {.tiles = 1, .unroll = 2, .l2_hint = 1, .pdl = 1}
#define T2_U2_HINT {.tiles = 2, .unroll = 2, .l2_hint = 1, .pdl = 1}
#define T1_U4_HINT {.tiles = 1, .unroll = 4, .l2_hint = 1, .pdl = 1}
#define T2_U4_HINT {.tiles = 2, .unroll = 4, .l2_hint = 1, .pdl = 1}

/* A table row's pick for one M class: cuBLASLt, or a GEMV variant. */
struct gemm_pick {
    int use_lt; /* 1: cuBLASLt was faster than every GEMV variant */
    struct gemv_variant gemv;
};
#define GEMV(variant) {.gemv = variant}
#define CUBLASLT {.use_lt = 1}
/* clang-format on */

/* The decode shapes (N x K) of the target models, and their fused q|k|v and
 * gate|up: the GEMV variant measured fastest for M <= 8 and for 8 < M <= 16,
 * or cuBLASLt where it beat every variant, as measured on an H100
 * (docs/kernels/gemm.md): `gpu_tests bench_gemm_gemv_variants` times all 16
 * variants (tiles x unroll x hint x PDL; the winners all use PDL) and
 * cuBLASLt at M = 1, 8, 16, each as a graph of back-to-back calls rotating
 * over weight copies that L2 cannot hold, median of replays. Other shapes:
 * the launcher's own choice (gemv_variant_auto), which one-row steps take
 * for every shape (cuda_gemm_choose); batch-invariant mode takes the M <= 8
 * entry at every M. */
/* clang-format off */
static const struct gemv_tuned {
    int32_t n, k;
    struct gemm_pick small, large; /* M <= 8, 8 < M <= 16 */
} gemv_table[] = {
    /* Gemma-3-1B: hidden 1152, 4 q heads and 1 kv head of 256, intermediate 6912, vocab 262144 */
    {256, 1152, GEMV(T2_U2), GEMV(T1_U2)},              /* k, v */
    {1024, 1152, GEMV(T2_U2), GEMV(T2_U4)},             /* q */
    {1152, 1024, GEMV(T1_U2), GEMV(T2_U4)},             /* o */
    {1536, 1152, GEMV(T1_U2_HINT), GEMV(T1_U2)},        /* q|k|v fused */
    {6912, 1152, GEMV(T1_U2_HINT), CUBLASLT},           /* gate, up */
    {1152, 6912, GEMV(T2_U2_HINT), GEMV(T2_U2_HINT)},   /* down */
    {13824, 1152, GEMV(T2_U4_HINT), CUBLASLT},          /* gate|up fused */
    {262144, 1152, GEMV(T2_U2_HINT), GEMV(T2_U2_HINT)}, /* lm_head */
    /* Qwen3-4B: hidden 2560, 32 q heads and 8 kv heads of 128, intermediate 9728, vocab 151936 */
    {4096, 2560, CUBLASLT, CUBLASLT},                   /* q */
    {1024, 2560, GEMV(T2_U4), GEMV(T2_U4_HINT)},        /* k, v */
    {2560, 4096, GEMV(T2_U2_HINT), GEMV(T1_U4)},        /* o */
    {6144, 2560, GEMV(T1_U4), CUBLASLT},                /* q|k|v fused */
    {9728, 2560, GEMV(T2_U2_HINT), GEMV(T2_U2_HINT)},   /* gate, up */
    {2560, 9728, GEMV(T2_U2_HINT), CUBLASLT},           /* down */
    {19456, 2560, GEMV(T2_U2_HINT), GEMV(T2_U2_HINT)},  /* gate|up fused */
    {151936, 2560, GEMV(T1_U4_HINT), GEMV(T2_U4_HINT)}, /* lm_head */
    /* Llama-3.2-3B: hidden 3072, 24 q heads and 8 kv heads of 128, intermediate 8192, vocab 128256 */
    {3072, 3072, GEMV(T2_U2_HINT), GEMV(T2_U2_HINT)},   /* q, o */
    {1024, 3072, GEMV(T2_U4), GEMV(T2_U4)},             /* k, v */
    {5120, 3072, GEMV(T1_U4_HINT), GEMV(T2_U2_HINT)},   /* q|k|v fused */
    {8192, 3072, CUBLASLT, CUBLASLT},                   /* gate, up */
    {3072, 8192, GEMV(T1_U4_HINT), GEMV(T2_U2_HINT)},   /* down */
    {16384, 3072, GEMV(T2_U4_HINT), GEMV(T2_U4_HINT)},  /* gate|up fused */
    {128256, 3072, GEMV(T2_U4_HINT), GEMV(T2_U4_HINT)}, /* lm_head */
};
/* clang-format on */

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

/* gemv_table's pick for an N x K weight at m rows, or NULL: not measured. */
static const struct gemm_pick *table_pick(int64_t n, int64_t k, int m)
{
    for (size_t i = 0; i < sizeof gemv_table / sizeof gemv_table[0]; i++)
        if (gemv_table[i].n == n && gemv_table[i].k == k)
            return m <= 8 ? &gemv_table[i].small : &gemv_table[i].large;
    return NULL;
}

static int n_sms(struct backend *be) { return cuda_impl(be)->prop.multiProcessorCount; }

enum cuda_gemm_path cuda_gemm_choose(struct backend *be, const void *x, const struct weight *w, int m,
                                     struct gemv_variant *variant)
{
    if (!gemv_fits(x, w, m))
        return CUDA_GEMM_PATH_LT;
    /* One row: the launcher's choice, which in whole decode steps beat the
     * table's M <= 8 entries (those were timed on kernels alone, without a
     * step's neighbours); from two rows the table wins (docs/kernels/gemm.md). */
    const struct gemm_pick *p = m > 1 ? table_pick(w->rows, w->cols, m) : NULL;
    if (p && p->use_lt)
        return CUDA_GEMM_PATH_LT;
    if (p)
        *variant = p->gemv;
    else
        CUDA_CHECK(gemv_variant_auto(m, (int)w->rows, (int)w->cols, n_sms(be), variant));
    return CUDA_GEMM_PATH_GEMV;
}

/* Batch-invariant mode (be->batch_invariant): every M goes through the GEMV
 * in 16-row tiles with one variant per (N, K) — the table's M <= 8 entry,
 * else the launcher's choice at M = 1 — so the order of a row's sums never
 * depends on the other rows of the step (cuBLASLt picks its algorithm by
 * M). Prefill pays for it: every 16-row tile reads the weights (neighbouring
 * tiles share them through L2). gated: w is gate|up [2F, K], tiles 2. */
static struct gemv_variant invariant_variant(struct backend *be, const void *x, const struct weight *w,
                                             int gated)
{
    if (!gemv_fits(x, w, 1)) {
        fprintf(stderr, "infer: fatal: batch-invariant mode needs the GEMV, which cannot take a [%lld, %lld] weight with "
                        "input at %p (K %% 8 and 16-byte alignment)\n",
                (long long)w->rows, (long long)w->cols, x);
        abort();
    }
    struct gemv_variant v;
    const struct gemm_pick *p = table_pick(w->rows, w->cols, 1);
    if (p && !p->use_lt) {
        v = p->gemv;
        if (gated)
            v.tiles = 2; /* the table's unroll and hint; a gated block pairs a gate and an up tile */
    } else if (gated) {
        CUDA_CHECK(gemv_gated_variant_auto(1, (int)(w->rows / 2), (int)w->cols, n_sms(be), &v));
    } else {
        CUDA_CHECK(gemv_variant_auto(1, (int)w->rows, (int)w->cols, n_sms(be), &v));
    }
    return v;
}

static void invariant_run(struct backend *be, void *out, int out_f32, const void *x, const struct weight *w, int m,
                          float softcap, int gated, int act01)
{
    struct cuda_backend *cb = cuda_impl(be);
    const struct gemv_variant v =
        invariant_variant(be, x, w, gated); /* x's rows keep its alignment: K % 8 == 0 */
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
            CUDA_CHECK(launch_gemv_gated(o, xi, w->data, rows, (int)n_out, (int)K, act01, &v,
                                         cb->prop.multiProcessorCount, cb->stream));
        else
            CUDA_CHECK(launch_gemv(o, out_f32, xi, w->data, rows, (int)n_out, (int)K, softcap, &v,
                                   cb->prop.multiProcessorCount, cb->stream));
    }
}

void cuda_gemm_lt(struct backend *be, void *out, int out_f32, const void *x, const struct weight *w, int m,
                  float softcap)
{
    lt_matmul(be, out, out_f32 ? CUDA_R_32F : CUDA_R_16BF, x, w, m);
    if (out_f32 && softcap > 0)
        CUDA_CHECK(launch_softcap(out, (int64_t)m * w->rows, softcap, cuda_stream(be)));
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
    struct gemv_variant v;
    if (cuda_gemm_choose(be, x, w, m, &v) == CUDA_GEMM_PATH_GEMV) {
        struct cuda_backend *cb = cuda_impl(be);
        CUDA_CHECK(launch_gemv(out, out_f32, x, w->data, m, (int)w->rows, (int)w->cols, softcap, &v,
                               cb->prop.multiProcessorCount, cb->stream));
        return;
    }
    cuda_gemm_lt(be, out, out_f32, x, w, m, softcap);
}

void cuda_op_matmul(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows)
{
    gemm_run(be, out, 0, x, w, n_rows, 0.f);
}

void cuda_op_matmul_f32(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows)
{
    gemm_run(be, out, 1, x, w, n_rows, 0.f);
}

void cuda_op_logits(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows,
                    float softcap)
{
    gemm_run(be, out, 1, x, w, n_rows, softcap);
}

/* The gated GEMV for every shape that fits, with the launcher's own variant
 * (gemv_gated_variant_auto), not the main table's for the plain [2F, K]
 * GEMV: the gated kernel's best differs. Fused even where the gated kernel
 * alone is a little slower than the plain one, since a whole step saves a
 * kernel boundary and gated_act (docs/kernels/gemm.md). */
enum cuda_gemm_path cuda_gemm_choose_gated(struct backend *be, const void *x, const struct weight *w, int m,
                                           struct gemv_variant *variant)
{
    if (!gemv_fits(x, w, m))
        return CUDA_GEMM_PATH_LT;
    CUDA_CHECK(gemv_gated_variant_auto(m, (int)(w->rows / 2), (int)w->cols, n_sms(be), variant));
    return CUDA_GEMM_PATH_GEMV;
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
    const int64_t F = w->rows / 2, K = w->cols;
    struct gemv_variant v;
    if (cuda_gemm_choose_gated(be, x, w, n_rows, &v) == CUDA_GEMM_PATH_GEMV) {
        CUDA_CHECK(launch_gemv_gated(out, x, w->data, n_rows, (int)F, (int)K, act01, &v,
                                     cb->prop.multiProcessorCount, cb->stream));
        return;
    }
    /* the fused projection into the caller's scratch, then the activation */
    cuda_op_matmul(be, scratch, x, w, n_rows);
    CUDA_CHECK(launch_gated_act(out, scratch, (char *)scratch + (size_t)F * 2, n_rows, (int)F, (int)(2 * F), act01,
                                cb->stream));
}

int cuda_gemm_plan_count(struct backend *be)
{
    return cuda_impl(be)->gemm ? ((struct gemm_cache *)cuda_impl(be)->gemm)->n_plans : 0;
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
