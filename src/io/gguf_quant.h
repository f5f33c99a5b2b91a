/* Dequantisation of GGUF tensor data to bf16 (and f32), at load time.
 *
 * Every supported type gives, element for element, exactly the float32
 * value the Python `gguf` package's dequantize() computes (the same
 * operations in the same order, no fused multiply-adds), and its bf16
 * round-to-nearest-even; tests/unit/test_gguf_quant.c checks that against
 * vectors the package produced (tools/make_gguf_quant_fixture.py).
 *
 * Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
 * Any other type is refused by name. */
#ifndef INFER_IO_GGUF_QUANT_H
#define INFER_IO_GGUF_QUANT_H

#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "io/gguf.h"

/* 1 when t can be dequantised here. */
int gguf_quant_supported(enum ggml_type t);
/* Our dtype for a supported t (1), or 0. */
int gguf_type_dtype(enum ggml_type t, enum dtype *out);

/* n elements (a whole number of t's blocks) at src to dst; -1 with e set
 * naming the type when it is not supported or n is not whole blocks. */
int gguf_dequant_f32(enum ggml_type t, const void *src, int64_t n, float *dst, struct err *e);
int gguf_dequant_bf16(enum ggml_type t, const void *src, int64_t n, uint16_t *dst, struct err *e);

#endif
