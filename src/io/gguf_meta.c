/* The GGUF header (magic, version, counts), the metadata pairs and
 * general.alignment. A value's bytes are checked to be there before they
 * are read; counts are checked against the bytes left before anything is
 * allocated for them; strings and numeric arrays point into the mapping,
 * only string arrays get an index (arr_strs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf_impl.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
/* Smallest possible encodings, used to refuse counts the file cannot hold:
 * a pair is a key length (8), a value type (4) and at least a 1-byte value;
 * a tensor info is a name length (8), n_dims (4), one dim (8), a type (4)
 * and an offset (8). */
#define GGUF_MIN_KV_BYTES 13
#define GGUF_MIN_TENSOR_INFO_BYTES 32

static int rd_version(struct gguf_rd *r, uint32_t *version)
{
    if (gguf_rd_u32(r, "the version", version) < 0)
        return -1;
    uint32_t v = *version;
    if (v == 2 || v == 3)
        return 0;
    /* A big-endian writer puts the small version number in the high byte. */
    if ((v & 0xffffff) == 0 && (v >> 24) >= 1 && (v >> 24) <= 3)
        return gguf_rd_fail(
            r, "version 0x%08x looks byte-swapped: a big-endian GGUF file, which is not supported", v);
    if (v == 1)
        return gguf_rd_fail(r, "GGUF version 1 is not supported (only versions 2 and 3)");
    return gguf_rd_fail(r, "unsupported GGUF version %u (only versions 2 and 3)", v);
}

/* Magic, version and the two counts; the counts are checked against what
 * the rest of the file could hold before they size any allocation. */
int gguf_read_header(struct gguf_rd *r, struct gguf_file *f, uint64_t *n_tensors, uint64_t *n_kv)
{
    snprintf(r->where, sizeof r->where, "header");
    if (r->size < 4)
        return gguf_rd_fail(r, "not a GGUF file: %zu bytes, too short for the magic", r->size);
    if (memcmp(r->base, GGUF_MAGIC, 4) != 0) {
        const unsigned char *m = r->base;
        return gguf_rd_fail(r, "not a GGUF file: bad magic %02x %02x %02x %02x (want \"GGUF\")", m[0], m[1],
                            m[2], m[3]);
    }
    r->pos = 4;
    if (rd_version(r, &f->version) < 0 || gguf_rd_u64(r, "the tensor count", n_tensors) < 0 ||
        gguf_rd_u64(r, "the metadata count", n_kv) < 0)
        return -1;
    if (*n_kv > gguf_rd_left(r) / GGUF_MIN_KV_BYTES)
        return gguf_rd_fail(r, "metadata count %llu cannot fit in the %zu bytes left in the file",
                            (unsigned long long)*n_kv, gguf_rd_left(r));
    if (*n_tensors > gguf_rd_left(r) / GGUF_MIN_TENSOR_INFO_BYTES)
        return gguf_rd_fail(r, "tensor count %llu cannot fit in the %zu bytes left in the file",
                            (unsigned long long)*n_tensors, gguf_rd_left(r));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Metadata                                                                 */
/* ------------------------------------------------------------------------ */

/* A BOOL must be 0 or 1: anything else means the file is not what it claims. */
static int check_bool(struct gguf_rd *r, const unsigned char *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1)
            return gguf_rd_fail(r, "bool value %u%s is neither 0 nor 1", p[i], n > 1 ? " in the array" : "");
    return 0;
}

static int rd_scalar(struct gguf_rd *r, struct gguf_kv *kv)
{
    size_t n = gguf_scalar_size(kv->type);
    if (n > gguf_rd_left(r))
        return gguf_rd_fail(
            r, "the %s value (%zu bytes at offset %zu) runs past the end of the file (%zu bytes)",
            gguf_value_type_name(kv->type), n, r->pos, r->size);
    const unsigned char *p = r->base + r->pos;
    if (kv->type == GGUF_TYPE_BOOL && check_bool(r, p, 1) < 0)
        return -1;
    if (gguf_is_float(kv->type))
        kv->v.f = gguf_num_float(kv->type, p);
    else if (gguf_is_signed_int(kv->type))
        kv->v.i = gguf_num_int(kv->type, p);
    else
        kv->v.u = gguf_read_le(p, n);
    r->pos += n;
    return 0;
}

/* Indexes an array of count strings; the count is checked against the bytes
 * left (8 per string at least) before the index is allocated. */
static int rd_str_array(struct gguf_rd *r, struct gguf_kv *kv)
{
    if (kv->arr_n > gguf_rd_left(r) / 8)
        return gguf_rd_fail(r, "array count %llu of strings cannot fit in the %zu bytes left in the file",
                            (unsigned long long)kv->arr_n, gguf_rd_left(r));
    kv->arr_data = r->base + r->pos;
    kv->arr_strs = xcalloc((size_t)kv->arr_n, sizeof *kv->arr_strs);
    for (uint64_t i = 0; i < kv->arr_n; i++)
        if (gguf_rd_str(r, "string", (int64_t)i, &kv->arr_strs[i]) < 0)
            return -1;
    return 0;
}

static int rd_array(struct gguf_rd *r, struct gguf_kv *kv)
{
    uint32_t et;
    if (gguf_rd_u32(r, "the array element type", &et) < 0 ||
        gguf_rd_u64(r, "the array count", &kv->arr_n) < 0)
        return -1;
    if (et == GGUF_TYPE_ARRAY)
        return gguf_rd_fail(r, "nested array (an array of arrays) is not supported");
    if (et > GGUF_TYPE_FLOAT64)
        return gguf_rd_fail(r, "unknown array element type %u", et);
    kv->arr_type = (enum gguf_value_type)et;
    if (et == GGUF_TYPE_STRING)
        return rd_str_array(r, kv);
    size_t es = gguf_scalar_size(et);
    if (kv->arr_n > gguf_rd_left(r) / es)
        return gguf_rd_fail(
            r, "array count %llu of %s (%zu bytes each) cannot fit in the %zu bytes left in the file",
            (unsigned long long)kv->arr_n, gguf_value_type_name(kv->arr_type), es, gguf_rd_left(r));
    kv->arr_data = r->base + r->pos;
    if (et == GGUF_TYPE_BOOL && check_bool(r, kv->arr_data, kv->arr_n) < 0)
        return -1;
    r->pos += (size_t)kv->arr_n * es;
    return 0;
}

/* Reads pair i: key, value type, value. */
int gguf_read_kv(struct gguf_rd *r, int64_t i, struct gguf_kv *kv)
{
    snprintf(r->where, sizeof r->where, "metadata pair %lld", (long long)i);
    if (gguf_rd_str(r, "key", -1, &kv->key) < 0)
        return -1;
    gguf_rd_where(r, "metadata key", &kv->key);
    uint32_t t;
    if (gguf_rd_u32(r, "the value type", &t) < 0)
        return -1;
    if (t > GGUF_TYPE_FLOAT64)
        return gguf_rd_fail(r, "unknown value type %u", t);
    kv->type = (enum gguf_value_type)t;
    if (t == GGUF_TYPE_ARRAY)
        return rd_array(r, kv);
    if (t == GGUF_TYPE_STRING)
        return gguf_rd_str(r, "string", -1, &kv->v.str);
    return rd_scalar(r, kv);
}

int gguf_check_duplicate_keys(struct gguf_rd *r, const struct gguf_file *f)
{
    struct gguf_name_ref *refs = xcalloc((size_t)f->n_kv, sizeof *refs);
    for (int64_t k = 0; k < f->n_kv; k++)
        refs[k] = (struct gguf_name_ref){&f->kvs[k].key, k};
    int64_t i, j;
    int dup = gguf_find_duplicate(refs, f->n_kv, &i, &j);
    free(refs);
    if (!dup)
        return 0;
    gguf_rd_where(r, "metadata key", &f->kvs[i].key);
    return gguf_rd_fail(r, "duplicate key (pairs %lld and %lld)", (long long)i, (long long)j);
}

/* general.alignment: a UINT32 power of two; 32 when absent. */
int gguf_read_alignment(struct gguf_rd *r, struct gguf_file *f)
{
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const struct gguf_kv *kv = gguf_find_kv(f, "general.alignment");
    if (!kv)
        return 0;
    snprintf(r->where, sizeof r->where, "metadata key 'general.alignment'");
    if (kv->type != GGUF_TYPE_UINT32)
        return gguf_rd_fail(r, "is %s, must be UINT32", gguf_value_type_name(kv->type));
    if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)) != 0)
        return gguf_rd_fail(r, "alignment %llu is not a power of two", (unsigned long long)kv->v.u);
    f->alignment = kv->v.u;
    return 0;
}
