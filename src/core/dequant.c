/* The values of the block types (core/dequant.h).
 *
 * The reference is the Python `gguf` package's dequantize() (quants.py),
 * which works in numpy float32: every value here is computed with the same
 * IEEE float32 operations in the same order, so the results agree bit for
 * bit:
 *  - the sub-block factors are formed first, d * sc and dmin * m, then
 *    multiplied by the quant, never d * (sc * q);
 *  - the offset forms are (d * q) + m (Q4_1, Q5_1) and (d * sc) * q -
 *    (dmin * m) (Q4_K, Q5_K), each product rounded before the add;
 *  - no fused multiply-adds: the build is -std=c11, under which GCC does not
 *    contract a * b + c (-ffp-contract=off), and float arithmetic must not be
 *    evaluated in a wider format (checked below).
 * As it happens the products are all exact (an fp16 scale has an 11-bit
 * significand, the integer factors at most 7 + 5 more bits, no overflow or
 * underflow), so the single rounding that decides the result is that of the
 * final add or subtract; following the package's order keeps that true
 * without relying on the argument. Integer-to-float and f16 -> f32
 * conversions are exact too.
 *
 * Blocks are read byte by byte (tensor data in a mapping need not be
 * aligned); multi-byte fields are little-endian, as on the hosts we run on. */
#include "core/dequant.h"

#include <float.h>
#include <string.h>

#include "core/bf16.h"
#include "core/kquant.h"

#if FLT_EVAL_METHOD != 0
#error "dequant.c needs float arithmetic evaluated in float (FLT_EVAL_METHOD 0)"
#endif

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static float rd_f16(const uint8_t *p)
{
    return f16_to_f32(rd16(p));
}

/* F32, F16 and BF16 are plain arrays (a "block" of one element) and are
 * converted in runs, in dequant_run below. */

/* ---- 32-element blocks ------------------------------------------------- */

/* Q4_0, 18 bytes: f16 d, then 16 bytes of 4-bit quants. Byte j holds
 * element j in its low nibble and element j + 16 in its high nibble.
 * y = d * (q - 8). */
static void dq_q4_0(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((qs[j] & 0x0F) - 8);
        y[j + 16] = d * (float)((qs[j] >> 4) - 8);
    }
}

/* Q4_1, 20 bytes: f16 d, f16 m, then the nibbles as in Q4_0.
 * y = (d * q) + m. */
static void dq_q4_1(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    float m = rd_f16(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(qs[j] & 0x0F) + m;
        y[j + 16] = d * (float)(qs[j] >> 4) + m;
    }
}

/* The fifth bits of Q5_0/Q5_1: a little-endian u32 whose bit j is the
 * high bit of element j. */
static uint32_t rd_qh32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q5_0, 22 bytes: f16 d, u32 qh, 16 bytes of low nibbles (as in Q4_0).
 * q = nibble | (bit j of qh) << 4; y = d * (q - 16). */
static void dq_q5_0(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    uint32_t qh = rd_qh32(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        int lo = (int)(qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
        int hi = (int)(qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        y[j] = d * (float)(lo - 16);
        y[j + 16] = d * (float)(hi - 16);
    }
}

/* Q5_1, 24 bytes: f16 d, f16 m, u32 qh, 16 bytes of low nibbles.
 * y = (d * q) + m, q as in Q5_0 without the offset. */
static void dq_q5_1(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    float m = rd_f16(b + 2);
    uint32_t qh = rd_qh32(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        int lo = (int)(qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4;
        int hi = (int)(qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        y[j] = d * (float)lo + m;
        y[j + 16] = d * (float)hi + m;
    }
}

/* Q8_0, 34 bytes: f16 d, 32 signed bytes q. y = q * d. */
static void dq_q8_0(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    for (int j = 0; j < 32; j++)
        y[j] = (float)(int8_t)b[2 + j] * d;
}

/* ---- 256-element K-quant super-blocks ---------------------------------- */

/* Q4_K and Q5_K's 12 bytes of scales: core/kquant.h. */

/* Q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes of scales, 128 bytes of
 * nibbles. The nibbles come in 4 groups of 32 bytes; group g holds
 * sub-block 2g in its low nibbles and sub-block 2g + 1 in its high ones.
 * y = (d * sc) * q - (dmin * m), both sub-block factors rounded first. */
static void dq_q4_k(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    float dmin = rd_f16(b + 2);
    int sc[8], m[8];
    kquant_scale_min(b + 4, sc, m);
    const uint8_t *qs = b + 16;
    for (int i = 0; i < 8; i++) {
        float dl = d * (float)sc[i];
        float ml = dmin * (float)m[i];
        const uint8_t *q = qs + 32 * (i / 2);
        int shift = 4 * (i % 2);
        for (int l = 0; l < 32; l++)
            y[32 * i + l] = dl * (float)((q[l] >> shift) & 0x0F) - ml;
    }
}

/* Q5_K, 176 bytes: f16 d, f16 dmin, 12 bytes of scales, 32 bytes qh, 128
 * bytes of nibbles (laid out as in Q4_K). Bit i of qh[l] is the fifth bit
 * of element l of sub-block i. y = (d * sc) * q - (dmin * m). */
static void dq_q5_k(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    float dmin = rd_f16(b + 2);
    int sc[8], m[8];
    kquant_scale_min(b + 4, sc, m);
    const uint8_t *qh = b + 16;
    const uint8_t *qs = b + 48;
    for (int i = 0; i < 8; i++) {
        float dl = d * (float)sc[i];
        float ml = dmin * (float)m[i];
        const uint8_t *q = qs + 32 * (i / 2);
        int shift = 4 * (i % 2);
        for (int l = 0; l < 32; l++) {
            int v = ((q[l] >> shift) & 0x0F) | ((qh[l] >> i) & 1) << 4;
            y[32 * i + l] = dl * (float)v - ml;
        }
    }
}

/* Q6_K, 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits),
 * 16 signed 8-bit scales (one per 16 elements), f16 d last. Each half of
 * 128 elements uses 64 bytes of ql and 32 of qh: element r (0..127) of the
 * half takes nibble r / 64 of ql[r % 64] and bit pair r / 32 of qh[r % 32].
 * y = (d * scale) * (q - 32). */
static void dq_q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b;
    const uint8_t *qh = b + 128;
    const uint8_t *scales = b + 192;
    float d = rd_f16(b + 208);
    for (int half = 0; half < 2; half++) {
        for (int r = 0; r < 128; r++) {
            int e = 128 * half + r;
            int lo = (ql[64 * half + r % 64] >> (4 * (r / 64))) & 0x0F;
            int hi = (qh[32 * half + r % 32] >> (2 * (r / 32))) & 0x03;
            float dl = d * (float)(int8_t)scales[e / 16];
            y[e] = dl * (float)((lo | hi << 4) - 32);
        }
    }
}

/* ------------------------------------------------------------------------ */

void dtype_dequant_f32(enum dtype t, const void *src, int64_t n, float *y)
{
    CHECK(n % dtype_block_elems(t) == 0);
    const uint8_t *b = src;
    switch (t) {
    case DTYPE_F32:
        if (n > 0) /* memcpy wants valid pointers even for no bytes */
            memcpy(y, b, (size_t)n * 4);
        return;
    case DTYPE_F16:
        for (int64_t i = 0; i < n; i++)
            y[i] = rd_f16(b + 2 * i);
        return;
    case DTYPE_BF16: /* the upper half of an f32: exact, NaN payloads kept */
        for (int64_t i = 0; i < n; i++)
            y[i] = bf16_to_f32(rd16(b + 2 * i));
        return;
    default:
        break;
    }
    void (*block)(const uint8_t *, float *) = NULL;
    switch (t) {
    case DTYPE_Q4_0: block = dq_q4_0; break;
    case DTYPE_Q4_1: block = dq_q4_1; break;
    case DTYPE_Q5_0: block = dq_q5_0; break;
    case DTYPE_Q5_1: block = dq_q5_1; break;
    case DTYPE_Q8_0: block = dq_q8_0; break;
    case DTYPE_Q4_K: block = dq_q4_k; break;
    case DTYPE_Q5_K: block = dq_q5_k; break;
    case DTYPE_Q6_K: block = dq_q6_k; break;
    default: CHECK(!"dtype_dequant_f32: not a float or block type");
    }
    const int elems = dtype_block_elems(t);
    const size_t bytes = dtype_block_bytes(t);
    for (int64_t i = 0; i < n / elems; i++)
        block(b + (size_t)i * bytes, y + i * elems);
}
