/* GGUF reader: gguf_open maps the file and reads it in order (header,
 * metadata pairs, tensor infos, data section), gguf_close frees it, and
 * the lookups by name. The pieces are listed in gguf_impl.h.
 *
 * The whole file is mapped read-only and walked once with a cursor (struct
 * gguf_rd) whose every read is checked against the bytes left in the
 * mapping, so no length, count or offset in the file can make the reader
 * step outside it. Counts are compared with the bytes left before anything
 * is allocated for them (each element takes at least one byte, each string
 * at least its 8-byte length), so a hostile count fails with a message
 * instead of a huge allocation. Sizes are computed in 64 bits with overflow
 * checks.
 *
 * Messages are "<path>: <where>: <problem>", where <where> names the header,
 * the metadata key or the tensor being read (struct gguf_rd keeps it
 * current).
 *
 * Strings, numeric arrays and tensor data are not copied: they point into
 * the mapping, which lives until gguf_close. Only the string-array indexes
 * (arr_strs) and the kv/tensor tables are allocated. */
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf_impl.h"

/* The file's parts in order; each step refuses what it reads wrong. */
static int parse(struct gguf_file *f, struct err *e)
{
    struct gguf_rd r = {.base = f->map, .size = f->map_size, .path = f->path, .e = e};
    uint64_t n_tensors = 0, n_kv = 0;
    if (gguf_read_header(&r, f, &n_tensors, &n_kv) < 0)
        return -1;
    f->kvs = xcalloc((size_t)n_kv, sizeof *f->kvs);
    for (uint64_t i = 0; i < n_kv; i++) {
        f->n_kv = (int64_t)i + 1; /* counted first so gguf_close frees a half-read array */
        if (gguf_read_kv(&r, (int64_t)i, &f->kvs[i]) < 0)
            return -1;
    }
    if (gguf_check_duplicate_keys(&r, f) < 0 || gguf_read_alignment(&r, f) < 0)
        return -1;
    f->tensors = xcalloc((size_t)n_tensors, sizeof *f->tensors);
    for (uint64_t i = 0; i < n_tensors; i++) {
        f->n_tensors = (int64_t)i + 1;
        if (gguf_read_tensor_info(&r, f, (int64_t)i, &f->tensors[i]) < 0)
            return -1;
    }
    if (gguf_check_duplicate_tensors(&r, f) < 0)
        return -1;
    return gguf_place_tensors(&r, f);
}

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

void *gguf_take_map(struct gguf_file *f, size_t *size)
{
    void *m = f->map;
    *size = f->map_size;
    f->map = NULL;
    return m;
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
