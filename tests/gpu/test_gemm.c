/* CUDA matmul / logits (tensor-core GEMV for small M, cuBLASLt otherwise)
 * and gated_matmul against the CPU twin. Each path runs through
 * gemm_paths.h (the op, cuBLASLt, or the GEMV launchers with an explicit
 * variant or their own choice: the backend has no forcing switch).
 *
 * For several N x K (odd N, tiny, K not a multiple of 8, the split-K
 * shapes) and M in {1, 2, 3, 5, 8, 13, 16, 64, 300}, each on the op,
 * cuBLASLt and the GEMV (its own choice; every variant, with M up to 40 in
 * 16-row tiles as batch-invariant mode runs them, in a second test), for
 * bf16 output (matmul) and f32 output (logits, with and without soft-cap);
 * the launchers' refusals; the plan cache (one plan per M bucket, no device
 * allocation); chains of GEMVs that read the previous one's output (PDL
 * ordering); gated_matmul (gate|up with the activation) on the models'
 * shapes and odd ones, every path and gated variant; batch-invariant rows.
 * Outputs are poisoned (NaN) before every run; the error is
 * max |got - ref| / max |ref|. Benchmarks: bench_gemm.c. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemv.h"
#include "core/bf16.h"
#include "gemm_paths.h"
#include "gpu_test.h"

long cuda_backend_device_allocs(const struct backend *be);

#define TOL_BF16 1e-2
#define TOL_F32 2e-3

struct err_stats {
    double bf16, f32;
};

static int check_shape(struct gpu_ctx *ctx, int N, int K, const int *ms, int n_ms,
                       const struct gemm_mode *modes, int n_modes, struct err_stats *st)
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
            for (int kind = 0; kind < 3; kind++) {
                CHECK(cudaMemsetAsync(og, 0xff, no * sizeof(float), s) ==
                      cudaSuccess); /* NaN in bf16 and f32 */
                if (gemm_mode_matmul(ctx->cuda, &modes[p], og, kind > 0, xg, &wg, M, kind == 2 ? cap : 0.f))
                    continue;
                double err;
                if (kind == 0) {
                    float *o = gpu_download_bf16(ctx, og, no);
                    err = gpu_rel_err(o, ref, no);
                    free(o);
                    st->bf16 = err > st->bf16 ? err : st->bf16;
                } else {
                    gpu_download(ctx, got, og, no * sizeof(float));
                    err = gpu_rel_err(got, kind == 2 ? ref_cap : ref, no);
                    st->f32 = err > st->f32 ? err : st->f32;
                }
                if (err > (kind == 0 ? TOL_BF16 : TOL_F32)) {
                    char mn[64];
                    GPU_FAIL("N %d K %d M %d %s %s: rel err %.3g", N, K, M,
                             gemm_mode_name(&modes[p], mn, sizeof mn),
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
    free(wb);
    return 0;
}

GPU_TEST(gemm_check_matmul_logits_vs_cpu)
{
    static const int shapes[][2] = {{1000, 1152}, {24, 64}, {256, 1152}, {1152, 6912}, {8192, 3072}};
    static const int ms[] = {1, 2, 3, 5, 8, 13, 16, 64, 300};
    static const struct gemm_mode modes[] = {
        {.run = GEMM_RUN_OP}, {.run = GEMM_RUN_LT}, {.run = GEMM_RUN_GEMV}};
    struct err_stats st = {0, 0};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (check_shape(ctx, shapes[i][0], shapes[i][1], ms, 9, modes, 3, &st))
            return 1;
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err bf16 %.2e, f32 %.2e", st.bf16, st.f32);
    return 0;
}

/* Every variant at M 1..16 and, as batch-invariant mode launches them, at
 * M = 40 (three 16-row tiles); the launcher's own choice with and without PDL. */
GPU_TEST(gemm_check_gemv_variants_vs_cpu)
{
    static const int shapes[][2] = {{1000, 1152}, {24, 64}, {264, 2048}, {40, 4104}};
    static const int ms[] = {1, 5, 8, 9, 16, 40};
    struct gemv_variant vs[N_GEMV_VARIANTS];
    struct gemm_mode modes[N_GEMV_VARIANTS + 2] = {{.run = GEMM_RUN_GEMV},
                                                   {.run = GEMM_RUN_GEMV, .no_pdl = 1}};
    const int n_vs = gemv_variants_all(vs, 0);
    for (int c = 0; c < n_vs; c++)
        modes[2 + c] = (struct gemm_mode){.run = GEMM_RUN_GEMV, .variant = &vs[c]};
    struct err_stats st = {0, 0};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (check_shape(ctx, shapes[i][0], shapes[i][1], ms, 6, modes, 2 + n_vs, &st))
            return 1;
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err bf16 %.2e, f32 %.2e", st.bf16, st.f32);
    return 0;
}

/* The launchers refuse what they cannot run, launching nothing: a variant
 * outside gemv.h's values (gated: tiles other than 2), their own choice at
 * M > 16, K % 8 or K < 8, M < 1, an unknown activation. */
GPU_TEST(gemm_check_gemv_refusals)
{
    const int n_sm = cuda_impl(ctx->cuda)->prop.multiProcessorCount;
    cudaStream_t s = cuda_stream(ctx->cuda);
    void *buf = gpu_poisoned_bf16(ctx, (size_t)64 * 1024);
    static const struct gemv_variant bad[] = {
        {.tiles = 3, .unroll = 2, .l2_hint = 0, .pdl = 1},
        {.tiles = 0, .unroll = 2, .l2_hint = 0, .pdl = 1},
        {.tiles = 1, .unroll = 3, .l2_hint = 0, .pdl = 1},
        {.tiles = 1, .unroll = 8, .l2_hint = 0, .pdl = 1},
        {.tiles = 1, .unroll = 2, .l2_hint = 2, .pdl = 1},
        {.tiles = 1, .unroll = 2, .l2_hint = 0, .pdl = -1},
        {.tiles = 2, .unroll = 2, .l2_hint = 1, .pdl = 1, .blocks5 = 1}, /* 5 blocks: gated unroll 3 only */
        {.tiles = 2, .unroll = 4, .l2_hint = 1, .pdl = 1, .blocks5 = 1},
        {.tiles = 2, .unroll = 3, .l2_hint = 1, .pdl = 1, .blocks5 = 0}, /* unroll 3: 5 blocks only */
    };
    const struct gemv_variant ok = {.tiles = 2, .unroll = 2, .l2_hint = 1, .pdl = 1};
    const struct gemv_variant one_tile = {.tiles = 1, .unroll = 2, .l2_hint = 1, .pdl = 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (launch_gemv(buf, 0, buf, buf, 1, 64, 64, 0.f, &bad[i], n_sm, s) != cudaErrorInvalidValue)
            GPU_FAIL("launch_gemv took variant %zu", i);
        if (launch_gemv_gated(buf, buf, buf, 1, 32, 64, 0, &bad[i], n_sm, s) != cudaErrorInvalidValue)
            GPU_FAIL("launch_gemv_gated took variant %zu", i);
    }
    if (launch_gemv_gated(buf, buf, buf, 1, 32, 64, 0, &one_tile, n_sm, s) != cudaErrorInvalidValue)
        GPU_FAIL("launch_gemv_gated took tiles 1");
    if (launch_gemv(buf, 0, buf, buf, 17, 64, 64, 0.f, NULL, n_sm, s) != cudaErrorInvalidValue ||
        launch_gemv_gated(buf, buf, buf, 17, 32, 64, 0, NULL, n_sm, s) != cudaErrorInvalidValue)
        GPU_FAIL("a launcher chose a variant for M = 17");
    if (launch_gemv(buf, 0, buf, buf, 1, 64, 100, 0.f, &ok, n_sm, s) != cudaErrorInvalidValue ||
        launch_gemv(buf, 0, buf, buf, 1, 64, 4, 0.f, NULL, n_sm, s) != cudaErrorInvalidValue ||
        launch_gemv_gated(buf, buf, buf, 1, 32, 100, 0, &ok, n_sm, s) != cudaErrorInvalidValue)
        GPU_FAIL("a launcher took K = 100 or 4");
    if (launch_gemv(buf, 0, buf, buf, 0, 64, 64, 0.f, &ok, n_sm, s) != cudaErrorInvalidValue ||
        launch_gemv_gated(buf, buf, buf, 1, 32, 64, 2, &ok, n_sm, s) != cudaErrorInvalidValue)
        GPU_FAIL("a launcher took M = 0 or act 2");
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    if (cudaGetLastError() != cudaSuccess)
        GPU_FAIL("a refusal left a CUDA error behind");
    return 0;
}

/* The blocks5 gated variant is for the gated launcher only; busy_share
 * takes it for Qwen3-4B's gate|up (F 9728, K 2560; 2.3 waves at 4 blocks an
 * SM on 132 SMs) at one row, and never past 8 rows. */
GPU_TEST(gemm_check_gated5_choice)
{
    const int n_sm = cuda_impl(ctx->cuda)->prop.multiProcessorCount;
    cudaStream_t s = cuda_stream(ctx->cuda);
    void *buf = gpu_poisoned_bf16(ctx, (size_t)64 * 1024);
    const struct gemv_variant b5 = {.tiles = 2, .unroll = 3, .l2_hint = 1, .pdl = 1, .blocks5 = 1};
    if (launch_gemv(buf, 0, buf, buf, 1, 64, 64, 0.f, &b5, n_sm, s) != cudaErrorInvalidValue)
        GPU_FAIL("launch_gemv took the gated-only blocks5 variant");
    const struct weight w = {.data = buf, .dtype = DTYPE_BF16, .rows = 2 * 9728, .cols = 2560};
    struct gemv_variant v;
    if (cuda_gemm_choose_gated(ctx->cuda, buf, &w, 1, &v) != CUDA_GEMM_PATH_GEMV)
        GPU_FAIL("Qwen3-4B's gate|up at one row did not take the gated GEMV");
    if (n_sm == 132 && v.blocks5 != 1)
        GPU_FAIL("132 SMs: Qwen3-4B's gate|up at one row chose blocks5 %d, not 1", v.blocks5);
    if (cuda_gemm_choose_gated(ctx->cuda, buf, &w, 16, &v) == CUDA_GEMM_PATH_GEMV && v.blocks5)
        GPU_FAIL("Qwen3-4B's gate|up at 16 rows chose the blocks5 variant");
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
 * whose cuBLASLt path splits M into chunks), SiLU and GELU-tanh, on the op
 * (with and without PDL), cuBLASLt + gated_act and the gated GEMV (its own
 * choice with and without PDL, every variant). Outputs are poisoned, one
 * row past the output is checked to stay untouched, and no device memory is
 * allocated. */
#define TOL_GATED 2e-2

static int check_gated(struct gpu_ctx *ctx, int F, int K, const int *ms, int n_ms,
                       const struct gemm_mode *modes, int n_modes, double *worst)
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
                CHECK(cudaMemsetAsync(og, 0xff, (no + (size_t)F) * 2, s) == cudaSuccess); /* NaN */
                if (gemm_mode_gated(ctx->cuda, &modes[p], og, scratch, xg, &wg, M, fn))
                    continue;
                float *o = gpu_download_bf16(ctx, og, no + (size_t)F);
                double err = gpu_rel_err(o, ref, no);
                int spare_ok = 1;
                for (int j = 0; j < F; j++)
                    spare_ok &= isnan(o[no + (size_t)j]);
                free(o);
                *worst = err > *worst ? err : *worst;
                if (err > TOL_GATED || !spare_ok) {
                    char mn[64], cn[32];
                    GPU_FAIL("F %d K %d M %d %s %s (the op chooses %s): %s %.3g", F, K, M,
                             act ? "gelu" : "silu", gemm_mode_name(&modes[p], mn, sizeof mn),
                             gemm_choice_name(ctx->cuda, xg, &wg, M, 1, cn, sizeof cn),
                             spare_ok ? "rel err" : "wrote past the output, rel err", err);
                }
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
    struct gemv_variant vs[N_GEMV_VARIANTS];
    struct gemm_mode modes[5 + N_GEMV_VARIANTS] = {
        {.run = GEMM_RUN_OP},   {.run = GEMM_RUN_OP, .no_pdl = 1},   {.run = GEMM_RUN_LT},
        {.run = GEMM_RUN_GEMV}, {.run = GEMM_RUN_GEMV, .no_pdl = 1},
    };
    const int n_vs = gemv_variants_all(vs, 1);
    for (int c = 0; c < n_vs; c++)
        modes[5 + c] = (struct gemm_mode){.run = GEMM_RUN_GEMV, .variant = &vs[c]};
    long allocs = cuda_backend_device_allocs(ctx->cuda);
    double worst = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (check_gated(ctx, shapes[i][0], shapes[i][1], ms, 8, modes, 5 + n_vs, &worst))
            return 1;
    /* cuBLASLt with M past the scratch: gate into out, up in row chunks */
    static const int big_m[] = {1100};
    static const struct gemm_mode lt_modes[] = {{.run = GEMM_RUN_OP}, {.run = GEMM_RUN_LT}};
    if (check_gated(ctx, 8200, 64, big_m, 1, lt_modes, 2, &worst))
        return 1;
    if (cuda_backend_device_allocs(ctx->cuda) != allocs)
        GPU_FAIL("gated_matmul allocated device memory (%ld cudaMalloc)",
                 cuda_backend_device_allocs(ctx->cuda) - allocs);
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err %.2e", worst);
    return 0;
}

/* K not a multiple of 8 (rows only 8-byte aligned): cuBLASLt on the op's
 * path, and the GEMV launchers refuse it (gemm_check_gemv_refusals). Its own
 * test, run last: a cuBLASLt refusal aborts the process. */
GPU_TEST(gemm_odd_k_cublaslt)
{
    static const int ms[] = {1, 3, 16, 64};
    static const struct gemm_mode modes[] = {{.run = GEMM_RUN_OP}, {.run = GEMM_RUN_LT}};
    struct err_stats st = {0, 0};
    if (check_shape(ctx, 37, 100, ms, 4, modes, 2, &st) || check_shape(ctx, 300, 1004, ms, 4, modes, 2, &st))
        return 1;
    snprintf(ctx->msg, sizeof ctx->msg, "max rel err bf16 %.2e, f32 %.2e", st.bf16, st.f32);
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
        GPU_FAIL("%s N %d K %d: row %d differs alone and among %d rows", gated ? "gated_matmul" : "logits", N,
                 K, bad, M);
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

/* matmul_f32 (a split model's o and down products, kept f32 until the sum
 * over ranks) is the logits path without a soft-cap: bit for bit, on the
 * row-parallel shapes of Llama-3.2-3B at TP 2 and 4, at decode and prefill
 * row counts. */
GPU_TEST(gemm_matmul_f32_equals_logits_path)
{
    static const int shapes[][2] = {{3072, 1536}, {3072, 4096}, {3072, 768}, {3072, 2048}};
    static const int ms[] = {1, 8, 64, 300};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int N = shapes[i][0], K = shapes[i][1];
        float *wf = gpu_rand_f32(ctx, (size_t)N * K, 0.05f);
        uint16_t *wb = gpu_to_bf16(wf, (size_t)N * K);
        struct weight wg = gpu_weight_cuda(ctx, wb, N, K);
        for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
            const int M = ms[j];
            const size_t no = (size_t)M * N;
            float *x = gpu_rand_f32(ctx, (size_t)M * K, 1.0f), *a = xcalloc(no, 4), *b = xcalloc(no, 4);
            void *xg = gpu_upload_bf16(ctx, x, (size_t)M * K);
            float *oa = gpu_upload(ctx, a, no * 4), *ob = gpu_upload(ctx, b, no * 4);
            ctx->cuda->ops->matmul_f32(ctx->cuda, oa, xg, &wg, M);
            ctx->cuda->ops->logits(ctx->cuda, ob, xg, &wg, M, 0.f);
            gpu_download(ctx, a, oa, no * 4);
            gpu_download(ctx, b, ob, no * 4);
            const int same = !memcmp(a, b, no * 4);
            free(x), free(a), free(b);
            if (!same) {
                free(wf), free(wb);
                GPU_FAIL("N %d K %d M %d: matmul_f32 differs from the logits path", N, K, M);
            }
        }
        free(wf), free(wb);
    }
    return 0;
}
