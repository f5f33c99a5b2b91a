/* Tests for io/safetensors and io/checkpoint: writer -> reader round trips,
 * hand-built malformed files (each must be refused with a message naming the
 * file and, where there is one, the tensor), writer failure paths (nothing is
 * ever left at the target path), and sharded checkpoint directories. Every
 * test works in its own mkdtemp directory, removed by the suite's fini. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bf16.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "test_util.h"


TestSuite(st_rw, .init = test_tmp_setup, .fini = test_tmp_teardown);
TestSuite(st_bad, .init = test_tmp_setup, .fini = test_tmp_teardown);
TestSuite(st_writer, .init = test_tmp_setup, .fini = test_tmp_teardown);
TestSuite(st_ckpt, .init = test_tmp_setup, .fini = test_tmp_teardown);

/* ---- helpers ----------------------------------------------------------- */

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "fopen %s", path);
    if (n)
        cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* 8-byte little-endian length hlen, hdr_n header bytes, then data_n zero bytes. */
static void write_raw(const char *path, uint64_t hlen, const char *hdr, size_t hdr_n,
                      size_t data_n)
{
    size_t n = 8 + hdr_n + data_n;
    unsigned char *buf = calloc(1, n);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + 8, hdr, hdr_n);
    write_file(path, buf, n);
    free(buf);
}

/* A well-formed length prefix for json, followed by data_n zero bytes. */
static void write_hdr(const char *path, const char *json, size_t data_n)
{
    write_raw(path, strlen(json), json, strlen(json), data_n);
}

/* st_open must fail, naming the file and containing want1/want2 (if set). */
static void expect_open_fail(const char *path, const char *want1, const char *want2)
{
    struct err e = {{0}};
    struct st_file *f = st_open(path, &e);
    if (f)
        st_close(f);
    cr_assert_null(f, "st_open(%s) should fail", path);
    cr_assert(strstr(e.msg, path), "message lacks the path: %s", e.msg);
    if (want1)
        cr_assert(strstr(e.msg, want1), "message lacks '%s': %s", want1, e.msg);
    if (want2)
        cr_assert(strstr(e.msg, want2), "message lacks '%s': %s", want2, e.msg);
}

/* Header JSON for one tensor: {"<name>": {<entry>}}. */
static void expect_entry_fail(const char *entry, size_t data_n, const char *want)
{
    char json[512];
    snprintf(json, sizeof json, "{\"t.weight\":%s}", entry);
    struct tpath p = test_tmp_path("bad.safetensors");
    write_hdr(p.s, json, data_n);
    expect_open_fail(p.s, "t.weight", want);
}

static void meta_expect(const struct st_file *f, const char *key, const char *value)
{
    for (int i = 0; i < f->n_meta; i++) {
        if (strcmp(f->meta_keys[i], key) == 0) {
            cr_assert_str_eq(f->meta_values[i], value, "metadata %s", key);
            return;
        }
    }
    cr_assert_fail("metadata key %s missing", key);
}

/* Writes F32 tensors of shape [2] holding {base+i, -(base+i)}. */
static void write_f32_file(const char *path, int n, const char *const *names, float base)
{
    struct err e = {{0}};
    struct st_writer *w = st_writer_create(path, &e);
    cr_assert_not_null(w, "%s", e.msg);
    int64_t shape[1] = {2};
    for (int i = 0; i < n; i++)
        cr_assert_eq(st_writer_declare(w, names[i], DTYPE_F32, 1, shape, &e), 0, "%s", e.msg);
    for (int i = 0; i < n; i++) {
        float v[2] = {base + (float)i, -(base + (float)i)};
        cr_assert_eq(st_writer_write(w, v, sizeof v, &e), 0, "%s", e.msg);
    }
    cr_assert_eq(st_writer_finish(w, &e), 0, "%s", e.msg);
}

static uint64_t header_len(const struct st_file *f)
{
    const unsigned char *p = f->map;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | p[i];
    return n;
}

/* ---- round trips --------------------------------------------------------- */

Test(st_rw, roundtrip_all_dtypes)
{
    struct tpath p = test_tmp_path("model.safetensors");
    struct err e = {{0}};

    uint16_t bf[6];
    for (int i = 0; i < 6; i++)
        bf[i] = f32_to_bf16(0.5f * (float)i - 1.0f);
    uint16_t hf[4] = {0x3c00, 0xc000, 0x0001, 0x7bff}; /* 1, -2, tiny, 65504 */
    float f32[8];
    for (int i = 0; i < 8; i++)
        f32[i] = (float)i * 1.25f;
    int32_t i32[5] = {-1, 0, 1, INT32_MAX, INT32_MIN};
    int64_t i64[3] = {INT64_MIN, 42, INT64_MAX};
    float scalar = 3.5f;

    struct {
        const char *name;
        enum dtype dt;
        int ndim;
        int64_t shape[4];
        const void *data;
        size_t nbytes;
    } ts[] = {
        {"model.embed.weight", DTYPE_BF16, 2, {2, 3}, bf, sizeof bf},
        {"a.f16", DTYPE_F16, 1, {4}, hf, sizeof hf},
        {"z.f32", DTYPE_F32, 3, {2, 2, 2}, f32, sizeof f32},
        {"ids", DTYPE_I32, 1, {5}, i32, sizeof i32},
        {"big", DTYPE_I64, 2, {3, 1}, i64, sizeof i64},
        {"scalar", DTYPE_F32, 0, {0}, &scalar, sizeof scalar},
        {"empty", DTYPE_BF16, 2, {0, 4}, NULL, 0},
    };
    int n = (int)(sizeof ts / sizeof ts[0]);

    struct st_writer *w = st_writer_create(p.s, &e);
    cr_assert_not_null(w, "%s", e.msg);
    for (int i = 0; i < n; i++)
        cr_assert_eq(st_writer_declare(w, ts[i].name, ts[i].dt, ts[i].ndim, ts[i].shape, &e), 0,
                     "%s", e.msg);
    for (int i = 0; i < n; i++) {
        /* odd chunking: one byte, then the rest */
        const unsigned char *d = ts[i].data;
        if (ts[i].nbytes > 1) {
            cr_assert_eq(st_writer_write(w, d, 1, &e), 0, "%s", e.msg);
            cr_assert_eq(st_writer_write(w, d + 1, ts[i].nbytes - 1, &e), 0, "%s", e.msg);
        } else {
            cr_assert_eq(st_writer_write(w, d, ts[i].nbytes, &e), 0, "%s", e.msg);
        }
    }
    cr_assert_eq(st_writer_finish(w, &e), 0, "%s", e.msg);
    cr_assert(file_exists(p.s));
    struct tpath tmp = test_tmp_path("model.safetensors.tmp");
    cr_assert(!file_exists(tmp.s), "tmp file left behind");

    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_str_eq(f->path, p.s);
    cr_assert_eq(f->n_tensors, n);
    uint64_t hlen = header_len(f);
    cr_assert_eq((8 + hlen) % 8, 0, "data section at %llu is not 8-aligned",
                 (unsigned long long)(8 + hlen));
    const unsigned char *data0 = (const unsigned char *)f->map + 8 + hlen;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        const struct st_tensor *t = &f->tensors[i]; /* header order == declaration order */
        cr_assert_str_eq(t->name, ts[i].name);
        cr_assert_eq(t->dtype, ts[i].dt, "%s dtype", t->name);
        cr_assert_eq(t->ndim, ts[i].ndim, "%s ndim", t->name);
        int64_t numel = 1;
        for (int d = 0; d < t->ndim; d++) {
            cr_assert_eq(t->shape[d], ts[i].shape[d], "%s shape[%d]", t->name, d);
            numel *= t->shape[d];
        }
        cr_assert_eq(t->numel, numel, "%s numel", t->name);
        cr_assert_eq(t->nbytes, ts[i].nbytes, "%s nbytes", t->name);
        cr_assert_eq(t->file, f);
        /* contiguous, in declaration order */
        cr_assert_eq((const unsigned char *)t->data, data0 + off, "%s offset", t->name);
        off += t->nbytes;
        if (t->nbytes)
            cr_assert_eq(memcmp(t->data, ts[i].data, t->nbytes), 0, "%s bytes", t->name);
        cr_assert_eq(st_find(f, ts[i].name), t);
    }
    cr_assert_eq(8 + hlen + off, f->map_size, "no trailing bytes");
    cr_assert_eq(f->tensors[5].numel, 1, "scalar has one element");
    cr_assert_eq(f->tensors[6].numel, 0);
    cr_assert_eq(bf16_to_f32(((const uint16_t *)f->tensors[0].data)[3]), 0.5f);
    cr_assert_eq(f16_to_f32(((const uint16_t *)f->tensors[1].data)[3]), 65504.0f);
    cr_assert_null(st_find(f, "missing"));
    cr_assert_null(st_find(f, "__metadata__"));
    meta_expect(f, "format", "pt");
    cr_assert_eq(f->n_meta, 1);
    st_close(f);
}

Test(st_rw, header_is_python_compatible)
{
    struct tpath p = test_tmp_path("m.safetensors");
    const char *names[] = {"zeta", "alpha", "mid"};
    write_f32_file(p.s, 3, names, 1.0f);
    struct err e = {{0}};
    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    uint64_t hlen = header_len(f);
    char *hdr = strndup((const char *)f->map + 8, hlen);
    /* declaration order in the text, metadata with format=pt, space padding */
    const char *z = strstr(hdr, "\"zeta\""), *a = strstr(hdr, "\"alpha\""),
               *m = strstr(hdr, "\"mid\"");
    cr_assert(z && a && m && z < a && a < m, "header order: %s", hdr);
    cr_assert(strstr(hdr, "\"__metadata__\""), "%s", hdr);
    cr_assert(strstr(hdr, "\"format\":\"pt\"") || strstr(hdr, "\"format\": \"pt\""), "%s", hdr);
    cr_assert(strstr(hdr, "[0, 8]") || strstr(hdr, "[0,8]"), "%s", hdr);
    cr_assert(strstr(hdr, "[8, 16]") || strstr(hdr, "[8,16]"), "%s", hdr);
    cr_assert(strstr(hdr, "[16, 24]") || strstr(hdr, "[16,24]"), "%s", hdr);
    cr_assert_eq(hdr[0], '{');
    size_t len = strlen(hdr);
    size_t close_at = (size_t)(strrchr(hdr, '}') - hdr);
    for (size_t i = close_at + 1; i < len; i++)
        cr_assert_eq(hdr[i], ' ', "padding must be spaces");
    cr_assert_lt(len - close_at - 1, 8);
    cr_assert_eq(((const float *)st_find(f, "mid")->data)[1], -3.0f);
    free(hdr);
    st_close(f);
}

Test(st_rw, metadata_roundtrip)
{
    struct tpath p = test_tmp_path("meta.safetensors");
    struct err e = {{0}};
    struct st_writer *w = st_writer_create(p.s, &e);
    cr_assert_not_null(w, "%s", e.msg);
    cr_assert_eq(st_writer_set_metadata(w, "a", "1", &e), 0, "%s", e.msg);
    cr_assert_eq(st_writer_set_metadata(w, "quote\"key", "caf\xc3\xa9 \"\\ \n", &e), 0, "%s",
                 e.msg);
    cr_assert_eq(st_writer_set_metadata(w, "a", "2", &e), 0, "%s", e.msg); /* replaces */
    int64_t shape[1] = {1};
    cr_assert_eq(st_writer_declare(w, "x", DTYPE_I64, 1, shape, &e), 0, "%s", e.msg);
    int64_t v = 7;
    cr_assert_eq(st_writer_write(w, &v, sizeof v, &e), 0, "%s", e.msg);
    cr_assert_eq(st_writer_finish(w, &e), 0, "%s", e.msg);

    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(f->n_meta, 3);
    meta_expect(f, "a", "2");
    meta_expect(f, "quote\"key", "caf\xc3\xa9 \"\\ \n");
    meta_expect(f, "format", "pt");
    cr_assert_eq(*(const int64_t *)st_find(f, "x")->data, 7);
    st_close(f);
}

Test(st_rw, caller_format_is_kept)
{
    struct tpath p = test_tmp_path("fmt.safetensors");
    struct err e = {{0}};
    struct st_writer *w = st_writer_create(p.s, &e);
    cr_assert_not_null(w, "%s", e.msg);
    cr_assert_eq(st_writer_set_metadata(w, "format", "mlx", &e), 0, "%s", e.msg);
    cr_assert_eq(st_writer_finish(w, &e), 0, "%s", e.msg);
    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(f->n_meta, 1);
    meta_expect(f, "format", "mlx");
    st_close(f);
}

Test(st_rw, zero_tensors_from_writer)
{
    struct tpath p = test_tmp_path("none.safetensors");
    struct err e = {{0}};
    struct st_writer *w = st_writer_create(p.s, &e);
    cr_assert_not_null(w, "%s", e.msg);
    cr_assert_eq(st_writer_finish(w, &e), 0, "%s", e.msg);
    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(f->n_tensors, 0);
    cr_assert_eq(f->map_size % 8, 0);
    cr_assert_null(st_find(f, "x"));
    st_close(f);
}

Test(st_rw, raw_empty_object_is_valid)
{
    struct tpath p = test_tmp_path("empty.safetensors");
    write_hdr(p.s, "{}", 0);
    struct err e = {{0}};
    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(f->n_tensors, 0);
    cr_assert_eq(f->n_meta, 0);
    st_close(f);
}

Test(st_rw, raw_unaligned_with_gaps_and_empty_tensors)
{
    /* Hand-built: no padding, a gap between tensors, two zero-size tensors
     * at the same offset, one at the very end, trailing whitespace. */
    struct tpath p = test_tmp_path("raw.safetensors");
    const char *json = "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                       "\"e1\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[4,4]},"
                       "\"e2\":{\"dtype\":\"F16\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
                       "\"e3\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[12,12]},"
                       "\"a\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]},"
                       "\"__metadata__\":{}}  \n";
    write_hdr(p.s, json, 12);
    struct err e = {{0}};
    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(f->n_tensors, 5);
    cr_assert_str_eq(f->tensors[0].name, "b");
    cr_assert_str_eq(f->tensors[4].name, "a");
    cr_assert_eq(f->tensors[4].ndim, 0);
    cr_assert_eq(f->tensors[4].numel, 1);
    cr_assert_eq(f->tensors[2].numel, 0);
    cr_assert_eq(f->tensors[2].nbytes, 0);
    cr_assert_eq((size_t)((const char *)f->tensors[0].data - (const char *)f->map),
                 8 + strlen(json) + 8);
    cr_assert_eq(f->n_meta, 0);
    st_close(f);
}

Test(st_rw, many_tensors_find)
{
    struct tpath p = test_tmp_path("many.safetensors");
    enum { N = 300 };
    char names[N][32];
    const char *ptrs[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "layers.%d.w", i);
        ptrs[i] = names[i];
    }
    write_f32_file(p.s, N, ptrs, 0.0f);
    struct err e = {{0}};
    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(f->n_tensors, N);
    for (int i = 0; i < N; i++) {
        const struct st_tensor *t = st_find(f, names[i]);
        cr_assert_not_null(t, "%s", names[i]);
        cr_assert_eq(((const float *)t->data)[0], (float)i);
    }
    st_close(f);
}

/* ---- malformed files ----------------------------------------------------- */

Test(st_bad, missing_file)
{
    expect_open_fail(test_tmp_path("nope.safetensors").s, "No such file", NULL);
}

Test(st_bad, directory)
{
    expect_open_fail(test_tmp_dir, "not a regular file", NULL);
}

Test(st_bad, empty_file)
{
    struct tpath p = test_tmp_path("empty.safetensors");
    write_file(p.s, "", 0);
    expect_open_fail(p.s, "too short", NULL);
}

Test(st_bad, five_byte_file)
{
    struct tpath p = test_tmp_path("five.safetensors");
    write_file(p.s, "\x02\0\0\0\0", 5);
    expect_open_fail(p.s, "too short", NULL);
}

Test(st_bad, header_only_length_zero)
{
    struct tpath p = test_tmp_path("zero.safetensors");
    write_raw(p.s, 0, "", 0, 0);
    expect_open_fail(p.s, "JSON", NULL);
}

Test(st_bad, header_length_beyond_eof)
{
    struct tpath p = test_tmp_path("short.safetensors");
    write_raw(p.s, 100, "{}", 2, 0);
    expect_open_fail(p.s, "past the end", NULL);
}

Test(st_bad, huge_header_length)
{
    struct tpath p = test_tmp_path("huge.safetensors");
    write_raw(p.s, (uint64_t)1 << 40, "{}", 2, 0);
    expect_open_fail(p.s, "absurdly large", NULL);
    write_raw(p.s, UINT64_MAX, "{}", 2, 0);
    expect_open_fail(p.s, "absurdly large", NULL);
}

Test(st_bad, garbage_header)
{
    struct tpath p = test_tmp_path("garbage.safetensors");
    write_hdr(p.s, "this is not json at all", 0);
    expect_open_fail(p.s, "not valid JSON", NULL);
}

Test(st_bad, truncated_json)
{
    struct tpath p = test_tmp_path("trunc.safetensors");
    write_hdr(p.s, "{\"a\":{\"dtype\":\"F32\",", 0);
    expect_open_fail(p.s, "not valid JSON", NULL);
}

Test(st_bad, trailing_garbage_after_json)
{
    struct tpath p = test_tmp_path("trail.safetensors");
    write_hdr(p.s, "{} x", 0);
    expect_open_fail(p.s, "not valid JSON", NULL);
}

Test(st_bad, nul_byte_in_header)
{
    struct tpath p = test_tmp_path("nul.safetensors");
    write_raw(p.s, 4, "{\"\0\"", 4, 0);
    expect_open_fail(p.s, "not valid JSON", NULL);
}

Test(st_bad, invalid_utf8)
{
    struct tpath p = test_tmp_path("utf8.safetensors");
    write_hdr(p.s, "{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4);
    expect_open_fail(p.s, "not valid JSON", NULL);
}

Test(st_bad, json_array)
{
    struct tpath p = test_tmp_path("array.safetensors");
    write_hdr(p.s, "[1, 2, 3]", 0);
    expect_open_fail(p.s, "not a JSON object", NULL);
}

Test(st_bad, json_scalar)
{
    struct tpath p = test_tmp_path("scalar.safetensors");
    write_hdr(p.s, "42", 0);
    expect_open_fail(p.s, "header", NULL);
}

Test(st_bad, duplicate_keys)
{
    struct tpath p = test_tmp_path("dup.safetensors");
    write_hdr(p.s,
              "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              8);
    expect_open_fail(p.s, "duplicate", "w");
}

Test(st_bad, duplicate_keys_inside_entry)
{
    struct tpath p = test_tmp_path("dup2.safetensors");
    write_hdr(p.s,
              "{\"w\":{\"dtype\":\"F32\",\"dtype\":\"I32\","
              "\"shape\":[1],\"data_offsets\":[0,4]}}",
              4);
    expect_open_fail(p.s, "duplicate", NULL);
}

Test(st_bad, entry_not_object)
{
    expect_entry_fail("[1,2]", 0, "not an object");
}

Test(st_bad, missing_dtype)
{
    expect_entry_fail("{\"shape\":[1],\"data_offsets\":[0,4]}", 4, "dtype");
}

Test(st_bad, missing_shape)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"data_offsets\":[0,4]}", 4, "shape");
}

Test(st_bad, missing_data_offsets)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1]}", 4, "data_offsets");
}

Test(st_bad, dtype_not_string)
{
    expect_entry_fail("{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}", 4, "dtype");
}

Test(st_bad, unknown_dtype)
{
    expect_entry_fail("{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}", 4,
                      "unknown dtype 'Q7'");
}

Test(st_bad, lowercase_dtype_is_unknown)
{
    expect_entry_fail("{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4,
                      "unknown dtype");
}

Test(st_bad, unsupported_dtypes_named)
{
    const char *dts[] = {"F64", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2", "I16", "U64"};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        char entry[128], want[64];
        snprintf(entry, sizeof entry, "{\"dtype\":\"%s\",\"shape\":[1],\"data_offsets\":[0,1]}",
                 dts[i]);
        snprintf(want, sizeof want, "unsupported dtype %s", dts[i]);
        expect_entry_fail(entry, 8, want);
    }
}

Test(st_bad, shape_not_array)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}", 16, "shape");
}

Test(st_bad, negative_shape)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,0]}", 8,
                      "negative");
}

Test(st_bad, float_shape)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[2.0,3],\"data_offsets\":[0,24]}", 24,
                      "not an integer");
}

Test(st_bad, string_shape)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}", 8,
                      "not an integer");
}

Test(st_bad, too_many_dims)
{
    expect_entry_fail(
        "{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}", 4,
        "dimensions");
}

Test(st_bad, shape_numel_overflow)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                      "\"data_offsets\":[0,0]}",
                      0, "overflow");
}

Test(st_bad, shape_bytes_overflow)
{
    /* numel fits in int64 but numel * 8 does not */
    expect_entry_fail("{\"dtype\":\"I64\",\"shape\":[4611686018427387904],"
                      "\"data_offsets\":[0,0]}",
                      0, "overflow");
}

Test(st_bad, shape_integer_too_big_for_json)
{
    struct tpath p = test_tmp_path("bigint.safetensors");
    write_hdr(p.s, "{\"t\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999999],"
                   "\"data_offsets\":[0,0]}}",
              0);
    expect_open_fail(p.s, "too big integer", NULL);
}

Test(st_bad, offsets_beyond_data_section)
{
    struct tpath p = test_tmp_path("model.safetensors");
    write_hdr(p.s,
              "{\"model.norm.weight\":{\"dtype\":\"BF16\",\"shape\":[5],"
              "\"data_offsets\":[10,20]}}",
              16);
    expect_open_fail(p.s, "tensor 'model.norm.weight': data_offsets [10, 20] exceed the data "
                          "section (16 bytes)",
                     NULL);
}

Test(st_bad, oversized_offsets)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1],"
                      "\"data_offsets\":[9223372036854775800,9223372036854775804]}",
                      4, "exceed the data section");
}

Test(st_bad, begin_after_end)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}", 8,
                      "begin after");
}

Test(st_bad, negative_offsets)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}", 8,
                      "negative");
}

Test(st_bad, offsets_wrong_arity)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}", 8,
                      "data_offsets");
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}", 8,
                      "data_offsets");
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}", 8,
                      "data_offsets");
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}", 8,
                      "data_offsets");
}

Test(st_bad, size_mismatch)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}", 24,
                      "needs 24");
}

Test(st_bad, zero_size_tensor_with_bytes)
{
    expect_entry_fail("{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,4]}", 4, "needs 0");
}

Test(st_bad, overlapping_tensors)
{
    struct tpath p = test_tmp_path("overlap.safetensors");
    write_hdr(p.s,
              "{\"first\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"second\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
              12);
    expect_open_fail(p.s, "overlap", "'second'");
    expect_open_fail(p.s, "'first'", NULL);
}

Test(st_bad, identical_ranges_overlap)
{
    struct tpath p = test_tmp_path("same.safetensors");
    write_hdr(p.s,
              "{\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
              8);
    expect_open_fail(p.s, "overlap", NULL);
}

Test(st_bad, nested_overlap)
{
    /* c lies inside a, after b: only a running max of ends catches it */
    struct tpath p = test_tmp_path("nested.safetensors");
    write_hdr(p.s,
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
              "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[16,20]}}",
              32);
    expect_open_fail(p.s, "overlap", NULL);
}

Test(st_bad, truncated_data_section)
{
    struct tpath p = test_tmp_path("cut.safetensors");
    const char *names[] = {"w1", "w2"};
    write_f32_file(p.s, 2, names, 1.0f);
    struct stat sb;
    cr_assert_eq(stat(p.s, &sb), 0);
    cr_assert_eq(truncate(p.s, sb.st_size - 3), 0);
    expect_open_fail(p.s, "'w2'", "exceed the data section");
}

Test(st_bad, metadata_non_string_value)
{
    struct tpath p = test_tmp_path("meta.safetensors");
    write_hdr(p.s, "{\"__metadata__\":{\"format\":\"pt\",\"n\":1}}", 0);
    expect_open_fail(p.s, "__metadata__", "'n'");
}

Test(st_bad, metadata_not_object)
{
    struct tpath p = test_tmp_path("meta2.safetensors");
    write_hdr(p.s, "{\"__metadata__\":[\"format\",\"pt\"]}", 0);
    expect_open_fail(p.s, "__metadata__", NULL);
}

/* ---- writer failure paths ------------------------------------------------ */

/* Neither path nor path.tmp exists. */
static void expect_nothing_at(const char *path)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_assert(!file_exists(path), "%s exists", path);
    cr_assert(!file_exists(tmp), "%s exists", tmp);
}

static struct st_writer *writer_with_f32(const char *path, int64_t n)
{
    struct err e = {{0}};
    struct st_writer *w = st_writer_create(path, &e);
    cr_assert_not_null(w, "%s", e.msg);
    cr_assert_eq(st_writer_declare(w, "w", DTYPE_F32, 1, &n, &e), 0, "%s", e.msg);
    return w;
}

Test(st_writer, more_bytes_than_declared)
{
    struct tpath p = test_tmp_path("over.safetensors");
    struct st_writer *w = writer_with_f32(p.s, 2);
    struct err e = {{0}};
    float v[3] = {1, 2, 3};
    cr_assert_eq(st_writer_write(w, v, 4, &e), 0, "%s", e.msg);
    cr_assert_eq(st_writer_write(w, v, 8, &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    cr_assert(strstr(e.msg, "declared"), "%s", e.msg);
    cr_assert_eq(st_writer_finish(w, &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    expect_nothing_at(p.s);
}

Test(st_writer, fewer_bytes_than_declared)
{
    struct tpath p = test_tmp_path("under.safetensors");
    struct st_writer *w = writer_with_f32(p.s, 2);
    struct err e = {{0}};
    float v = 1;
    cr_assert_eq(st_writer_write(w, &v, sizeof v, &e), 0, "%s", e.msg);
    cr_assert_eq(st_writer_finish(w, &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    cr_assert(strstr(e.msg, "4 data bytes written but 8 declared"), "%s", e.msg);
    expect_nothing_at(p.s);
}

Test(st_writer, nothing_written_at_all)
{
    struct tpath p = test_tmp_path("none.safetensors");
    struct st_writer *w = writer_with_f32(p.s, 2);
    struct err e = {{0}};
    cr_assert_eq(st_writer_finish(w, &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    expect_nothing_at(p.s);
}

Test(st_writer, failed_finish_keeps_old_file)
{
    struct tpath p = test_tmp_path("keep.safetensors");
    write_file(p.s, "old", 3);
    struct st_writer *w = writer_with_f32(p.s, 2);
    struct err e = {{0}};
    cr_assert_eq(st_writer_finish(w, &e), -1);
    char buf[8] = {0};
    FILE *f = fopen(p.s, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(buf, 1, sizeof buf, f), 3);
    fclose(f);
    cr_assert_str_eq(buf, "old");
    struct tpath tmp = test_tmp_path("keep.safetensors.tmp");
    cr_assert(!file_exists(tmp.s));
}

Test(st_writer, declare_after_write)
{
    struct tpath p = test_tmp_path("late.safetensors");
    struct st_writer *w = writer_with_f32(p.s, 1);
    struct err e = {{0}};
    float v = 1;
    cr_assert_eq(st_writer_write(w, &v, sizeof v, &e), 0, "%s", e.msg);
    int64_t s = 1;
    cr_assert_eq(st_writer_declare(w, "late", DTYPE_F32, 1, &s, &e), -1);
    cr_assert(strstr(e.msg, p.s) && strstr(e.msg, "late"), "%s", e.msg);
    cr_assert_eq(st_writer_set_metadata(w, "k", "v", &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    st_writer_abort(w);
    expect_nothing_at(p.s);
}

Test(st_writer, bad_declarations)
{
    struct tpath p = test_tmp_path("decl.safetensors");
    struct st_writer *w = writer_with_f32(p.s, 1);
    struct err e = {{0}};
    int64_t s[ST_MAX_DIMS + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int64_t neg[2] = {2, -3};
    int64_t huge[2] = {INT64_MAX, INT64_MAX};

    cr_assert_eq(st_writer_declare(w, "w", DTYPE_F32, 1, s, &e), -1);
    cr_assert(strstr(e.msg, p.s) && strstr(e.msg, "'w'") && strstr(e.msg, "twice"), "%s", e.msg);
    cr_assert_eq(st_writer_declare(w, "__metadata__", DTYPE_F32, 1, s, &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    cr_assert_eq(st_writer_declare(w, "", DTYPE_F32, 1, s, &e), -1);
    cr_assert_eq(st_writer_declare(w, "deep", DTYPE_F32, ST_MAX_DIMS + 1, s, &e), -1);
    cr_assert(strstr(e.msg, "deep"), "%s", e.msg);
    cr_assert_eq(st_writer_declare(w, "neg", DTYPE_F32, 2, neg, &e), -1);
    cr_assert(strstr(e.msg, "neg") && strstr(e.msg, "negative"), "%s", e.msg);
    cr_assert_eq(st_writer_declare(w, "huge", DTYPE_F32, 2, huge, &e), -1);
    cr_assert(strstr(e.msg, "overflow"), "%s", e.msg);
    cr_assert_eq(st_writer_declare(w, "baddt", DTYPE_COUNT, 1, s, &e), -1);
    cr_assert_eq(st_writer_declare(w, "bad\xff", DTYPE_F32, 1, s, &e), -1);
    cr_assert(strstr(e.msg, "UTF-8"), "%s", e.msg);
    cr_assert_eq(st_writer_set_metadata(w, "k", "bad\xff", &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);

    /* the failed declarations left the writer usable */
    float v = 5;
    cr_assert_eq(st_writer_write(w, &v, sizeof v, &e), 0, "%s", e.msg);
    cr_assert_eq(st_writer_finish(w, &e), 0, "%s", e.msg);
    struct st_file *f = st_open(p.s, &e);
    cr_assert_not_null(f, "%s", e.msg);
    cr_assert_eq(f->n_tensors, 1);
    st_close(f);
}

Test(st_writer, abort_removes_tmp)
{
    struct tpath p = test_tmp_path("abort.safetensors");
    struct st_writer *w = writer_with_f32(p.s, 4);
    struct err e = {{0}};
    float v[2] = {1, 2};
    cr_assert_eq(st_writer_write(w, v, sizeof v, &e), 0, "%s", e.msg);
    struct tpath tmp = test_tmp_path("abort.safetensors.tmp");
    cr_assert(file_exists(tmp.s), "data goes to the tmp file");
    cr_assert(!file_exists(p.s));
    st_writer_abort(w);
    expect_nothing_at(p.s);
    st_writer_abort(NULL);
}

Test(st_writer, create_in_missing_directory)
{
    struct tpath p = test_tmp_path("no/such/dir/x.safetensors");
    struct err e = {{0}};
    cr_assert_null(st_writer_create(p.s, &e));
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
}

Test(st_writer, disk_full)
{
    /* A file size limit makes write() fail with EFBIG, like a full disk. */
    struct tpath p = test_tmp_path("full.safetensors");
    struct st_writer *w = writer_with_f32(p.s, 1 << 16);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    struct err e = {{0}};
    size_t n = (size_t)4 << 16;
    char *buf = calloc(1, n);
    int rc = st_writer_write(w, buf, n, &e);
    free(buf);
    cr_assert_eq(rc, -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    cr_assert(strstr(e.msg, "write failed"), "%s", e.msg);
    cr_assert_eq(st_writer_write(w, "x", 1, &e), -1, "writer stays failed");
    cr_assert_eq(st_writer_finish(w, &e), -1);
    cr_assert(strstr(e.msg, p.s), "%s", e.msg);
    expect_nothing_at(p.s);
}

/* ---- checkpoints --------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    write_file(path, text, strlen(text));
}

/* Two shards: a holds x, y; b holds z, and the matching index. */
static void make_sharded(void)
{
    const char *a[] = {"model.layers.0.w", "model.embed"};
    const char *b[] = {"lm_head.weight"};
    write_f32_file(test_tmp_path("model-00001-of-00002.safetensors").s, 2, a, 10.0f);
    write_f32_file(test_tmp_path("model-00002-of-00002.safetensors").s, 1, b, 20.0f);
    write_text(test_tmp_path("model.safetensors.index.json").s,
               "{\"metadata\":{\"total_size\":24},\"weight_map\":{"
               "\"model.layers.0.w\":\"model-00001-of-00002.safetensors\","
               "\"lm_head.weight\":\"model-00002-of-00002.safetensors\","
               "\"model.embed\":\"model-00001-of-00002.safetensors\"}}");
}

static void expect_ckpt_fail(const char *dir, const char *want1, const char *want2)
{
    struct err e = {{0}};
    struct checkpoint *c = checkpoint_open(dir, &e);
    if (c)
        checkpoint_close(c);
    cr_assert_null(c, "checkpoint_open(%s) should fail", dir);
    if (want1)
        cr_assert(strstr(e.msg, want1), "message lacks '%s': %s", want1, e.msg);
    if (want2)
        cr_assert(strstr(e.msg, want2), "message lacks '%s': %s", want2, e.msg);
}

Test(st_ckpt, single_file)
{
    const char *names[] = {"b", "c", "a"};
    write_f32_file(test_tmp_path("model.safetensors").s, 3, names, 1.0f);
    struct err e = {{0}};
    struct checkpoint *c = checkpoint_open(test_tmp_dir, &e);
    cr_assert_not_null(c, "%s", e.msg);
    cr_assert_eq(c->n_files, 1);
    cr_assert_eq(c->n_tensors, 3);
    cr_assert_str_eq(c->tensors[0]->name, "a");
    cr_assert_str_eq(c->tensors[1]->name, "b");
    cr_assert_str_eq(c->tensors[2]->name, "c");
    const struct st_tensor *t = checkpoint_find(c, "a");
    cr_assert_not_null(t);
    cr_assert_eq(((const float *)t->data)[0], 3.0f);
    cr_assert_null(checkpoint_find(c, "d"));
    cr_assert_null(checkpoint_find(c, ""));
    checkpoint_close(c);
}

Test(st_ckpt, single_empty_file)
{
    write_hdr(test_tmp_path("model.safetensors").s, "{}", 0);
    struct err e = {{0}};
    struct checkpoint *c = checkpoint_open(test_tmp_dir, &e);
    cr_assert_not_null(c, "%s", e.msg);
    cr_assert_eq(c->n_tensors, 0);
    cr_assert_null(checkpoint_find(c, "x"));
    checkpoint_close(c);
}

Test(st_ckpt, sharded)
{
    make_sharded();
    char dir[128];
    snprintf(dir, sizeof dir, "%s/", test_tmp_dir); /* a trailing slash is fine */
    struct err e = {{0}};
    struct checkpoint *c = checkpoint_open(dir, &e);
    cr_assert_not_null(c, "%s", e.msg);
    cr_assert_eq(c->n_files, 2);
    cr_assert_eq(c->n_tensors, 3);
    for (int i = 1; i < c->n_tensors; i++)
        cr_assert_lt(strcmp(c->tensors[i - 1]->name, c->tensors[i]->name), 0);
    const struct st_tensor *w = checkpoint_find(c, "model.layers.0.w");
    const struct st_tensor *emb = checkpoint_find(c, "model.embed");
    const struct st_tensor *head = checkpoint_find(c, "lm_head.weight");
    cr_assert(w && emb && head);
    cr_assert_eq(((const float *)w->data)[0], 10.0f);
    cr_assert_eq(((const float *)emb->data)[1], -11.0f);
    cr_assert_eq(((const float *)head->data)[0], 20.0f);
    cr_assert(strstr(w->file->path, "model-00001-of-00002.safetensors"));
    cr_assert(strstr(head->file->path, "model-00002-of-00002.safetensors"));
    cr_assert_eq(w->file, emb->file);
    cr_assert_null(checkpoint_find(c, "model.norm"));
    checkpoint_close(c);
}

Test(st_ckpt, index_wins_over_single_file)
{
    make_sharded();
    write_text(test_tmp_path("model.safetensors").s, "garbage");
    struct err e = {{0}};
    struct checkpoint *c = checkpoint_open(test_tmp_dir, &e);
    cr_assert_not_null(c, "%s", e.msg);
    cr_assert_eq(c->n_files, 2);
    checkpoint_close(c);
}

Test(st_ckpt, index_names_missing_file)
{
    make_sharded();
    unlink(test_tmp_path("model-00002-of-00002.safetensors").s);
    expect_ckpt_fail(test_tmp_dir, "model-00002-of-00002.safetensors", "lm_head.weight");
}

Test(st_ckpt, tensor_missing_from_its_shard)
{
    make_sharded();
    write_text(test_tmp_path("model.safetensors.index.json").s,
               "{\"weight_map\":{"
               "\"model.layers.0.w\":\"model-00001-of-00002.safetensors\","
               "\"lm_head.weight\":\"model-00002-of-00002.safetensors\","
               "\"model.norm\":\"model-00002-of-00002.safetensors\","
               "\"model.embed\":\"model-00001-of-00002.safetensors\"}}");
    expect_ckpt_fail(test_tmp_dir, "'model.norm'", "model-00002-of-00002.safetensors");
}

Test(st_ckpt, tensor_mapped_to_wrong_shard)
{
    make_sharded();
    write_text(test_tmp_path("model.safetensors.index.json").s,
               "{\"weight_map\":{"
               "\"model.layers.0.w\":\"model-00001-of-00002.safetensors\","
               "\"lm_head.weight\":\"model-00001-of-00002.safetensors\","
               "\"model.embed\":\"model-00002-of-00002.safetensors\"}}");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "model-0000");
}

Test(st_ckpt, tensor_in_two_shards)
{
    make_sharded();
    const char *b[] = {"lm_head.weight", "model.embed"};
    write_f32_file(test_tmp_path("model-00002-of-00002.safetensors").s, 2, b, 20.0f);
    expect_ckpt_fail(test_tmp_dir, "'model.embed'", "model-00002-of-00002.safetensors");
}

Test(st_ckpt, shard_tensor_not_in_index)
{
    make_sharded();
    const char *b[] = {"lm_head.weight", "extra.bias"};
    write_f32_file(test_tmp_path("model-00002-of-00002.safetensors").s, 2, b, 20.0f);
    expect_ckpt_fail(test_tmp_dir, "'extra.bias'", "model-00002-of-00002.safetensors");
}

Test(st_ckpt, shard_name_with_path)
{
    make_sharded();
    write_text(test_tmp_path("model.safetensors.index.json").s,
               "{\"weight_map\":{\"model.embed\":\"../model-00001-of-00002.safetensors\"}}");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "'model.embed'");
    write_text(test_tmp_path("model.safetensors.index.json").s,
               "{\"weight_map\":{\"model.embed\":\"/etc/passwd\"}}");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "/etc/passwd");
    write_text(test_tmp_path("model.safetensors.index.json").s, "{\"weight_map\":{\"model.embed\":3}}");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "'model.embed'");
}

Test(st_ckpt, bad_index_json)
{
    write_text(test_tmp_path("model.safetensors.index.json").s, "{\"weight_map\": ");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "JSON");
    write_text(test_tmp_path("model.safetensors.index.json").s, "{\"metadata\":{}}");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "weight_map");
    write_text(test_tmp_path("model.safetensors.index.json").s, "[]");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "weight_map");
    write_text(test_tmp_path("model.safetensors.index.json").s,
               "{\"weight_map\":{\"a\":\"x\",\"a\":\"y\"}}");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors.index.json", "duplicate");
}

Test(st_ckpt, corrupt_shard)
{
    make_sharded();
    write_raw(test_tmp_path("model-00002-of-00002.safetensors").s, 1000, "{}", 2, 0);
    expect_ckpt_fail(test_tmp_dir, "model-00002-of-00002.safetensors", "past the end");
}

Test(st_ckpt, corrupt_single_file)
{
    write_text(test_tmp_path("model.safetensors").s, "abc");
    expect_ckpt_fail(test_tmp_dir, "model.safetensors", "too short");
}

Test(st_ckpt, no_weights)
{
    write_text(test_tmp_path("config.json").s, "{}");
    expect_ckpt_fail(test_tmp_dir, test_tmp_dir, "no model.safetensors or model.safetensors.index.json");
}

Test(st_ckpt, missing_directory)
{
    struct tpath p = test_tmp_path("does-not-exist");
    expect_ckpt_fail(p.s, p.s, "No such file");
    write_text(test_tmp_path("plain").s, "x");
    expect_ckpt_fail(test_tmp_path("plain").s, "plain", "not a directory");
}
