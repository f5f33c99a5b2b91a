/* A matmul over block weights (quant.h's dot products). */
#ifndef INFER_BACKEND_QUANT_QUANT_MATMUL_H
#define INFER_BACKEND_QUANT_QUANT_MATMUL_H

#include "backend/ops.h"
#include "backend/quant/quant.h"
#include "core/threadpool.h"

/* Bytes of the activation scratch quant_matmul takes for n_rows rows of x
 * against w. */
size_t quant_matmul_scratch(const struct weight *w, int n_rows);

/* out[n_rows, w.rows] = x[n_rows, w.cols] . w^T, w in a block type (each
 * row whole blocks) or F32 / F16 / BF16, then tanh soft-cap where softcap
 * > 0. For block weights each x row is quantised once into xq
 * (quant_matmul_scratch bytes; float weights read x); the pool splits w's
 * rows in tiles small enough to stay in L1 while every x row passes them.
 * Each output is exactly k->dot of its row and its quantised x row. */
void quant_matmul(const struct quant_kernels *k, struct threadpool *pool, float *out, const float *x,
                  const struct weight *w, int n_rows, void *xq, float softcap);

#endif
