/* The reader's bounds-checked cursor (struct gguf_rd, gguf_impl.h): every
 * read is checked against the bytes left in the mapping, so no length,
 * count or offset in the file can make the reader step outside it; its
 * messages are "<path>: <where>: <problem>". And the duplicate-name check
 * shared by the metadata keys and the tensor names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf_impl.h"

/* Copies s into buf (at most GGUF_SHOW_MAX bytes), control bytes as '?', so
 * a hostile name cannot garble a message. */
const char *gguf_show(const struct gguf_str *s, char *buf, size_t size)
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

void gguf_rd_where(struct gguf_rd *r, const char *what, const struct gguf_str *name)
{
    char buf[GGUF_SHOW_MAX + 4];
    snprintf(r->where, sizeof r->where, "%s '%s'", what, gguf_show(name, buf, sizeof buf));
}

int gguf_rd_fail(struct gguf_rd *r, const char *fmt, ...)
{
    char msg[sizeof r->e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(r->e, "%s: %s: %s", r->path, r->where, msg);
}

/* Reads an n-byte little-endian unsigned integer; what names it in messages. */
static int rd_uint(struct gguf_rd *r, size_t n, const char *what, uint64_t *out)
{
    *out = 0; /* defined even on failure (the compiler cannot see that gguf_rd_fail returns -1) */
    if (n > gguf_rd_left(r))
        return gguf_rd_fail(r, "%s (%zu bytes at offset %zu) runs past the end of the file (%zu bytes)", what,
                            n, r->pos, r->size);
    *out = gguf_read_le(r->base + r->pos, n);
    r->pos += n;
    return 0;
}

int gguf_rd_u32(struct gguf_rd *r, const char *what, uint32_t *out)
{
    uint64_t v;
    if (rd_uint(r, 4, what, &v) < 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int gguf_rd_u64(struct gguf_rd *r, const char *what, uint64_t *out) { return rd_uint(r, 8, what, out); }

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
int gguf_rd_str(struct gguf_rd *r, const char *what, int64_t idx, struct gguf_str *out)
{
    char lb[64];
    if (gguf_rd_left(r) < 8)
        return gguf_rd_fail(r,
                            "%s's length (8 bytes at offset %zu) runs past the end of the file (%zu bytes)",
                            label(lb, sizeof lb, what, idx), r->pos, r->size);
    uint64_t len = gguf_read_le(r->base + r->pos, 8);
    r->pos += 8;
    if (len > gguf_rd_left(r))
        return gguf_rd_fail(r, "%s length %llu exceeds the %zu bytes left in the file (at offset %zu)",
                            label(lb, sizeof lb, what, idx), (unsigned long long)len, gguf_rd_left(r),
                            r->pos);
    out->s = (const char *)r->base + r->pos;
    out->len = len;
    r->pos += (size_t)len;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Duplicate names                                                          */
/* ------------------------------------------------------------------------ */

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
    const struct gguf_name_ref *x = a, *y = b;
    int c = str_cmp(x->s, y->s);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Sorting makes the check O(n log n): a hostile file may hold millions of
 * names. Sets *i, *j (file order) of a duplicate pair and returns 1 if any. */
int gguf_find_duplicate(struct gguf_name_ref *refs, int64_t n, int64_t *i, int64_t *j)
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
