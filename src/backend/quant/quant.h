/* Dot products of GGUF block weights with quantised activations: the fast
 * CPU path's matmul keeps weights in their file's blocks (core/dtype.h) and
 * quantises each activation row once per matmul to the weights' partner:
 *  - Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 pair with q8_32: 32 int8 and one f32
 *    scale, and the quants' sum (the offset terms of Q4_0's "q - 8" and
 *    Q4_1's "+ m" need it);
 *  - Q4_K, Q5_K, Q6_K pair with q8_256: 256 int8 and one f32 scale, and the
 *    sums of each 16 (the K-quants' mins and Q6_K's "q - 32");
 *  - F32, F16 and BF16 weights take the f32 row itself (f32 products).
 * A block's products are summed in integers, exactly; its scales are
 * applied in f32. Each kernel set (scalar, AVX2, AVX-512 VNNI) computes the
 * same integer sums; they differ only in the order of the f32 sums, so two
 * sets agree within an fp32 accumulation bound (tests/unit/test_quant_dot.c).
 *
 * An activation's quants: d = max|x| / 127, q = round-to-nearest-even(x *
 * (1 / d)), the same in every kernel set, so every set quantises a row to
 * the same bytes. */
#ifndef INFER_BACKEND_QUANT_QUANT_H
#define INFER_BACKEND_QUANT_QUANT_H

#include <stdint.h>

#include "core/dtype.h"

#define QUANT_BLOCK_32 32
#define QUANT_BLOCK_256 256
#define QUANT_ACT_F32 1 /* float weights (F32, F16, BF16): the activation row stays f32 */

struct q8_32 {
    float d;
    int32_t sum; /* of q */
    int8_t q[QUANT_BLOCK_32];
};

struct q8_256 {
    float d;
    int16_t sums[QUANT_BLOCK_256 / 16]; /* of each 16 q */
    int8_t q[QUANT_BLOCK_256];
};

/* The activation block a weight type pairs with: 32 or 256 elements,
 * QUANT_ACT_F32 for float weights; 0 for a type without a dot product here. */
int quant_act_block(enum dtype weight);

/* Bytes of one activation row of n elements quantised for weights of type t. */
size_t quant_act_row_bytes(enum dtype weight, int64_t n);

/* The most weight rows and activation rows one tile computes. */
#define QUANT_TILE_ROWS 4
#define QUANT_TILE_COLS 4

/* out[t * out_stride + r] = Σ_i w_r[i] x_t[i] for weight rows r < rows
 * (each w_stride bytes after the last) and activation rows t < cols (each
 * x_stride bytes), rows <= QUANT_TILE_ROWS, cols <= QUANT_TILE_COLS; w in
 * the type's blocks, x as quantize_32 / quantize_256 left it (f32 for float
 * weights). An output's value depends only on its own row and column: the
 * tile's shape changes which outputs are computed together, not how. A
 * packed type's tile (quant_repack.h) takes one group of QUANT_R8_ROWS rows
 * at w (w_stride unused), rows <= QUANT_R8_ROWS of them stored. */
typedef void (*quant_tile_fn)(const void *w, size_t w_stride, int rows, const void *x, size_t x_stride, int cols,
                              int64_t n, float *out, size_t out_stride);

/* One kernel set. n is a whole number of the weight type's blocks (any n
 * for float weights). */
struct quant_kernels {
    const char *name;     /* "scalar", "avx2", "avx512-vnni" */
    const char *features; /* the CPU features its kernels use, for the start-up log */
    /* x[n] -> n / 32 or n / 256 blocks at out */
    void (*quantize_32)(const float *x, int64_t n, struct q8_32 *out);
    void (*quantize_256)(const float *x, int64_t n, struct q8_256 *out);
    quant_tile_fn tile[DTYPE_COUNT]; /* NULL for a type without one */
    /* y_h[i] += a[h] x[i] for h < m, i < n: m rows of y, y_stride floats
     * apart, and one f16 row x (attention's weighted sum of values) */
    void (*axpy_f16)(float *y, size_t y_stride, const float *a, int m, const uint16_t *x, int64_t n);
    /* out[i] = act(gate[i]) * up[i], i < n: SiLU g / (1 + e^-g) and GELU's
     * tanh form, through exp and tanh within a few f32 ulps (the scalar
     * set: libm's expf and tanhf, as the reference) */
    void (*silu_mul)(float *out, const float *gate, const float *up, int64_t n);
    void (*gelu_tanh_mul)(float *out, const float *gate, const float *up, int64_t n);
};

/* Σ w[i] x[i] over one row: the 1 x 1 tile. */
float quant_dot(const struct quant_kernels *k, enum dtype weight, const void *w, const void *x, int64_t n);

/* The scalar set: every type, any x86-64 (and any other) CPU. */
const struct quant_kernels *quant_kernels_scalar(void);
/* The x86 sets, NULL where this CPU lacks their instructions: AVX2 (with
 * FMA and F16C), and AVX-512 VNNI (with VL and BW). */
const struct quant_kernels *quant_kernels_avx2(void);
const struct quant_kernels *quant_kernels_vnni(void);
/* The fastest set this CPU runs. */
const struct quant_kernels *quant_kernels_best(void);

/* Quantises x[n] for a dot with weights of type t into out
 * (quant_act_row_bytes(t, n) bytes). */
void quant_act_row(const struct quant_kernels *k, enum dtype weight, const float *x, int64_t n, void *out);

#endif
