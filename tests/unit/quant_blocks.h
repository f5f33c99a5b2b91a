/* Random GGUF weight blocks for the tests of backend/quant: random quants
 * (all-ones bytes now and then), sane f16 scales of either sign, and for
 * each element a bound on the size of the terms a kernel forms for it. */
#ifndef INFER_TESTS_QUANT_BLOCKS_H
#define INFER_TESTS_QUANT_BLOCKS_H

#include <stdint.h>

#include "core/dtype.h"
#include "core/rng.h"
#include "io/gguf.h"

/* The GGUF type of a block dtype. */
enum ggml_type quant_blocks_ggml(enum dtype t);
/* One block of t at b; mag[0 .. dtype_block_elems(t)) bounds each element's terms. */
void quant_blocks_make(enum dtype t, struct rng *r, uint8_t *b, float *mag);
/* Uniform in [-1, 1). */
float quant_blocks_unit(struct rng *r);

#endif
