/* GGUF reader.
 *
 * The whole file is mapped read-only and walked once with a cursor (struct
 * rd) whose every read is checked against the bytes left in the mapping, so
 * no length, count or offset in the file can make the reader step outside
 * it. Counts are compared with the bytes left before anything is allocated
 * for them (each element takes at least one byte, each string at least its
 * 8-byte length), so a hostile count fails with a message instead of a huge
 * allocation. Sizes are computed in 64 bits with overflow checks.
 *
 * Messages are "<path>: <where>: <problem>", where <where> names the header,
 * the metadata key or the tensor being read (struct rd keeps it current).
 *
 * Strings, numeric arrays and tensor data are not copied: they point into
 * the mapping, which lives until gguf_close. Only the string-array indexes
 * (arr_strs) and the kv/tensor tables are allocated. */
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
/* Smallest possible encodings, used to refuse counts the file cannot hold:
 * a pair is a key length (8), a value type (4) and at least a 1-byte value;
 * a tensor info is a name length (8), n_dims (4), one dim (8), a type (4)
 * and an offset (8). */
#define GGUF_MIN_KV_BYTES 13
#define GGUF_MIN_TENSOR_INFO_BYTES 32
/* Names shown in messages are cut to this many bytes. */
#define GGUF_SHOW_MAX 120

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

struct ggml_type_info {
    const char *name;
    int block_elems; /* 0: size unknown here, tensors of the type are refused */
    int block_bytes;
};

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

static const struct ggml_type_info *ggml_info(enum ggml_type t)
{
    unsigned u = (unsigned)t;
    return u < GGML_TYPE_COUNT_ && ggml_types[u].name ? &ggml_types[u] : NULL;
}

const char *ggml_type_name(enum ggml_type t)
{
    const struct ggml_type_info *ti = ggml_info(t);
    if (ti)
        return ti->name;
    static char buf[32];
    snprintf(buf, sizeof buf, "type %u", (unsigned)t);
    return buf;
}

int ggml_type_block_elems(enum ggml_type t)
{
    const struct ggml_type_info *ti = ggml_info(t);
    return ti ? ti->block_elems : 0;
}

size_t ggml_type_block_bytes(enum ggml_type t)
{
    const struct ggml_type_info *ti = ggml_info(t);
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
static size_t scalar_size(uint32_t t)
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

static bool is_signed_int(uint32_t t)
{
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

static bool is_float(uint32_t t) { return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64; }

/* n little-endian bytes at p, zero-extended (byte by byte: p may be unaligned). */
static uint64_t read_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = (v << 8) | p[i];
    return v;
}

/* The number of type t at p, sign-extended for the signed types. */
static int64_t num_int(uint32_t t, const unsigned char *p)
{
    size_t n = scalar_size(t);
    uint64_t u = read_le(p, n);
    if (is_signed_int(t) && n < 8 && (u >> (8 * n - 1)) & 1)
        u |= ~(uint64_t)0 << (8 * n); /* sign-extend */
    int64_t i;
    memcpy(&i, &u, sizeof i); /* two's complement reinterpretation, no UB */
    return i;
}

static double num_float(uint32_t t, const unsigned char *p)
{
    if (t == GGUF_TYPE_FLOAT32) {
        uint32_t b = (uint32_t)read_le(p, 4);
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    uint64_t b = read_le(p, 8);
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* ------------------------------------------------------------------------ */
/* The bounds-checked cursor                                                */
/* ------------------------------------------------------------------------ */

struct rd {
    const unsigned char *base; /* the mapping (NULL for an empty file) */
    size_t size, pos;
    const char *path;
    char where[GGUF_SHOW_MAX + 64]; /* what is being read, for messages */
    struct err *e;
};

/* Copies s into buf (at most GGUF_SHOW_MAX bytes), control bytes as '?', so
 * a hostile name cannot garble a message. */
static const char *show(const struct gguf_str *s, char *buf, size_t size)
{
    size_t n = s->len < GGUF_SHOW_MAX ? (size_t)s->len : GGUF_SHOW_MAX;
    if (n > size - 4)
        n = size - 4;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s->s[i];
        buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    strcpy(buf + n, s->len > n ? "..." : "");
    return buf;
}

static void rd_where(struct rd *r, const char *what, const struct gguf_str *name)
{
    char buf[GGUF_SHOW_MAX + 4];
    snprintf(r->where, sizeof r->where, "%s '%s'", what, show(name, buf, sizeof buf));
}

static int rd_fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rd_fail(struct rd *r, const char *fmt, ...)
{
    char msg[sizeof r->e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(r->e, "%s: %s: %s", r->path, r->where, msg);
}

static size_t rd_left(const struct rd *r) { return r->size - r->pos; }

/* Reads an n-byte little-endian unsigned integer; what names it in messages. */
static int rd_uint(struct rd *r, size_t n, const char *what, uint64_t *out)
{
    *out = 0; /* defined even on failure (the compiler cannot see that rd_fail returns -1) */
    if (n > rd_left(r))
        return rd_fail(r, "%s (%zu bytes at offset %zu) runs past the end of the file (%zu bytes)", what, n,
                       r->pos, r->size);
    *out = read_le(r->base + r->pos, n);
    r->pos += n;
    return 0;
}

static int rd_u32(struct rd *r, const char *what, uint32_t *out)
{
    uint64_t v;
    if (rd_uint(r, 4, what, &v) < 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int rd_u64(struct rd *r, const char *what, uint64_t *out) { return rd_uint(r, 8, what, out); }

/* "string" or "string 17" (idx >= 0: an array element), built only for
 * messages so the 262144-string vocabularies do not pay for it. */
static const char *label(char *buf, size_t size, const char *what, int64_t idx)
{
    if (idx < 0)
        snprintf(buf, size, "%s", what);
    else
        snprintf(buf, size, "%s %lld", what, (long long)idx);
    return buf;
}

/* Reads a string: a u64 length, then that many bytes (left in the mapping). */
static int rd_str(struct rd *r, const char *what, int64_t idx, struct gguf_str *out)
{
    char lb[64];
    if (rd_left(r) < 8)
        return rd_fail(r, "%s's length (8 bytes at offset %zu) runs past the end of the file (%zu bytes)",
                       label(lb, sizeof lb, what, idx), r->pos, r->size);
    uint64_t len = read_le(r->base + r->pos, 8);
    r->pos += 8;
    if (len > rd_left(r))
        return rd_fail(r, "%s length %llu exceeds the %zu bytes left in the file (at offset %zu)",
                       label(lb, sizeof lb, what, idx), (unsigned long long)len, rd_left(r), r->pos);
    out->s = (const char *)r->base + r->pos;
    out->len = len;
    r->pos += (size_t)len;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Metadata                                                                 */
/* ------------------------------------------------------------------------ */

/* A BOOL must be 0 or 1: anything else means the file is not what it claims. */
static int check_bool(struct rd *r, const unsigned char *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1)
            return rd_fail(r, "bool value %u%s is neither 0 nor 1", p[i], n > 1 ? " in the array" : "");
    return 0;
}

static int rd_scalar(struct rd *r, struct gguf_kv *kv)
{
    size_t n = scalar_size(kv->type);
    if (n > rd_left(r))
        return rd_fail(r, "the %s value (%zu bytes at offset %zu) runs past the end of the file (%zu bytes)",
                       gguf_value_type_name(kv->type), n, r->pos, r->size);
    const unsigned char *p = r->base + r->pos;
    if (kv->type == GGUF_TYPE_BOOL && check_bool(r, p, 1) < 0)
        return -1;
    if (is_float(kv->type))
        kv->v.f = num_float(kv->type, p);
    else if (is_signed_int(kv->type))
        kv->v.i = num_int(kv->type, p);
    else
        kv->v.u = read_le(p, n);
    r->pos += n;
    return 0;
}

/* Indexes an array of count strings; the count is checked against the bytes
 * left (8 per string at least) before the index is allocated. */
static int rd_str_array(struct rd *r, struct gguf_kv *kv)
{
    if (kv->arr_n > rd_left(r) / 8)
        return rd_fail(r, "array count %llu of strings cannot fit in the %zu bytes left in the file",
                       (unsigned long long)kv->arr_n, rd_left(r));
    kv->arr_data = r->base + r->pos;
    kv->arr_strs = xcalloc((size_t)kv->arr_n, sizeof *kv->arr_strs);
    for (uint64_t i = 0; i < kv->arr_n; i++)
        if (rd_str(r, "string", (int64_t)i, &kv->arr_strs[i]) < 0)
            return -1;
    return 0;
}

static int rd_array(struct rd *r, struct gguf_kv *kv)
{
    uint32_t et;
    if (rd_u32(r, "the array element type", &et) < 0 || rd_u64(r, "the array count", &kv->arr_n) < 0)
        return -1;
    if (et == GGUF_TYPE_ARRAY)
        return rd_fail(r, "nested array (an array of arrays) is not supported");
    if (et > GGUF_TYPE_FLOAT64)
        return rd_fail(r, "unknown array element type %u", et);
    kv->arr_type = (enum gguf_value_type)et;
    if (et == GGUF_TYPE_STRING)
        return rd_str_array(r, kv);
    size_t es = scalar_size(et);
    if (kv->arr_n > rd_left(r) / es)
        return rd_fail(r,
                       "array count %llu of %s (%zu bytes each) cannot fit in the %zu bytes left in the file",
                       (unsigned long long)kv->arr_n, gguf_value_type_name(kv->arr_type), es, rd_left(r));
    kv->arr_data = r->base + r->pos;
    if (et == GGUF_TYPE_BOOL && check_bool(r, kv->arr_data, kv->arr_n) < 0)
        return -1;
    r->pos += (size_t)kv->arr_n * es;
    return 0;
}

/* Reads pair i: key, value type, value. */
static int rd_kv(struct rd *r, int64_t i, struct gguf_kv *kv)
{
    snprintf(r->where, sizeof r->where, "metadata pair %lld", (long long)i);
    if (rd_str(r, "key", -1, &kv->key) < 0)
        return -1;
    rd_where(r, "metadata key", &kv->key);
    uint32_t t;
    if (rd_u32(r, "the value type", &t) < 0)
        return -1;
    if (t > GGUF_TYPE_FLOAT64)
        return rd_fail(r, "unknown value type %u", t);
    kv->type = (enum gguf_value_type)t;
    if (t == GGUF_TYPE_ARRAY)
        return rd_array(r, kv);
    if (t == GGUF_TYPE_STRING)
        return rd_str(r, "string", -1, &kv->v.str);
    return rd_scalar(r, kv);
}

/* ------------------------------------------------------------------------ */
/* Duplicate names                                                          */
/* ------------------------------------------------------------------------ */

struct name_ref {
    const struct gguf_str *s;
    int64_t index;
};

static int str_cmp(const struct gguf_str *a, const struct gguf_str *b)
{
    size_t n = a->len < b->len ? (size_t)a->len : (size_t)b->len;
    int c = n ? memcmp(a->s, b->s, n) : 0;
    if (c)
        return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

static int name_ref_cmp(const void *a, const void *b)
{
    const struct name_ref *x = a, *y = b;
    int c = str_cmp(x->s, y->s);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Sorting makes the check O(n log n): a hostile file may hold millions of
 * names. Sets *i, *j (file order) of a duplicate pair and returns 1 if any. */
static int find_duplicate(struct name_ref *refs, int64_t n, int64_t *i, int64_t *j)
{
    qsort(refs, (size_t)n, sizeof *refs, name_ref_cmp);
    for (int64_t k = 1; k < n; k++) {
        if (str_cmp(refs[k - 1].s, refs[k].s) == 0) {
            *i = refs[k - 1].index;
            *j = refs[k].index;
            return 1;
        }
    }
    return 0;
}

static int check_duplicate_keys(struct rd *r, const struct gguf_file *f)
{
    struct name_ref *refs = xcalloc((size_t)f->n_kv, sizeof *refs);
    for (int64_t k = 0; k < f->n_kv; k++)
        refs[k] = (struct name_ref){&f->kvs[k].key, k};
    int64_t i, j;
    int dup = find_duplicate(refs, f->n_kv, &i, &j);
    free(refs);
    if (!dup)
        return 0;
    rd_where(r, "metadata key", &f->kvs[i].key);
    return rd_fail(r, "duplicate key (pairs %lld and %lld)", (long long)i, (long long)j);
}

static int check_duplicate_tensors(struct rd *r, const struct gguf_file *f)
{
    struct name_ref *refs = xcalloc((size_t)f->n_tensors, sizeof *refs);
    for (int64_t k = 0; k < f->n_tensors; k++)
        refs[k] = (struct name_ref){&f->tensors[k].name, k};
    int64_t i, j;
    int dup = find_duplicate(refs, f->n_tensors, &i, &j);
    free(refs);
    if (!dup)
        return 0;
    rd_where(r, "tensor", &f->tensors[i].name);
    return rd_fail(r, "duplicate tensor name (tensor infos %lld and %lld)", (long long)i, (long long)j);
}

/* ------------------------------------------------------------------------ */
/* Header, alignment, tensor infos, data section                            */
/* ------------------------------------------------------------------------ */

static int rd_version(struct rd *r, uint32_t *version)
{
    if (rd_u32(r, "the version", version) < 0)
        return -1;
    uint32_t v = *version;
    if (v == 2 || v == 3)
        return 0;
    /* A big-endian writer puts the small version number in the high byte. */
    if ((v & 0xffffff) == 0 && (v >> 24) >= 1 && (v >> 24) <= 3)
        return rd_fail(r, "version 0x%08x looks byte-swapped: a big-endian GGUF file, which is not supported",
                       v);
    if (v == 1)
        return rd_fail(r, "GGUF version 1 is not supported (only versions 2 and 3)");
    return rd_fail(r, "unsupported GGUF version %u (only versions 2 and 3)", v);
}

/* Magic, version and the two counts; the counts are checked against what
 * the rest of the file could hold before they size any allocation. */
static int rd_header(struct rd *r, struct gguf_file *f, uint64_t *n_tensors, uint64_t *n_kv)
{
    snprintf(r->where, sizeof r->where, "header");
    if (r->size < 4)
        return rd_fail(r, "not a GGUF file: %zu bytes, too short for the magic", r->size);
    if (memcmp(r->base, GGUF_MAGIC, 4) != 0) {
        const unsigned char *m = r->base;
        return rd_fail(r, "not a GGUF file: bad magic %02x %02x %02x %02x (want \"GGUF\")", m[0], m[1], m[2],
                       m[3]);
    }
    r->pos = 4;
    if (rd_version(r, &f->version) < 0 || rd_u64(r, "the tensor count", n_tensors) < 0 ||
        rd_u64(r, "the metadata count", n_kv) < 0)
        return -1;
    if (*n_kv > rd_left(r) / GGUF_MIN_KV_BYTES)
        return rd_fail(r, "metadata count %llu cannot fit in the %zu bytes left in the file",
                       (unsigned long long)*n_kv, rd_left(r));
    if (*n_tensors > rd_left(r) / GGUF_MIN_TENSOR_INFO_BYTES)
        return rd_fail(r, "tensor count %llu cannot fit in the %zu bytes left in the file",
                       (unsigned long long)*n_tensors, rd_left(r));
    return 0;
}

/* general.alignment: a UINT32 power of two; 32 when absent. */
static int read_alignment(struct rd *r, struct gguf_file *f)
{
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const struct gguf_kv *kv = gguf_find_kv(f, "general.alignment");
    if (!kv)
        return 0;
    snprintf(r->where, sizeof r->where, "metadata key 'general.alignment'");
    if (kv->type != GGUF_TYPE_UINT32)
        return rd_fail(r, "is %s, must be UINT32", gguf_value_type_name(kv->type));
    if (kv->v.u == 0 || (kv->v.u & (kv->v.u - 1)) != 0)
        return rd_fail(r, "alignment %llu is not a power of two", (unsigned long long)kv->v.u);
    f->alignment = kv->v.u;
    return 0;
}

/* The type must have a known block size, dims[0] whole blocks (ggml splits
 * rows into blocks), and numel / nbytes must not overflow. */
static int check_tensor_type(struct rd *r, struct gguf_tensor *t, uint32_t type)
{
    const struct ggml_type_info *ti = type < GGML_TYPE_COUNT_ ? ggml_info((enum ggml_type)type) : NULL;
    if (!ti)
        return rd_fail(r, "unknown tensor type %u", type);
    if (!ti->block_elems)
        return rd_fail(r, "tensor type %u (%s) is not supported: its block size is unknown here", type,
                       ti->name);
    t->type = (enum ggml_type)type;
    int64_t numel = 1;
    for (int d = 0; d < t->n_dims; d++)
        if (__builtin_mul_overflow(numel, t->dims[d], &numel))
            return rd_fail(r, "element count overflows (dims[%d] = %lld)", d, (long long)t->dims[d]);
    t->numel = numel;
    if (t->dims[0] % ti->block_elems != 0)
        return rd_fail(r, "dims[0] = %lld is not a multiple of the %s block size (%d elements)",
                       (long long)t->dims[0], ti->name, ti->block_elems);
    uint64_t nbytes;
    if (__builtin_mul_overflow((uint64_t)(numel / ti->block_elems), (uint64_t)ti->block_bytes, &nbytes) ||
        nbytes > SIZE_MAX)
        return rd_fail(r, "byte size of %lld %s elements overflows", (long long)numel, ti->name);
    t->nbytes = (size_t)nbytes;
    return 0;
}

static int rd_dims(struct rd *r, struct gguf_tensor *t)
{
    uint32_t nd;
    if (rd_u32(r, "the dimension count", &nd) < 0)
        return -1;
    if (nd < 1 || nd > GGUF_MAX_DIMS)
        return rd_fail(r, "%u dimensions (must be 1 to %d)", nd, GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    for (int d = 0; d < GGUF_MAX_DIMS; d++)
        t->dims[d] = 1; /* unused dims read as 1, as in ggml */
    for (int d = 0; d < t->n_dims; d++) {
        uint64_t v;
        if (rd_u64(r, "a dimension", &v) < 0)
            return -1;
        /* ggml reads dims as int64: above INT64_MAX they are negative */
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return rd_fail(r, "dims[%d] = %lld is not positive", d, (long long)(int64_t)v);
        t->dims[d] = (int64_t)v;
    }
    return 0;
}

static int rd_tensor_info(struct rd *r, const struct gguf_file *f, int64_t i, struct gguf_tensor *t)
{
    snprintf(r->where, sizeof r->where, "tensor info %lld", (long long)i);
    if (rd_str(r, "name", -1, &t->name) < 0)
        return -1;
    rd_where(r, "tensor", &t->name);
    uint32_t type;
    if (rd_dims(r, t) < 0 || rd_u32(r, "the type", &type) < 0 || rd_u64(r, "the offset", &t->offset) < 0)
        return -1;
    if (check_tensor_type(r, t, type) < 0)
        return -1;
    if (t->offset % f->alignment != 0)
        return rd_fail(r, "offset %llu is not a multiple of the alignment (%llu)",
                       (unsigned long long)t->offset, (unsigned long long)f->alignment);
    return 0;
}

struct span {
    uint64_t begin, end;
    int64_t index;
};

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Every tensor is non-empty, so after sorting by start an overlap always
 * shows between neighbours. */
static int check_overlap(struct rd *r, const struct gguf_file *f)
{
    int64_t n = f->n_tensors;
    struct span *s = xcalloc((size_t)n, sizeof *s);
    for (int64_t i = 0; i < n; i++)
        s[i] = (struct span){f->tensors[i].offset, f->tensors[i].offset + f->tensors[i].nbytes, i};
    qsort(s, (size_t)n, sizeof *s, span_cmp);
    int rc = 0;
    for (int64_t i = 1; i < n && !rc; i++) {
        if (s[i].begin < s[i - 1].end) {
            const struct span *p = &s[i - 1], *q = &s[i];
            char buf[GGUF_SHOW_MAX + 4];
            rd_where(r, "tensor", &f->tensors[q->index].name);
            rc = rd_fail(r, "bytes [%llu, %llu) of the data section overlap tensor '%s' [%llu, %llu)",
                         (unsigned long long)q->begin, (unsigned long long)q->end,
                         show(&f->tensors[p->index].name, buf, sizeof buf), (unsigned long long)p->begin,
                         (unsigned long long)p->end);
        }
    }
    free(s);
    return rc;
}

/* The data section starts at the first aligned offset after the tensor
 * infos; each tensor must lie inside it. */
static int place_tensors(struct rd *r, struct gguf_file *f)
{
    uint64_t start = (r->pos + f->alignment - 1) / f->alignment * f->alignment;
    snprintf(r->where, sizeof r->where, "data section");
    if (start > r->size) {
        if (f->n_tensors > 0)
            return rd_fail(r,
                           "starts at offset %llu (the tensor infos end at %zu), past the end of the file "
                           "(%zu bytes)",
                           (unsigned long long)start, r->pos, r->size);
        start = r->size; /* no tensors: the padding may be left out */
    }
    uint64_t data_size = r->size - start;
    f->data = r->base ? r->base + start : NULL;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        struct gguf_tensor *t = &f->tensors[i];
        if (t->offset > data_size || t->nbytes > data_size - t->offset) {
            rd_where(r, "tensor", &t->name);
            return rd_fail(r,
                           "%zu bytes at offset %llu run past the end of the data section (%llu bytes from "
                           "offset %llu of the file)",
                           t->nbytes, (unsigned long long)t->offset, (unsigned long long)data_size,
                           (unsigned long long)start);
        }
        t->data = (const unsigned char *)f->data + t->offset;
    }
    return check_overlap(r, f);
}

static int parse(struct gguf_file *f, struct err *e)
{
    struct rd r = {.base = f->map, .size = f->map_size, .path = f->path, .e = e};
    uint64_t n_tensors = 0, n_kv = 0;
    if (rd_header(&r, f, &n_tensors, &n_kv) < 0)
        return -1;
    f->kvs = xcalloc((size_t)n_kv, sizeof *f->kvs);
    for (uint64_t i = 0; i < n_kv; i++) {
        f->n_kv = (int64_t)i + 1; /* counted first so gguf_close frees a half-read array */
        if (rd_kv(&r, (int64_t)i, &f->kvs[i]) < 0)
            return -1;
    }
    if (check_duplicate_keys(&r, f) < 0 || read_alignment(&r, f) < 0)
        return -1;
    f->tensors = xcalloc((size_t)n_tensors, sizeof *f->tensors);
    for (uint64_t i = 0; i < n_tensors; i++) {
        f->n_tensors = (int64_t)i + 1;
        if (rd_tensor_info(&r, f, (int64_t)i, &f->tensors[i]) < 0)
            return -1;
    }
    if (check_duplicate_tensors(&r, f) < 0)
        return -1;
    return place_tensors(&r, f);
}

/* ------------------------------------------------------------------------ */
/* Open, close, lookups                                                     */
/* ------------------------------------------------------------------------ */

/* Maps path read-only into f (nothing to map for an empty file). */
static int map_file(struct gguf_file *f, struct err *e)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(e, "%s: cannot open: %s", f->path, strerror(errno));
    struct stat sb;
    int rc = 0;
    if (fstat(fd, &sb) < 0) {
        rc = err_set(e, "%s: cannot stat: %s", f->path, strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        rc = err_set(e, "%s: not a regular file", f->path);
    } else if (sb.st_size > 0) {
        f->map_size = (size_t)sb.st_size;
        void *m = mmap(NULL, f->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            rc = err_set(e, "%s: cannot map %zu bytes: %s", f->path, f->map_size, strerror(errno));
        else
            f->map = m;
    }
    close(fd);
    return rc;
}

int gguf_is_path(const char *path)
{
    size_t n = strlen(path);
    return n > 5 && !strcmp(path + n - 5, ".gguf");
}

struct gguf_file *gguf_open(const char *path, struct err *e)
{
    struct gguf_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    if (map_file(f, e) < 0 || parse(f, e) < 0) {
        gguf_close(f);
        return NULL;
    }
    return f;
}

void gguf_close(struct gguf_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->map_size);
    for (int64_t i = 0; i < f->n_kv; i++)
        free(f->kvs[i].arr_strs);
    free(f->kvs);
    free(f->tensors);
    free(f->path);
    free(f);
}

static bool str_eq(const struct gguf_str *s, const char *z)
{
    size_t n = strlen(z);
    return s->len == n && memcmp(s->s, z, n) == 0;
}

/* Linear scans: files hold tens of keys and a few thousand tensors, looked
 * up once at load time. */
const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key)
{
    for (int64_t i = 0; i < f->n_kv; i++)
        if (str_eq(&f->kvs[i].key, key))
            return &f->kvs[i];
    return NULL;
}

const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name)
{
    for (int64_t i = 0; i < f->n_tensors; i++)
        if (str_eq(&f->tensors[i].name, name))
            return &f->tensors[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Typed reads                                                              */
/* ------------------------------------------------------------------------ */

static const struct gguf_kv *get_kv(const struct gguf_file *f, const char *key, struct err *e)
{
    const struct gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv)
        err_set(e, "%s: metadata key '%s' is absent", f->path, key);
    return kv;
}

/* "the key is UINT32, not a string" */
static int wrong_kind(const struct gguf_file *f, const char *key, const struct gguf_kv *kv, const char *want,
                      struct err *e)
{
    if (kv->type == GGUF_TYPE_ARRAY)
        return err_set(e, "%s: metadata key '%s' is an ARRAY of %s, not %s", f->path, key,
                       gguf_value_type_name(kv->arr_type), want);
    return err_set(e, "%s: metadata key '%s' is %s, not %s", f->path, key, gguf_value_type_name(kv->type),
                   want);
}

int gguf_get_int(const struct gguf_file *f, const char *key, int64_t *out, struct err *e)
{
    const struct gguf_kv *kv = get_kv(f, key, e);
    if (!kv)
        return -1;
    switch (kv->type) {
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
        *out = kv->v.i;
        return 0;
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_UINT64:
        if (kv->v.u > (uint64_t)INT64_MAX)
            return err_set(e, "%s: metadata key '%s': value %llu is out of range (above %lld)", f->path, key,
                           (unsigned long long)kv->v.u, (long long)INT64_MAX);
        *out = (int64_t)kv->v.u;
        return 0;
    default:
        return wrong_kind(f, key, kv, "an integer", e);
    }
}

int gguf_get_float(const struct gguf_file *f, const char *key, double *out, struct err *e)
{
    const struct gguf_kv *kv = get_kv(f, key, e);
    if (!kv)
        return -1;
    if (!is_float(kv->type))
        return wrong_kind(f, key, kv, "a float", e);
    *out = kv->v.f;
    return 0;
}

int gguf_get_bool(const struct gguf_file *f, const char *key, int *out, struct err *e)
{
    const struct gguf_kv *kv = get_kv(f, key, e);
    if (!kv)
        return -1;
    if (kv->type != GGUF_TYPE_BOOL)
        return wrong_kind(f, key, kv, "a bool", e);
    *out = kv->v.u != 0;
    return 0;
}

int gguf_get_token_id(const struct gguf_file *f, const char *key, int64_t *out, struct err *e)
{
    const struct gguf_kv *kv = get_kv(f, key, e);
    if (!kv)
        return -1;
    if (kv->type == GGUF_TYPE_ARRAY)
        return err_set(e, "%s: %s: expected an integer id, got ARRAY of %s", f->path, key,
                       gguf_value_type_name(kv->arr_type));
    if (scalar_size(kv->type) == 0 || is_float(kv->type) || kv->type == GGUF_TYPE_BOOL)
        return err_set(e, "%s: %s: expected an integer id, got %s", f->path, key,
                       gguf_value_type_name(kv->type));
    return gguf_get_int(f, key, out, e);
}

char *gguf_get_string(const struct gguf_file *f, const char *key, struct err *e)
{
    const struct gguf_kv *kv = get_kv(f, key, e);
    if (!kv)
        return NULL;
    if (kv->type != GGUF_TYPE_STRING) {
        wrong_kind(f, key, kv, "a string", e);
        return NULL;
    }
    size_t n = (size_t)kv->v.str.len;
    if (memchr(kv->v.str.s, '\0', n)) {
        err_set(e, "%s: metadata key '%s': string holds a NUL byte", f->path, key);
        return NULL;
    }
    char *s = xmalloc(n + 1);
    memcpy(s, kv->v.str.s, n);
    s[n] = '\0';
    return s;
}

/* A programming error, not a file problem: the caller must check arr_type
 * and arr_n first. */
static const unsigned char *arr_elem(const struct gguf_kv *kv, uint64_t i)
{
    CHECK(kv->type == GGUF_TYPE_ARRAY && scalar_size(kv->arr_type) > 0 && i < kv->arr_n);
    return (const unsigned char *)kv->arr_data + i * scalar_size(kv->arr_type);
}

/* Floats are truncated toward zero and saturate (NaN gives 0); UINT64
 * elements above INT64_MAX saturate too. */
int64_t gguf_arr_int(const struct gguf_kv *kv, uint64_t i)
{
    const unsigned char *p = arr_elem(kv, i);
    if (is_float(kv->arr_type)) {
        double d = num_float(kv->arr_type, p);
        if (d != d)
            return 0;
        if (d >= 9223372036854775807.0)
            return INT64_MAX;
        return d <= -9223372036854775808.0 ? INT64_MIN : (int64_t)d;
    }
    if (kv->arr_type == GGUF_TYPE_UINT64) {
        uint64_t u = read_le(p, 8);
        return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    return num_int(kv->arr_type, p);
}

double gguf_arr_float(const struct gguf_kv *kv, uint64_t i)
{
    const unsigned char *p = arr_elem(kv, i);
    if (is_float(kv->arr_type))
        return num_float(kv->arr_type, p);
    if (kv->arr_type == GGUF_TYPE_UINT64)
        return (double)read_le(p, 8);
    return (double)num_int(kv->arr_type, p);
}
