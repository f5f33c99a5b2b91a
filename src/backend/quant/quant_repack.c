/* Weights packed by 8 rows (quant_repack.h, core/dtype.h). A group of 8
 * rows is stored block after block; within a block, the 8 rows' scales
 * first, then their quants as u8, 4 bytes of each row in turn: a 32-byte
 * vector holds one 4-element chunk of all 8 rows, so one u8 x s8 dot of it
 * against the activation's chunk broadcast sums that chunk for every row at
 * once, each row in its own 32-bit lane.
 *
 * DTYPE_Q8_0_R8 (from Q8_0, Q5_0, Q4_0), 272 bytes a block:
 *   the 8 rows' f16 d (16 bytes), then for each chunk c of the 32 quants
 *   rows 0..7's bytes 4c..4c+3 with 128 added (256 bytes); the +128 comes
 *   back out with the activation block's sum.
 * DTYPE_Q4_K_R8, 1184 bytes a super-block:
 *   f16 d (16 bytes), f16 dmin (16), sc[s][r] (64: sub-block s, row r,
 *   decoded from the 12 packed bytes), then the mins as pairs m[2p][r],
 *   m[2p+1][r] for p < 4, r < 8 (64), then per sub-block s four vectors
 *   (1024): vector j holds chunk j of the sub-block in its low nibbles and
 *   chunk j + 4 in its high ones.
 * DTYPE_Q6_K_R8, 1680 bytes a super-block (the 8 rows' own bytes):
 *   f16 d (16), int8 scale[g][r] (128: group g of 16 elements), then per
 *   group three vectors (1536): two of nibbles (vector j: chunk j low,
 *   chunk j + 2 high) and one of the four chunks' top two bits (chunk j's
 *   at bits 2j, 2j + 1). */
#include "backend/quant/quant_repack.h"

#include <string.h>

#include "core/bf16.h"
#include "core/kquant.h"

#define R8 QUANT_R8_ROWS

/* Q4_0 and Q5_0 pack as Q8_0: their values d (q - 8) and d (q - 16) are
 * Q8_0's d q exactly, in more bytes (34 a block for 18 and 22) that take a
 * fraction of the instructions to read. */
enum dtype quant_repacked_type(enum dtype t)
{
    switch (t) {
    case DTYPE_Q8_0:
    case DTYPE_Q5_0:
    case DTYPE_Q4_0:
        return DTYPE_Q8_0_R8;
    case DTYPE_Q4_K:
        return DTYPE_Q4_K_R8;
    case DTYPE_Q6_K:
        return DTYPE_Q6_K_R8;
    default:
        return t;
    }
}

/* A 32-block's signed quants (Q8_0, Q5_0 or Q4_0). */
static void quants_32(enum dtype t, const uint8_t *b, int8_t q[32])
{
    if (t == DTYPE_Q8_0) {
        memcpy(q, b + 2, 32);
        return;
    }
    const uint32_t qh = t == DTYPE_Q5_0 ? (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24 : 0;
    const uint8_t *qs = b + (t == DTYPE_Q5_0 ? 6 : 2);
    const int off = t == DTYPE_Q5_0 ? 16 : 8;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(((qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4) - off);
        q[j + 16] = (int8_t)(((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - off);
    }
}

/* A Q4_K super-block's 256 quants (0..15) in element order. */
static void quants_q4_k(const uint8_t *b, uint8_t q[256])
{
    for (int e = 0; e < 256; e++)
        q[e] = (b[16 + 32 * (e / 64) + e % 32] >> (4 * (e / 32 % 2))) & 0x0F;
}

/* A Q6_K super-block's 256 quants (0..63) in element order. */
static void quants_q6_k(const uint8_t *b, uint8_t q[256])
{
    for (int e = 0; e < 256; e++) {
        const int half = e / 128, r = e % 128;
        q[e] = (uint8_t)(((b[64 * half + r % 64] >> (4 * (r / 64))) & 0x0F) |
                         ((b[128 + 32 * half + r % 32] >> (2 * (r / 32))) & 0x03) << 4);
    }
}

/* Byte 4 r + i of the vector that holds chunk c of 8 rows' quants q[r]. */
#define CHUNK_BYTE(q, r, c, i) ((q)[r][4 * (c) + (i)])

/* One block of a group: b[r] row r's block, NULL for a padding row. */
static void pack_q8_0(enum dtype t, const uint8_t *b[R8], uint8_t *o)
{
    int8_t q[R8][32] = {{0}};
    for (int r = 0; r < R8; r++)
        if (b[r]) {
            quants_32(t, b[r], q[r]);
            o[2 * r] = b[r][0], o[2 * r + 1] = b[r][1];
        }
    for (int c = 0; c < 8; c++)
        for (int r = 0; r < R8; r++)
            for (int i = 0; i < 4; i++)
                o[16 + 32 * c + 4 * r + i] = (uint8_t)CHUNK_BYTE(q, r, c, i) ^ 0x80;
}

static void pack_q4_k(const uint8_t *b[R8], uint8_t *o)
{
    uint8_t q[R8][256] = {{0}};
    for (int r = 0; r < R8; r++)
        if (b[r]) {
            quants_q4_k(b[r], q[r]);
            int sc[8], m[8];
            kquant_scale_min(b[r] + 4, sc, m);
            memcpy(o + 2 * r, b[r], 2), memcpy(o + 16 + 2 * r, b[r] + 2, 2);
            for (int s = 0; s < 8; s++) {
                o[32 + 8 * s + r] = (uint8_t)sc[s];
                o[96 + 16 * (s / 2) + 2 * r + s % 2] = (uint8_t)m[s];
            }
        }
    for (int s = 0; s < 8; s++)
        for (int j = 0; j < 4; j++)
            for (int r = 0; r < R8; r++)
                for (int i = 0; i < 4; i++)
                    o[160 + 128 * s + 32 * j + 4 * r + i] =
                        (uint8_t)(CHUNK_BYTE(q, r, 8 * s + j, i) | CHUNK_BYTE(q, r, 8 * s + j + 4, i) << 4);
}

static void pack_q6_k(const uint8_t *b[R8], uint8_t *o)
{
    uint8_t q[R8][256] = {{0}};
    for (int r = 0; r < R8; r++)
        if (b[r]) {
            quants_q6_k(b[r], q[r]);
            memcpy(o + 2 * r, b[r] + 208, 2);
            for (int g = 0; g < 16; g++)
                o[16 + 8 * g + r] = b[r][192 + g];
        }
    for (int g = 0; g < 16; g++) {
        uint8_t *v = o + 144 + 96 * g;
        for (int r = 0; r < R8; r++)
            for (int i = 0; i < 4; i++) {
                uint8_t top = 0;
                for (int j = 0; j < 4; j++)
                    top |= (uint8_t)((CHUNK_BYTE(q, r, 4 * g + j, i) >> 4) << (2 * j));
                for (int j = 0; j < 2; j++)
                    v[32 * j + 4 * r + i] = (uint8_t)((CHUNK_BYTE(q, r, 4 * g + j, i) & 0x0F) |
                                                      (CHUNK_BYTE(q, r, 4 * g + j + 2, i) & 0x0F) << 4);
                v[64 + 4 * r + i] = top;
            }
    }
}

/* Bytes of one packed block of a group (8 rows' blocks). */
static size_t group_block_bytes(enum dtype packed) { return R8 * dtype_block_bytes(packed); }

size_t quant_repack_bytes(enum dtype t, int64_t rows, int64_t cols)
{
    const enum dtype p = quant_repacked_type(t);
    CHECK(p != t);
    const int64_t groups = (rows + R8 - 1) / R8;
    return (size_t)groups * (size_t)(cols / dtype_block_elems(t)) * group_block_bytes(p);
}

void quant_repack(enum dtype t, const void *src, int64_t rows, int64_t cols, void *dst)
{
    const enum dtype p = quant_repacked_type(t);
    CHECK(p != t && cols % dtype_block_elems(t) == 0);
    const int64_t nb = cols / dtype_block_elems(t), groups = (rows + R8 - 1) / R8;
    const size_t row_bytes = dtype_row_bytes(t, cols), block = dtype_block_bytes(t), out = group_block_bytes(p);
    for (int64_t g = 0; g < groups; g++)
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *o = (uint8_t *)dst + (size_t)(g * nb + i) * out;
            const uint8_t *b[R8];
            for (int r = 0; r < R8; r++) {
                const int64_t row = g * R8 + r;
                b[r] = row < rows ? (const uint8_t *)src + (size_t)row * row_bytes + (size_t)i * block : NULL;
            }
            memset(o, 0, out);
            if (p == DTYPE_Q8_0_R8)
                pack_q8_0(t, b, o);
            else if (p == DTYPE_Q4_K_R8)
                pack_q4_k(b, o);
            else
                pack_q6_k(b, o);
        }
}

/* Quant e (of the block's 32 or 256) of lane r, from a packed block o. */
static int packed_quant(enum dtype p, const uint8_t *o, int r, int e)
{
    const int c = e / 4, i = 4 * r + e % 4;
    if (p == DTYPE_Q8_0_R8)
        return (int8_t)(o[16 + 32 * c + i] ^ 0x80);
    if (p == DTYPE_Q4_K_R8)
        return o[160 + 128 * (c / 8) + 32 * (c % 4) + i] >> (4 * (c % 8 / 4)) & 0x0F;
    const uint8_t *v = o + 144 + 96 * (c / 4);
    return (v[32 * (c % 2) + i] >> (4 * (c % 4 / 2)) & 0x0F) | (v[64 + i] >> (2 * (c % 4)) & 0x03) << 4;
}

/* The dequantiser's formulas and order (core/dequant.c), so the values are
 * bit for bit the file's. */
void quant_packed_row_f32(enum dtype p, const void *data, int64_t row, int64_t cols, float *y)
{
    const int elems = dtype_block_elems(p);
    const int64_t nb = cols / elems;
    const int r = (int)(row % R8);
    const size_t out = group_block_bytes(p);
    const uint8_t *g = (const uint8_t *)data + (size_t)(row / R8 * nb) * out;
    for (int64_t i = 0; i < nb; i++, y += elems) {
        const uint8_t *o = g + (size_t)i * out;
        const float d = f16_to_f32((uint16_t)(o[2 * r] | o[2 * r + 1] << 8));
        if (p == DTYPE_Q8_0_R8) {
            for (int e = 0; e < 32; e++)
                y[e] = d * (float)packed_quant(p, o, r, e);
        } else if (p == DTYPE_Q4_K_R8) {
            const float dmin = f16_to_f32((uint16_t)(o[16 + 2 * r] | o[17 + 2 * r] << 8));
            for (int s = 0; s < 8; s++) {
                const float dl = d * (float)o[32 + 8 * s + r], ml = dmin * (float)o[96 + 16 * (s / 2) + 2 * r + s % 2];
                for (int e = 32 * s; e < 32 * s + 32; e++)
                    y[e] = dl * (float)packed_quant(p, o, r, e) - ml;
            }
        } else {
            CHECK(p == DTYPE_Q6_K_R8);
            for (int e = 0; e < 256; e++) {
                const float dl = d * (float)(int8_t)o[16 + 8 * (e / 16) + r];
                y[e] = dl * (float)(packed_quant(p, o, r, e) - 32);
            }
        }
    }
}
