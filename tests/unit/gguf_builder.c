/* The unit tests' GGUF writer (gguf_builder.h). */
#include "gguf_builder.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"

void gb_put(struct gb *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

/* Little-endian, byte by byte, whatever the host. */
void gb_le(struct gb *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        gb_put(b, &c, 1);
    }
}

void gb_u8(struct gb *b, uint8_t v) { gb_le(b, v, 1); }
void gb_u16(struct gb *b, uint16_t v) { gb_le(b, v, 2); }
void gb_u32(struct gb *b, uint32_t v) { gb_le(b, v, 4); }
void gb_u64(struct gb *b, uint64_t v) { gb_le(b, v, 8); }

void gb_f32(struct gb *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    gb_u32(b, u);
}

void gb_f64(struct gb *b, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    gb_u64(b, u);
}

void gb_strn(struct gb *b, const char *s, size_t n)
{
    gb_u64(b, n);
    gb_put(b, s, n);
}

void gb_str(struct gb *b, const char *s) { gb_strn(b, s, strlen(s)); }

void gb_header(struct gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_put(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

void gb_key(struct gb *b, const char *key, uint32_t type)
{
    gb_str(b, key);
    gb_u32(b, type);
}

void gb_key_sample(struct gb *b, const char *key, uint32_t type)
{
    gb_key(b, key, type);
    switch (type) {
    case GGUF_TYPE_FLOAT32:
        gb_f32(b, 2.0f);
        break;
    case GGUF_TYPE_FLOAT64:
        gb_f64(b, 2.0);
        break;
    case GGUF_TYPE_BOOL:
        gb_u8(b, 1);
        break;
    case GGUF_TYPE_STRING:
        gb_str(b, "2");
        break;
    case GGUF_TYPE_ARRAY:
        gb_u32(b, GGUF_TYPE_INT32), gb_u64(b, 1), gb_u32(b, 2);
        break;
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
        gb_u8(b, 2);
        break;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
        gb_u16(b, 2);
        break;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
        gb_u32(b, 2);
        break;
    default:
        gb_u64(b, 2);
    }
}

void gb_tinfo(struct gb *b, const char *name, uint32_t n_dims, const uint64_t *dims, uint32_t type,
              uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        gb_u64(b, dims[d]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

void gb_zeros(struct gb *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gb_u8(b, 0);
}

void gb_pad(struct gb *b, size_t align) { gb_zeros(b, (align - b->n % align) % align); }

void write_bytes(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "fopen %s: %s", path, strerror(errno));
    if (n)
        cr_assert_eq(fwrite(d, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* Writes b to test_tmp_dir/name and frees it; returns the path. */
struct tpath gb_write(struct gb *b, const char *name)
{
    struct tpath p = test_tmp_path(name);
    write_bytes(p.s, b->p, b->n);
    free(b->p);
    *b = (struct gb){0};
    return p;
}
