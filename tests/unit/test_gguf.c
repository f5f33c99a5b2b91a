/* Tests for io/gguf: files written here by a tiny GGUF writer (gguf_builder.h),
 * read back through the typed getters; hand-broken files, each refused with
 * a message naming the file and the problem; every truncation of a valid
 * file and random byte mutations (no crash, no read outside the mapping,
 * under AddressSanitizer in `make test`); and, when it is present, a real
 * llama.cpp file (Gemma 3 270M, Q4_K_M). Every test works in its own
 * mkdtemp directory, removed by the suite's fini. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf.h"
#include "gguf_builder.h"
#include "test_util.h"


TestSuite(gguf_read, .init = test_tmp_setup, .fini = test_tmp_teardown);
TestSuite(gguf_bad, .init = test_tmp_setup, .fini = test_tmp_teardown);
TestSuite(gguf_real);

/* ---- a valid file with every value type ---------------------------------- */

#define N_FULL_KV 25 /* without general.alignment */

static uint8_t data_byte(size_t i) { return (uint8_t)(i * 7 + 1); }

/* Every scalar type, arrays of numbers and strings, three tensors (F32
 * [4, 2], Q8_0 [64, 2], F16 [3]); the last tensor ends the file, so every
 * shorter prefix is a truncated file. alignment 0: general.alignment absent. */
static void build_full(struct gb *b, uint32_t version, uint32_t alignment)
{
    gb_header(b, version, 3, N_FULL_KV + (alignment != 0));
    gb_key(b, "u8", GGUF_TYPE_UINT8), gb_u8(b, 200);
    gb_key(b, "i8", GGUF_TYPE_INT8), gb_u8(b, (uint8_t)-100);
    gb_key(b, "u16", GGUF_TYPE_UINT16), gb_u16(b, 60000);
    gb_key(b, "i16", GGUF_TYPE_INT16), gb_u16(b, (uint16_t)-30000);
    gb_key(b, "u32", GGUF_TYPE_UINT32), gb_u32(b, 4000000000u);
    gb_key(b, "i32", GGUF_TYPE_INT32), gb_u32(b, (uint32_t)-2000000000);
    gb_key(b, "u64", GGUF_TYPE_UINT64), gb_u64(b, (uint64_t)1 << 40);
    gb_key(b, "u64_big", GGUF_TYPE_UINT64), gb_u64(b, (uint64_t)1 << 63);
    gb_key(b, "i64", GGUF_TYPE_INT64), gb_u64(b, (uint64_t)INT64_MIN);
    gb_key(b, "f32", GGUF_TYPE_FLOAT32), gb_f32(b, -1.5f);
    gb_key(b, "f64", GGUF_TYPE_FLOAT64), gb_f64(b, 0.1);
    gb_key(b, "yes", GGUF_TYPE_BOOL), gb_u8(b, 1);
    gb_key(b, "no", GGUF_TYPE_BOOL), gb_u8(b, 0);
    gb_key(b, "general.name", GGUF_TYPE_STRING), gb_str(b, "tiny \xc3\xa9");
    gb_key(b, "empty", GGUF_TYPE_STRING), gb_str(b, "");
    gb_key(b, "nul", GGUF_TYPE_STRING), gb_strn(b, "a\0b", 3);
    gb_key(b, "arr.i32", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_INT32), gb_u64(b, 3);
    gb_u32(b, 1), gb_u32(b, (uint32_t)-2), gb_u32(b, 2147483647);
    gb_key(b, "arr.i8", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_INT8), gb_u64(b, 2);
    gb_u8(b, 0x80), gb_u8(b, 0x7f);
    gb_key(b, "arr.u16", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_UINT16), gb_u64(b, 1), gb_u16(b, 65535);
    gb_key(b, "arr.u64", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_UINT64), gb_u64(b, 2);
    gb_u64(b, 5), gb_u64(b, UINT64_MAX);
    gb_key(b, "arr.f32", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_FLOAT32), gb_u64(b, 2);
    gb_f32(b, 0.5f), gb_f32(b, -2.75f);
    gb_key(b, "arr.f64", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_FLOAT64), gb_u64(b, 1), gb_f64(b, 1e300);
    gb_key(b, "arr.bool", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_BOOL), gb_u64(b, 2), gb_u8(b, 0), gb_u8(b, 1);
    gb_key(b, "arr.str", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_STRING), gb_u64(b, 3);
    gb_str(b, "<s>"), gb_str(b, ""), gb_str(b, "hello world");
    /* an empty array is legal */
    gb_key(b, "arr.empty", GGUF_TYPE_ARRAY), gb_u32(b, GGUF_TYPE_UINT32), gb_u64(b, 0);
    if (alignment)
        gb_key(b, "general.alignment", GGUF_TYPE_UINT32), gb_u32(b, alignment);
    uint64_t align = alignment ? alignment : 32;
    uint64_t off_b = (32 + align - 1) / align * align, off_c = (off_b + 136 + align - 1) / align * align;
    gb_tinfo(b, "a", 2, (uint64_t[]){4, 2}, GGML_TYPE_F32, 0);
    gb_tinfo(b, "blk.0.b", 2, (uint64_t[]){64, 2}, GGML_TYPE_Q8_0, off_b);
    gb_tinfo(b, "c", 1, (uint64_t[]){3}, GGML_TYPE_F16, off_c);
    gb_pad(b, align);
    for (size_t i = 0; i < off_c + 6; i++)
        gb_u8(b, data_byte(i));
}

static struct gguf_file *open_ok(const char *path)
{
    struct err e = {{0}};
    struct gguf_file *f = gguf_open(path, &e);
    cr_assert_not_null(f, "gguf_open(%s): %s", path, e.msg);
    return f;
}

/* gguf_open must fail with a message naming the file and containing want. */
static void expect_fail(const char *path, const char *want)
{
    struct err e = {{0}};
    struct gguf_file *f = gguf_open(path, &e);
    if (f)
        gguf_close(f);
    cr_assert_null(f, "gguf_open(%s) should fail with '%s'", path, want);
    cr_assert(strstr(e.msg, path), "message lacks the path: %s", e.msg);
    cr_assert(strstr(e.msg, want), "message lacks '%s': %s", want, e.msg);
}

static void expect_bytes_fail(struct gb *b, const char *want)
{
    struct tpath p = gb_write(b, "bad.gguf");
    expect_fail(p.s, want);
}

/* ---- reading back -------------------------------------------------------- */

static int64_t get_int(const struct gguf_file *f, const char *key)
{
    struct err e = {{0}};
    int64_t v = 0;
    cr_assert_eq(gguf_get_int(f, key, &v, &e), 0, "%s: %s", key, e.msg);
    return v;
}

static void check_scalars(const struct gguf_file *f)
{
    struct err e = {{0}};
    cr_assert_eq(f->n_kv, N_FULL_KV);
    cr_assert_eq(get_int(f, "u8"), 200);
    cr_assert_eq(get_int(f, "i8"), -100);
    cr_assert_eq(get_int(f, "u16"), 60000);
    cr_assert_eq(get_int(f, "i16"), -30000);
    cr_assert_eq(get_int(f, "u32"), 4000000000LL);
    cr_assert_eq(get_int(f, "i32"), -2000000000LL);
    cr_assert_eq(get_int(f, "u64"), (int64_t)1 << 40);
    cr_assert_eq(get_int(f, "i64"), INT64_MIN);
    int64_t v;
    cr_assert_eq(gguf_get_int(f, "u64_big", &v, &e), -1);
    cr_assert(strstr(e.msg, "u64_big") && strstr(e.msg, "out of range"), "%s", e.msg);
    double d;
    cr_assert_eq(gguf_get_float(f, "f32", &d, &e), 0, "%s", e.msg);
    cr_assert_eq(d, -1.5);
    cr_assert_eq(gguf_get_float(f, "f64", &d, &e), 0, "%s", e.msg);
    cr_assert_eq(d, 0.1);
    int yes = -1, no = -1;
    cr_assert_eq(gguf_get_bool(f, "yes", &yes, &e), 0, "%s", e.msg);
    cr_assert_eq(gguf_get_bool(f, "no", &no, &e), 0, "%s", e.msg);
    cr_assert(yes == 1 && no == 0);
}

static void check_strings(const struct gguf_file *f)
{
    struct err e = {{0}};
    char *s = gguf_get_string(f, "general.name", &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_str_eq(s, "tiny \xc3\xa9");
    free(s);
    s = gguf_get_string(f, "empty", &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_str_eq(s, "");
    free(s);
    cr_assert_null(gguf_get_string(f, "nul", &e));
    cr_assert(strstr(e.msg, "'nul'") && strstr(e.msg, "NUL byte"), "%s", e.msg);
    const struct gguf_kv *kv = gguf_find_kv(f, "nul");
    cr_assert(kv && kv->v.str.len == 3 && memcmp(kv->v.str.s, "a\0b", 3) == 0);
}

static void check_arrays(const struct gguf_file *f)
{
    const struct gguf_kv *kv = gguf_find_kv(f, "arr.i32");
    cr_assert(kv && kv->type == GGUF_TYPE_ARRAY && kv->arr_type == GGUF_TYPE_INT32 && kv->arr_n == 3);
    cr_assert(gguf_arr_int(kv, 0) == 1 && gguf_arr_int(kv, 1) == -2 && gguf_arr_int(kv, 2) == 2147483647);
    cr_assert_eq(gguf_arr_float(kv, 1), -2.0);
    kv = gguf_find_kv(f, "arr.i8");
    cr_assert(kv && gguf_arr_int(kv, 0) == -128 && gguf_arr_int(kv, 1) == 127);
    kv = gguf_find_kv(f, "arr.u16");
    cr_assert(kv && kv->arr_n == 1 && gguf_arr_int(kv, 0) == 65535);
    kv = gguf_find_kv(f, "arr.u64");
    cr_assert(kv && gguf_arr_int(kv, 0) == 5 && gguf_arr_int(kv, 1) == INT64_MAX); /* saturates */
    cr_assert_eq(gguf_arr_float(kv, 1), 18446744073709551615.0);
    kv = gguf_find_kv(f, "arr.f32");
    cr_assert(kv && gguf_arr_float(kv, 0) == 0.5 && gguf_arr_float(kv, 1) == -2.75);
    cr_assert_eq(gguf_arr_int(kv, 1), -2); /* toward zero */
    kv = gguf_find_kv(f, "arr.f64");
    cr_assert(kv && gguf_arr_float(kv, 0) == 1e300 && gguf_arr_int(kv, 0) == INT64_MAX);
    kv = gguf_find_kv(f, "arr.bool");
    cr_assert(kv && gguf_arr_int(kv, 0) == 0 && gguf_arr_int(kv, 1) == 1);
    kv = gguf_find_kv(f, "arr.str");
    cr_assert(kv && kv->arr_type == GGUF_TYPE_STRING && kv->arr_n == 3 && kv->arr_strs);
    cr_assert(kv->arr_strs[0].len == 3 && memcmp(kv->arr_strs[0].s, "<s>", 3) == 0);
    cr_assert_eq(kv->arr_strs[1].len, 0);
    cr_assert(kv->arr_strs[2].len == 11 && memcmp(kv->arr_strs[2].s, "hello world", 11) == 0);
    kv = gguf_find_kv(f, "arr.empty");
    cr_assert(kv && kv->arr_type == GGUF_TYPE_UINT32 && kv->arr_n == 0);
}

/* The three tensors of build_full: shapes, sizes, offsets and bytes. */
static void check_tensors(const struct gguf_file *f, uint64_t align)
{
    cr_assert_eq(f->n_tensors, 3);
    const unsigned char *map = f->map, *data = f->data;
    cr_assert_eq((size_t)(data - map) % align, 0, "data section at %zu", (size_t)(data - map));
    const struct gguf_tensor *a = gguf_find_tensor(f, "a"), *b = gguf_find_tensor(f, "blk.0.b"),
                             *c = gguf_find_tensor(f, "c");
    cr_assert(a && b && c);
    cr_assert_null(gguf_find_tensor(f, "blk.0"));
    cr_assert(a->type == GGML_TYPE_F32 && a->n_dims == 2 && a->dims[0] == 4 && a->dims[1] == 2);
    cr_assert(a->dims[2] == 1 && a->dims[3] == 1 && a->numel == 8 && a->nbytes == 32 && a->offset == 0);
    cr_assert(b->type == GGML_TYPE_Q8_0 && b->numel == 128 && b->nbytes == 4 * 34);
    cr_assert(c->type == GGML_TYPE_F16 && c->n_dims == 1 && c->numel == 3 && c->nbytes == 6);
    uint64_t off_b = (32 + align - 1) / align * align;
    cr_assert(b->offset == off_b && b->offset % align == 0 && c->offset % align == 0);
    const struct gguf_tensor *ts[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        const unsigned char *p = ts[i]->data;
        cr_assert_eq(p, data + ts[i]->offset);
        for (size_t k = 0; k < ts[i]->nbytes; k++)
            cr_assert_eq(p[k], data_byte(ts[i]->offset + k), "tensor %d byte %zu", i, k);
    }
    cr_assert_eq((const unsigned char *)c->data + c->nbytes, map + f->map_size);
}

Test(gguf_read, all_value_types_v3)
{
    struct gb b = {0};
    build_full(&b, 3, 0);
    struct tpath p = gb_write(&b, "full.gguf");
    struct gguf_file *f = open_ok(p.s);
    cr_assert_eq(f->version, 3);
    cr_assert_eq(f->alignment, 32);
    cr_assert_str_eq(f->path, p.s);
    check_scalars(f);
    check_strings(f);
    check_arrays(f);
    check_tensors(f, 32);
    /* keys keep file order */
    cr_assert(f->kvs[0].key.len == 2 && memcmp(f->kvs[0].key.s, "u8", 2) == 0);
    gguf_close(f);
}

Test(gguf_read, version_2_reads_the_same)
{
    struct gb b = {0};
    build_full(&b, 2, 0);
    struct tpath p = gb_write(&b, "v2.gguf");
    struct gguf_file *f = open_ok(p.s);
    cr_assert_eq(f->version, 2);
    check_scalars(f);
    check_strings(f);
    check_arrays(f);
    check_tensors(f, 32);
    gguf_close(f);
}

Test(gguf_read, custom_alignment)
{
    uint32_t aligns[] = {1, 8, 64, 256};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        struct gb b = {0};
        build_full(&b, 3, aligns[i]);
        struct tpath p = gb_write(&b, "aligned.gguf");
        struct gguf_file *f = open_ok(p.s);
        cr_assert_eq(f->alignment, aligns[i]);
        cr_assert_eq(f->n_kv, N_FULL_KV + 1);
        check_tensors(f, aligns[i]);
        gguf_close(f);
    }
}

Test(gguf_read, getters_refuse_other_kinds)
{
    struct gb b = {0};
    build_full(&b, 3, 0);
    struct tpath p = gb_write(&b, "full.gguf");
    struct gguf_file *f = open_ok(p.s);
    struct err e = {{0}};
    int64_t i;
    double d;
    int yes;
    cr_assert_eq(gguf_get_int(f, "general.name", &i, &e), -1);
    cr_assert(strstr(e.msg, p.s) && strstr(e.msg, "'general.name' is STRING, not an integer"), "%s", e.msg);
    cr_assert_eq(gguf_get_int(f, "yes", &i, &e), -1);
    cr_assert(strstr(e.msg, "is BOOL"), "%s", e.msg);
    cr_assert_eq(gguf_get_float(f, "u32", &d, &e), -1);
    cr_assert(strstr(e.msg, "'u32' is UINT32, not a float"), "%s", e.msg);
    cr_assert_eq(gguf_get_bool(f, "u8", &yes, &e), -1);
    cr_assert(strstr(e.msg, "not a bool"), "%s", e.msg);
    cr_assert_null(gguf_get_string(f, "arr.str", &e));
    cr_assert(strstr(e.msg, "ARRAY of STRING, not a string"), "%s", e.msg);
    cr_assert_eq(gguf_get_int(f, "missing.key", &i, &e), -1);
    cr_assert(strstr(e.msg, "'missing.key' is absent"), "%s", e.msg);
    cr_assert_null(gguf_find_kv(f, "u")); /* a prefix of a key is not the key */
    cr_assert_null(gguf_find_kv(f, "u8x"));
    gguf_close(f);
}

Test(gguf_read, no_tensors_no_padding)
{
    struct gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "general.architecture", GGUF_TYPE_STRING), gb_str(&b, "llama");
    struct tpath p = gb_write(&b, "vocab.gguf");
    struct gguf_file *f = open_ok(p.s);
    cr_assert(f->n_tensors == 0 && f->n_kv == 1);
    gguf_close(f);
}

Test(gguf_read, every_known_tensor_type)
{
    /* one tensor of each sized type, 2 rows of 256 (a multiple of every block) */
    static const struct {
        enum ggml_type t;
        const char *name;
        int elems;
        size_t bytes;
    } types[] = {
        {GGML_TYPE_F32, "F32", 1, 4},         {GGML_TYPE_F16, "F16", 1, 2},
        {GGML_TYPE_BF16, "BF16", 1, 2},       {GGML_TYPE_F64, "F64", 1, 8},
        {GGML_TYPE_I8, "I8", 1, 1},           {GGML_TYPE_I16, "I16", 1, 2},
        {GGML_TYPE_I32, "I32", 1, 4},         {GGML_TYPE_I64, "I64", 1, 8},
        {GGML_TYPE_Q4_0, "Q4_0", 32, 18},     {GGML_TYPE_Q4_1, "Q4_1", 32, 20},
        {GGML_TYPE_Q5_0, "Q5_0", 32, 22},     {GGML_TYPE_Q5_1, "Q5_1", 32, 24},
        {GGML_TYPE_Q8_0, "Q8_0", 32, 34},     {GGML_TYPE_Q8_1, "Q8_1", 32, 36},
        {GGML_TYPE_Q2_K, "Q2_K", 256, 84},    {GGML_TYPE_Q3_K, "Q3_K", 256, 110},
        {GGML_TYPE_Q4_K, "Q4_K", 256, 144},   {GGML_TYPE_Q5_K, "Q5_K", 256, 176},
        {GGML_TYPE_Q6_K, "Q6_K", 256, 210},   {GGML_TYPE_Q8_K, "Q8_K", 256, 292},
        {GGML_TYPE_IQ4_NL, "IQ4_NL", 32, 18}, {GGML_TYPE_IQ4_XS, "IQ4_XS", 256, 136},
        {GGML_TYPE_MXFP4, "MXFP4", 32, 17},
    };
    int n = (int)(sizeof types / sizeof types[0]);
    struct gb b = {0};
    gb_header(&b, 3, (uint64_t)n, 0);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        gb_tinfo(&b, name, 2, (uint64_t[]){256, 2}, types[i].t, off);
        off += (512 / types[i].elems * types[i].bytes + 31) / 32 * 32;
    }
    gb_pad(&b, 32);
    gb_zeros(&b, off);
    struct tpath p = gb_write(&b, "types.gguf");
    struct gguf_file *f = open_ok(p.s);
    for (int i = 0; i < n; i++) {
        const struct gguf_tensor *t = &f->tensors[i];
        cr_assert_str_eq(ggml_type_name(types[i].t), types[i].name);
        cr_assert_eq(ggml_type_block_elems(types[i].t), types[i].elems, "%s", types[i].name);
        cr_assert_eq(ggml_type_block_bytes(types[i].t), types[i].bytes, "%s", types[i].name);
        cr_assert_eq(t->type, types[i].t);
        cr_assert_eq(t->nbytes, 512 / (size_t)types[i].elems * types[i].bytes, "%s", types[i].name);
    }
    gguf_close(f);
    cr_assert_str_eq(ggml_type_name(GGML_TYPE_IQ2_XXS), "IQ2_XXS");
    cr_assert_eq(ggml_type_block_elems(GGML_TYPE_IQ2_XXS), 0);
    cr_assert_eq(ggml_type_block_bytes(GGML_TYPE_TQ1_0), 0);
    cr_assert_str_eq(ggml_type_name((enum ggml_type)37), "type 37");
    cr_assert_str_eq(ggml_type_name((enum ggml_type)4), "type 4");
    cr_assert_eq(ggml_type_block_elems((enum ggml_type)1000), 0);
    cr_assert_str_eq(gguf_value_type_name(GGUF_TYPE_FLOAT64), "FLOAT64");
}

/* ---- refusals: header ----------------------------------------------------- */

Test(gguf_bad, bad_magic)
{
    struct tpath p = test_tmp_path("x.gguf");
    write_bytes(p.s, "{\"not\": \"gguf\", \"at\": \"all\"}", 28);
    expect_fail(p.s, "not a GGUF file: bad magic 7b 22 6e 6f");
}

Test(gguf_bad, empty_and_tiny_files)
{
    struct tpath p = test_tmp_path("x.gguf");
    write_bytes(p.s, "", 0);
    expect_fail(p.s, "too short for the magic");
    write_bytes(p.s, "GG", 2);
    expect_fail(p.s, "too short for the magic");
    write_bytes(p.s, "GGUF\x03\x00", 6);
    expect_fail(p.s, "the version (4 bytes at offset 4) runs past the end of the file (6 bytes)");
}

Test(gguf_bad, versions)
{
    struct gb b = {0};
    gb_header(&b, 1, 0, 0);
    expect_bytes_fail(&b, "GGUF version 1 is not supported");
    gb_header(&b, 0x03000000, 0, 0);
    expect_bytes_fail(&b, "big-endian");
    gb_header(&b, 0x02000000, 0, 0);
    expect_bytes_fail(&b, "big-endian");
    gb_header(&b, 4, 0, 0);
    expect_bytes_fail(&b, "unsupported GGUF version 4");
}

Test(gguf_bad, missing_path_and_directory)
{
    expect_fail("/nonexistent/x.gguf", "cannot open");
    expect_fail(test_tmp_dir, "not a regular file");
}

/* Every prefix of a valid file is refused cleanly: the reader must check
 * each read against the end of the mapping. */
Test(gguf_bad, every_truncation)
{
    struct gb b = {0};
    build_full(&b, 3, 0);
    size_t n = b.n;
    unsigned char *full = b.p;
    struct tpath p = test_tmp_path("trunc.gguf");
    for (size_t len = 0; len < n; len++) {
        write_bytes(p.s, full, len);
        struct err e = {{0}};
        struct gguf_file *f = gguf_open(p.s, &e);
        cr_assert_null(f, "a %zu-byte prefix of %zu opened", len, n);
        cr_assert(strstr(e.msg, p.s), "prefix %zu: message lacks the path: %s", len, e.msg);
        cr_assert(strstr(e.msg, "past the end") || strstr(e.msg, "exceeds the") ||
                      strstr(e.msg, "cannot fit") || strstr(e.msg, "too short"),
                  "prefix %zu: %s", len, e.msg);
    }
    free(full);
}

/* Random byte changes to a valid file: whatever the reader says, it must
 * not crash, and what it accepts must lie inside the mapping. */
Test(gguf_bad, random_mutations)
{
    struct gb b = {0};
    build_full(&b, 3, 0);
    size_t n = b.n;
    unsigned char *mut = malloc(n);
    struct tpath p = test_tmp_path("mut.gguf");
    srand(12345);
    for (int it = 0; it < 3000; it++) {
        memcpy(mut, b.p, n);
        int changes = 1 + rand() % 4;
        for (int k = 0; k < changes; k++)
            mut[(size_t)rand() % n] = rand() % 3 == 0 ? 0xff : (unsigned char)rand();
        write_bytes(p.s, mut, n);
        struct err e = {{0}};
        struct gguf_file *f = gguf_open(p.s, &e);
        if (!f) {
            cr_assert(strstr(e.msg, p.s), "iteration %d: %s", it, e.msg);
            continue;
        }
        const unsigned char *lo = f->map, *hi = lo + f->map_size;
        for (int64_t i = 0; i < f->n_tensors; i++) {
            const unsigned char *d = f->tensors[i].data;
            cr_assert(d >= lo && d + f->tensors[i].nbytes <= hi, "iteration %d tensor %lld", it,
                      (long long)i);
        }
        gguf_close(f);
    }
    free(mut);
    free(b.p);
}

/* ---- refusals: metadata --------------------------------------------------- */

/* A file with one pair: key "k", value type type, then the value bytes the
 * caller adds; no tensors. */
static void one_kv(struct gb *b, uint32_t type)
{
    gb_header(b, 3, 0, 1);
    gb_key(b, "k", type);
}

Test(gguf_bad, huge_counts)
{
    struct gb b = {0};
    gb_header(&b, 3, 0, UINT64_MAX);
    expect_bytes_fail(&b, "metadata count 18446744073709551615 cannot fit");
    gb_header(&b, 3, (uint64_t)1 << 40, 0);
    expect_bytes_fail(&b, "tensor count 1099511627776 cannot fit");
    one_kv(&b, GGUF_TYPE_ARRAY), gb_u32(&b, GGUF_TYPE_UINT32), gb_u64(&b, (uint64_t)1 << 62);
    expect_bytes_fail(&b, "array count 4611686018427387904 of UINT32");
    /* count x element size overflows 64 bits */
    one_kv(&b, GGUF_TYPE_ARRAY), gb_u32(&b, GGUF_TYPE_FLOAT64), gb_u64(&b, UINT64_MAX / 4);
    expect_bytes_fail(&b, "cannot fit");
    one_kv(&b, GGUF_TYPE_ARRAY), gb_u32(&b, GGUF_TYPE_STRING), gb_u64(&b, UINT64_MAX);
    gb_zeros(&b, 64);
    expect_bytes_fail(&b, "array count 18446744073709551615 of strings cannot fit");
}

Test(gguf_bad, huge_string_lengths)
{
    struct gb b = {0};
    one_kv(&b, GGUF_TYPE_STRING), gb_u64(&b, UINT64_MAX), gb_zeros(&b, 16);
    expect_bytes_fail(&b, "string length 18446744073709551615 exceeds the 16 bytes left");
    one_kv(&b, GGUF_TYPE_STRING), gb_u64(&b, 17), gb_zeros(&b, 16);
    expect_bytes_fail(&b, "string length 17 exceeds");
    gb_header(&b, 3, 0, 1), gb_u64(&b, UINT64_MAX - 7), gb_zeros(&b, 16);
    expect_bytes_fail(&b, "metadata pair 0: key length 18446744073709551608 exceeds");
    one_kv(&b, GGUF_TYPE_ARRAY), gb_u32(&b, GGUF_TYPE_STRING), gb_u64(&b, 2);
    gb_str(&b, "ok"), gb_u64(&b, (uint64_t)1 << 60);
    expect_bytes_fail(&b, "metadata key 'k': string 1 length 1152921504606846976 exceeds");
}

Test(gguf_bad, value_types)
{
    struct gb b = {0};
    one_kv(&b, GGUF_TYPE_ARRAY), gb_u32(&b, GGUF_TYPE_ARRAY), gb_u64(&b, 1);
    gb_u32(&b, GGUF_TYPE_UINT8), gb_u64(&b, 1), gb_u8(&b, 1);
    expect_bytes_fail(&b, "metadata key 'k': nested array (an array of arrays) is not supported");
    one_kv(&b, 13), gb_zeros(&b, 8);
    expect_bytes_fail(&b, "metadata key 'k': unknown value type 13");
    one_kv(&b, 0xffffffffu), gb_zeros(&b, 8);
    expect_bytes_fail(&b, "unknown value type 4294967295");
    one_kv(&b, GGUF_TYPE_ARRAY), gb_u32(&b, 20), gb_u64(&b, 1), gb_zeros(&b, 8);
    expect_bytes_fail(&b, "unknown array element type 20");
    one_kv(&b, GGUF_TYPE_BOOL), gb_u8(&b, 2);
    expect_bytes_fail(&b, "bool value 2 is neither 0 nor 1");
    one_kv(&b, GGUF_TYPE_ARRAY), gb_u32(&b, GGUF_TYPE_BOOL), gb_u64(&b, 2), gb_u8(&b, 1), gb_u8(&b, 7);
    expect_bytes_fail(&b, "bool value 7 in the array");
    one_kv(&b, GGUF_TYPE_UINT64), gb_u32(&b, 1);
    expect_bytes_fail(&b, "the UINT64 value (8 bytes at offset 37) runs past the end of the file");
}

Test(gguf_bad, duplicate_key)
{
    struct gb b = {0};
    gb_header(&b, 3, 0, 3);
    gb_key(&b, "a.b", GGUF_TYPE_UINT8), gb_u8(&b, 1);
    gb_key(&b, "a.c", GGUF_TYPE_UINT8), gb_u8(&b, 1);
    gb_key(&b, "a.b", GGUF_TYPE_STRING), gb_str(&b, "again");
    expect_bytes_fail(&b, "metadata key 'a.b': duplicate key (pairs 0 and 2)");
}

Test(gguf_bad, alignment)
{
    uint32_t bad[] = {48, 0, 3, 0xffffffffu};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gb b = {0};
        gb_header(&b, 3, 0, 1);
        gb_key(&b, "general.alignment", GGUF_TYPE_UINT32), gb_u32(&b, bad[i]);
        char want[96];
        snprintf(want, sizeof want, "'general.alignment': alignment %u is not a power of two", bad[i]);
        expect_bytes_fail(&b, want);
    }
    struct gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "general.alignment", GGUF_TYPE_UINT64), gb_u64(&b, 64);
    expect_bytes_fail(&b, "'general.alignment': is UINT64, must be UINT32");
}

/* ---- refusals: tensors ---------------------------------------------------- */

/* One tensor "w" (n_dims dims, type, offset) and data_n bytes of data. */
static void one_tensor(struct gb *b, uint32_t n_dims, const uint64_t *dims, uint32_t type, uint64_t offset,
                       size_t data_n)
{
    gb_header(b, 3, 1, 0);
    gb_tinfo(b, "w", n_dims, dims, type, offset);
    gb_pad(b, 32);
    gb_zeros(b, data_n);
}

Test(gguf_bad, tensor_types)
{
    struct gb b = {0};
    one_tensor(&b, 1, (uint64_t[]){32}, 37, 0, 1024);
    expect_bytes_fail(&b, "tensor 'w': unknown tensor type 37");
    one_tensor(&b, 1, (uint64_t[]){32}, 0x80000000u, 0, 1024);
    expect_bytes_fail(&b, "unknown tensor type 2147483648");
    one_tensor(&b, 1, (uint64_t[]){256}, GGML_TYPE_IQ2_XXS, 0, 1024);
    expect_bytes_fail(&b, "tensor 'w': tensor type 16 (IQ2_XXS) is not supported");
}

Test(gguf_bad, dims)
{
    struct gb b = {0};
    one_tensor(&b, 5, (uint64_t[]){1, 1, 1, 1, 1}, GGML_TYPE_F32, 0, 64);
    expect_bytes_fail(&b, "tensor 'w': 5 dimensions (must be 1 to 4)");
    one_tensor(&b, 0, NULL, GGML_TYPE_F32, 0, 64);
    expect_bytes_fail(&b, "tensor 'w': 0 dimensions");
    one_tensor(&b, 2, (uint64_t[]){4, 0}, GGML_TYPE_F32, 0, 64);
    expect_bytes_fail(&b, "tensor 'w': dims[1] = 0 is not positive");
    one_tensor(&b, 1, (uint64_t[]){UINT64_MAX}, GGML_TYPE_F32, 0, 64);
    expect_bytes_fail(&b, "dims[0] = -1 is not positive");
    one_tensor(&b, 3, (uint64_t[]){1u << 31, 1u << 31, 4}, GGML_TYPE_F32, 0, 64);
    expect_bytes_fail(&b, "tensor 'w': element count overflows");
    one_tensor(&b, 2, (uint64_t[]){(uint64_t)1 << 31, (uint64_t)1 << 31}, GGML_TYPE_F64, 0, 64);
    /* 2^62 elements: numel fits, bytes (2^65) do not */
    expect_bytes_fail(&b, "byte size of 4611686018427387904 F64 elements overflows");
}

Test(gguf_bad, row_not_whole_blocks)
{
    struct gb b = {0};
    one_tensor(&b, 2, (uint64_t[]){128, 4}, GGML_TYPE_Q4_K, 0, 1024);
    expect_bytes_fail(&b,
                      "tensor 'w': dims[0] = 128 is not a multiple of the Q4_K block size (256 elements)");
    /* whole blocks in total (31 x 32) but not per row */
    one_tensor(&b, 2, (uint64_t[]){31, 32}, GGML_TYPE_Q8_0, 0, 1024);
    expect_bytes_fail(&b, "dims[0] = 31 is not a multiple of the Q8_0 block size (32 elements)");
}

Test(gguf_bad, misaligned_offset)
{
    struct gb b = {0};
    one_tensor(&b, 1, (uint64_t[]){4}, GGML_TYPE_F32, 16, 64);
    expect_bytes_fail(&b, "tensor 'w': offset 16 is not a multiple of the alignment (32)");
}

Test(gguf_bad, tensor_past_the_end)
{
    struct gb b = {0};
    one_tensor(&b, 1, (uint64_t[]){16}, GGML_TYPE_F32, 0, 63);
    expect_bytes_fail(&b, "tensor 'w': 64 bytes at offset 0 run past the end of the data section (63 bytes");
    one_tensor(&b, 1, (uint64_t[]){1}, GGML_TYPE_F32, (uint64_t)1 << 63, 64);
    expect_bytes_fail(&b, "run past the end of the data section");
    /* the infos end where the padding should start */
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "w", 1, (uint64_t[]){1}, GGML_TYPE_F32, 0);
    expect_bytes_fail(&b, "data section: starts at offset 64 (the tensor infos end at 57), past the end");
}

Test(gguf_bad, overlapping_tensors)
{
    struct gb b = {0};
    gb_header(&b, 3, 3, 0);
    gb_tinfo(&b, "x", 1, (uint64_t[]){8}, GGML_TYPE_F32, 128);
    gb_tinfo(&b, "y", 1, (uint64_t[]){16}, GGML_TYPE_F32, 0);
    gb_tinfo(&b, "z", 1, (uint64_t[]){4}, GGML_TYPE_F32, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 160);
    expect_bytes_fail(&b, "tensor 'z': bytes [32, 48) of the data section overlap tensor 'y' [0, 64)");
}

Test(gguf_bad, duplicate_tensor_name)
{
    struct gb b = {0};
    gb_header(&b, 3, 2, 0);
    gb_tinfo(&b, "blk.0.w", 1, (uint64_t[]){8}, GGML_TYPE_F32, 0);
    gb_tinfo(&b, "blk.0.w", 1, (uint64_t[]){8}, GGML_TYPE_F32, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    expect_bytes_fail(&b, "tensor 'blk.0.w': duplicate tensor name (tensor infos 0 and 1)");
}

Test(gguf_bad, control_bytes_in_names_are_masked)
{
    struct gb b = {0};
    gb_header(&b, 3, 1, 0);
    gb_tinfo(&b, "a\nb\x1b[31m", 1, (uint64_t[]){8}, 99, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, 32);
    expect_bytes_fail(&b, "tensor 'a?b?[31m': unknown tensor type 99");
}

/* ---- a real file ---------------------------------------------------------- */

Test(gguf_real, gemma3_270m_q4_k_m)
{
    const char *path = getenv("INFER_GGUF_GEMMA");
    if (!path || !*path)
        path = "/tmp/gguf/gemma-3-270m-q4_k_m.gguf";
    if (access(path, R_OK) != 0) {
        cr_skip_test("%s not found (set INFER_GGUF_GEMMA)", path);
        return;
    }
    struct gguf_file *f = open_ok(path);
    struct err e = {{0}};
    cr_assert_eq(f->version, 3);
    cr_assert_eq(f->n_kv, 33);
    cr_assert_eq(f->n_tensors, 236);
    cr_assert_eq(f->alignment, 32);
    cr_assert_eq((const char *)f->data - (const char *)f->map, 6525120);
    char *arch = gguf_get_string(f, "general.architecture", &e);
    cr_assert_not_null(arch, "%s", e.msg);
    cr_assert_str_eq(arch, "gemma3");
    free(arch);
    int64_t v;
    cr_assert_eq(gguf_get_int(f, "gemma3.block_count", &v, &e), 0, "%s", e.msg);
    cr_assert_eq(v, 18);
    const struct gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
    cr_assert_not_null(t);
    cr_assert(t->type == GGML_TYPE_Q8_0 && t->n_dims == 2 && t->dims[0] == 640 && t->dims[1] == 262144);
    cr_assert_eq(t->nbytes, (size_t)640 * 262144 / 32 * 34);
    const struct gguf_kv *kv = gguf_find_kv(f, "tokenizer.ggml.tokens");
    cr_assert(kv && kv->type == GGUF_TYPE_ARRAY && kv->arr_type == GGUF_TYPE_STRING && kv->arr_n == 262144);
    cr_assert(kv->arr_strs[0].len == 5 && memcmp(kv->arr_strs[0].s, "<pad>", 5) == 0);
    uint64_t total = 0;
    for (int64_t i = 0; i < f->n_tensors; i++)
        total += f->tensors[i].nbytes;
    cr_assert_eq(total, 246587904); /* as the Python gguf package sums it */
    gguf_close(f);
}
