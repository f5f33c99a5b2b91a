/* CUDA vs CPU for the simple ops: embedding, RMSNorm (both conventions),
 * fused add + RMSNorm, gated activations, row gather, and the fused
 * q/k-norm + RoPE + KV write. Inputs are bf16-representable; the CUDA side
 * rounds intermediates to bf16 as a bf16 model does, so the bound is a few
 * bf16 ulps (relative to the largest output). Outputs start poisoned (NaN). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels.h"
#include "gpu_test.h"

#define BF16_TOL 2e-2

GPU_TEST(embed_with_and_without_scale)
{
    const int V = 1000, D = 1152, T = 37;
    float *table = gpu_rand_f32(ctx, (size_t)V * D, 0.5f);
    uint16_t *tb = gpu_to_bf16(table, (size_t)V * D);
    int32_t ids[37];
    for (int i = 0; i < T; i++)
        ids[i] = (int32_t)(rng_next(&ctx->rng) % V);
    struct weight wc = gpu_weight_cpu(tb, V, D), wg = gpu_weight_cuda(ctx, tb, V, D);
    for (int pass = 0; pass < 3; pass++) { /* pass 2: a rank's share of the vocabulary, rows from 300 */
        float scale = pass == 1 ? sqrtf((float)D) : 1.0f;
        const int64_t lo = pass == 2 ? 300 : 0;
        struct fwd_meta mc = {.n_tokens = T, .token_ids = ids};
        struct fwd_meta mg = {.n_tokens = T, .token_ids = gpu_upload(ctx, ids, sizeof ids)};
        float *oc = malloc((size_t)T * D * sizeof(float));
        void *og = gpu_poisoned_bf16(ctx, (size_t)T * D);
        ctx->cpu->ops->embed(ctx->cpu, oc, &mc, &wc, lo, scale);
        ctx->cuda->ops->embed(ctx->cuda, og, &mg, &wg, lo, scale);
        float *got = gpu_download_bf16(ctx, og, (size_t)T * D);
        double err = gpu_rel_err(got, oc, (size_t)T * D);
        free(got);
        free(oc);
        if (err > BF16_TOL)
            GPU_FAIL("scale %.3f, vocab from %lld: rel err %.3g", scale, (long long)lo, err);
    }
    free(table);
    free(tb);
    return 0;
}

static int check_norm(struct gpu_ctx *ctx, int rows, int d, int plus_one, int fused)
{
    size_t n = (size_t)rows * d;
    float *x = gpu_rand_f32(ctx, n, 2.0f), *delta = gpu_rand_f32(ctx, n, 1.0f);
    float *w = gpu_rand_f32(ctx, (size_t)d, 0.3f);
    if (!plus_one)
        for (int i = 0; i < d; i++)
            w[i] += 1.0f;
    uint16_t *wb = gpu_to_bf16(w, (size_t)d);
    struct weight wc = gpu_weight_cpu(wb, 1, d), wg = gpu_weight_cuda(ctx, wb, 1, d);
    float *oc = malloc(n * sizeof(float)), *res = malloc(n * sizeof(float));
    memcpy(res, x, n * sizeof(float));
    void *xg = gpu_upload_bf16(ctx, x, n), *dg = gpu_upload_bf16(ctx, delta, n), *og = gpu_poisoned_bf16(ctx, n);
    if (fused) {
        ctx->cpu->ops->add_rmsnorm(ctx->cpu, res, delta, oc, &wc, rows, 1e-6f, plus_one);
        ctx->cuda->ops->add_rmsnorm(ctx->cuda, xg, dg, og, &wg, rows, 1e-6f, plus_one);
    } else {
        ctx->cpu->ops->rmsnorm(ctx->cpu, oc, x, &wc, rows, 1e-6f, plus_one);
        ctx->cuda->ops->rmsnorm(ctx->cuda, og, xg, &wg, rows, 1e-6f, plus_one);
    }
    float *got = gpu_download_bf16(ctx, og, n);
    double err = gpu_rel_err(got, oc, n), rerr = 0;
    if (fused) {
        float *rg = gpu_download_bf16(ctx, xg, n);
        rerr = gpu_rel_err(rg, res, n);
        free(rg);
    }
    free(got);
    free(oc);
    free(res);
    free(x);
    free(delta);
    free(w);
    free(wb);
    if (err > BF16_TOL || rerr > BF16_TOL)
        GPU_FAIL("rows %d d %d plus_one %d fused %d: rel err %.3g (residual %.3g)", rows, d, plus_one, fused, err,
                 rerr);
    return 0;
}

GPU_TEST(rmsnorm_shapes_and_conventions)
{
    const int shapes[][2] = {{1, 64}, {3, 1152}, {17, 2560}, {64, 3072}, {5, 1000}, {2, 8192}};
    for (int i = 0; i < 6; i++)
        for (int p = 0; p < 2; p++)
            for (int f = 0; f < 2; f++)
                if (check_norm(ctx, shapes[i][0], shapes[i][1], p, f))
                    return 1;
    return 0;
}

/* Gemma's sandwich norm folded into the next add + norm: the fused kernel
 * against the two kernels it replaces (bit for bit, residual and output),
 * and against the CPU's two ops. */
static int check_normed_add(struct gpu_ctx *ctx, int rows, int d, int plus_one)
{
    size_t n = (size_t)rows * d;
    float *x = gpu_rand_f32(ctx, n, 2.0f), *delta = gpu_rand_f32(ctx, n, 3.0f);
    float *w = gpu_rand_f32(ctx, (size_t)d, 0.3f), *wd = gpu_rand_f32(ctx, (size_t)d, 0.3f);
    uint16_t *wb = gpu_to_bf16(w, (size_t)d), *wdb = gpu_to_bf16(wd, (size_t)d);
    struct weight wc = gpu_weight_cpu(wb, 1, d), wg = gpu_weight_cuda(ctx, wb, 1, d);
    struct weight wdc = gpu_weight_cpu(wdb, 1, d), wdg = gpu_weight_cuda(ctx, wdb, 1, d);
    void *x1 = gpu_upload_bf16(ctx, x, n), *x2 = gpu_upload_bf16(ctx, x, n);
    void *d1 = gpu_upload_bf16(ctx, delta, n), *d2 = gpu_upload_bf16(ctx, delta, n);
    void *o1 = gpu_poisoned_bf16(ctx, n), *o2 = gpu_poisoned_bf16(ctx, n);
    struct backend *g = ctx->cuda;
    g->ops->add_normed_rmsnorm(g, x1, d1, &wdg, o1, &wg, rows, 1e-6f, plus_one);
    g->ops->rmsnorm(g, d2, d2, &wdg, rows, 1e-6f, plus_one);
    g->ops->add_rmsnorm(g, x2, d2, o2, &wg, rows, 1e-6f, plus_one);
    float *r1 = gpu_download_bf16(ctx, x1, n), *r2 = gpu_download_bf16(ctx, x2, n);
    float *g1 = gpu_download_bf16(ctx, o1, n), *g2 = gpu_download_bf16(ctx, o2, n);
    int same = !memcmp(r1, r2, n * sizeof(float)) && !memcmp(g1, g2, n * sizeof(float));
    float *res = malloc(n * sizeof(float)), *dc = malloc(n * sizeof(float)), *oc = malloc(n * sizeof(float));
    memcpy(res, x, n * sizeof(float));
    ctx->cpu->ops->rmsnorm(ctx->cpu, dc, delta, &wdc, rows, 1e-6f, plus_one);
    ctx->cpu->ops->add_rmsnorm(ctx->cpu, res, dc, oc, &wc, rows, 1e-6f, plus_one);
    double err = gpu_rel_err(g1, oc, n), rerr = gpu_rel_err(r1, res, n);
    free(r1), free(r2), free(g1), free(g2), free(res), free(dc), free(oc);
    free(x), free(delta), free(w), free(wd), free(wb), free(wdb);
    if (!same)
        GPU_FAIL("rows %d d %d plus_one %d: the fused kernel differs from rmsnorm + add_rmsnorm", rows, d, plus_one);
    if (err > BF16_TOL || rerr > BF16_TOL)
        GPU_FAIL("rows %d d %d plus_one %d: against the CPU rel err %.3g (residual %.3g)", rows, d, plus_one, err,
                 rerr);
    return 0;
}

GPU_TEST(add_normed_rmsnorm_equals_two_kernels)
{
    const int shapes[][2] = {{1, 1152}, {7, 1152}, {3, 2560}, {33, 640}, {2, 1000}};
    for (int i = 0; i < 5; i++)
        for (int p = 0; p < 2; p++)
            if (check_normed_add(ctx, shapes[i][0], shapes[i][1], p))
                return 1;
    return 0;
}

/* The norms of an f32 delta (a split model's summed partial products): each
 * element rounded to bf16, then the bf16 kernel's bits exactly (residual and
 * output), plain and with Gemma's sandwich norm. */
static int check_f32_delta(struct gpu_ctx *ctx, int rows, int d, int plus_one, int sandwich)
{
    size_t n = (size_t)rows * d;
    float *x = gpu_rand_f32(ctx, n, 2.0f), *delta = gpu_rand_f32(ctx, n, 3.0f), *jit = gpu_rand_f32(ctx, n, 1.0f);
    for (size_t i = 0; i < n; i++) /* off the bf16 grid, as an f32 sum is */
        delta[i] *= 1.0f + 1e-3f * jit[i];
    float *w = gpu_rand_f32(ctx, (size_t)d, 0.3f), *wd = gpu_rand_f32(ctx, (size_t)d, 0.3f);
    uint16_t *wb = gpu_to_bf16(w, (size_t)d), *wdb = gpu_to_bf16(wd, (size_t)d);
    struct weight wg = gpu_weight_cuda(ctx, wb, 1, d), wdg = gpu_weight_cuda(ctx, wdb, 1, d);
    void *x1 = gpu_upload_bf16(ctx, x, n), *x2 = gpu_upload_bf16(ctx, x, n);
    void *d32 = gpu_upload(ctx, delta, n * sizeof(float)), *d16 = gpu_upload_bf16(ctx, delta, n);
    void *o1 = gpu_poisoned_bf16(ctx, n), *o2 = gpu_poisoned_bf16(ctx, n);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    if (sandwich) {
        CHECK(launch_add_normed_rmsnorm_f32(x1, d32, wdg.data, o1, wg.data, rows, d, 1e-6f, plus_one, 0) ==
              cudaSuccess);
        CHECK(launch_add_normed_rmsnorm(x2, d16, wdg.data, o2, wg.data, rows, d, 1e-6f, plus_one, 0) == cudaSuccess);
    } else {
        CHECK(launch_add_rmsnorm_f32(x1, d32, o1, wg.data, rows, d, 1e-6f, plus_one, 0) == cudaSuccess);
        CHECK(launch_add_rmsnorm(x2, d16, o2, wg.data, rows, d, 1e-6f, plus_one, 0) == cudaSuccess);
    }
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    float *r1 = gpu_download_bf16(ctx, x1, n), *r2 = gpu_download_bf16(ctx, x2, n);
    float *g1 = gpu_download_bf16(ctx, o1, n), *g2 = gpu_download_bf16(ctx, o2, n);
    int same = !memcmp(r1, r2, n * sizeof(float)) && !memcmp(g1, g2, n * sizeof(float));
    free(r1), free(r2), free(g1), free(g2), free(x), free(delta), free(jit), free(w), free(wd), free(wb), free(wdb);
    if (!same)
        GPU_FAIL("rows %d d %d plus_one %d sandwich %d: the f32 delta differs from its bf16 rounding", rows, d,
                 plus_one, sandwich);
    return 0;
}

GPU_TEST(add_rmsnorm_of_f32_delta_equals_bf16_rounded)
{
    const int shapes[][2] = {{1, 3072}, {5, 2560}, {64, 1152}, {2, 1000}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            if (check_f32_delta(ctx, shapes[i][0], shapes[i][1], k & 1, k >> 1))
                return 1;
    return 0;
}

/* The preloaded fold (residual and weights loaded before the wait, the
 * row in registers) gives fold_row's bits: residual and output, bf16 and
 * f32 deltas, plain and sandwich, both conventions, at the models' widths. */
static int check_preload(struct gpu_ctx *ctx, int rows, int d, int k)
{
    const int plus_one = k & 1, sandwich = (k >> 1) & 1, f32 = k >> 2;
    size_t n = (size_t)rows * d;
    float *x = gpu_rand_f32(ctx, n, 2.0f), *delta = gpu_rand_f32(ctx, n, 3.0f);
    float *w = gpu_rand_f32(ctx, (size_t)d, 0.3f), *wd = gpu_rand_f32(ctx, (size_t)d, 0.3f);
    uint16_t *wb = gpu_to_bf16(w, (size_t)d), *wdb = gpu_to_bf16(wd, (size_t)d);
    struct weight wg = gpu_weight_cuda(ctx, wb, 1, d), wdg = gpu_weight_cuda(ctx, wdb, 1, d);
    void *xs[2] = {gpu_upload_bf16(ctx, x, n), gpu_upload_bf16(ctx, x, n)};
    void *dl = f32 ? gpu_upload(ctx, delta, n * sizeof(float)) : gpu_upload_bf16(ctx, delta, n);
    void *os[2] = {gpu_poisoned_bf16(ctx, n), gpu_poisoned_bf16(ctx, n)};
    for (int on = 0; on < 2; on++) {
        cuda_norm_preload_set(on);
        cudaError_t rc;
        if (f32)
            rc = sandwich ? launch_add_normed_rmsnorm_f32(xs[on], dl, wdg.data, os[on], wg.data, rows, d, 1e-6f,
                                                          plus_one, 0)
                          : launch_add_rmsnorm_f32(xs[on], dl, os[on], wg.data, rows, d, 1e-6f, plus_one, 0);
        else
            rc = sandwich ? launch_add_normed_rmsnorm(xs[on], dl, wdg.data, os[on], wg.data, rows, d, 1e-6f, plus_one, 0)
                          : launch_add_rmsnorm(xs[on], dl, os[on], wg.data, rows, d, 1e-6f, plus_one, 0);
        CHECK(rc == cudaSuccess);
    }
    cuda_norm_preload_set(-1);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    float *r0 = gpu_download_bf16(ctx, xs[0], n), *r1 = gpu_download_bf16(ctx, xs[1], n);
    float *g0 = gpu_download_bf16(ctx, os[0], n), *g1 = gpu_download_bf16(ctx, os[1], n);
    int same = !memcmp(r0, r1, n * sizeof(float)) && !memcmp(g0, g1, n * sizeof(float));
    free(r0), free(r1), free(g0), free(g1), free(x), free(delta), free(w), free(wd), free(wb), free(wdb);
    if (!same)
        GPU_FAIL("rows %d d %d plus_one %d sandwich %d f32 %d: the preloaded fold differs", rows, d, plus_one,
                 sandwich, f32);
    return 0;
}

GPU_TEST(add_rmsnorm_preloaded_same_bits)
{
    const int shapes[][2] = {{1, 3072}, {1, 2560}, {1, 1152}, {8, 1152}, {3, 640}, {2, 1000}, {1, 4096}, {5, 4104}};
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 8; k++)
            if (check_preload(ctx, shapes[i][0], shapes[i][1], k))
                return 1;
    return 0;
}

GPU_TEST(gated_act_silu_and_gelu)
{
    const int rows = 7, cols = 9728;
    size_t n = (size_t)rows * cols;
    float *g = gpu_rand_f32(ctx, n, 2.0f), *u = gpu_rand_f32(ctx, n, 1.0f);
    for (int act = 0; act < 2; act++) {
        float *oc = malloc(n * sizeof(float));
        void *og = gpu_poisoned_bf16(ctx, n);
        ctx->cpu->ops->gated_act(ctx->cpu, oc, g, u, rows, cols, cols, act ? ACT_FN_GELU_TANH : ACT_FN_SILU);
        /* the GPU side reads gate and up as halves of fused gate|up rows */
        float *fused = malloc(2 * n * sizeof(float));
        for (int r = 0; r < rows; r++) {
            memcpy(fused + (size_t)r * 2 * cols, g + (size_t)r * cols, (size_t)cols * sizeof(float));
            memcpy(fused + (size_t)r * 2 * cols + cols, u + (size_t)r * cols, (size_t)cols * sizeof(float));
        }
        char *fg = gpu_upload_bf16(ctx, fused, 2 * n);
        free(fused);
        ctx->cuda->ops->gated_act(ctx->cuda, og, fg, fg + (size_t)cols * 2, rows, cols, 2 * cols,
                                  act ? ACT_FN_GELU_TANH : ACT_FN_SILU);
        float *got = gpu_download_bf16(ctx, og, n);
        double err = gpu_rel_err(got, oc, n);
        free(got);
        free(oc);
        if (err > BF16_TOL)
            GPU_FAIL("act %d: rel err %.3g", act, err);
    }
    free(g);
    free(u);
    return 0;
}

GPU_TEST(gather_rows)
{
    const int T = 50, D = 2560;
    size_t n = (size_t)T * D;
    float *x = gpu_rand_f32(ctx, n, 1.0f);
    int32_t rows[5] = {0, 7, 8, 31, 49};
    struct fwd_meta mc = {.n_logits = 5, .logit_rows = rows};
    struct fwd_meta mg = {.n_logits = 5, .logit_rows = gpu_upload(ctx, rows, sizeof rows)};
    float *oc = malloc(5 * (size_t)D * sizeof(float));
    void *og = gpu_poisoned_bf16(ctx, 5 * (size_t)D);
    ctx->cpu->ops->gather_rows(ctx->cpu, oc, x, &mc, D);
    ctx->cuda->ops->gather_rows(ctx->cuda, og, gpu_upload_bf16(ctx, x, n), &mg, D);
    float *got = gpu_download_bf16(ctx, og, 5 * (size_t)D);
    if (gpu_rel_err(got, oc, 5 * (size_t)D) != 0)
        GPU_FAIL("gather_rows differs");
    free(got);
    free(oc);
    free(x);
    return 0;
}

static int check_rope(struct gpu_ctx *ctx, int T, int n_heads, int n_kv, int hd, int qk_norm, int plus_one)
{
    const int n_slots = 64 * 16;
    size_t qn = (size_t)T * n_heads * hd, kn = (size_t)T * n_kv * hd, cache = (size_t)n_slots * n_kv * hd;
    float *q = gpu_rand_f32(ctx, qn, 1.0f), *k = gpu_rand_f32(ctx, kn, 1.0f), *v = gpu_rand_f32(ctx, kn, 1.0f);
    float *qw = gpu_rand_f32(ctx, (size_t)hd, 0.2f), *kw = gpu_rand_f32(ctx, (size_t)hd, 0.2f);
    if (!plus_one)
        for (int i = 0; i < hd; i++)
            qw[i] += 1.f, kw[i] += 1.f;
    uint16_t *qwb = gpu_to_bf16(qw, (size_t)hd), *kwb = gpu_to_bf16(kw, (size_t)hd);
    float inv[256];
    for (int i = 0; i < hd / 2; i++)
        inv[i] = (float)(1.0 / pow(1e6, 2.0 * i / hd));
    int32_t pos[64], slots[64];
    for (int t = 0; t < T; t++) {
        pos[t] = (int32_t)(rng_next(&ctx->rng) % 100000);
        slots[t] = t % 5 == 4 ? -1 : (int32_t)((t * 37) % n_slots);
    }
    struct attn_shape s = {n_heads, n_kv, hd, 16};
    struct weight qwc = gpu_weight_cpu(qwb, 1, hd), kwc = gpu_weight_cpu(kwb, 1, hd);
    struct weight qwg = gpu_weight_cuda(ctx, qwb, 1, hd), kwg = gpu_weight_cuda(ctx, kwb, 1, hd);
    float *kc_c = calloc(cache, sizeof(float)), *vc_c = calloc(cache, sizeof(float));
    struct kv_layer kvc = {kc_c, vc_c};
    float *zeros = calloc(cache, sizeof(float));
    struct kv_layer kvg = {gpu_upload_bf16(ctx, zeros, cache), gpu_upload_bf16(ctx, zeros, cache)};
    struct fwd_meta mc = {.n_tokens = T, .positions = pos, .slot_mapping = slots};
    struct fwd_meta mg = {.n_tokens = T, .positions = gpu_upload(ctx, pos, sizeof pos),
                          .slot_mapping = gpu_upload(ctx, slots, sizeof slots)};
    /* the GPU side reads q, k, v as column ranges of fused q|k|v rows */
    const int qd = n_heads * hd, kvd = n_kv * hd, row = qd + 2 * kvd;
    float *fused = malloc((size_t)T * row * sizeof(float));
    for (int t = 0; t < T; t++) {
        memcpy(fused + (size_t)t * row, q + (size_t)t * qd, (size_t)qd * sizeof(float));
        memcpy(fused + (size_t)t * row + qd, k + (size_t)t * kvd, (size_t)kvd * sizeof(float));
        memcpy(fused + (size_t)t * row + qd + kvd, v + (size_t)t * kvd, (size_t)kvd * sizeof(float));
    }
    char *fg = gpu_upload_bf16(ctx, fused, (size_t)T * row);
    void *qg = gpu_poisoned_bf16(ctx, qn);
    free(fused);
    const struct qkv_rope rc = {.q_in = q,
                                .k_in = k,
                                .v_in = v,
                                .q_stride = qd,
                                .kv_stride = kvd,
                                .q_norm = qk_norm ? &qwc : NULL,
                                .k_norm = qk_norm ? &kwc : NULL,
                                .eps = 1e-6f,
                                .plus_one = plus_one,
                                .inv_freq = inv};
    const struct qkv_rope rg = {.q_in = fg,
                                .k_in = fg + (size_t)qd * 2,
                                .v_in = fg + (size_t)(qd + kvd) * 2,
                                .q_stride = row,
                                .kv_stride = row,
                                .q_norm = qk_norm ? &qwg : NULL,
                                .k_norm = qk_norm ? &kwg : NULL,
                                .eps = 1e-6f,
                                .plus_one = plus_one,
                                .inv_freq = gpu_upload(ctx, inv, sizeof inv)};
    ctx->cpu->ops->qk_rope_kv_write(ctx->cpu, q, &rc, &mc, &s, &kvc);
    ctx->cuda->ops->qk_rope_kv_write(ctx->cuda, qg, &rg, &mg, &s, &kvg);
    float *qo = gpu_download_bf16(ctx, qg, qn), *ko = gpu_download_bf16(ctx, kvg.k, cache),
          *vo = gpu_download_bf16(ctx, kvg.v, cache);
    double eq = gpu_rel_err(qo, q, qn), ek = gpu_rel_err(ko, kc_c, cache), ev = gpu_rel_err(vo, vc_c, cache);
    free(qo), free(ko), free(vo), free(q), free(k), free(v), free(qw), free(kw), free(qwb), free(kwb);
    free(kc_c), free(vc_c), free(zeros);
    if (eq > BF16_TOL || ek > BF16_TOL || ev > BF16_TOL)
        GPU_FAIL("T %d heads %d/%d hd %d norm %d plus_one %d: rel err q %.3g k %.3g v %.3g", T, n_heads, n_kv, hd,
                 qk_norm, plus_one, eq, ek, ev);
    return 0;
}

GPU_TEST(qk_rope_kv_write_shapes)
{
    return check_rope(ctx, 1, 32, 8, 128, 1, 0) || check_rope(ctx, 33, 24, 8, 128, 0, 0) ||
           check_rope(ctx, 64, 4, 1, 256, 1, 1) || check_rope(ctx, 7, 4, 2, 24, 1, 1) ||
           check_rope(ctx, 9, 16, 16, 64, 0, 0);
}
