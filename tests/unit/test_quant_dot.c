/* backend/quant: the activation quantisers and each weight type's dot
 * product, against io/gguf_quant's dequantisation (itself bit-exact with the
 * `gguf` package): for rows of 1 to 48 blocks, random quants and scales
 * (extremes included), random and all-zero activations,
 *  - quantize: d = max|x| / 127 and every |x - d q| <= d / 2 (+ rounding);
 *  - dot: within the fp32 bound (blocks + 8) * FLT_EPSILON * Σ mag_i |xq_i|
 *    of the f64 sum Σ w_i xq_i, where w is the dequantised row, xq the
 *    dequantised activation (d q) and mag_i bounds the size of each term
 *    the kernel forms for element i (the scales times the largest quant,
 *    plus the min): the integer sums are exact, so what differs is f32
 *    rounding of the scales' products and the sum over blocks.
 * Each SIMD set this CPU has is held to the same bound, and its quantised
 * activations must be the scalar twin's bytes. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/quant/quant.h"
#include "core/bf16.h"
#include "core/rng.h"
#include "io/gguf_quant.h"
#include "quant_blocks.h"

static const enum dtype TYPES[] = {DTYPE_Q4_0, DTYPE_Q4_1, DTYPE_Q5_0, DTYPE_Q5_1,
                                   DTYPE_Q8_0, DTYPE_Q4_K, DTYPE_Q5_K, DTYPE_Q6_K};

/* x dequantised from its activation blocks. */
static void act_values(enum dtype t, const void *xq, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++)
        if (quant_act_block(t) == QUANT_BLOCK_32) {
            const struct q8_32 *a = (const struct q8_32 *)xq + i / 32;
            out[i] = a->d * (float)a->q[i % 32];
        } else {
            const struct q8_256 *a = (const struct q8_256 *)xq + i / 256;
            out[i] = a->d * (float)a->q[i % 256];
        }
}

static void check_quantized(enum dtype t, const float *x, const void *xq, int64_t n)
{
    const int blk = quant_act_block(t);
    for (int64_t b0 = 0; b0 < n; b0 += blk) {
        float amax = 0, d;
        for (int i = 0; i < blk; i++)
            amax = fmaxf(amax, fabsf(x[b0 + i]));
        int32_t sum = 0;
        if (blk == 32) {
            const struct q8_32 *a = (const struct q8_32 *)xq + b0 / 32;
            d = a->d;
            for (int i = 0; i < 32; i++)
                sum += a->q[i];
            cr_assert_eq(sum, a->sum);
        } else {
            const struct q8_256 *a = (const struct q8_256 *)xq + b0 / 256;
            d = a->d;
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int i = 0; i < 16; i++)
                    s += a->q[16 * g + i];
                cr_assert_eq(s, a->sums[g]);
            }
        }
        cr_assert_eq(d, amax / 127.0f);
        for (int i = 0; i < blk; i++) {
            const float q = blk == 32 ? (float)((const struct q8_32 *)xq)[b0 / 32].q[i]
                                      : (float)((const struct q8_256 *)xq)[b0 / 256].q[i];
            cr_assert_leq(fabsf(x[b0 + i] - d * q), d * 0.5f * (1 + 4 * FLT_EPSILON) + FLT_MIN,
                          "%s x=%g d=%g q=%g", dtype_name(t), x[b0 + i], d, q);
        }
    }
}

static void check_type(const struct quant_kernels *k, enum dtype t, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed, 0, 0);
    const int blk = dtype_block_elems(t);
    static const int counts[] = {1, 2, 3, 7, 16, 48};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        const int64_t n = (int64_t)counts[c] * blk;
        uint8_t *w = malloc(dtype_row_bytes(t, n) + 1);
        uint8_t *wrow = w + 1; /* unaligned, as in a mapping */
        float *mag = malloc((size_t)n * sizeof *mag), *wf = malloc((size_t)n * sizeof *wf);
        float *x = malloc((size_t)n * sizeof *x), *xf = malloc((size_t)n * sizeof *xf);
        void *xq = malloc(quant_act_row_bytes(t, n)), *xs = malloc(quant_act_row_bytes(t, n));
        for (int64_t b = 0; b < n / blk; b++)
            quant_blocks_make(t, &r, wrow + b * dtype_block_bytes(t), mag + b * blk);
        struct err e;
        cr_assert_eq(gguf_dequant_f32(quant_blocks_ggml(t), wrow, n, wf, &e), 0);
        for (int trial = 0; trial < 4; trial++) {
            for (int64_t i = 0; i < n; i++)
                x[i] = trial == 3 ? 0.0f : quant_blocks_unit(&r) * (trial == 2 && i % 97 == 0 ? 50.0f : 1.0f);
            quant_act_row(k, t, x, n, xq);
            check_quantized(t, x, xq, n);
            if (k != quant_kernels_scalar()) { /* the same bytes as the scalar twin's */
                quant_act_row(quant_kernels_scalar(), t, x, n, xs);
                cr_assert_eq(memcmp(xq, xs, quant_act_row_bytes(t, n)), 0, "%s %s n=%lld: quantised bytes differ",
                             k->name, dtype_name(t), (long long)n);
            }
            act_values(t, xq, n, xf);
            double ref = 0, size = 0;
            for (int64_t i = 0; i < n; i++)
                ref += (double)wf[i] * xf[i], size += (double)mag[i] * fabs(xf[i]);
            const double got = quant_dot(k, t, wrow, xq, n);
            const double bound = (double)(n / blk + 8) * FLT_EPSILON * size;
            cr_assert_leq(fabs(got - ref), bound, "%s %s n=%lld trial %d: %.9g vs %.9g (bound %.3g)", k->name,
                          dtype_name(t), (long long)n, trial, got, ref, bound);
        }
        free(w), free(mag), free(wf), free(x), free(xf), free(xq), free(xs);
    }
}

/* Float weights (any n, unaligned rows, the tails included): within
 * (n / 8 + 8) FLT_EPSILON Σ |w_i x_i| of the f64 sum, the f32 rows taken as
 * they are (the quantiser only copies them). */
static void check_float_type(const struct quant_kernels *k, enum dtype t, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed, 0, 0);
    static const int counts[] = {1, 7, 8, 31, 32, 33, 100, 640, 1031};
    const size_t es = dtype_size(t);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        const int64_t n = counts[c];
        uint8_t *w = malloc((size_t)n * es + 1), *wrow = w + 1;
        float *wf = malloc((size_t)n * sizeof *wf), *x = malloc((size_t)n * sizeof *x);
        for (int64_t i = 0; i < n; i++) {
            const float v = quant_blocks_unit(&r) * (i % 53 == 0 ? 300.0f : 1.0f);
            /* f16: any finite pattern below 2 in size, subnormals included */
            uint16_t h = t == DTYPE_BF16 ? f32_to_bf16(v) : (uint16_t)(rng_next(&r) & 0xBFFF);
            if (t == DTYPE_F32)
                memcpy(wrow + 4 * i, &v, 4), wf[i] = v;
            else
                memcpy(wrow + 2 * i, &h, 2), wf[i] = t == DTYPE_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
            x[i] = quant_blocks_unit(&r);
        }
        void *xq = malloc(quant_act_row_bytes(t, n));
        quant_act_row(k, t, x, n, xq);
        cr_assert_eq(memcmp(xq, x, (size_t)n * sizeof *x), 0);
        double ref = 0, size = 0;
        for (int64_t i = 0; i < n; i++)
            ref += (double)wf[i] * x[i], size += fabs((double)wf[i] * x[i]);
        const double got = quant_dot(k, t, wrow, xq, n), bound = (double)(n / 8 + 8) * FLT_EPSILON * size;
        cr_assert_leq(fabs(got - ref), bound, "%s %s n=%lld: %.9g vs %.9g (bound %.3g)", k->name, dtype_name(t),
                      (long long)n, got, ref, bound);
        free(w), free(wf), free(x), free(xq);
    }
}

static void check_set(const struct quant_kernels *k, const char *name)
{
    if (!k) {
        cr_log_warn("the %s kernel set is not tested: this CPU lacks its instructions", name);
        return;
    }
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        check_type(k, TYPES[i], 1000 + i);
    const enum dtype floats[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
    for (int i = 0; i < 3; i++)
        check_float_type(k, floats[i], 2000 + (uint64_t)i);
}

Test(quant_dot, scalar_against_dequantisation) { check_set(quant_kernels_scalar(), "scalar"); }
Test(quant_dot, avx2_against_dequantisation) { check_set(quant_kernels_avx2(), "avx2"); }
Test(quant_dot, vnni_against_dequantisation) { check_set(quant_kernels_vnni(), "avx512-vnni"); }

/* The set the backend takes is the widest this CPU has. */
Test(quant_dot, best_is_the_widest)
{
    const struct quant_kernels *want = quant_kernels_vnni() ? quant_kernels_vnni()
                                       : quant_kernels_avx2() ? quant_kernels_avx2()
                                                              : quant_kernels_scalar();
    cr_assert_eq(quant_kernels_best(), want);
}
