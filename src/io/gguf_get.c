/* Typed reads of GGUF metadata (gguf.h): a key's value checked for kind
 * and range, with messages naming the file and the key, and the elements
 * of numeric arrays, widened. */
#include <string.h>

#include "io/gguf_impl.h"

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
    if (!gguf_is_float(kv->type))
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
    if (gguf_scalar_size(kv->type) == 0 || gguf_is_float(kv->type) || kv->type == GGUF_TYPE_BOOL)
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
    CHECK(kv->type == GGUF_TYPE_ARRAY && gguf_scalar_size(kv->arr_type) > 0 && i < kv->arr_n);
    return (const unsigned char *)kv->arr_data + i * gguf_scalar_size(kv->arr_type);
}

/* Floats are truncated toward zero and saturate (NaN gives 0); UINT64
 * elements above INT64_MAX saturate too. */
int64_t gguf_arr_int(const struct gguf_kv *kv, uint64_t i)
{
    const unsigned char *p = arr_elem(kv, i);
    if (gguf_is_float(kv->arr_type)) {
        double d = gguf_num_float(kv->arr_type, p);
        if (d != d)
            return 0;
        if (d >= 9223372036854775807.0)
            return INT64_MAX;
        return d <= -9223372036854775808.0 ? INT64_MIN : (int64_t)d;
    }
    if (kv->arr_type == GGUF_TYPE_UINT64) {
        uint64_t u = gguf_read_le(p, 8);
        return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    return gguf_num_int(kv->arr_type, p);
}

double gguf_arr_float(const struct gguf_kv *kv, uint64_t i)
{
    const unsigned char *p = arr_elem(kv, i);
    if (gguf_is_float(kv->arr_type))
        return gguf_num_float(kv->arr_type, p);
    if (kv->arr_type == GGUF_TYPE_UINT64)
        return (double)gguf_read_le(p, 8);
    return (double)gguf_num_int(kv->arr_type, p);
}
