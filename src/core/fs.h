/* Small file helpers with messages that name the path. Writes go to a
 * temporary file that is renamed into place, so nothing is half-written. */
#ifndef INFER_CORE_FS_H
#define INFER_CORE_FS_H

#include <stddef.h>

#include "core/error.h"

/* Reads a whole file (at most max_bytes) into a malloc'ed, NUL-terminated
 * buffer; caller frees *data. */
int fs_read_file(const char *path, size_t max_bytes, char **data, size_t *len, struct err *e);
int fs_write_atomic(const char *path, const void *data, size_t len, struct err *e);
int fs_copy_file(const char *src, const char *dst, struct err *e);
/* mkdir -p */
int fs_mkdir_p(const char *path, struct err *e);
int fs_exists(const char *path);

#endif
