/* What every kernel set shares: which activation block a weight type takes
 * (float weights take the f32 row itself). */
#include "backend/quant/quant.h"

#include <string.h>

int quant_act_block(enum dtype weight)
{
    switch (weight) {
    case DTYPE_Q4_0:
    case DTYPE_Q4_1:
    case DTYPE_Q5_0:
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
    case DTYPE_Q8_0_R8:
        return QUANT_BLOCK_32;
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
    case DTYPE_Q4_K_R8:
    case DTYPE_Q6_K_R8:
        return QUANT_BLOCK_256;
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
        return QUANT_ACT_F32;
    default:
        return 0;
    }
}

size_t quant_act_row_bytes(enum dtype weight, int64_t n)
{
    switch (quant_act_block(weight)) {
    case QUANT_BLOCK_32:
        return (size_t)(n / QUANT_BLOCK_32) * sizeof(struct q8_32);
    case QUANT_BLOCK_256:
        return (size_t)(n / QUANT_BLOCK_256) * sizeof(struct q8_256);
    case QUANT_ACT_F32:
        return (size_t)n * sizeof(float);
    default:
        return 0;
    }
}

void quant_act_row(const struct quant_kernels *k, enum dtype weight, const float *x, int64_t n, void *out)
{
    if (quant_act_block(weight) == QUANT_ACT_F32)
        memcpy(out, x, (size_t)n * sizeof(float));
    else if (quant_act_block(weight) == QUANT_BLOCK_32)
        k->quantize_32(x, n, out);
    else {
        CHECK(quant_act_block(weight) == QUANT_BLOCK_256);
        k->quantize_256(x, n, out);
    }
}

float quant_dot(const struct quant_kernels *k, enum dtype weight, const void *w, const void *x, int64_t n)
{
    float out;
    k->tile[weight](w, 0, 1, x, 0, 1, n, &out, 1);
    return out;
}
