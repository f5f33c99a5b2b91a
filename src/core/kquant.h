/* The packed scales of GGUF's Q4_K and Q5_K super-blocks, shared by the
 * dequantiser (io/gguf_quant.c) and the dot products (backend/quant). */
#ifndef INFER_CORE_KQUANT_H
#define INFER_CORE_KQUANT_H

#include <stdint.h>

/* The 12 bytes at s hold eight 6-bit scales sc[] and eight 6-bit mins m[],
 * one pair per 32-element sub-block:
 *   bytes 0-3:  sc[0..3] in the low 6 bits, the top 2 bits of sc[4..7]
 *   bytes 4-7:  m[0..3] in the low 6 bits, the top 2 bits of m[4..7]
 *   bytes 8-11: the low 4 bits of sc[4..7] (low nibble) and m[4..7] (high) */
static inline void kquant_scale_min(const uint8_t *s, int sc[8], int m[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 0x3F;
        m[j] = s[j + 4] & 0x3F;
        sc[j + 4] = (s[j + 8] & 0x0F) | (s[j] >> 6) << 4;
        m[j + 4] = (s[j + 8] >> 4) | (s[j + 4] >> 6) << 4;
    }
}

#endif
