/* Bigram-linked token store (spec/suffix_index.h). */
#include "spec/suffix_index.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* A walk looks at no more than this many links per occurrence it keeps
 * (collisions of the hash are skipped, but not forever). */
#define WALK_PER_MATCH 4

static uint64_t bigram_hash(int32_t a, int32_t b)
{
    uint64_t h = (uint64_t)(uint32_t)a * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)b * 0xc2b2ae3d27d4eb4full;
    return h ^ h >> 29;
}

static void alloc_arrays(struct suffix_index *ix)
{
    ix->tok = xmalloc((size_t)ix->cap * sizeof *ix->tok);
    ix->prev = xmalloc((size_t)ix->cap * sizeof *ix->prev);
    ix->head = xmalloc((size_t)ix->cap * sizeof *ix->head);
    memset(ix->head, 0xff, (size_t)ix->cap * sizeof *ix->head); /* -1 */
}

void suffix_index_init(struct suffix_index *ix, int64_t cap, int grow)
{
    int64_t c = 16;
    while (c < cap)
        c <<= 1;
    *ix = (struct suffix_index){.cap = c, .grow = grow};
    alloc_arrays(ix);
}

void suffix_index_free(struct suffix_index *ix)
{
    free(ix->tok), free(ix->prev), free(ix->head);
    memset(ix, 0, sizeof *ix);
}

/* Links position p (its token and the one before it already stored). */
static void link(struct suffix_index *ix, int64_t p)
{
    const int64_t mask = ix->cap - 1;
    ix->prev[p & mask] = -1;
    if (p - 1 < ix->begin)
        return;
    const int32_t a = ix->tok[(p - 1) & mask], b = ix->tok[p & mask];
    if (a == SUFFIX_SEP || b == SUFFIX_SEP)
        return;
    int64_t *h = &ix->head[bigram_hash(a, b) & (uint64_t)mask];
    ix->prev[p & mask] = *h;
    *h = p;
}

/* Twice the capacity, every live position linked again (a growing index
 * never drops, so positions stay where they are). */
static void double_cap(struct suffix_index *ix)
{
    int32_t *old = ix->tok;
    const int64_t old_cap = ix->cap;
    free(ix->prev), free(ix->head);
    ix->cap *= 2;
    alloc_arrays(ix);
    for (int64_t p = ix->begin; p < ix->end; p++) {
        ix->tok[p & (ix->cap - 1)] = old[p & (old_cap - 1)];
        link(ix, p);
    }
    free(old);
}

void suffix_index_push(struct suffix_index *ix, int32_t t)
{
    if (ix->end - ix->begin == ix->cap) {
        CHECK(ix->grow);
        double_cap(ix);
    }
    const int64_t p = ix->end++;
    ix->tok[p & (ix->cap - 1)] = t;
    link(ix, p);
}

void suffix_index_drop(struct suffix_index *ix, int64_t n)
{
    ix->begin = ix->begin + n < ix->end ? ix->begin + n : ix->end;
}

int suffix_index_find(const struct suffix_index *ix, const int32_t *q, int nq, int max_len, struct suffix_match *m,
                      int max)
{
    if (nq < 2 || max <= 0)
        return 0;
    const int32_t a = q[nq - 2], b = q[nq - 1];
    const int64_t mask = ix->cap - 1;
    int64_t p = ix->head[bigram_hash(a, b) & (uint64_t)mask];
    int n = 0;
    for (int walked = 0; p >= ix->begin && p >= 1 && n < max && walked < max * WALK_PER_MATCH; walked++) {
        const int64_t at = p;
        p = ix->prev[at & mask];
        if (at == ix->end - 1 || at - 1 < ix->begin || ix->tok[at & mask] != b || ix->tok[(at - 1) & mask] != a)
            continue;
        int len = 2;
        while (len < max_len && len < nq && at - len >= ix->begin && ix->tok[(at - len) & mask] == q[nq - 1 - len])
            len++;
        /* insertion by length; the walk is newest first, so equals keep that order */
        int i = n++;
        for (; i > 0 && m[i - 1].len < len; i--)
            m[i] = m[i - 1];
        m[i] = (struct suffix_match){.pos = at, .len = len};
    }
    return n;
}
