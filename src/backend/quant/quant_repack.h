/* Weights re-laid at load for the kernels that read several rows at once
 * (core/dtype.h's DTYPE_Q8_0_R8, DTYPE_Q4_K_R8, DTYPE_Q6_K_R8): a kernel
 * set with a tile for the packed type takes them; the others keep the
 * file's layout. */
#ifndef INFER_BACKEND_QUANT_QUANT_REPACK_H
#define INFER_BACKEND_QUANT_QUANT_REPACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/threadpool.h"

#define QUANT_R8_ROWS 8

/* The packed type of weights of type t, or t itself where there is none. */
enum dtype quant_repacked_type(enum dtype t);
/* Whether t is a packed type (its rows in groups of QUANT_R8_ROWS). */
static inline int quant_is_packed(enum dtype t)
{
    return t == DTYPE_Q8_0_R8 || t == DTYPE_Q4_K_R8 || t == DTYPE_Q6_K_R8;
}
/* Bytes of rows x cols of t packed (rows rounded up to whole groups of 8,
 * the padding rows zero). */
size_t quant_repack_bytes(enum dtype t, int64_t rows, int64_t cols);
/* src (rows of t, whole blocks) into dst (quant_repack_bytes), the groups
 * split over the pool. */
void quant_repack(struct threadpool *pool, enum dtype t, const void *src, int64_t rows, int64_t cols, void *dst);
/* Row r of a packed matrix as f32 (what dtype_dequant_f32 gives for the row
 * before packing, bit for bit: d q with q the same integer). */
void quant_packed_row_f32(enum dtype packed, const void *data, int64_t r, int64_t cols, float *y);

#endif
