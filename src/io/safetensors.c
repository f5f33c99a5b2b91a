/* safetensors reader and writer.
 *
 * Reader: the whole file is mapped read-only; the JSON header is parsed with
 * jansson (which validates UTF-8 and, with JSON_REJECT_DUPLICATES, duplicate
 * keys) and every entry is checked before any pointer into the mapping is
 * handed out, so a tensor's [data, data + nbytes) always lies inside the file.
 * Offsets are compared as unsigned 64-bit integers and every size product is
 * overflow-checked, so no input can make the reader crash.
 *
 * Writer: tensors are declared first (their offsets are then known: the data
 * section is the declared tensors back to back), the header is written on the
 * first data write, and the file is built as "<path>.tmp" and renamed into
 * place only once exactly the declared bytes have been written and synced. */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A header bigger than this is refused: real ones are at most a few MB. */
#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

/* ------------------------------------------------------------------------ */
/* Reader                                                                   */
/* ------------------------------------------------------------------------ */

static uint64_t st_read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Maps a safetensors dtype name to ours. Returns -1 with e set for a valid
 * safetensors dtype we do not support, or for a name that is no dtype at all. */
static int st_dtype_parse(const char *s, enum dtype *out, const char *path, const char *tensor,
                          struct err *e)
{
    for (int t = 0; t < DTYPE_FIRST_BLOCK; t++) { /* safetensors has no block types */
        if (strcmp(s, dtype_name((enum dtype)t)) == 0) {
            *out = (enum dtype)t;
            return 0;
        }
    }
    static const char *known[] = {"BOOL",   "U8",       "I8",       "I16",     "U16",
                                  "U32",    "U64",      "F64",      "F8_E4M3", "F8_E5M2",
                                  "F8_E8M0", "F6_E2M3", "F6_E3M2",  "F4",      "C64"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(s, known[i]) == 0)
            return err_set(e, "%s: tensor '%s': unsupported dtype %s", path, tensor, s);
    return err_set(e, "%s: tensor '%s': unknown dtype '%s'", path, tensor, s);
}

/* Reads "shape" into t (ndim, shape, numel). */
static int st_parse_shape(const json_t *shape, struct st_tensor *t, const char *path,
                          struct err *e)
{
    if (!json_is_array(shape))
        return err_set(e, "%s: tensor '%s': \"shape\" is not an array", path, t->name);
    size_t n = json_array_size(shape);
    if (n > ST_MAX_DIMS)
        return err_set(e, "%s: tensor '%s': shape has %zu dimensions (at most %d supported)",
                       path, t->name, n, ST_MAX_DIMS);
    int64_t numel = 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *d = json_array_get(shape, i);
        if (!json_is_integer(d))
            return err_set(e, "%s: tensor '%s': shape[%zu] is not an integer", path, t->name,
                           i);
        json_int_t v = json_integer_value(d);
        if (v < 0)
            return err_set(e, "%s: tensor '%s': shape[%zu] is negative (%lld)", path, t->name,
                           i, (long long)v);
        t->shape[i] = (int64_t)v;
        if (__builtin_mul_overflow(numel, (int64_t)v, &numel))
            return err_set(e, "%s: tensor '%s': shape overflows the element count", path,
                           t->name);
    }
    t->ndim = (int)n;
    t->numel = numel;
    return 0;
}

/* Formats t's shape as "[2, 3]" into buf. */
static void st_shape_str(const struct st_tensor *t, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

/* Reads "data_offsets" and checks them against the data section and the
 * size implied by shape x dtype. */
static int st_parse_offsets(const json_t *offs, struct st_tensor *t, uint64_t data_size,
                            uint64_t *begin_out, uint64_t *end_out, const char *path,
                            struct err *e)
{
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !json_is_integer(json_array_get(offs, 0)) || !json_is_integer(json_array_get(offs, 1)))
        return err_set(e, "%s: tensor '%s': \"data_offsets\" is not an array of two integers",
                       path, t->name);
    json_int_t b = json_integer_value(json_array_get(offs, 0));
    json_int_t en = json_integer_value(json_array_get(offs, 1));
    if (b < 0 || en < 0)
        return err_set(e, "%s: tensor '%s': data_offsets [%lld, %lld] are negative", path,
                       t->name, (long long)b, (long long)en);
    if (b > en)
        return err_set(e, "%s: tensor '%s': data_offsets [%lld, %lld] begin after they end",
                       path, t->name, (long long)b, (long long)en);
    if ((uint64_t)en > data_size)
        return err_set(e,
                       "%s: tensor '%s': data_offsets [%lld, %lld] exceed the data section "
                       "(%llu bytes)",
                       path, t->name, (long long)b, (long long)en, (unsigned long long)data_size);
    uint64_t want;
    if (__builtin_mul_overflow((uint64_t)t->numel, (uint64_t)dtype_size(t->dtype), &want))
        return err_set(e, "%s: tensor '%s': shape overflows the byte size", path, t->name);
    uint64_t have = (uint64_t)en - (uint64_t)b;
    if (have != want) {
        char shape[200];
        st_shape_str(t, shape, sizeof shape);
        return err_set(e,
                       "%s: tensor '%s': data_offsets [%lld, %lld] hold %llu bytes but %s shape "
                       "%s needs %llu",
                       path, t->name, (long long)b, (long long)en, (unsigned long long)have,
                       dtype_name(t->dtype), shape, (unsigned long long)want);
    }
    *begin_out = (uint64_t)b;
    *end_out = (uint64_t)en;
    return 0;
}

/* Validates one header entry into t (t->name already set). */
static int st_parse_entry(const json_t *v, struct st_tensor *t, uint64_t data_size,
                          uint64_t *begin, uint64_t *end, const char *path, struct err *e)
{
    if (!json_is_object(v))
        return err_set(e, "%s: tensor '%s': entry is not an object", path, t->name);
    const json_t *dt = json_object_get(v, "dtype");
    const json_t *shape = json_object_get(v, "shape");
    const json_t *offs = json_object_get(v, "data_offsets");
    if (!dt)
        return err_set(e, "%s: tensor '%s': missing \"dtype\"", path, t->name);
    if (!shape)
        return err_set(e, "%s: tensor '%s': missing \"shape\"", path, t->name);
    if (!offs)
        return err_set(e, "%s: tensor '%s': missing \"data_offsets\"", path, t->name);
    if (!json_is_string(dt))
        return err_set(e, "%s: tensor '%s': \"dtype\" is not a string", path, t->name);
    if (st_dtype_parse(json_string_value(dt), &t->dtype, path, t->name, e) < 0)
        return -1;
    if (st_parse_shape(shape, t, path, e) < 0)
        return -1;
    return st_parse_offsets(offs, t, data_size, begin, end, path, e);
}

/* Copies "__metadata__" (an object of strings) into f. */
static int st_parse_metadata(const json_t *meta, struct st_file *f, struct err *e)
{
    if (!json_is_object(meta))
        return err_set(e, "%s: \"__metadata__\" is not an object", f->path);
    size_t n = json_object_size(meta);
    f->meta_keys = xcalloc(n, sizeof *f->meta_keys);
    f->meta_values = xcalloc(n, sizeof *f->meta_values);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)meta, k, v) {
        if (!json_is_string(v))
            return err_set(e, "%s: __metadata__ '%s' is not a string", f->path, k);
        f->meta_keys[f->n_meta] = xstrdup(k);
        f->meta_values[f->n_meta] = xstrdup(json_string_value(v));
        f->n_meta++;
    }
    return 0;
}

struct st_span {
    uint64_t begin, end;
    int index;
};

static int st_span_cmp(const void *a, const void *b)
{
    const struct st_span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->index - y->index;
}

/* Rejects tensors whose byte ranges intersect. Sorts spans in place. */
static int st_check_overlap(struct st_span *spans, int n, const struct st_file *f, struct err *e)
{
    qsort(spans, (size_t)n, sizeof *spans, st_span_cmp);
    uint64_t max_end = 0;
    int max_i = -1;
    for (int i = 0; i < n; i++) {
        if (max_i >= 0 && spans[i].begin < max_end) {
            const struct st_span *p = &spans[max_i];
            return err_set(e,
                           "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' "
                           "[%llu, %llu]",
                           f->path, f->tensors[spans[i].index].name,
                           (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end,
                           f->tensors[p->index].name, (unsigned long long)p->begin,
                           (unsigned long long)p->end);
        }
        if (max_i < 0 || spans[i].end > max_end) {
            max_end = spans[i].end;
            max_i = i;
        }
    }
    return 0;
}

/* Parses and validates the header of the mapped file f. */
static int st_parse_header(struct st_file *f, struct err *e)
{
    const unsigned char *base = f->map;
    if (f->map_size < 8)
        return err_set(e, "%s: file is %zu bytes, too short for the 8-byte header length",
                       f->path, f->map_size);
    uint64_t n = st_read_le64(base);
    if (n > ST_MAX_HEADER)
        return err_set(e, "%s: header length %llu is absurdly large (limit %llu)", f->path,
                       (unsigned long long)n, (unsigned long long)ST_MAX_HEADER);
    if (n > f->map_size - 8)
        return err_set(e, "%s: header length %llu runs past the end of the file (%zu bytes)",
                       f->path, (unsigned long long)n, f->map_size);
    uint64_t data_size = f->map_size - 8 - n;
    const unsigned char *data = base + 8 + n;

    json_error_t jerr;
    json_t *root = json_loadb((const char *)base + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return err_set(e, "%s: header is not valid JSON: %s (at byte %d)", f->path, jerr.text,
                       jerr.position);
    int rc = -1;
    struct st_span *spans = NULL;
    if (!json_is_object(root)) {
        err_set(e, "%s: header is not a JSON object", f->path);
        goto out;
    }
    size_t count = json_object_size(root);
    f->tensors = xcalloc(count, sizeof *f->tensors);
    spans = xcalloc(count, sizeof *spans);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (st_parse_metadata(v, f, e) < 0)
                goto out;
            continue;
        }
        struct st_tensor *t = &f->tensors[f->n_tensors];
        t->name = xstrdup(key);
        t->file = f;
        f->n_tensors++; /* counted now so st_close frees the name on error */
        uint64_t b = 0, en = 0;
        if (st_parse_entry(v, t, data_size, &b, &en, f->path, e) < 0)
            goto out;
        t->data = data + b;
        t->nbytes = (size_t)(en - b);
        spans[f->n_tensors - 1] = (struct st_span){b, en, f->n_tensors - 1};
    }
    if (st_check_overlap(spans, f->n_tensors, f, e) < 0)
        goto out;
    rc = 0;
out:
    free(spans);
    json_decref(root);
    return rc;
}

/* Caller frees the result with st_close. */
struct st_file *st_open(const char *path, struct err *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err_set(e, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        err_set(e, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        err_set(e, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    struct st_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    f->map_size = (size_t)sb.st_size;
    if (f->map_size >= 8) {
        void *m = mmap(NULL, f->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            err_set(e, "%s: cannot map %zu bytes: %s", path, f->map_size, strerror(errno));
            close(fd);
            st_close(f);
            return NULL;
        }
        f->map = m;
    }
    close(fd);
    if (st_parse_header(f, e) < 0) {
        st_close(f);
        return NULL;
    }
    return f;
}

void st_close(struct st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->map_size);
    if (f->map2)
        munmap(f->map2, f->map2_size);
    for (int i = 0; i < f->n_tensors; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    for (int i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->meta_keys);
    free(f->meta_values);
    free(f->path);
    free(f);
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
    for (int i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                   */
/* ------------------------------------------------------------------------ */

struct st_writer {
    char *path;
    char *tmp_path;
    int fd;
    json_t *tensors;  /* name -> entry, in declaration order */
    json_t *meta;     /* "__metadata__" */
    uint64_t total;   /* declared data bytes */
    uint64_t written; /* data bytes written so far */
    bool started;     /* header written */
    bool failed;      /* a write failed: only abort/finish (which fails) remain */
};

/* Caller frees the result with st_writer_finish or st_writer_abort. */
struct st_writer *st_writer_create(const char *path, struct err *e)
{
    size_t n = strlen(path);
    char *tmp = xmalloc(n + 5);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        err_set(e, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        free(tmp);
        return NULL;
    }
    struct st_writer *w = xcalloc(1, sizeof *w);
    w->path = xstrdup(path);
    w->tmp_path = tmp;
    w->fd = fd;
    w->tensors = json_object();
    w->meta = json_object();
    CHECK(w->tensors && w->meta);
    return w;
}

int st_writer_declare(struct st_writer *w, const char *name, enum dtype dtype, int ndim,
                      const int64_t *shape, struct err *e)
{
    if (w->started)
        return err_set(e, "%s: tensor '%s' declared after writing started", w->path, name);
    if (strcmp(name, "__metadata__") == 0 || name[0] == '\0')
        return err_set(e, "%s: '%s' is not a valid tensor name", w->path, name);
    if (json_object_get(w->tensors, name))
        return err_set(e, "%s: tensor '%s' declared twice", w->path, name);
    if ((int)dtype < 0 || dtype >= DTYPE_FIRST_BLOCK)
        return err_set(e, "%s: tensor '%s': invalid dtype %d", w->path, name, (int)dtype);
    if (ndim < 0 || ndim > ST_MAX_DIMS)
        return err_set(e, "%s: tensor '%s': %d dimensions (at most %d supported)", w->path,
                       name, ndim, ST_MAX_DIMS);
    uint64_t numel = 1, nbytes, end;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return err_set(e, "%s: tensor '%s': shape[%d] is negative (%lld)", w->path, name,
                           i, (long long)shape[i]);
        if (__builtin_mul_overflow(numel, (uint64_t)shape[i], &numel))
            return err_set(e, "%s: tensor '%s': shape overflows", w->path, name);
    }
    if (__builtin_mul_overflow(numel, (uint64_t)dtype_size(dtype), &nbytes) ||
        __builtin_add_overflow(w->total, nbytes, &end) || end > (uint64_t)INT64_MAX)
        return err_set(e, "%s: tensor '%s': shape overflows", w->path, name);

    json_t *jshape = json_array();
    for (int i = 0; i < ndim; i++)
        json_array_append_new(jshape, json_integer((json_int_t)shape[i]));
    json_t *entry = json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtype_name(dtype), "shape",
                              jshape, "data_offsets", (json_int_t)w->total, (json_int_t)end);
    CHECK(entry);
    if (json_object_set_new(w->tensors, name, entry) < 0)
        return err_set(e, "%s: tensor name '%s' is not valid UTF-8", w->path, name);
    w->total = end;
    return 0;
}

int st_writer_set_metadata(struct st_writer *w, const char *key, const char *value, struct err *e)
{
    if (w->started)
        return err_set(e, "%s: metadata '%s' set after writing started", w->path, key);
    json_t *v = json_string(value);
    if (!v)
        return err_set(e, "%s: metadata '%s': value is not valid UTF-8", w->path, key);
    if (json_object_set_new(w->meta, key, v) < 0)
        return err_set(e, "%s: metadata key '%s' is not valid UTF-8", w->path, key);
    return 0;
}

/* Writes all of buf to w's file, retrying short writes. */
static int st_writer_put(struct st_writer *w, const void *buf, size_t n, struct err *e)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            w->failed = true;
            return err_set(e, "%s: write failed: %s", w->path, strerror(errno));
        }
        if (k == 0) {
            w->failed = true;
            return err_set(e, "%s: write made no progress", w->path);
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Builds and writes the length prefix and the space-padded JSON header:
 * "__metadata__" first (with format=pt unless set), then the tensors in
 * declaration order, padded so the data section starts 8-aligned. */
static int st_writer_header(struct st_writer *w, struct err *e)
{
    w->started = true;
    if (!json_object_get(w->meta, "format"))
        json_object_set_new(w->meta, "format", json_string("pt"));
    json_t *root = json_object();
    CHECK(root);
    json_object_set(root, "__metadata__", w->meta);
    json_object_update(root, w->tensors);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    CHECK(text);
    size_t len = strlen(text);
    size_t padded = (len + 7) & ~(size_t)7;
    char *hdr = xmalloc(8 + padded);
    for (int i = 0; i < 8; i++)
        hdr[i] = (char)(((uint64_t)padded >> (8 * i)) & 0xff);
    memcpy(hdr + 8, text, len);
    memset(hdr + 8 + len, ' ', padded - len);
    free(text);
    int rc = st_writer_put(w, hdr, 8 + padded, e);
    free(hdr);
    return rc;
}

int st_writer_write(struct st_writer *w, const void *data, size_t nbytes, struct err *e)
{
    if (w->failed)
        return err_set(e, "%s: write after an earlier error", w->path);
    if (!w->started && st_writer_header(w, e) < 0)
        return -1;
    if (nbytes > w->total - w->written) {
        w->failed = true;
        return err_set(e, "%s: writing %zu more bytes exceeds the %llu declared (%llu written)",
                       w->path, nbytes, (unsigned long long)w->total,
                       (unsigned long long)w->written);
    }
    if (st_writer_put(w, data, nbytes, e) < 0)
        return -1;
    w->written += nbytes;
    return 0;
}

static void st_writer_free(struct st_writer *w)
{
    json_decref(w->tensors);
    json_decref(w->meta);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

void st_writer_abort(struct st_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    unlink(w->tmp_path);
    st_writer_free(w);
}

/* Syncs the directory holding path so the rename is durable (best effort). */
static void st_sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : xstrdup(".");
    CHECK(dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

int st_writer_finish(struct st_writer *w, struct err *e)
{
    int fd;
    if (w->failed) {
        err_set(e, "%s: not finished because an earlier write failed", w->path);
        goto fail;
    }
    if (!w->started && st_writer_header(w, e) < 0)
        goto fail;
    if (w->written != w->total) {
        err_set(e, "%s: %llu data bytes written but %llu declared", w->path,
                (unsigned long long)w->written, (unsigned long long)w->total);
        goto fail;
    }
    if (fsync(w->fd) < 0) {
        err_set(e, "%s: fsync failed: %s", w->path, strerror(errno));
        goto fail;
    }
    fd = w->fd;
    w->fd = -1;
    if (close(fd) < 0) {
        err_set(e, "%s: close failed: %s", w->path, strerror(errno));
        goto fail;
    }
    if (rename(w->tmp_path, w->path) < 0) {
        err_set(e, "%s: cannot rename %s into place: %s", w->path, w->tmp_path, strerror(errno));
        goto fail;
    }
    st_sync_parent(w->path);
    st_writer_free(w);
    return 0;
fail:
    st_writer_abort(w);
    return -1;
}
