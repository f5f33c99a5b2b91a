/* Tests for io/gguf_quant: every supported type against vectors the Python
 * `gguf` package produced (tests/fixtures/gguf_quant/<TYPE>.bin, made by
 * tools/make_gguf_quant_fixture.py), bit for bit in f32 (NaN where the
 * package gives NaN) and in bf16; and the refusals (unsupported types by
 * name, partial blocks).
 *
 * Fixture format, little-endian: u32 n_elems, u32 n_bytes, the raw tensor
 * bytes, n_elems f32 (the package's dequantize), n_elems u16 (those rounded
 * to bf16 by the package). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf_quant.h"
#include "test_util.h"

TestSuite(gguf_quant);
TestSuite(gguf_quant_err);

struct vec {
    uint32_t n_elems, n_bytes;
    uint8_t *raw; /* at an odd address: the dequantiser must not assume alignment */
    float *f32;
    uint16_t *bf16;
    void *alloc;
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static struct vec load_vec(const char *type_name)
{
    char name[64];
    snprintf(name, sizeof name, "gguf_quant/%s.bin", type_name);
    const char *path = fixture_path(name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s (run tools/make_gguf_quant_fixture.py)", path);
    uint8_t hdr[8];
    cr_assert_eq(fread(hdr, 1, 8, f), 8, "%s: short header", path);
    struct vec v = {.n_elems = le32(hdr), .n_bytes = le32(hdr + 4)};
    cr_assert(v.n_elems > 0 && v.n_elems < (1u << 20) && v.n_bytes < (1u << 22), "%s: bad sizes",
              path);
    v.alloc = malloc(1 + v.n_bytes);
    v.f32 = malloc(v.n_elems * sizeof *v.f32);
    v.bf16 = malloc(v.n_elems * sizeof *v.bf16);
    cr_assert(v.alloc && v.f32 && v.bf16);
    v.raw = (uint8_t *)v.alloc + 1;
    cr_assert_eq(fread(v.raw, 1, v.n_bytes, f), v.n_bytes, "%s: short data", path);
    cr_assert_eq(fread(v.f32, 4, v.n_elems, f), v.n_elems, "%s: short f32", path);
    cr_assert_eq(fread(v.bf16, 2, v.n_elems, f), v.n_elems, "%s: short bf16", path);
    cr_assert_eq(fgetc(f), EOF, "%s: trailing bytes", path);
    fclose(f);
    return v;
}

static void free_vec(struct vec *v)
{
    free(v->alloc);
    free(v->f32);
    free(v->bf16);
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* Dequantises the fixture of t to f32 and bf16 and counts mismatches (an
 * f32 NaN matches a NaN; everything else must be the same bits). The bf16
 * run is repeated on all but the last block, so the final chunk of its
 * internal buffering is a partial one. */
static void check_fixture(enum ggml_type t, const char *type_name, int block_elems)
{
    struct vec v = load_vec(type_name);
    cr_assert_eq(v.n_elems % (uint32_t)block_elems, 0);
    struct err e = {{0}};

    float *y = malloc(v.n_elems * sizeof *y);
    cr_assert_not_null(y);
    cr_assert_eq(gguf_dequant_f32(t, v.raw, v.n_elems, y, &e), 0, "%s: %s", type_name, e.msg);
    long bad = 0, first = -1;
    for (uint32_t i = 0; i < v.n_elems; i++) {
        int ok = isnan(v.f32[i]) ? isnan(y[i]) : f32_bits(y[i]) == f32_bits(v.f32[i]);
        if (!ok && bad++ == 0)
            first = i;
    }
    cr_expect_eq(bad, 0, "%s f32: %ld of %u elements differ; first [%ld]: %a (0x%08x), want %a "
                 "(0x%08x)",
                 type_name, bad, v.n_elems, first, first < 0 ? 0.0 : (double)y[first],
                 first < 0 ? 0 : f32_bits(y[first]), first < 0 ? 0.0 : (double)v.f32[first],
                 first < 0 ? 0 : f32_bits(v.f32[first]));

    uint16_t *h = malloc(v.n_elems * sizeof *h);
    cr_assert_not_null(h);
    int64_t lens[2] = {v.n_elems, (int64_t)v.n_elems - block_elems};
    for (int r = 0; r < 2; r++) {
        memset(h, 0xAB, v.n_elems * sizeof *h);
        cr_assert_eq(gguf_dequant_bf16(t, v.raw, lens[r], h, &e), 0, "%s: %s", type_name, e.msg);
        bad = 0, first = -1;
        for (int64_t i = 0; i < lens[r]; i++)
            if (h[i] != v.bf16[i] && bad++ == 0)
                first = i;
        cr_expect_eq(bad, 0, "%s bf16 (n %lld): %ld elements differ; first [%ld]: 0x%04x, want "
                     "0x%04x",
                     type_name, (long long)lens[r], bad, first, first < 0 ? 0 : h[first],
                     first < 0 ? 0 : v.bf16[first]);
        for (int64_t i = lens[r]; i < v.n_elems; i++)
            cr_assert_eq(h[i], 0xABAB, "%s bf16: wrote past n (%lld)", type_name, (long long)i);
    }
    free(h);
    free(y);
    free_vec(&v);
}

Test(gguf_quant, f32) { check_fixture(GGML_TYPE_F32, "F32", 1); }
Test(gguf_quant, f16) { check_fixture(GGML_TYPE_F16, "F16", 1); }
Test(gguf_quant, bf16) { check_fixture(GGML_TYPE_BF16, "BF16", 1); }
Test(gguf_quant, q4_0) { check_fixture(GGML_TYPE_Q4_0, "Q4_0", 32); }
Test(gguf_quant, q4_1) { check_fixture(GGML_TYPE_Q4_1, "Q4_1", 32); }
Test(gguf_quant, q5_0) { check_fixture(GGML_TYPE_Q5_0, "Q5_0", 32); }
Test(gguf_quant, q5_1) { check_fixture(GGML_TYPE_Q5_1, "Q5_1", 32); }
Test(gguf_quant, q8_0) { check_fixture(GGML_TYPE_Q8_0, "Q8_0", 32); }
Test(gguf_quant, q4_k) { check_fixture(GGML_TYPE_Q4_K, "Q4_K", 256); }
Test(gguf_quant, q5_k) { check_fixture(GGML_TYPE_Q5_K, "Q5_K", 256); }
Test(gguf_quant, q6_k) { check_fixture(GGML_TYPE_Q6_K, "Q6_K", 256); }

/* ---- refusals ---------------------------------------------------------- */

static const enum ggml_type supported[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
    GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
};

static int is_supported(enum ggml_type t)
{
    for (size_t i = 0; i < sizeof supported / sizeof supported[0]; i++)
        if (supported[i] == t)
            return 1;
    return 0;
}

/* Every type number, known or not: the supported ones are reported so, the
 * others are refused by both entry points with a message naming the type. */
Test(gguf_quant_err, unsupported_types_named)
{
    uint8_t src[512] = {0};
    float y[256];
    uint16_t h[256];
    for (int i = 0; i < GGML_TYPE_COUNT_ + 3; i++) {
        enum ggml_type t = (enum ggml_type)i;
        if (is_supported(t)) {
            cr_expect(gguf_quant_supported(t), "%s should be supported", ggml_type_name(t));
            continue;
        }
        cr_expect(!gguf_quant_supported(t), "%s should not be supported", ggml_type_name(t));
        struct err e = {{0}};
        char name[64];
        snprintf(name, sizeof name, "%s", ggml_type_name(t));
        cr_expect_eq(gguf_dequant_f32(t, src, 256, y, &e), -1, "%s", name);
        cr_expect(strstr(e.msg, name) && strstr(e.msg, "not supported"), "'%s' lacks '%s'", e.msg,
                  name);
        e.msg[0] = '\0';
        cr_expect_eq(gguf_dequant_bf16(t, src, 256, h, &e), -1, "%s", name);
        cr_expect(strstr(e.msg, name) && strstr(e.msg, "not supported"), "'%s' lacks '%s'", e.msg,
                  name);
    }
}

Test(gguf_quant_err, message_lists_supported)
{
    struct err e = {{0}};
    float y[256];
    cr_assert_eq(gguf_dequant_f32(GGML_TYPE_IQ4_XS, "", 256, y, &e), -1);
    cr_expect(strstr(e.msg, "IQ4_XS is not supported"), "%s", e.msg);
    cr_expect(strstr(e.msg, "Q4_K") && strstr(e.msg, "Q6_K") && strstr(e.msg, "BF16"), "%s",
              e.msg);
}

/* n not whole blocks (or negative): refused naming n and the block size,
 * and nothing is written. */
Test(gguf_quant_err, partial_blocks)
{
    static const struct {
        enum ggml_type t;
        int64_t n;
        const char *block;
    } cases[] = {
        {GGML_TYPE_Q4_K, 255, "256"}, {GGML_TYPE_Q6_K, 257, "256"}, {GGML_TYPE_Q5_K, 128, "256"},
        {GGML_TYPE_Q8_0, 48, "32"},   {GGML_TYPE_Q4_0, 1, "32"},    {GGML_TYPE_Q5_1, 33, "32"},
        {GGML_TYPE_F32, -1, "1"},
    };
    uint8_t src[1024] = {0};
    float y[512];
    uint16_t h[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char n_str[32];
        snprintf(n_str, sizeof n_str, "%lld", (long long)cases[i].n);
        struct err e = {{0}};
        memset(y, 0x5A, sizeof y);
        memset(h, 0x5A, sizeof h);
        cr_expect_eq(gguf_dequant_f32(cases[i].t, src, cases[i].n, y, &e), -1, "n %s", n_str);
        cr_expect(strstr(e.msg, n_str) && strstr(e.msg, cases[i].block), "'%s' lacks %s or %s",
                  e.msg, n_str, cases[i].block);
        e.msg[0] = '\0';
        cr_expect_eq(gguf_dequant_bf16(cases[i].t, src, cases[i].n, h, &e), -1, "n %s", n_str);
        cr_expect(strstr(e.msg, n_str) && strstr(e.msg, cases[i].block), "'%s' lacks %s or %s",
                  e.msg, n_str, cases[i].block);
        for (size_t j = 0; j < 512; j++) {
            cr_assert_eq(f32_bits(y[j]), 0x5A5A5A5Au, "f32 output written on error");
            cr_assert_eq(h[j], 0x5A5A, "bf16 output written on error");
        }
    }
}

Test(gguf_quant_err, zero_elements)
{
    struct err e = {{0}};
    cr_expect_eq(gguf_dequant_f32(GGML_TYPE_Q4_K, NULL, 0, NULL, &e), 0, "%s", e.msg);
    cr_expect_eq(gguf_dequant_bf16(GGML_TYPE_Q8_0, NULL, 0, NULL, &e), 0, "%s", e.msg);
}
