/* GGUF tensor data to f32 and bf16 (see gguf_quant.h): the GGUF types
 * mapped to ours, checked, and decoded by core/dequant.c, whose values are
 * the Python `gguf` package's, bit for bit. */
#include "io/gguf_quant.h"

#include <stdio.h>
#include <string.h>

#include "core/bf16.h"
#include "core/dequant.h"

static const struct {
    enum ggml_type type;
    enum dtype dtype;
} kinds[] = {
    {GGML_TYPE_F32, DTYPE_F32},   {GGML_TYPE_F16, DTYPE_F16},   {GGML_TYPE_BF16, DTYPE_BF16},
    {GGML_TYPE_Q4_0, DTYPE_Q4_0}, {GGML_TYPE_Q4_1, DTYPE_Q4_1}, {GGML_TYPE_Q5_0, DTYPE_Q5_0},
    {GGML_TYPE_Q5_1, DTYPE_Q5_1}, {GGML_TYPE_Q8_0, DTYPE_Q8_0}, {GGML_TYPE_Q4_K, DTYPE_Q4_K},
    {GGML_TYPE_Q5_K, DTYPE_Q5_K}, {GGML_TYPE_Q6_K, DTYPE_Q6_K},
};

#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

int gguf_type_dtype(enum ggml_type t, enum dtype *out)
{
    for (int i = 0; i < N_KINDS; i++)
        if (kinds[i].type == t) {
            *out = kinds[i].dtype;
            return 1;
        }
    return 0;
}

int gguf_quant_supported(enum ggml_type t)
{
    enum dtype d;
    return gguf_type_dtype(t, &d);
}

/* Our type for t, checking that n is whole blocks of it. */
static int check_args(enum ggml_type t, int64_t n, enum dtype *d, struct err *e)
{
    if (!gguf_type_dtype(t, d)) {
        char list[200];
        size_t len = 0;
        list[0] = '\0';
        for (int i = 0; i < N_KINDS && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    dtype_name(kinds[i].dtype));
        /* Numbers without a name come back as "type 37". */
        const char *name = ggml_type_name(t);
        return err_set(e, "GGUF %s%s is not supported (supported: %s)", strncmp(name, "type ", 5) == 0 ? "" : "type ",
                       name, list);
    }
    if (n < 0)
        return err_set(e, "element count %lld is negative", (long long)n);
    if (n % dtype_block_elems(*d) != 0)
        return err_set(e, "%lld %s elements are not a whole number of blocks (%d elements each)", (long long)n,
                       dtype_name(*d), dtype_block_elems(*d));
    return 0;
}

int gguf_dequant_f32(enum ggml_type t, const void *src, int64_t n, float *dst, struct err *e)
{
    enum dtype d;
    if (check_args(t, n, &d, e))
        return -1;
    dtype_dequant_f32(d, src, n, dst);
    return 0;
}

int gguf_dequant_bf16(enum ggml_type t, const void *src, int64_t n, uint16_t *dst, struct err *e)
{
    enum dtype d;
    if (check_args(t, n, &d, e))
        return -1;
    /* Through a float buffer a chunk at a time (256 elements are whole blocks
     * of every type), rounding exactly what gguf_dequant_f32 gives. */
    enum { CHUNK = 256 };
    float y[CHUNK];
    const uint8_t *b = src;
    for (int64_t i = 0; i < n; i += CHUNK) {
        const int64_t m = n - i < CHUNK ? n - i : CHUNK;
        dtype_dequant_f32(d, b, m, y);
        b += dtype_row_bytes(d, m);
        for (int64_t j = 0; j < m; j++)
            dst[i + j] = f32_to_bf16(y[j]);
    }
    return 0;
}
