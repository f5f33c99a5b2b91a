/* Random GGUF weight blocks for the kernels' tests (quant_blocks.h). */
#include "quant_blocks.h"

#include <math.h>

#include "core/bf16.h"

enum ggml_type quant_blocks_ggml(enum dtype t)
{
    switch (t) {
    case DTYPE_Q4_0: return GGML_TYPE_Q4_0;
    case DTYPE_Q4_1: return GGML_TYPE_Q4_1;
    case DTYPE_Q5_0: return GGML_TYPE_Q5_0;
    case DTYPE_Q5_1: return GGML_TYPE_Q5_1;
    case DTYPE_Q8_0: return GGML_TYPE_Q8_0;
    case DTYPE_Q4_K: return GGML_TYPE_Q4_K;
    case DTYPE_Q5_K: return GGML_TYPE_Q5_K;
    default: return GGML_TYPE_Q6_K;
    }
}

/* A finite f16 of magnitude about 2^-6 .. 2^1, either sign; extremes of the
 * range now and then. */
static uint16_t rand_f16(struct rng *r)
{
    const uint16_t sign = (uint16_t)((rng_next(r) & 1) << 15);
    const uint16_t exp = (uint16_t)(9 + rng_next(r) % 8);
    const uint16_t mant = rng_next(r) % 8 == 0 ? 0x3FF : (uint16_t)(rng_next(r) & 0x3FF);
    return (uint16_t)(sign | exp << 10 | mant);
}

static void put_f16(uint8_t *p, uint16_t h) { p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8); }

/* One block of t at b (random quants, sane scales); mag[0..elems) bounds
 * each element's terms. */
void quant_blocks_make(enum dtype t, struct rng *r, uint8_t *b, float *mag)
{
    const size_t bytes = dtype_block_bytes(t);
    for (size_t i = 0; i < bytes; i++)
        b[i] = rng_next(r) % 16 == 0 ? 0xFF : (uint8_t)rng_next(r); /* all-ones quants now and then */
    const int elems = dtype_block_elems(t);
    uint16_t d = rand_f16(r), m = rand_f16(r);
    float m_abs = 0, per;
    switch (t) {
    case DTYPE_Q4_0: put_f16(b, d); per = 8; break;
    case DTYPE_Q4_1: put_f16(b, d), put_f16(b + 2, m), m_abs = fabsf(f16_to_f32(m)); per = 15; break;
    case DTYPE_Q5_0: put_f16(b, d); per = 16; break;
    case DTYPE_Q5_1: put_f16(b, d), put_f16(b + 2, m), m_abs = fabsf(f16_to_f32(m)); per = 31; break;
    case DTYPE_Q8_0: put_f16(b, d); per = 128; break;
    case DTYPE_Q4_K: put_f16(b, d), put_f16(b + 2, m), m_abs = 63 * fabsf(f16_to_f32(m)); per = 63 * 15; break;
    case DTYPE_Q5_K: put_f16(b, d), put_f16(b + 2, m), m_abs = 63 * fabsf(f16_to_f32(m)); per = 63 * 31; break;
    default: put_f16(b + 208, d); per = 128 * 32; break;
    }
    for (int i = 0; i < elems; i++)
        mag[i] = per * fabsf(f16_to_f32(d)) + m_abs;
}

float quant_blocks_unit(struct rng *r) { return (float)((double)(rng_next(r) >> 11) / 9007199254740992.0) * 2 - 1; }

