/* What the pieces of the GGUF reader share (not for use outside src/io/gguf*.c):
 *
 *   gguf.c          gguf_open / gguf_close: map the file, read it in order, lookups
 *   gguf_read.c     the bounds-checked cursor; the duplicate-name check
 *   gguf_meta.c     the header, the metadata pairs, general.alignment
 *   gguf_tensors.c  the tensor infos and the data section
 *   gguf_get.c      typed reads of metadata (gguf_get_*, gguf_arr_*)
 *   gguf_types.c    type names and block sizes, decoding one number */
#ifndef INFER_IO_GGUF_IMPL_H
#define INFER_IO_GGUF_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/gguf.h"

/* Names shown in messages are cut to this many bytes. */
#define GGUF_SHOW_MAX 120

/* ---- types (gguf_types.c) ---- */

struct ggml_type_info {
    const char *name;
    int block_elems; /* 0: size unknown here, tensors of the type are refused */
    int block_bytes;
};

/* NULL for a number without a name. */
const struct ggml_type_info *ggml_type_info_of(enum ggml_type t);
/* Bytes of one number of type t; 0 for STRING, ARRAY and unknown types. */
size_t gguf_scalar_size(uint32_t t);
bool gguf_is_signed_int(uint32_t t);
bool gguf_is_float(uint32_t t);
/* n little-endian bytes at p, zero-extended (p may be unaligned). */
uint64_t gguf_read_le(const unsigned char *p, size_t n);
/* The number of type t at p, sign-extended for the signed types. */
int64_t gguf_num_int(uint32_t t, const unsigned char *p);
/* The FLOAT32 or FLOAT64 at p. */
double gguf_num_float(uint32_t t, const unsigned char *p);

/* ---- the cursor (gguf_read.c) ---- */

struct gguf_rd {
    const unsigned char *base; /* the mapping (NULL for an empty file) */
    size_t size, pos;
    const char *path;
    char where[GGUF_SHOW_MAX + 64]; /* what is being read, for messages */
    struct err *e;
};

static inline size_t gguf_rd_left(const struct gguf_rd *r) { return r->size - r->pos; }

/* s copied into buf for a message: cut, control bytes as '?'. */
const char *gguf_show(const struct gguf_str *s, char *buf, size_t size);
/* Sets what is being read to "<what> '<name>'". */
void gguf_rd_where(struct gguf_rd *r, const char *what, const struct gguf_str *name);
/* Sets r->e to "<path>: <where>: <message>"; returns -1. */
int gguf_rd_fail(struct gguf_rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Little-endian reads; what names the field in messages. */
int gguf_rd_u32(struct gguf_rd *r, const char *what, uint32_t *out);
int gguf_rd_u64(struct gguf_rd *r, const char *what, uint64_t *out);
/* A string (u64 length, bytes), left in the mapping; idx >= 0 numbers an
 * array element in messages. */
int gguf_rd_str(struct gguf_rd *r, const char *what, int64_t idx, struct gguf_str *out);

struct gguf_name_ref {
    const struct gguf_str *s;
    int64_t index;
};
/* Sorts refs; sets *i, *j (file order) of a duplicate pair and returns 1 if any. */
int gguf_find_duplicate(struct gguf_name_ref *refs, int64_t n, int64_t *i, int64_t *j);

/* ---- the steps of gguf_open, in file order (gguf_meta.c, gguf_tensors.c) ---- */

int gguf_read_header(struct gguf_rd *r, struct gguf_file *f, uint64_t *n_tensors, uint64_t *n_kv);
int gguf_read_kv(struct gguf_rd *r, int64_t i, struct gguf_kv *kv);
int gguf_check_duplicate_keys(struct gguf_rd *r, const struct gguf_file *f);
int gguf_read_alignment(struct gguf_rd *r, struct gguf_file *f);
int gguf_read_tensor_info(struct gguf_rd *r, const struct gguf_file *f, int64_t i, struct gguf_tensor *t);
int gguf_check_duplicate_tensors(struct gguf_rd *r, const struct gguf_file *f);
/* Finds the data section, points each tensor into it, refuses overlaps. */
int gguf_place_tensors(struct gguf_rd *r, struct gguf_file *f);

#endif
