/* backend/quant/quant_matmul: every output is exactly the kernel set's dot
 * of its weight row and its quantised x row (soft-capped where asked), for
 * every block and float type, 1 to 17 rows of x, 1 to 1000 rows of w (tiles and
 * chunks cut anywhere), pools of 1 to 3 threads, each kernel set this CPU
 * has. The dot products themselves are test_quant_dot.c's. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/quant/quant_matmul.h"
#include "backend/quant/quant_repack.h"
#include "core/dequant.h"
#include "quant_blocks.h"

static const enum dtype TYPES[] = {DTYPE_Q4_0, DTYPE_Q4_1, DTYPE_Q5_0, DTYPE_Q5_1, DTYPE_Q8_0, DTYPE_Q4_K,
                                   DTYPE_Q5_K, DTYPE_Q6_K, DTYPE_F32,  DTYPE_F16,  DTYPE_BF16};

/* n elements of float type t (finite, below 2 in size) at w. */
static void float_row(enum dtype t, struct rng *r, uint8_t *w, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const float f = quant_blocks_unit(r);
        const uint16_t h = (uint16_t)(rng_next(r) & 0xBFFF);
        if (t == DTYPE_F32)
            memcpy(w + 4 * i, &f, 4);
        else
            memcpy(w + 2 * i, &h, 2);
    }
}

static void check(const struct quant_kernels *k, struct threadpool *pool, enum dtype t, int T, int N, float softcap,
                  struct rng *r)
{
    const int64_t K = dtype_is_block(t) ? 2 * dtype_block_elems(t) : 37; /* floats: a tail past the lanes */
    const size_t row = dtype_row_bytes(t, K);
    uint8_t *wdata = malloc((size_t)N * row);
    float mag[512];
    if (dtype_is_block(t))
        for (int64_t b = 0; b < N * K / dtype_block_elems(t); b++)
            quant_blocks_make(t, r, wdata + b * dtype_block_bytes(t), mag);
    else
        float_row(t, r, wdata, N * K);
    const struct weight w = {wdata, t, N, K};
    float *x = malloc((size_t)(T * K) * sizeof *x), *out = malloc((size_t)T * N * sizeof *out);
    for (int64_t i = 0; i < T * K; i++)
        x[i] = quant_blocks_unit(r);
    void *xq = malloc(quant_matmul_scratch(&w, T) + 1), *one = malloc(quant_act_row_bytes(t, K));
    quant_matmul(k, pool, out, x, &w, T, xq, softcap);
    for (int ti = 0; ti < T; ti++) {
        quant_act_row(k, t, x + ti * K, K, one);
        for (int n = 0; n < N; n++) {
            float want = quant_dot(k, t, wdata + (size_t)n * row, one, K);
            if (softcap > 0)
                want = tanhf(want / softcap) * softcap;
            cr_assert_eq(out[(int64_t)ti * N + n], want, "%s %s T=%d N=%d: out[%d][%d] %g, want %g", k->name,
                         dtype_name(t), T, N, ti, n, out[(int64_t)ti * N + n], want);
        }
    }
    free(wdata), free(x), free(out), free(xq), free(one);
}

Test(quant_matmul, each_output_is_its_dot)
{
    const struct quant_kernels *sets[] = {quant_kernels_scalar(), quant_kernels_avx2(), quant_kernels_vnni()};
    struct rng r;
    rng_seed(&r, 7, 0, 0);
    for (int threads = 1; threads <= 3; threads++) {
        struct threadpool *pool = threadpool_create_spinning(threads, 100000);
        for (size_t s = 0; s < 3; s++)
            for (size_t i = 0; sets[s] && i < sizeof TYPES / sizeof TYPES[0]; i++) {
                check(sets[s], pool, TYPES[i], 1, 1, 0, &r);
                check(sets[s], pool, TYPES[i], 3, 37, 0, &r);
                check(sets[s], pool, TYPES[i], 17, 1000, 30.0f, &r);
            }
        threadpool_free(pool);
    }
}

/* Weights packed by 8 rows (quant_repack.h: Q8_0, Q5_0 and Q4_0 as Q8_0,
 * Q4_K, Q6_K), where a kernel set has the packed type's tile:
 * every row reads back as the unpacked row's values (padding rows cut);
 * each output of a batch of 17 equals the same row and x alone (T = 1),
 * and lies within the fp32 bound of test_quant_dot.c of the unpacked row's
 * scalar dot; rows of 1 to 37 (a part group), 1 to 3 threads. */
static int check_packed(enum dtype src, struct rng *r);

Test(quant_matmul, packed_rows)
{
    struct rng r;
    rng_seed(&r, 11, 0, 0);
    const enum dtype types[] = {DTYPE_Q8_0, DTYPE_Q5_0, DTYPE_Q4_0, DTYPE_Q4_K, DTYPE_Q6_K};
    for (int i = 0; i < 5; i++)
        if (!check_packed(types[i], &r))
            cr_log_warn("no kernel set of this CPU packs %s rows: its packed tile is not tested", dtype_name(types[i]));
}

/* Element i of an activation row quantised for weights of type t. */
static double act_value(enum dtype t, const void *xq, int64_t i)
{
    if (quant_act_block(t) == QUANT_BLOCK_32) {
        const struct q8_32 *a = xq;
        return (double)a[i / 32].d * a[i / 32].q[i % 32];
    }
    const struct q8_256 *a = xq;
    return (double)a[i / 256].d * a[i / 256].q[i % 256];
}

static int check_packed(enum dtype src, struct rng *rp)
{
    const struct quant_kernels *sets[] = {quant_kernels_scalar(), quant_kernels_avx2(), quant_kernels_vnni()};
    const enum dtype p = quant_repacked_type(src);
    struct rng r = *rp;
    const int64_t K = 3 * dtype_block_elems(src), blocks = K / dtype_block_elems(src);
    const size_t row = dtype_row_bytes(src, K);
    int tested = 0;
    for (size_t s = 0; s < 3; s++) {
        if (!sets[s] || !sets[s]->tile[p])
            continue;
        tested++;
        const struct quant_kernels *k = sets[s];
        for (int N = 1; N <= 37; N += 9)
            for (int threads = 1; threads <= 3; threads++) {
                struct threadpool *pool = threadpool_create_spinning(threads, 100000);
                uint8_t *w = malloc((size_t)N * row);
                float mag[256];
                for (int64_t b = 0; b < N * blocks; b++)
                    quant_blocks_make(src, &r, w + b * dtype_block_bytes(src), mag);
                void *packed = malloc(quant_repack_bytes(src, N, K));
                quant_repack(pool, src, w, N, K, packed);
                float *got = malloc((size_t)K * sizeof *got), *want = malloc((size_t)K * sizeof *want);
                for (int n = 0; n < N; n++) {
                    quant_packed_row_f32(p, packed, n, K, got);
                    dtype_dequant_f32(src, w + (size_t)n * row, K, want);
                    cr_assert_eq(memcmp(got, want, (size_t)K * sizeof *got), 0, "%s: packed row %d of %d reads back wrong",
                                 dtype_name(src), n, N);
                }
                const int T = 17;
                float *x = malloc((size_t)(T * K) * sizeof *x), *out = malloc((size_t)(T * N) * sizeof *out),
                      *one = malloc((size_t)N * sizeof *one);
                for (int64_t i = 0; i < T * K; i++)
                    x[i] = quant_blocks_unit(&r);
                const struct weight pw = {packed, p, N, K};
                void *xq = malloc(quant_matmul_scratch(&pw, T)), *xq1 = malloc(quant_act_row_bytes(src, K));
                quant_matmul(k, pool, out, x, &pw, T, xq, 0);
                for (int t = 0; t < T; t++) {
                    quant_matmul(k, pool, one, x + t * K, &pw, 1, xq1, 0);
                    for (int n = 0; n < N; n++) {
                        cr_assert_eq(out[(int64_t)t * N + n], one[n], "%s %s: out[%d][%d] %g in the batch, %g alone",
                                     k->name, dtype_name(p), t, n, out[(int64_t)t * N + n], one[n]);
                        const float ref = quant_dot(quant_kernels_scalar(), src, w + (size_t)n * row, xq1, K);
                        double size = 0;
                        dtype_dequant_f32(src, w + (size_t)n * row, K, want);
                        for (int64_t i = 0; i < K; i++)
                            size += fabs(want[i] * act_value(src, xq1, i));
                        cr_assert_leq(fabs(one[n] - ref), (blocks + 8) * FLT_EPSILON * size + FLT_MIN,
                                      "%s %s, %d rows, %d threads: row %d: %.9g vs the scalar dot %.9g", k->name,
                                      dtype_name(p), N, threads, n, one[n], ref);
                    }
                }
                free(w), free(packed), free(got), free(want), free(x), free(out), free(one), free(xq), free(xq1);
                threadpool_free(pool);
            }
    }
    *rp = r;
    return tested;
}
