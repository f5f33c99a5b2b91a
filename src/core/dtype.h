/* Element types shared by the checkpoint readers and the backends.
 *
 * Two kinds: element types (a value per element: BF16 .. I64) and GGUF's
 * block types (Q4_0 .. Q6_K: a run of elements stored as one block of
 * quants and scales, laid out as ggml lays them out; io/gguf_quant.c
 * documents each layout and dequantises it). A row of a block type is a
 * whole number of blocks; its bytes are dtype_row_bytes. */
#ifndef INFER_CORE_DTYPE_H
#define INFER_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

enum dtype {
    DTYPE_BF16,
    DTYPE_F16,
    DTYPE_F32,
    DTYPE_I32,
    DTYPE_I64,
    DTYPE_Q4_0, /* 32 elements: f16 d, 16 bytes of nibbles */
    DTYPE_Q4_1, /* 32: f16 d, f16 m, 16 bytes of nibbles */
    DTYPE_Q5_0, /* 32: f16 d, u32 fifth bits, 16 bytes of nibbles */
    DTYPE_Q5_1, /* 32: f16 d, f16 m, u32 fifth bits, 16 bytes of nibbles */
    DTYPE_Q8_0, /* 32: f16 d, 32 int8 */
    DTYPE_Q4_K, /* 256: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles */
    DTYPE_Q5_K, /* 256: as Q4_K plus 32 bytes of fifth bits */
    DTYPE_Q6_K, /* 256: 128 bytes low nibbles, 64 bytes high pairs, 16 int8 scales, f16 d */
    /* Rows interleaved by 8, the fast CPU backend's layouts (never a file's;
     * backend/quant/quant_repack.c documents them): per group of 8 rows and block, the
     * 8 rows' scales, then their quants 4 bytes of each row in turn. */
    DTYPE_Q8_0_R8, /* 32: 34 bytes a row's block (Q8_0, Q5_0 and Q4_0 rows) */
    DTYPE_Q4_K_R8, /* 256: 148 bytes a row's block (scales and mins decoded to bytes) */
    DTYPE_Q6_K_R8, /* 256: 210 bytes a row's block */
    DTYPE_COUNT
};

#define DTYPE_FIRST_BLOCK DTYPE_Q4_0

static inline int dtype_is_block(enum dtype t) { return t >= DTYPE_FIRST_BLOCK && t < DTYPE_COUNT; }

/* Elements per block (1 for an element type) and bytes per block (an
 * element's bytes for an element type). */
static inline int dtype_block_elems(enum dtype t)
{
    static const int elems[DTYPE_COUNT] = {1, 1, 1, 1, 1, 32, 32, 32, 32, 32, 256, 256, 256, 32, 256, 256};
    return elems[t];
}

static inline size_t dtype_block_bytes(enum dtype t)
{
    static const size_t bytes[DTYPE_COUNT] = {2, 2, 4, 4, 8, 18, 20, 22, 24, 34, 144, 176, 210, 34, 148, 210};
    return bytes[t];
}

/* An element's bytes: element types only (a block type has none). */
static inline size_t dtype_size(enum dtype t)
{
    CHECK(!dtype_is_block(t));
    return dtype_block_bytes(t);
}

/* The bytes of n elements (a whole number of blocks of a block type). */
static inline size_t dtype_row_bytes(enum dtype t, int64_t n)
{
    CHECK(n % dtype_block_elems(t) == 0);
    return (size_t)(n / dtype_block_elems(t)) * dtype_block_bytes(t);
}

/* Names as safetensors spells them ("BF16", "F16", "F32", "I32", "I64")
 * and as GGUF spells the block types ("Q4_K"). */
static inline const char *dtype_name(enum dtype t)
{
    static const char *names[DTYPE_COUNT] = {"BF16", "F16",  "F32",  "I32",  "I64",  "Q4_0",  "Q4_1",
                                             "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "Q8_0_R8",
                                             "Q4_K_R8", "Q6_K_R8"};
    return names[t];
}

static inline int dtype_is_float(enum dtype t)
{
    return t == DTYPE_BF16 || t == DTYPE_F16 || t == DTYPE_F32;
}

#endif
