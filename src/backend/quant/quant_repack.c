/* Q8_0 packed by 8 rows (quant_repack.h, core/dtype.h), from Q8_0, Q5_0
 * or Q4_0 rows. A group's block:
 * the 8 rows' f16 d (16 bytes), then for each 4-byte chunk c of the 32
 * quants, rows 0..7's bytes 4c..4c+3 with 128 added (u8): a 32-byte vector
 * holds one chunk of all 8 rows, so one u8 x s8 dot of it against the
 * activation chunk broadcast sums the chunk for every row at once, the +128
 * taken back with the activation block's sum. */
#include "backend/quant/quant_repack.h"

#include <string.h>

#include "core/bf16.h"

#define R8_BLOCK (2 * QUANT_R8_ROWS + 32 * QUANT_R8_ROWS) /* 272 bytes */

/* Q4_0 and Q5_0 too: their values d (q - 8) and d (q - 16) are Q8_0's d q
 * exactly, in more bytes (34 a block for 18 and 22) that take a fraction of
 * the instructions to read. */
enum dtype quant_repacked_type(enum dtype t)
{
    return t == DTYPE_Q8_0 || t == DTYPE_Q5_0 || t == DTYPE_Q4_0 ? DTYPE_Q8_0_R8 : t;
}

/* Block b's 32 signed quants (Q8_0, Q5_0 or Q4_0). */
static void block_quants(enum dtype t, const uint8_t *b, int8_t q[32])
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

size_t quant_repack_bytes(enum dtype t, int64_t rows, int64_t cols)
{
    CHECK(quant_repacked_type(t) == DTYPE_Q8_0_R8);
    const int64_t groups = (rows + QUANT_R8_ROWS - 1) / QUANT_R8_ROWS;
    return (size_t)groups * (size_t)(cols / 32) * R8_BLOCK;
}

void quant_repack(enum dtype t, const void *src, int64_t rows, int64_t cols, void *dst)
{
    CHECK(quant_repacked_type(t) == DTYPE_Q8_0_R8 && cols % 32 == 0);
    const int64_t nb = cols / 32, groups = (rows + QUANT_R8_ROWS - 1) / QUANT_R8_ROWS;
    const size_t row_bytes = dtype_row_bytes(t, cols), block = dtype_block_bytes(t);
    for (int64_t g = 0; g < groups; g++)
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *o = (uint8_t *)dst + ((size_t)(g * nb + i)) * R8_BLOCK;
            for (int r = 0; r < QUANT_R8_ROWS; r++) {
                const int64_t row = g * QUANT_R8_ROWS + r;
                const uint8_t *b = row < rows ? (const uint8_t *)src + (size_t)row * row_bytes + (size_t)i * block : NULL;
                int8_t q[32] = {0};
                if (b)
                    block_quants(t, b, q);
                o[2 * r] = b ? b[0] : 0, o[2 * r + 1] = b ? b[1] : 0;
                for (int j = 0; j < 32; j++)
                    o[16 + 32 * (j / 4) + 4 * r + j % 4] = (uint8_t)q[j] ^ 0x80;
            }
        }
}

void quant_packed_row_f32(enum dtype packed, const void *data, int64_t r, int64_t cols, float *y)
{
    CHECK(packed == DTYPE_Q8_0_R8);
    const int64_t nb = cols / 32, lane = r % QUANT_R8_ROWS;
    const uint8_t *g = (const uint8_t *)data + (size_t)(r / QUANT_R8_ROWS * nb) * R8_BLOCK;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *o = g + (size_t)i * R8_BLOCK;
        const float d = f16_to_f32((uint16_t)(o[2 * lane] | o[2 * lane + 1] << 8));
        for (int j = 0; j < 32; j++)
            y[32 * i + j] = d * (float)(int8_t)(o[16 + 32 * (j / 4) + 4 * lane + j % 4] ^ 0x80);
    }
}
