/* GGUF's value types and ggml's tensor types: names, block sizes, and the
 * decoding of one little-endian number of any value type (gguf_impl.h). */
#include <stdio.h>
#include <string.h>

#include "io/gguf_impl.h"

/* Block sizes as ggml defines them (ggml.c's type_traits). */
static const struct ggml_type_info ggml_types[GGML_TYPE_COUNT_] = {
    [GGML_TYPE_F32] = {"F32", 1, 4},         [GGML_TYPE_F16] = {"F16", 1, 2},
    [GGML_TYPE_Q4_0] = {"Q4_0", 32, 18},     [GGML_TYPE_Q4_1] = {"Q4_1", 32, 20},
    [GGML_TYPE_Q5_0] = {"Q5_0", 32, 22},     [GGML_TYPE_Q5_1] = {"Q5_1", 32, 24},
    [GGML_TYPE_Q8_0] = {"Q8_0", 32, 34},     [GGML_TYPE_Q8_1] = {"Q8_1", 32, 36},
    [GGML_TYPE_Q2_K] = {"Q2_K", 256, 84},    [GGML_TYPE_Q3_K] = {"Q3_K", 256, 110},
    [GGML_TYPE_Q4_K] = {"Q4_K", 256, 144},   [GGML_TYPE_Q5_K] = {"Q5_K", 256, 176},
    [GGML_TYPE_Q6_K] = {"Q6_K", 256, 210},   [GGML_TYPE_Q8_K] = {"Q8_K", 256, 292},
    [GGML_TYPE_IQ2_XXS] = {"IQ2_XXS", 0, 0}, [GGML_TYPE_IQ2_XS] = {"IQ2_XS", 0, 0},
    [GGML_TYPE_IQ3_XXS] = {"IQ3_XXS", 0, 0}, [GGML_TYPE_IQ1_S] = {"IQ1_S", 0, 0},
    [GGML_TYPE_IQ4_NL] = {"IQ4_NL", 32, 18}, [GGML_TYPE_IQ3_S] = {"IQ3_S", 0, 0},
    [GGML_TYPE_IQ2_S] = {"IQ2_S", 0, 0},     [GGML_TYPE_IQ4_XS] = {"IQ4_XS", 256, 136},
    [GGML_TYPE_I8] = {"I8", 1, 1},           [GGML_TYPE_I16] = {"I16", 1, 2},
    [GGML_TYPE_I32] = {"I32", 1, 4},         [GGML_TYPE_I64] = {"I64", 1, 8},
    [GGML_TYPE_F64] = {"F64", 1, 8},         [GGML_TYPE_IQ1_M] = {"IQ1_M", 0, 0},
    [GGML_TYPE_BF16] = {"BF16", 1, 2},       [GGML_TYPE_TQ1_0] = {"TQ1_0", 0, 0},
    [GGML_TYPE_TQ2_0] = {"TQ2_0", 0, 0},     [GGML_TYPE_MXFP4] = {"MXFP4", 32, 17},
};

const struct ggml_type_info *ggml_type_info_of(enum ggml_type t)
{
    unsigned u = (unsigned)t;
    return u < GGML_TYPE_COUNT_ && ggml_types[u].name ? &ggml_types[u] : NULL;
}

const char *ggml_type_name(enum ggml_type t)
{
    const struct ggml_type_info *ti = ggml_type_info_of(t);
    if (ti)
        return ti->name;
    static char buf[32];
    snprintf(buf, sizeof buf, "type %u", (unsigned)t);
    return buf;
}

int ggml_type_block_elems(enum ggml_type t)
{
    const struct ggml_type_info *ti = ggml_type_info_of(t);
    return ti ? ti->block_elems : 0;
}

size_t ggml_type_block_bytes(enum ggml_type t)
{
    const struct ggml_type_info *ti = ggml_type_info_of(t);
    return ti && ti->block_elems ? (size_t)ti->block_bytes : 0;
}

static const char *const value_type_names[] = {
    "UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",   "FLOAT32",
    "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64",
};

const char *gguf_value_type_name(enum gguf_value_type t)
{
    unsigned u = (unsigned)t;
    if (u < sizeof value_type_names / sizeof value_type_names[0])
        return value_type_names[u];
    static char buf[32];
    snprintf(buf, sizeof buf, "value type %u", u);
    return buf;
}

/* Bytes of one number of type t; 0 for STRING, ARRAY and unknown types. */
size_t gguf_scalar_size(uint32_t t)
{
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL:
        return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
        return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32:
        return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
    case GGUF_TYPE_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

bool gguf_is_signed_int(uint32_t t)
{
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

bool gguf_is_float(uint32_t t) { return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64; }

/* n little-endian bytes at p, zero-extended (byte by byte: p may be unaligned). */
uint64_t gguf_read_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

/* The number of type t at p, sign-extended for the signed types. */
int64_t gguf_num_int(uint32_t t, const unsigned char *p)
{
    size_t n = gguf_scalar_size(t);
    uint64_t u = gguf_read_le(p, n);
    if (gguf_is_signed_int(t) && n < 8 && (u >> (8 * n - 1)) & 1)
        u |= ~(uint64_t)0 << (8 * n); /* sign-extend */
    int64_t i;
    memcpy(&i, &u, sizeof i); /* two's complement reinterpretation, no UB */
    return i;
}

double gguf_num_float(uint32_t t, const unsigned char *p)
{
    if (t == GGUF_TYPE_FLOAT32) {
        uint32_t b = (uint32_t)gguf_read_le(p, 4);
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    uint64_t b = gguf_read_le(p, 8);
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}
