/* backend/quant's gated activations: each SIMD set against the scalar set
 * (libm's expf and tanhf, the reference backend's formulas) over a sweep of
 * gates from -100 to 100 (the exp's clamps, the tails where GELU's 1 + tanh
 * cancels) and rows of 1 to 41 elements (the tails past 8 lanes):
 * |simd - scalar| <= 8 ulps of the result + 2e-7 |gate * up| (the absolute
 * part covers the cancellation, which libm's tanhf shares). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "backend/quant/quant.h"

static void check(const struct quant_kernels *k, const char *name)
{
    if (!k) {
        cr_log_warn("the %s kernel set is not tested: this CPU lacks its instructions", name);
        return;
    }
    const struct quant_kernels *s = quant_kernels_scalar();
    enum { N = 4001 };
    float *g = malloc(N * sizeof *g), *u = malloc(N * sizeof *u), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    for (int i = 0; i < N; i++)
        g[i] = -100.0f + 200.0f * (float)i / (N - 1), u[i] = 0.5f + (float)(i % 7) / 4;
    for (int act = 0; act < 2; act++) {
        void (*fk)(float *, const float *, const float *, int64_t) = act ? k->gelu_tanh_mul : k->silu_mul;
        void (*fs)(float *, const float *, const float *, int64_t) = act ? s->gelu_tanh_mul : s->silu_mul;
        for (int len = 1; len <= 41; len += 4)
            for (int at = 0; at + len <= N; at += len * 9) {
                fk(a + at, g + at, u + at, len);
                fs(b + at, g + at, u + at, len);
                for (int i = at; i < at + len; i++)
                    cr_assert_leq(fabsf(a[i] - b[i]), 8 * FLT_EPSILON * fabsf(b[i]) + 2e-7f * fabsf(g[i] * u[i]),
                                  "%s %s(%g) * %g: %.9g vs %.9g", name, act ? "gelu_tanh" : "silu", g[i], u[i], a[i], b[i]);
            }
    }
    free(g), free(u), free(a), free(b);
}

Test(quant_act, avx2_against_scalar) { check(quant_kernels_avx2(), "avx2"); }
Test(quant_act, vnni_against_scalar) { check(quant_kernels_vnni(), "avx512-vnni"); }
