/* safetensors files: read (mmap, fully validated header) and write.
 *
 * Layout: 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"k": "v"}}, then the data section; offsets are relative to
 * the start of the data section. The reader rejects, with a message naming the
 * file and the tensor: a truncated file, a header length past the end of the
 * file, JSON that does not parse or has duplicate keys, unknown dtypes, shapes
 * that are not arrays of non-negative integers, offsets out of the data
 * section, sizes that disagree with shape x dtype, and overlapping tensors. */
#ifndef INFER_IO_SAFETENSORS_H
#define INFER_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

#define ST_MAX_DIMS 8

struct st_file;

struct st_tensor {
    char *name;
    enum dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    const void *data; /* points into the file's read-only mapping */
    size_t nbytes;
    const struct st_file *file; /* the file it lives in (for error messages) */
};

struct st_file {
    char *path;
    void *map;
    size_t map_size;
    void *map2; /* a second mapping its tensors may point into (a GGUF file's, its blocks kept), or NULL */
    size_t map2_size;
    struct st_tensor *tensors; /* in header order */
    int n_tensors;
    char **meta_keys; /* "__metadata__" string pairs, may be empty */
    char **meta_values;
    int n_meta;
};

/* Maps and validates path. Returns NULL with e set on any problem.
 * Free with st_close. */
struct st_file *st_open(const char *path, struct err *e);
void st_close(struct st_file *f);

/* NULL when absent. Lookup is a linear scan: files have at most a few
 * thousand tensors and lookups happen once at load time. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);

/* Writer. Declare every tensor, then write their bytes in the declared order.
 * Data goes to "<path>.tmp", renamed to path by st_writer_finish, so a failed
 * or interrupted write never leaves a half-written file at path. */
struct st_writer;

struct st_writer *st_writer_create(const char *path, struct err *e);
int st_writer_declare(struct st_writer *w, const char *name, enum dtype dtype, int ndim,
                      const int64_t *shape, struct err *e);
int st_writer_set_metadata(struct st_writer *w, const char *key, const char *value, struct err *e);
/* Appends bytes of the data section (any chunking; the header is written on
 * the first call). */
int st_writer_write(struct st_writer *w, const void *data, size_t nbytes, struct err *e);
/* Checks that exactly the declared bytes were written, syncs and renames.
 * Frees w whatever the outcome. */
int st_writer_finish(struct st_writer *w, struct err *e);
/* Discards the temporary file and frees w. */
void st_writer_abort(struct st_writer *w);

#endif
