/* One path of the CUDA matmul ops, run the way a struct gemm_mode says
 * (gemm_paths.h). */
#include "gemm_paths.h"

#include <stdio.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels.h"

int gemv_variants_all(struct gemv_variant *out, int gated)
{
    int n = 0;
    for (int pdl = 1; pdl >= 0; pdl--)
        for (int hint = 0; hint <= 1; hint++)
            for (int unroll = 2; unroll <= 4; unroll += 2)
                for (int tiles = gated ? 2 : 1; tiles <= 2; tiles++)
                    out[n++] =
                        (struct gemv_variant){.tiles = tiles, .unroll = unroll, .l2_hint = hint, .pdl = pdl};
    if (gated) /* unroll 3 compiled for 5 blocks an SM */
        for (int hint = 0; hint <= 1; hint++)
            out[n++] =
                (struct gemv_variant){.tiles = 2, .unroll = 3, .l2_hint = hint, .pdl = 1, .blocks5 = 1};
    return n;
}

const char *gemv_variant_name(const struct gemv_variant *v, char *buf, size_t size)
{
    snprintf(buf, size, "T%d_U%d%s%s%s", v->tiles, v->unroll, v->l2_hint ? "_HINT" : "",
             v->pdl ? "" : "_NOPDL", v->blocks5 ? "_B5" : "");
    return buf;
}

const char *gemm_mode_name(const struct gemm_mode *md, char *buf, size_t size)
{
    char vn[32];
    if (md->run == GEMM_RUN_OP)
        snprintf(buf, size, "op%s", md->no_pdl ? " without PDL" : "");
    else if (md->run == GEMM_RUN_LT)
        snprintf(buf, size, "cuBLASLt");
    else if (!md->variant)
        snprintf(buf, size, "GEMV own choice%s", md->no_pdl ? " without PDL" : "");
    else
        snprintf(buf, size, "GEMV %s", gemv_variant_name(md->variant, vn, sizeof vn));
    return buf;
}

const char *gemm_choice_name(struct backend *be, const void *x, const struct weight *w, int m, int gated,
                             char *buf, size_t size)
{
    struct gemv_variant v;
    const enum cuda_gemm_path path =
        gated ? cuda_gemm_choose_gated(be, x, w, m, &v) : cuda_gemm_choose(be, x, w, m, &v);
    return path == CUDA_GEMM_PATH_GEMV ? gemv_variant_name(&v, buf, size) : "cuBLASLt";
}

static int sms(struct backend *be) { return cuda_impl(be)->prop.multiProcessorCount; }

static int gemv_skips(const struct gemm_mode *md, const struct weight *w, int m)
{
    return md->run == GEMM_RUN_GEMV && (w->cols < 8 || w->cols % 8 || (m > 16 && !md->variant));
}

int gemm_mode_matmul(struct backend *be, const struct gemm_mode *md, void *out, int out_f32, const void *x,
                     const struct weight *w, int m, float softcap)
{
    const int n = (int)w->rows, k = (int)w->cols;
    struct gemv_variant v = {0, 0, 0, 0, 0};
    switch (md->run) {
    case GEMM_RUN_LT:
        cuda_gemm_lt(be, out, out_f32, x, w, m, softcap);
        return 0;
    case GEMM_RUN_OP:
        if (md->no_pdl && cuda_gemm_choose(be, x, w, m, &v) == CUDA_GEMM_PATH_GEMV) {
            v.pdl = 0; /* the op's GEMV variant, without PDL */
            break;
        }
        if (out_f32)
            be->ops->logits(be, out, x, w, m, softcap);
        else
            be->ops->matmul(be, out, x, w, m);
        return 0;
    case GEMM_RUN_GEMV:
        if (gemv_skips(md, w, m))
            return 1;
        if (md->variant) {
            v = *md->variant;
            break;
        }
        if (!md->no_pdl) {
            CUDA_CHECK(
                launch_gemv(out, out_f32, x, w->data, m, n, k, softcap, NULL, sms(be), cuda_stream(be)));
            return 0;
        }
        CUDA_CHECK(gemv_variant_auto(m, n, k, sms(be), &v));
        v.pdl = 0;
        break;
    }
    CUDA_CHECK(launch_gemv(out, out_f32, x, w->data, m, n, k, softcap, &v, sms(be), cuda_stream(be)));
    return 0;
}

int gemm_mode_gated(struct backend *be, const struct gemm_mode *md, void *out, void *scratch, const void *x,
                    const struct weight *w, int m, enum act_fn fn)
{
    const int F = (int)(w->rows / 2), k = (int)w->cols, act01 = fn == ACT_FN_SILU ? 0 : 1;
    void *up = (char *)scratch + (size_t)F * 2; /* the up half of each [2F] scratch row */
    struct gemv_variant v = {0, 0, 0, 0, 0};
    switch (md->run) {
    case GEMM_RUN_LT:
        cuda_gemm_lt(be, scratch, 0, x, w, m, 0.f);
        CUDA_CHECK(launch_gated_act(out, scratch, up, m, F, 2 * F, act01, cuda_stream(be)));
        return 0;
    case GEMM_RUN_OP:
        if (md->no_pdl) {
            const enum cuda_gemm_path path = cuda_gemm_choose_gated(be, x, w, m, &v);
            if (path == CUDA_GEMM_PATH_GEMV) {
                v.pdl = 0; /* the op's gated GEMV variant, without PDL */
                break;
            }
        }
        be->ops->gated_matmul(be, out, scratch, x, w, m, fn);
        return 0;
    case GEMM_RUN_GEMV:
        if (gemv_skips(md, w, m))
            return 1;
        if (md->variant) {
            v = *md->variant;
            break;
        }
        if (!md->no_pdl) {
            CUDA_CHECK(launch_gemv_gated(out, x, w->data, m, F, k, act01, NULL, sms(be), cuda_stream(be)));
            return 0;
        }
        CUDA_CHECK(gemv_gated_variant_auto(m, F, k, sms(be), &v));
        v.pdl = 0;
        break;
    }
    CUDA_CHECK(launch_gemv_gated(out, x, w->data, m, F, k, act01, &v, sms(be), cuda_stream(be)));
    return 0;
}
