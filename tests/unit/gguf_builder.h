/* A tiny little-endian GGUF writer for the unit tests (struct gb): append a
 * header, keys and values, tensor infos and data byte by byte, then write
 * the bytes into the test's temp directory (test_util.h). Allocation
 * failures and I/O errors abort the running test. */
#ifndef INFER_TESTS_GGUF_BUILDER_H
#define INFER_TESTS_GGUF_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "test_util.h"

struct gb {
    unsigned char *p;
    size_t n, cap;
};

void gb_put(struct gb *b, const void *d, size_t n);
/* v as n little-endian bytes, whatever the host. */
void gb_le(struct gb *b, uint64_t v, int n);
void gb_u8(struct gb *b, uint8_t v);
void gb_u16(struct gb *b, uint16_t v);
void gb_u32(struct gb *b, uint32_t v);
void gb_u64(struct gb *b, uint64_t v);
void gb_f32(struct gb *b, float f);
void gb_f64(struct gb *b, double d);
/* A GGUF string: u64 length, then the bytes. */
void gb_strn(struct gb *b, const char *s, size_t n);
void gb_str(struct gb *b, const char *s);
void gb_header(struct gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
/* A key and its value type; the caller appends the value. */
void gb_key(struct gb *b, const char *key, uint32_t type);
/* A key with a small value of type: the number 2 for the numeric types
 * (1 for BOOL), the string "2", or an ARRAY of one INT32 2. */
void gb_key_sample(struct gb *b, const char *key, uint32_t type);
void gb_tinfo(struct gb *b, const char *name, uint32_t n_dims, const uint64_t *dims, uint32_t type,
              uint64_t offset);
void gb_zeros(struct gb *b, size_t n);
/* Zeros up to the next multiple of align. */
void gb_pad(struct gb *b, size_t align);

/* Writes n bytes of d to path (created or truncated). */
void write_bytes(const char *path, const void *d, size_t n);
/* Writes b to test_tmp_dir/name and frees it; returns the path. */
struct tpath gb_write(struct gb *b, const char *name);

#endif
