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

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* One block of a group: b[r] row r's block, NULL for a padding row (left
 * zero). Four bytes at a time: a chunk of a row is one 32-bit word. */
static void pack_q8_0(enum dtype t, const uint8_t *b[R8], uint8_t *o)
{
    for (int r = 0; r < R8; r++) {
        if (!b[r])
            continue;
        int8_t q[32];
        quants_32(t, b[r], q);
        o[2 * r] = b[r][0], o[2 * r + 1] = b[r][1];
        for (int c = 0; c < 8; c++)
            wr32(o + 16 + 32 * c + 4 * r, rd32((const uint8_t *)q + 4 * c) ^ 0x80808080u);
    }
}

/* Q4_K's qs group g holds sub-block 2g in its low nibbles, 2g + 1 in its high. */
static void pack_q4_k(const uint8_t *b[R8], uint8_t *o)
{
    for (int r = 0; r < R8; r++) {
        if (!b[r])
            continue;
        int sc[8], m[8];
        kquant_scale_min(b[r] + 4, sc, m);
        memcpy(o + 2 * r, b[r], 2), memcpy(o + 16 + 2 * r, b[r] + 2, 2);
        for (int s = 0; s < 8; s++) {
            o[32 + 8 * s + r] = (uint8_t)sc[s];
            o[96 + 16 * (s / 2) + 2 * r + s % 2] = (uint8_t)m[s];
        }
        for (int s = 0; s < 8; s++)
            for (int j = 0; j < 4; j++) {
                const uint8_t *qs = b[r] + 16 + 32 * (s / 2) + 4 * j;
                const uint32_t w0 = rd32(qs) >> (4 * (s % 2)), w1 = rd32(qs + 16) >> (4 * (s % 2));
                wr32(o + 160 + 128 * s + 32 * j + 4 * r, (w0 & 0x0F0F0F0Fu) | (w1 & 0x0F0F0F0Fu) << 4);
            }
    }
}

/* Q6_K's group g of 16 lies in one run of 64 low nibbles and one of 32
 * bit pairs: chunk j's low nibbles are the word at ql + 16 g % 64 + 4 j
 * shifted by 4 (g % 8 / 4), its top bits the word at qh + 16 g % 32 + 4 j
 * shifted by 2 (g % 8 / 2). */
static void pack_q6_k(const uint8_t *b[R8], uint8_t *o)
{
    for (int r = 0; r < R8; r++) {
        if (!b[r])
            continue;
        memcpy(o + 2 * r, b[r] + 208, 2);
        for (int g = 0; g < 16; g++) {
            o[16 + 8 * g + r] = b[r][192 + g];
            const int h = g / 8, k = g % 8;
            const uint8_t *ql = b[r] + 64 * h + 16 * k % 64, *qh = b[r] + 128 + 32 * h + 16 * k % 32;
            uint32_t lo[4], top = 0;
            for (int j = 0; j < 4; j++) {
                lo[j] = rd32(ql + 4 * j) >> (4 * (k / 4)) & 0x0F0F0F0Fu;
                top |= (rd32(qh + 4 * j) >> (2 * (k / 2)) & 0x03030303u) << (2 * j);
            }
            uint8_t *v = o + 144 + 96 * g + 4 * r;
            wr32(v, lo[0] | lo[2] << 4), wr32(v + 32, lo[1] | lo[3] << 4), wr32(v + 64, top);
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

struct repack {
    enum dtype t, p;
    const uint8_t *src;
    int64_t rows, nb;
    size_t row_bytes, block, out;
    uint8_t *dst;
};

static void repack_groups(void *arg, long g0, long g1)
{
    const struct repack *c = arg;
    for (long g = g0; g < g1; g++)
        for (int64_t i = 0; i < c->nb; i++) {
            uint8_t *o = c->dst + (size_t)(g * c->nb + i) * c->out;
            const uint8_t *b[R8];
            for (int r = 0; r < R8; r++) {
                const int64_t row = g * R8 + r;
                b[r] = row < c->rows ? c->src + (size_t)row * c->row_bytes + (size_t)i * c->block : NULL;
            }
            memset(o, 0, c->out);
            if (c->p == DTYPE_Q8_0_R8)
                pack_q8_0(c->t, b, o);
            else if (c->p == DTYPE_Q4_K_R8)
                pack_q4_k(b, o);
            else
                pack_q6_k(b, o);
        }
}

void quant_repack(struct threadpool *pool, enum dtype t, const void *src, int64_t rows, int64_t cols, void *dst)
{
    const enum dtype p = quant_repacked_type(t);
    CHECK(p != t && cols % dtype_block_elems(t) == 0);
    struct repack c = {t, p, src, rows, cols / dtype_block_elems(t), dtype_row_bytes(t, cols), dtype_block_bytes(t),
                       group_block_bytes(p), dst};
    threadpool_for(pool, (long)((rows + R8 - 1) / R8), 1, repack_groups, &c);
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
