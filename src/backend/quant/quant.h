/* Dot products of GGUF block weights with quantised activations: the fast
 * CPU path's matmul keeps weights in their file's blocks (core/dtype.h) and
 * quantises each activation row once per matmul to the weights' partner:
 *  - Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 pair with q8_32: 32 int8 and one f32
 *    scale, and the quants' sum (the offset terms of Q4_0's "q - 8" and
 *    Q4_1's "+ m" need it);
 *  - Q4_K, Q5_K, Q6_K pair with q8_256: 256 int8 and one f32 scale, and the
 *    sums of each 16 (the K-quants' mins and Q6_K's "q - 32").
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

/* The activation block a weight type pairs with: 32 or 256 elements; 0 for
 * a type without a quantised dot product here. */
int quant_act_block(enum dtype weight);

/* Bytes of one activation row of n elements quantised for weights of type t. */
size_t quant_act_row_bytes(enum dtype weight, int64_t n);

/* One kernel set. n is a whole number of the weight type's blocks. */
struct quant_kernels {
    const char *name; /* "scalar", "avx2", "avx512-vnni" */
    /* x[n] -> n / 32 or n / 256 blocks at out */
    void (*quantize_32)(const float *x, int64_t n, struct q8_32 *out);
    void (*quantize_256)(const float *x, int64_t n, struct q8_256 *out);
    /* Σ w[i] x[i] over a row of n elements: w in the type's blocks, x as
     * quantize_32 / quantize_256 left it (NULL for a type without one) */
    float (*dot[DTYPE_COUNT])(const void *w, const void *x, int64_t n);
};

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
