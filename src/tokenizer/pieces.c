#include "tokenizer/pieces.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void pieces_clear(struct pieces *p)
{
    p->len = 0;
    p->n = 0;
}

void pieces_free(struct pieces *p)
{
    free(p->buf);
    free(p->v);
    memset(p, 0, sizeof *p);
}

static void reserve_bytes(struct pieces *p, size_t more)
{
    if (!p->buf || p->len + more > p->cap) {
        p->cap = (p->len + more) * 2 + 256;
        p->buf = xrealloc(p->buf, p->cap);
    }
}

static void push(struct pieces *p, const char *s, size_t len, int32_t id)
{
    if (p->n == p->cap_v) {
        p->cap_v = p->cap_v ? p->cap_v * 2 : 64;
        p->v = xrealloc(p->v, (size_t)p->cap_v * sizeof *p->v);
    }
    reserve_bytes(p, len);
    if (len)
        memcpy(p->buf + p->len, s, len);
    p->v[p->n++] = (struct piece){p->len, len, id};
    p->len += len;
}

void pieces_push(struct pieces *p, const char *s, size_t len, int32_t id)
{
    if (len > 0 || id >= 0)
        push(p, s, len, id);
}

void pieces_push_kept(struct pieces *p, const char *s, size_t len) { push(p, s, len, -1); }

void pieces_extend_last(struct pieces *p, const char *s, size_t len)
{
    CHECK(p->n > 0 && p->v[p->n - 1].id < 0 && p->v[p->n - 1].off + p->v[p->n - 1].len == p->len);
    reserve_bytes(p, len);
    if (len)
        memcpy(p->buf + p->len, s, len);
    p->len += len;
    p->v[p->n - 1].len += len;
}
