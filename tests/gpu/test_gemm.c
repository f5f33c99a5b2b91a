/* CUDA matmul / logits (tensor-core GEMV for small M, cuBLASLt otherwise)
 * against the CPU twin, and the GEMM benchmarks.
 *
 * Correctness: for several N x K (odd N, tiny, K not a multiple of 8, the
 * split-K shapes) and M in {1, 2, 3, 5, 8, 13, 16, 64, 300}, each on the
 * automatic path, with cuBLASLt forced and with the GEMV forced (every
 * variant, the launcher's own choice with and without PDL in a second
 * test), for bf16 output (matmul) and f32 output (logits, with and without
 * soft-cap); the plan cache (one plan per M bucket, no device allocation);
 * chains of GEMVs that read the previous one's output (PDL ordering);
 * gated_matmul (gate|up with the activation) on the models' shapes and odd
 * ones, every path. Outputs are poisoned (NaN) before every run; the error
 * is max |got - ref| / max |ref|.
 *
 * Benchmarks (run by hand on the GPU machine; docs/kernels/gemm.md keeps
 * the figures):
 * - bench_gemm_gemv_configs: every GEMV variant and cuBLASLt on each
 *   model's decode shapes at M = 1, 8, 16 (microseconds);
 * - bench_gemm_decode_shapes: per shape at M = 1, 8, 16 the automatic path
 *   (its choice printed), the same without PDL and cuBLASLt, with % of
 *   3.02 TB/s; then per model a whole decode step's GEMMs (every layer with
 *   its own weights, lm_head once) in one graph: back to back (automatic,
 *   without PDL, cuBLASLt, q/k/v and gate/up fused) and between the step's
 *   other kernels (RMSNorms, gated activation) as in a real step;
 * - bench_gemm_prefill: cuBLASLt TFLOP/s on Llama-3.2-3B shapes at
 *   M = 512, 2048, 8192.
 * - bench_gemm_gated: gate|up + activation per model at M = 1, 8, 16,
 *   matmul + gated_act against gated_matmul.
 * Shapes are timed as graphs of many calls that rotate over enough weight
 * copies (>= 256 MB) that L2 (50 MB) never holds them; medians of replays. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels.h"
#include "core/bf16.h"
#include "gpu_test.h"

/* cuda_gemm.c's test hooks */
void cuda_gemm_force(struct backend *be, int path, int gemv_config);
int cuda_gemm_plan_count(struct backend *be);
int cuda_gemm_last_choice(struct backend *be); /* launch_gemv config, -1 = cuBLASLt */
long cuda_backend_device_allocs(const struct backend *be);

#define PATH_AUTO 0
#define PATH_LT 1
#define PATH_GEMV 2
#define N_GEMV_CONFIGS 16
#define GEMV_DEFAULT_NO_PDL 17 /* with PATH_AUTO: the automatic choice without PDL */
#define TOL_BF16 1e-2
#define TOL_F32 2e-3
#define PEAK_GBS 3020.0
#define ROTATE_BYTES ((size_t)256 << 20)

/* ---------------------------------------------------------------- correctness */

struct err_stats {
    double bf16, f32;
};

/* mode = path * 100 + gemv config */
static int check_shape(struct gpu_ctx *ctx, int N, int K, const int *ms, int n_ms, const int *modes,
                       int n_modes, struct err_stats *st)
{
    const float cap = 5.0f;
    float *wf = gpu_rand_f32(ctx, (size_t)N * K, 0.05f);
    uint16_t *wb = gpu_to_bf16(wf, (size_t)N * K);
    free(wf);
    struct weight wc = gpu_weight_cpu(wb, N, K), wg = gpu_weight_cuda(ctx, wb, N, K);
    cudaStream_t s = cuda_stream(ctx->cuda);
    for (int i = 0; i < n_ms; i++) {
        const int M = ms[i];
        const size_t no = (size_t)M * N;
        float *x = gpu_rand_f32(ctx, (size_t)M * K, 1.0f);
        float *ref = xmalloc(no * sizeof(float)), *ref_cap = xmalloc(no * sizeof(float));
        float *got = xmalloc(no * sizeof(float));
        ctx->cpu->ops->matmul(ctx->cpu, ref, x, &wc, M);
        ctx->cpu->ops->logits(ctx->cpu, ref_cap, x, &wc, M, cap);
        void *xg = gpu_upload_bf16(ctx, x, (size_t)M * K);
        void *og = gpu_upload(ctx, ref, no * sizeof(float)); /* room for f32 output */
        for (int p = 0; p < n_modes; p++) {
            cuda_gemm_force(ctx->cuda, modes[p] / 100, modes[p] % 100);
            for (int kind = 0; kind < 3; kind++) {
                CHECK(cudaMemsetAsync(og, 0xff, no * sizeof(float), s) ==
                      cudaSuccess); /* NaN in bf16 and f32 */
                double err;
                if (kind == 0) {
                    ctx->cuda->ops->matmul(ctx->cuda, og, xg, &wg, M);
                    float *o = gpu_download_bf16(ctx, og, no);
                    err = gpu_rel_err(o, ref, no);
                    free(o);
                    st->bf16 = err > st->bf16 ? err : st->bf16;
                } else {
                    ctx->cuda->ops->logits(ctx->cuda, og, xg, &wg, M, kind == 2 ? cap : 0.f);
                    gpu_download(ctx, got, og, no * sizeof(float));
                    err = gpu_rel_err(got, kind == 2 ? ref_cap : ref, no);
                    st->f32 = err > st->f32 ? err : st->f32;
                }
                if (err > (kind == 0 ? TOL_BF16 : TOL_F32)) {
                    cuda_gemm_force(ctx->cuda, PATH_AUTO, 0);
                    GPU_FAIL("N %d K %d M %d path %d config %d %s: rel err %.3g", N, K, M, modes[p] / 100,
                             modes[p] % 100,
                             kind == 0   ? "matmul bf16"
                             : kind == 1 ? "logits"
                                         : "logits softcap",
                             err);
                }
            }
        }
        free(x);
        free(ref);
        free(ref_cap);
        free(got);
    }
    cuda_gemm_force(ctx->cuda, PATH_AUTO, 0);
    free(wb);
    return 0;
}

GPU_TEST(gemm_check_matmul_logits_vs_cpu)
{
    static const int shapes[][2] = {{1000, 1152}, {24, 64}, {256, 1152}, {1152, 6912}, {8192, 3072}};
    static const int ms[] = {1, 2, 3, 5, 8, 13, 16, 64, 300};
    static const int modes[] = {PATH_AUTO * 100, PATH_LT * 100, PATH_GEMV * 100};
    struct err_stats st = {0, 0};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (check_shape(ctx, shapes[i][0], shapes[i][1], ms, 9, modes, 3, &st))
            return 1;
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err bf16 %.2e, f32 %.2e", st.bf16, st.f32);
    return 0;
}

GPU_TEST(gemm_check_gemv_configs_vs_cpu)
{
    static const int shapes[][2] = {{1000, 1152}, {24, 64}, {264, 2048}, {40, 4104}};
    static const int ms[] = {1, 5, 8, 9, 16};
    int modes[N_GEMV_CONFIGS +
              2]; /* 0: the launcher's choice, 1..16 the variants, 17 the choice without PDL */
    for (int c = 0; c < N_GEMV_CONFIGS + 2; c++)
        modes[c] = PATH_GEMV * 100 + c;
    struct err_stats st = {0, 0};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (check_shape(ctx, shapes[i][0], shapes[i][1], ms, 5, modes, N_GEMV_CONFIGS + 2, &st))
            return 1;
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err bf16 %.2e, f32 %.2e", st.bf16, st.f32);
    return 0;
}

/* Plans are made once per (M bucket, N, K, type); nothing is allocated on
 * the device by the GEMMs; M = 0 writes nothing. */
GPU_TEST(gemm_check_plan_cache)
{
    const int N = 512, K = 1024, maxm = 600;
    float *wf = gpu_rand_f32(ctx, (size_t)N * K, 0.05f), *xf = gpu_rand_f32(ctx, (size_t)maxm * K, 1.f);
    uint16_t *wb = gpu_to_bf16(wf, (size_t)N * K);
    struct weight wg = gpu_weight_cuda(ctx, wb, N, K);
    void *xg = gpu_upload_bf16(ctx, xf, (size_t)maxm * K), *og = gpu_poisoned_bf16(ctx, (size_t)maxm * N);
    free(wf), free(xf), free(wb);
    long allocs = cuda_backend_device_allocs(ctx->cuda);
    int base = cuda_gemm_plan_count(ctx->cuda);
    ctx->cuda->ops->matmul(ctx->cuda, og, xg, &wg, 300);
    if (cuda_gemm_plan_count(ctx->cuda) != base + 1)
        GPU_FAIL("first M=300 call made %d plans", cuda_gemm_plan_count(ctx->cuda) - base);
    static const int same[] = {257, 300, 511, 512, 384, 300};
    for (int r = 0; r < 20; r++)
        for (int i = 0; i < 6; i++)
            ctx->cuda->ops->matmul(ctx->cuda, og, xg, &wg, same[i]);
    if (cuda_gemm_plan_count(ctx->cuda) != base + 1)
        GPU_FAIL("M in the same bucket made new plans (%d)", cuda_gemm_plan_count(ctx->cuda) - base);
    ctx->cuda->ops->matmul(ctx->cuda, og, xg, &wg, 513);
    ctx->cuda->ops->logits(ctx->cuda, og, xg, &wg, 100, 0.f);
    if (cuda_gemm_plan_count(ctx->cuda) != base + 3)
        GPU_FAIL("a new bucket and a new type should make 2 plans, made %d",
                 cuda_gemm_plan_count(ctx->cuda) - base - 1);
    for (int m = 1; m <= 16; m++) /* the GEMV path makes no plan */
        ctx->cuda->ops->matmul(ctx->cuda, og, xg, &wg, m);
    if (cuda_gemm_plan_count(ctx->cuda) != base + 3)
        GPU_FAIL("the GEMV path made cuBLASLt plans");
    if (cuda_backend_device_allocs(ctx->cuda) != allocs)
        GPU_FAIL("GEMMs allocated device memory (%ld cudaMalloc)",
                 cuda_backend_device_allocs(ctx->cuda) - allocs);
    /* M = 0: nothing launched, nothing written */
    CHECK(cudaMemsetAsync(og, 0xff, 2 * (size_t)N, cuda_stream(ctx->cuda)) == cudaSuccess);
    ctx->cuda->ops->matmul(ctx->cuda, og, xg, &wg, 0);
    float *o = gpu_download_bf16(ctx, og, (size_t)N);
    int untouched = isnan(o[0]) && isnan(o[N - 1]);
    free(o);
    if (!untouched)
        GPU_FAIL("M = 0 wrote output");
    return 0;
}

/* GEMVs that read the previous GEMV's output at once: with PDL the next
 * kernel starts early and must wait before reading x (a long first GEMV,
 * then two short ones, repeated over fresh poison). */
GPU_TEST(gemm_check_pdl_chain)
{
    const int K0 = 2560, N1 = 9728, N2 = 1024, N3 = 2560;
    const int dims[4] = {K0, N1, N2, N3};
    uint16_t *wb[3];
    struct weight wc[3], wg[3];
    for (int i = 0; i < 3; i++) {
        float *wf = gpu_rand_f32(ctx, (size_t)dims[i + 1] * dims[i], 1.0f / sqrtf((float)dims[i]));
        wb[i] = gpu_to_bf16(wf, (size_t)dims[i + 1] * dims[i]);
        free(wf);
        wc[i] = gpu_weight_cpu(wb[i], dims[i + 1], dims[i]);
        wg[i] = gpu_weight_cuda(ctx, wb[i], dims[i + 1], dims[i]);
    }
    static const int ms[] = {3, 16};
    for (int mi = 0; mi < 2; mi++) {
        const int M = ms[mi];
        float *x = gpu_rand_f32(ctx, (size_t)M * K0, 1.0f);
        float *y1 = xmalloc((size_t)M * N1 * 4), *y2 = xmalloc((size_t)M * N2 * 4),
              *y3 = xmalloc((size_t)M * N3 * 4);
        ctx->cpu->ops->matmul(ctx->cpu, y1, x, &wc[0], M);
        for (size_t i = 0; i < (size_t)M * N1; i++) /* the GPU keeps y1, y2 in bf16 */
            y1[i] = bf16_to_f32(f32_to_bf16(y1[i]));
        ctx->cpu->ops->matmul(ctx->cpu, y2, y1, &wc[1], M);
        for (size_t i = 0; i < (size_t)M * N2; i++)
            y2[i] = bf16_to_f32(f32_to_bf16(y2[i]));
        ctx->cpu->ops->logits(ctx->cpu, y3, y2, &wc[2], M, 0.f);
        void *xg = gpu_upload_bf16(ctx, x, (size_t)M * K0);
        void *g1 = gpu_poisoned_bf16(ctx, (size_t)M * N1), *g2 = gpu_poisoned_bf16(ctx, (size_t)M * N2);
        float *g3 = gpu_upload(ctx, y3, (size_t)M * N3 * 4), *got = xmalloc((size_t)M * N3 * 4);
        cudaStream_t s = cuda_stream(ctx->cuda);
        for (int rep = 0; rep < 20; rep++) {
            CHECK(cudaMemsetAsync(g1, 0xff, (size_t)M * N1 * 2, s) == cudaSuccess);
            CHECK(cudaMemsetAsync(g2, 0xff, (size_t)M * N2 * 2, s) == cudaSuccess);
            CHECK(cudaMemsetAsync(g3, 0xff, (size_t)M * N3 * 4, s) == cudaSuccess);
            ctx->cuda->ops->matmul(ctx->cuda, g1, xg, &wg[0], M);
            ctx->cuda->ops->matmul(ctx->cuda, g2, g1, &wg[1], M);
            ctx->cuda->ops->logits(ctx->cuda, g3, g2, &wg[2], M, 0.f);
            gpu_download(ctx, got, g3, (size_t)M * N3 * 4);
            double err = gpu_rel_err(got, y3, (size_t)M * N3);
            if (err > TOL_BF16)
                GPU_FAIL("M %d rep %d: rel err %.3g", M, rep, err);
        }
        free(x), free(y1), free(y2), free(y3), free(got);
    }
    for (int i = 0; i < 3; i++)
        free(wb[i]);
    return 0;
}

/* gated_matmul: out[M, F] = act(x . Wg^T) * (x . Wu^T) with W = gate|up
 * [2F, K], CUDA against the CPU twin (f32), for the three models' fused
 * gate|up shapes and odd ones (F not a multiple of 8, tiny K, a large F
 * whose cuBLASLt path splits M into chunks), SiLU and GELU-tanh, on the
 * automatic path, with cuBLASLt forced and with the gated GEMV forced (its
 * own choice and variants, with and without PDL). Outputs are poisoned, one
 * row past the output is checked to stay untouched, and no device memory is
 * allocated. */
#define TOL_GATED 2e-2

static int check_gated(struct gpu_ctx *ctx, int F, int K, const int *ms, int n_ms, const int *modes, int n_modes,
                       double *worst)
{
    const int N = 2 * F;
    float *wf = gpu_rand_f32(ctx, (size_t)N * K, 2.0f / sqrtf((float)K));
    uint16_t *wb = gpu_to_bf16(wf, (size_t)N * K);
    free(wf);
    struct weight wc = gpu_weight_cpu(wb, N, K), wg = gpu_weight_cuda(ctx, wb, N, K);
    cudaStream_t s = cuda_stream(ctx->cuda);
    for (int i = 0; i < n_ms; i++) {
        const int M = ms[i];
        const size_t no = (size_t)M * F;
        float *x = gpu_rand_f32(ctx, (size_t)M * K, 1.0f);
        void *xg = gpu_upload_bf16(ctx, x, (size_t)M * K);
        void *og = gpu_poisoned_bf16(ctx, no + (size_t)F); /* one spare row */
        float *ref = xmalloc(no * sizeof(float)), *cpu_scratch = xmalloc(2 * no * sizeof(float));
        void *scratch = gpu_poisoned_bf16(ctx, 2 * no); /* [M, 2F], for the unfused paths */
        for (int act = 0; act < 2; act++) {
            const enum act_fn fn = act ? ACT_FN_GELU_TANH : ACT_FN_SILU;
            ctx->cpu->ops->gated_matmul(ctx->cpu, ref, cpu_scratch, x, &wc, M, fn);
            for (int p = 0; p < n_modes; p++) {
                cuda_gemm_force(ctx->cuda, modes[p] / 100, modes[p] % 100);
                CHECK(cudaMemsetAsync(og, 0xff, (no + (size_t)F) * 2, s) == cudaSuccess); /* NaN */
                ctx->cuda->ops->gated_matmul(ctx->cuda, og, scratch, xg, &wg, M, fn);
                const int choice = cuda_gemm_last_choice(ctx->cuda);
                cuda_gemm_force(ctx->cuda, PATH_AUTO, 0);
                float *o = gpu_download_bf16(ctx, og, no + (size_t)F);
                double err = gpu_rel_err(o, ref, no);
                int spare_ok = 1;
                for (int j = 0; j < F; j++)
                    spare_ok &= isnan(o[no + (size_t)j]);
                free(o);
                *worst = err > *worst ? err : *worst;
                if (err > TOL_GATED || !spare_ok)
                    GPU_FAIL("F %d K %d M %d %s path %d config %d (ran %s%d): %s %.3g", F, K, M,
                             act ? "gelu" : "silu", modes[p] / 100, modes[p] % 100, choice < 0 ? "lt" : "g",
                             choice < 0 ? 0 : choice, spare_ok ? "rel err" : "wrote past the output, rel err",
                             err);
            }
        }
        free(x);
        free(ref);
        free(cpu_scratch);
    }
    free(wb);
    return 0;
}

GPU_TEST(gemm_check_gated_matmul_vs_cpu)
{
    /* F, K: Llama, Qwen3, Gemma gate|up; odd F; tiny K; split-K at small F */
    static const int shapes[][2] = {{8192, 3072}, {9728, 2560}, {6912, 1152}, {1000, 1152},
                                    {13, 64},     {37, 4104},   {500, 2048}};
    static const int ms[] = {1, 2, 5, 8, 13, 16, 17, 64};
    static const int modes[] = {PATH_AUTO * 100,     PATH_AUTO * 100 + GEMV_DEFAULT_NO_PDL,
                                PATH_LT * 100,       PATH_GEMV * 100,
                                PATH_GEMV * 100 + 2, PATH_GEMV * 100 + 4,
                                PATH_GEMV * 100 + 6, PATH_GEMV * 100 + 8,
                                PATH_GEMV * 100 + 16};
    const int n_modes = (int)(sizeof modes / sizeof modes[0]);
    long allocs = cuda_backend_device_allocs(ctx->cuda);
    double worst = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (check_gated(ctx, shapes[i][0], shapes[i][1], ms, 8, modes, n_modes, &worst))
            return 1;
    /* cuBLASLt with M past the scratch: gate into out, up in row chunks */
    static const int big_m[] = {1100};
    static const int lt_modes[] = {PATH_AUTO * 100, PATH_LT * 100};
    if (check_gated(ctx, 8200, 64, big_m, 1, lt_modes, 2, &worst))
        return 1;
    if (cuda_backend_device_allocs(ctx->cuda) != allocs)
        GPU_FAIL("gated_matmul allocated device memory (%ld cudaMalloc)",
                 cuda_backend_device_allocs(ctx->cuda) - allocs);
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err %.2e", worst);
    return 0;
}

/* K not a multiple of 8 (rows only 8-byte aligned): cuBLASLt on every path.
 * Its own test, run last: a cuBLASLt refusal aborts the process. */
GPU_TEST(gemm_odd_k_cublaslt)
{
    static const int ms[] = {1, 3, 16, 64};
    static const int modes[] = {PATH_AUTO * 100, PATH_GEMV * 100};
    struct err_stats st = {0, 0};
    if (check_shape(ctx, 37, 100, ms, 4, modes, 2, &st) || check_shape(ctx, 300, 1004, ms, 4, modes, 2, &st))
        return 1;
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err bf16 %.2e, f32 %.2e", st.bf16, st.f32);
    return 0;
}

/* ----------------------------------------------------------------- benchmarks */

struct model_shapes {
    const char *name;
    int n_layers, hidden, q, kv, inter, vocab;
};

static const struct model_shapes models[] = {
    {"Llama-3.2-3B", 28, 3072, 3072, 1024, 8192, 128256},
    {"Qwen3-4B", 36, 2560, 4096, 1024, 9728, 151936},
    {"Gemma-3-1B", 26, 1152, 1024, 256, 6912, 262144},
};
#define N_MODELS 3

enum { OP_Q, OP_KV, OP_O, OP_GATE_UP, OP_DOWN, OP_LM_HEAD, OP_QKV_FUSED, OP_GATE_UP_FUSED, N_OPS };
static const char *const op_names[N_OPS] = {"q",    "k|v",     "o",    "gate|up",
                                            "down", "lm_head", "qkv*", "gate_up*"};

/* N, K of an op, and how many of it a decode step runs (fused ops: 0, info only) */
static void op_shape(const struct model_shapes *md, int op, int64_t *n, int64_t *k, int *count)
{
    const int64_t h = md->hidden, L = md->n_layers;
    switch (op) {
    case OP_Q:
        *n = md->q, *k = h, *count = (int)L;
        break;
    case OP_KV:
        *n = md->kv, *k = h, *count = 2 * (int)L;
        break;
    case OP_O:
        *n = h, *k = md->q, *count = (int)L;
        break;
    case OP_GATE_UP:
        *n = md->inter, *k = h, *count = 2 * (int)L;
        break;
    case OP_DOWN:
        *n = h, *k = md->inter, *count = (int)L;
        break;
    case OP_LM_HEAD:
        *n = md->vocab, *k = h, *count = 1;
        break;
    case OP_QKV_FUSED:
        *n = md->q + 2 * md->kv, *k = h, *count = 0;
        break;
    default:
        *n = 2 * (int64_t)md->inter, *k = h, *count = 0;
        break;
    }
}

/* A device pool of random bf16 values that fills big buffers by copies. */
struct rand_pool {
    void *dev;
    size_t bytes;
};

static struct rand_pool rand_pool_make(struct gpu_ctx *ctx)
{
    const size_t n = (size_t)4 << 20;
    float *h = gpu_rand_f32(ctx, n, 0.05f);
    struct rand_pool p = {gpu_upload_bf16(ctx, h, n), n * 2};
    free(h);
    return p;
}

static void fill_random(const struct rand_pool *p, void *dst, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += p->bytes) {
        size_t len = bytes - off < p->bytes ? bytes - off : p->bytes;
        CHECK(cudaMemcpy((char *)dst + off, p->dev, len, cudaMemcpyDeviceToDevice) == cudaSuccess);
    }
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CHECK(cudaMalloc(&p, bytes) == cudaSuccess);
    return p;
}

/* One GEMM call per fn() rotating over n_w weight copies. */
struct bench_gemm {
    struct backend *be;
    char *w;
    size_t stride; /* bytes between copies */
    int n_w, next, m, logits;
    int64_t n, k;
    void *x, *out;
};

static void bench_gemm_call(void *arg)
{
    struct bench_gemm *b = arg;
    struct weight wt = {b->w + (size_t)b->next * b->stride, DTYPE_BF16, b->n, b->k};
    b->next = (b->next + 1) % b->n_w;
    if (b->logits)
        b->be->ops->logits(b->be, b->out, b->x, &wt, b->m, 0.f);
    else
        b->be->ops->matmul(b->be, b->out, b->x, &wt, b->m);
}

struct graph_run {
    cudaGraphExec_t exec;
    cudaStream_t stream;
};

static void graph_launch(void *arg)
{
    struct graph_run *g = arg;
    CHECK(cudaGraphLaunch(g->exec, g->stream) == cudaSuccess);
}

/* Microseconds per fn() call: `calls` calls captured in one graph (plans
 * made before, outside the capture), median of `reps` replays. */
static double time_graph_us(struct gpu_ctx *ctx, void (*fn)(void *), void *arg, int calls, int reps)
{
    cudaStream_t s = cuda_stream(ctx->cuda);
    fn(arg);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    cudaGraph_t g;
    struct graph_run gr = {NULL, s};
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    for (int i = 0; i < calls; i++)
        fn(arg);
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess);
    CHECK(cudaGraphInstantiate(&gr.exec, g, 0) == cudaSuccess);
    double ms = gpu_time_ms(ctx, graph_launch, &gr, reps);
    CHECK(cudaGraphExecDestroy(gr.exec) == cudaSuccess);
    CHECK(cudaGraphDestroy(g) == cudaSuccess);
    return ms * 1e3 / calls;
}

/* Weight copies of one shape, x and out for up to max_m rows. */
static struct bench_gemm bench_setup(struct gpu_ctx *ctx, const struct rand_pool *pool, int64_t n, int64_t k,
                                     int max_m, int logits)
{
    struct bench_gemm b = {.be = ctx->cuda, .n = n, .k = k, .logits = logits};
    const size_t bytes = (size_t)(n * k) * 2;
    b.stride = (bytes + 255) & ~(size_t)255;
    b.n_w = (int)((ROTATE_BYTES + bytes - 1) / bytes);
    b.n_w = b.n_w < 2 ? 2 : b.n_w;
    b.w = dev_alloc(b.stride * (size_t)b.n_w);
    fill_random(pool, b.w, b.stride * (size_t)b.n_w);
    b.x = dev_alloc((size_t)max_m * (size_t)k * 2);
    fill_random(pool, b.x, (size_t)max_m * (size_t)k * 2);
    b.out = dev_alloc((size_t)max_m * (size_t)n * (logits ? 4 : 2));
    return b;
}

static void bench_free(struct bench_gemm *b)
{
    CHECK(cudaFree(b->w) == cudaSuccess && cudaFree(b->x) == cudaSuccess && cudaFree(b->out) == cudaSuccess);
}

static double time_path(struct gpu_ctx *ctx, struct bench_gemm *b, int m, int path, int config)
{
    cuda_gemm_force(ctx->cuda, path, config);
    b->m = m;
    int calls = b->n_w < 8 ? 8 : b->n_w;
    double us = time_graph_us(ctx, bench_gemm_call, b, calls, 15);
    cuda_gemm_force(ctx->cuda, PATH_AUTO, 0);
    return us;
}

GPU_TEST(bench_gemm_gemv_configs)
{
    static const int ms[] = {1, 8, 16};
    struct rand_pool pool = rand_pool_make(ctx);
    printf("GEMV variants, us per call (0: the launcher's choice; 1 + bits: NT-1 | U==4 <<1 | L2::256B <<2 | "
           "no PDL <<3)\n");
    printf("%-12s %-8s %6s %6s %2s", "model", "op", "N", "K", "M");
    for (int c = 0; c <= N_GEMV_CONFIGS; c++)
        printf(" %6d", c);
    printf(" %7s %6s\n", "lt", "best%");
    for (int mi = 0; mi < N_MODELS; mi++)
        for (int op = 0; op < N_OPS; op++) {
            int64_t n, k;
            int count;
            op_shape(&models[mi], op, &n, &k, &count);
            struct bench_gemm b = bench_setup(ctx, &pool, n, k, 16, op == OP_LM_HEAD);
            for (int i = 0; i < 3; i++) {
                printf("%-12s %-8s %6lld %6lld %2d", models[mi].name, op_names[op], (long long)n,
                       (long long)k, ms[i]);
                double best = 1e30;
                for (int c = 0; c <= N_GEMV_CONFIGS; c++) { /* 0: the launcher's own choice */
                    double us = time_path(ctx, &b, ms[i], PATH_GEMV, c);
                    best = us < best ? us : best;
                    printf(" %6.1f", us);
                }
                double lt = time_path(ctx, &b, ms[i], PATH_LT, 0);
                printf(" %7.1f %5.1f%%\n", lt, 100.0 * (double)(n * k) * 2 / (best * 1e-6) / 1e9 / PEAK_GBS);
                fflush(stdout);
            }
            bench_free(&b);
        }
    return 0;
}

/* The GEMMs of one decode step of a model, every layer with its own
 * weights, wired as in forward.c (q/k/v and gate/up read the normed hidden
 * state, o reads the attention output, down the activation). With `others`
 * the step's other kernels run between them as in a real step (add+RMSNorm
 * before q/k/v and gate/up, two RMSNorms standing in for RoPE and attention,
 * the gated activation, the final norm); `gemms` = 0 runs those alone. */
struct bench_token {
    struct backend *be;
    const struct model_shapes *md;
    char *w; /* per layer q | k | v | o | gate | up | down, then lm_head */
    void *h, *res, *nw, *q, *k, *v, *attn, *o, *gate, *up; /* [16, up to 20480] bf16 each */
    float *logits;                                         /* [16, vocab] */
    int m, fused, gemms, others;
};

static size_t layer_bytes(const struct model_shapes *md)
{
    const size_t h = (size_t)md->hidden;
    return 2 * h * ((size_t)md->q + 2 * (size_t)md->kv + (size_t)md->q + 3 * (size_t)md->inter);
}

static void token_mm(struct bench_token *t, void *out, const void *x, const char *w, int64_t n, int64_t k)
{
    struct weight wt = {w, DTYPE_BF16, n, k};
    t->be->ops->matmul(t->be, out, x, &wt, t->m);
}

static void bench_token_call(void *arg)
{
    struct bench_token *t = arg;
    const struct model_shapes *md = t->md;
    const int64_t h = md->hidden, q = md->q, kv = md->kv, in = md->inter;
    const int M = t->m;
    const cudaStream_t s = cuda_stream(t->be);
    const float eps = 1e-6f;
    char *p = t->w;
    for (int l = 0; l < md->n_layers; l++) {
        char *wq = p, *wk = wq + 2 * q * h, *wv = wk + 2 * kv * h, *wo = wv + 2 * kv * h,
             *wg = wo + 2 * h * q, *wu = wg + 2 * in * h, *wd = wu + 2 * in * h;
        p = wd + 2 * h * in;
        if (t->others)
            CUDA_CHECK(launch_add_rmsnorm(t->res, t->o, t->h, t->nw, M, (int)h, eps, 0, s));
        if (t->gemms && t->fused) {
            token_mm(t, t->q, t->h, wq, q + 2 * kv, h);
        } else if (t->gemms) {
            token_mm(t, t->q, t->h, wq, q, h);
            token_mm(t, t->k, t->h, wk, kv, h);
            token_mm(t, t->v, t->h, wv, kv, h);
        }
        if (t->others) {
            CUDA_CHECK(launch_rmsnorm(t->q, t->q, t->nw, M, (int)q, eps, 0, s));
            CUDA_CHECK(launch_rmsnorm(t->attn, t->q, t->nw, M, (int)q, eps, 0, s));
        }
        if (t->gemms)
            token_mm(t, t->o, t->attn, wo, h, q);
        if (t->others)
            CUDA_CHECK(launch_add_rmsnorm(t->res, t->o, t->h, t->nw, M, (int)h, eps, 0, s));
        if (t->gemms && t->fused) {
            token_mm(t, t->gate, t->h, wg, 2 * in, h);
        } else if (t->gemms) {
            token_mm(t, t->gate, t->h, wg, in, h);
            token_mm(t, t->up, t->h, wu, in, h);
        }
        if (t->others)
            CUDA_CHECK(launch_gated_act(t->gate, t->gate, t->up, M, (int)in, (int)in, 0, s));
        if (t->gemms)
            token_mm(t, t->o, t->gate, wd, h, in);
    }
    if (t->others)
        CUDA_CHECK(launch_rmsnorm(t->h, t->res, t->nw, M, (int)h, eps, 0, s));
    if (t->gemms) {
        struct weight lm = {p, DTYPE_BF16, md->vocab, h};
        t->be->ops->logits(t->be, t->logits, t->h, &lm, M, 0.f);
    }
}

static double time_token(struct gpu_ctx *ctx, struct bench_token *t, int gemms, int others, int fused,
                         int path, int config)
{
    t->gemms = gemms, t->others = others, t->fused = fused;
    cuda_gemm_force(ctx->cuda, path, config);
    double us = time_graph_us(ctx, bench_token_call, t, 1, 10);
    cuda_gemm_force(ctx->cuda, PATH_AUTO, 0);
    return us;
}

struct bench_copy {
    void *src, *dst;
    size_t bytes;
    cudaStream_t stream;
};

static void bench_copy_call(void *arg)
{
    struct bench_copy *c = arg;
    CHECK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->stream) == cudaSuccess);
}

GPU_TEST(bench_gemm_decode_shapes)
{
    static const int ms[] = {1, 8, 16};
    struct rand_pool pool = rand_pool_make(ctx);
    double sum_us[N_MODELS][3][3] = {{{0}}}; /* [model][M][auto, no PDL, lt]: per-shape medians x count */
    {
        const size_t cb = (size_t)1 << 30;
        struct bench_copy c = {dev_alloc(cb), dev_alloc(cb), cb, cuda_stream(ctx->cuda)};
        double ms_copy = gpu_time_ms(ctx, bench_copy_call, &c, 20);
        printf("device-to-device copy of 1 GiB: %.0f GB/s (read + written)\n",
               2.0 * (double)cb / ms_copy / 1e6);
        CHECK(cudaFree(c.src) == cudaSuccess && cudaFree(c.dst) == cudaSuccess);
    }
    printf("Decode GEMMs per shape (graph of rotating weight copies, median; %% of %.0f GB/s)\n", PEAK_GBS);
    printf("%-12s %-8s %13s %7s %2s | %-4s %-17s | %-17s | %-17s | %s\n", "model", "op", "N x K", "MB", "M",
           "cfg", "auto", "auto without PDL", "cuBLASLt", "lt/auto");
    for (int mi = 0; mi < N_MODELS; mi++)
        for (int op = 0; op < N_OPS; op++) {
            int64_t n, k;
            int count;
            op_shape(&models[mi], op, &n, &k, &count);
            const double bytes = (double)(n * k) * 2;
            struct bench_gemm b = bench_setup(ctx, &pool, n, k, 16, op == OP_LM_HEAD);
            for (int i = 0; i < 3; i++) {
                double g = time_path(ctx, &b, ms[i], PATH_AUTO, 0);
                const int choice = cuda_gemm_last_choice(ctx->cuda);
                double np = time_path(ctx, &b, ms[i], PATH_AUTO, GEMV_DEFAULT_NO_PDL);
                double l = time_path(ctx, &b, ms[i], PATH_LT, 0);
                sum_us[mi][i][0] += count * g;
                sum_us[mi][i][1] += count * np;
                sum_us[mi][i][2] += count * l;
                char cfg[8];
                snprintf(cfg, sizeof cfg, choice < 0 ? "lt" : "g%d", choice);
                printf("%-12s %-8s %6lldx%-6lld %7.2f %2d | %-4s %7.1f us %5.1f%% | %7.1f us %5.1f%% | %7.1f "
                       "us %5.1f%% | "
                       "%.2fx\n",
                       models[mi].name, op_names[op], (long long)n, (long long)k, bytes / 1e6, ms[i], cfg, g,
                       100 * bytes / g / 1e3 / PEAK_GBS, np, 100 * bytes / np / 1e3 / PEAK_GBS, l,
                       100 * bytes / l / 1e3 / PEAK_GBS, l / g);
                fflush(stdout);
            }
            bench_free(&b);
        }

    printf("\nDecode step per model: all layers' GEMMs + lm_head in one graph, us and %% of the floor "
           "(weight bytes / "
           "%.0f GB/s)\n",
           PEAK_GBS);
    printf(
        "  sum: per-shape medians x count; gemms: GEMMs back to back; +others: with the step's other kernels "
        "between them (others: those alone)\n");
    printf("%-12s %2s %5s %6s | %-13s %-13s | %-13s %-13s %-13s %-13s | %-13s %-13s %7s\n", "model", "M",
           "GB", "floor", "sum auto", "sum lt", "gemms auto", "gemms noPDL", "gemms lt", "fused auto",
           "+others auto", "+others lt", "others");
    for (int mi = 0; mi < N_MODELS; mi++) {
        const struct model_shapes *md = &models[mi];
        const size_t wbytes =
            layer_bytes(md) * (size_t)md->n_layers + 2 * (size_t)md->vocab * (size_t)md->hidden;
        const size_t act = (size_t)16 * 20480 * 2;
        struct bench_token t = {.be = ctx->cuda, .md = md};
        t.w = dev_alloc(wbytes);
        fill_random(&pool, t.w, wbytes);
        void **bufs[] = {&t.h, &t.res, &t.nw, &t.q, &t.k, &t.v, &t.attn, &t.o, &t.gate, &t.up};
        for (int i = 0; i < 10; i++) {
            *bufs[i] = dev_alloc(act);
            fill_random(&pool, *bufs[i], act);
        }
        t.logits = dev_alloc((size_t)16 * (size_t)md->vocab * 4);
        const double fl = (double)wbytes / PEAK_GBS / 1e3;
        for (int i = 0; i < 3; i++) {
            t.m = ms[i];
            double ga = time_token(ctx, &t, 1, 0, 0, PATH_AUTO, 0);
            double gn = time_token(ctx, &t, 1, 0, 0, PATH_AUTO, GEMV_DEFAULT_NO_PDL);
            double gl = time_token(ctx, &t, 1, 0, 0, PATH_LT, 0);
            double gf = time_token(ctx, &t, 1, 0, 1, PATH_AUTO, 0);
            double oa = time_token(ctx, &t, 1, 1, 0, PATH_AUTO, 0);
            double ol = time_token(ctx, &t, 1, 1, 0, PATH_LT, 0);
            double oo = time_token(ctx, &t, 0, 1, 0, PATH_AUTO, 0);
            double sa = sum_us[mi][i][0], sl = sum_us[mi][i][2];
#define PCT(v) (v), 100 * fl / (v)
            printf("%-12s %2d %5.2f %6.0f | %5.0f %5.1f%% %5.0f %5.1f%% | %5.0f %5.1f%% %5.0f %5.1f%% %5.0f "
                   "%5.1f%% "
                   "%5.0f %5.1f%% | %5.0f %5.1f%% %5.0f %5.1f%% %7.0f\n",
                   md->name, ms[i], (double)wbytes / 1e9, fl, PCT(sa), PCT(sl), PCT(ga), PCT(gn), PCT(gl),
                   PCT(gf), PCT(oa - oo), PCT(ol - oo), oo);
#undef PCT
            fflush(stdout);
        }
        for (int i = 0; i < 10; i++)
            CHECK(cudaFree(*bufs[i]) == cudaSuccess);
        CHECK(cudaFree(t.w) == cudaSuccess && cudaFree(t.logits) == cudaSuccess);
    }
    printf("(+others columns: step time minus the other kernels alone)\n");
    return 0;
}

GPU_TEST(bench_gemm_prefill)
{
    static const int ms[] = {512, 2048, 8192};
    const struct model_shapes *md = &models[0];
    struct rand_pool pool = rand_pool_make(ctx);
    printf("Prefill GEMMs, %s shapes, cuBLASLt (graph of 4 calls, 2 weight copies, median)\n", md->name);
    printf("%-8s %13s %5s | %9s %8s\n", "op", "N x K", "M", "us", "TFLOP/s");
    for (int i = 0; i < 3; i++) {
        double flops = 0, us_total = 0;
        for (int op = OP_Q; op <= OP_DOWN; op++) {
            int64_t n, k;
            int count;
            op_shape(md, op, &n, &k, &count);
            struct bench_gemm b = {.be = ctx->cuda, .n = n, .k = k, .m = ms[i], .n_w = 2};
            b.stride = ((size_t)(n * k) * 2 + 255) & ~(size_t)255;
            b.w = dev_alloc(2 * b.stride);
            fill_random(&pool, b.w, 2 * b.stride);
            b.x = dev_alloc((size_t)ms[i] * (size_t)k * 2);
            fill_random(&pool, b.x, (size_t)ms[i] * (size_t)k * 2);
            b.out = dev_alloc((size_t)ms[i] * (size_t)n * 2);
            double us = time_graph_us(ctx, bench_gemm_call, &b, 4, 10);
            double f = 2.0 * ms[i] * (double)n * (double)k;
            flops += f * count;
            us_total += us * count;
            printf("%-8s %6lldx%-6lld %5d | %9.1f %8.1f\n", op_names[op], (long long)n, (long long)k, ms[i],
                   us, f / us / 1e6);
            bench_free(&b);
        }
        printf("%-8s %13s %5d | %9.1f %8.1f   (all %d layers: %.2f ms)\n", "layer", "", ms[i],
               us_total / md->n_layers, flops / us_total / 1e6, md->n_layers, us_total / 1e3);
        fflush(stdout);
    }
    return 0;
}

/* gate|up + activation of the three models at M = 1, 8, 16: the fused GEMM
 * into [M, 2F] then gated_act (as before gated_matmul) against gated_matmul
 * (automatic path; its choice printed, -2 = the fused GEMM + gated_act), and
 * the gated GEMV forced to each variant; graphs of rotating weight copies,
 * us per call. */
struct bench_gated {
    struct bench_gemm b;
    void *act_out;
    int fused_op;
};

static void bench_gated_call(void *arg)
{
    struct bench_gated *g = arg;
    struct bench_gemm *b = &g->b;
    struct weight wt = {b->w + (size_t)b->next * b->stride, DTYPE_BF16, b->n, b->k};
    b->next = (b->next + 1) % b->n_w;
    const int F = (int)(b->n / 2);
    if (g->fused_op) {
        b->be->ops->gated_matmul(b->be, g->act_out, b->out, b->x, &wt, b->m, ACT_FN_SILU);
    } else {
        b->be->ops->matmul(b->be, b->out, b->x, &wt, b->m);
        b->be->ops->gated_act(b->be, g->act_out, b->out, (char *)b->out + (size_t)F * 2, b->m, F, 2 * F,
                              ACT_FN_SILU);
    }
}

GPU_TEST(bench_gemm_gated)
{
    static const int ms[] = {1, 8, 16};
    struct rand_pool pool = rand_pool_make(ctx);
    printf("gate|up + activation, us per call: matmul [M, 2F] + gated_act vs gated_matmul (%% of %.0f GB/s)\n",
           PEAK_GBS);
    for (int mi = 0; mi < N_MODELS; mi++) {
        int64_t n, k;
        int count;
        op_shape(&models[mi], OP_GATE_UP_FUSED, &n, &k, &count);
        struct bench_gated g = {.b = bench_setup(ctx, &pool, n, k, 16, 0)};
        g.act_out = dev_alloc((size_t)16 * (size_t)n);
        const double bytes = (double)(n * k) * 2;
        for (int i = 0; i < 3; i++) {
            g.b.m = ms[i];
            const int calls = g.b.n_w < 8 ? 8 : g.b.n_w;
            g.fused_op = 0;
            double a = time_graph_us(ctx, bench_gated_call, &g, calls, 15);
            g.fused_op = 1;
            double f = time_graph_us(ctx, bench_gated_call, &g, calls, 15);
            const int choice = cuda_gemm_last_choice(ctx->cuda);
            printf("%-12s %6lldx%-6lld M %2d | matmul+act %6.1f us %5.1f%% | gated_matmul (%d) %6.1f us %5.1f%% | "
                   "%.2fx | gated GEMV forced, config 0 1 3 5 7 9 11 13 15:",
                   models[mi].name, (long long)n, (long long)k, ms[i], a, 100 * bytes / a / 1e3 / PEAK_GBS, choice,
                   f, 100 * bytes / f / 1e3 / PEAK_GBS, a / f);
            static const int cfgs[] = {0, 1, 3, 5, 7, 9, 11, 13, 15}; /* NT bit ignored: U, hint, PDL */
            for (int c = 0; c < 9; c++) {
                cuda_gemm_force(ctx->cuda, PATH_GEMV, cfgs[c]);
                printf(" %.1f", time_graph_us(ctx, bench_gated_call, &g, calls, 15));
                cuda_gemm_force(ctx->cuda, PATH_AUTO, 0);
            }
            printf("\n");
            fflush(stdout);
        }
        CHECK(cudaFree(g.act_out) == cudaSuccess);
        bench_free(&g.b);
    }
    return 0;
}

/* Batch-invariant mode: a row's output is bit-identical whether it is
 * computed alone or among 40 rows (GEMV tiles past 16 rows), for matmul,
 * logits and gated_matmul. */
static int invariant_rows(struct gpu_ctx *ctx, int N, int K, int gated, int *checked)
{
    const int M = 40, wrows = gated ? 2 * N : N;
    float *wf = gpu_rand_f32(ctx, (size_t)wrows * K, 1.0f / sqrtf((float)K));
    uint16_t *wb = gpu_to_bf16(wf, (size_t)wrows * K);
    struct weight wg = gpu_weight_cuda(ctx, wb, wrows, K);
    float *x = gpu_rand_f32(ctx, (size_t)M * K, 1.0f);
    void *xg = gpu_upload_bf16(ctx, x, (size_t)M * K);
    void *all = gpu_poisoned_bf16(ctx, (size_t)M * N * 2), *one = gpu_poisoned_bf16(ctx, (size_t)N * 2);
    void *scratch = gpu_poisoned_bf16(ctx, (size_t)M * wrows);
    const size_t es = gated ? 2 : 4; /* gated: bf16 out; else logits: f32 out */
    if (gated)
        ctx->cuda->ops->gated_matmul(ctx->cuda, all, scratch, xg, &wg, M, ACT_FN_SILU);
    else
        ctx->cuda->ops->logits(ctx->cuda, all, xg, &wg, M, 0.f);
    unsigned char *ha = xmalloc((size_t)M * N * es), *h1 = xmalloc((size_t)N * es);
    gpu_download(ctx, ha, all, (size_t)M * N * es);
    int bad = -1;
    for (int r = 0; r < M && bad < 0; r++) {
        const void *xr = (const char *)xg + (size_t)r * K * 2;
        if (gated)
            ctx->cuda->ops->gated_matmul(ctx->cuda, one, scratch, xr, &wg, 1, ACT_FN_SILU);
        else
            ctx->cuda->ops->logits(ctx->cuda, one, xr, &wg, 1, 0.f);
        gpu_download(ctx, h1, one, (size_t)N * es);
        if (memcmp(h1, ha + (size_t)r * N * es, (size_t)N * es))
            bad = r;
        (*checked)++;
    }
    void *dev[] = {(void *)wg.data, xg, all, one, scratch};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        ctx->cuda->ops->free(ctx->cuda, dev[i]);
    free(wf), free(wb), free(x), free(ha), free(h1);
    if (bad >= 0)
        GPU_FAIL("%s N %d K %d: row %d differs alone and among %d rows", gated ? "gated_matmul" : "logits", N, K,
                 bad, M);
    return 0;
}

GPU_TEST(gemm_batch_invariant_rows)
{
    static const int shapes[][2] = {{5120, 3072}, {3072, 8192}, {1000, 1152}, {24, 64}};
    int checked = 0, rc = 0;
    ctx->cuda->batch_invariant = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0] && !rc; s++)
        rc = invariant_rows(ctx, shapes[s][0], shapes[s][1], 0, &checked) ||
             invariant_rows(ctx, shapes[s][0], shapes[s][1], 1, &checked);
    ctx->cuda->batch_invariant = 0;
    if (!rc)
        snprintf(ctx->msg, sizeof ctx->msg, "%d rows bit-identical alone and in a batch of 40", checked);
    return rc;
}
