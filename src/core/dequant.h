/* The f32 values of tensor data of any float or block type (core/dtype.h):
 * element for element exactly what the Python `gguf` package's dequantize()
 * computes (tests/unit/test_gguf_quant.c, through io/gguf_quant.h). The
 * loader dequantises with it, and a backend that keeps weights in their
 * blocks reads single rows with it (an embedding's). */
#ifndef INFER_CORE_DEQUANT_H
#define INFER_CORE_DEQUANT_H

#include <stdint.h>

#include "core/dtype.h"

/* n elements (whole blocks) of t at src, which need not be aligned, to y.
 * t is F32, F16, BF16 or a block type (CHECK). */
void dtype_dequant_f32(enum dtype t, const void *src, int64_t n, float *y);

#endif
