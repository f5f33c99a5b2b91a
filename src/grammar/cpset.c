/* Code point sets (cpset.h). */
#include "grammar/cpset.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void cpset_add(struct cpset *s, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->r = xrealloc(s->r, (size_t)s->cap * 2 * sizeof(uint32_t));
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
}

void cpset_free(struct cpset *s)
{
    free(s->r);
    memset(s, 0, sizeof(*s));
}

static int cmp_range(const void *a, const void *b)
{
    const uint32_t *p = a, *q = b;
    return p[0] < q[0] ? -1 : p[0] > q[0];
}

void cpset_norm(struct cpset *s)
{
    if (s->n > 1) /* an empty set's r is NULL, which qsort may not take */
        qsort(s->r, (size_t)s->n, 2 * sizeof(uint32_t), cmp_range);
    struct cpset merged = {0};
    for (int i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1] > CP_MAX ? CP_MAX : s->r[2 * i + 1];
        if (lo > hi)
            continue;
        if (merged.n > 0 && lo <= merged.r[2 * merged.n - 1] + 1) {
            if (hi > merged.r[2 * merged.n - 1])
                merged.r[2 * merged.n - 1] = hi;
        } else {
            cpset_add(&merged, lo, hi);
        }
    }
    /* then cut out the surrogates (no UTF-8 text or JSON string decodes to one) */
    struct cpset res = {0};
    for (int i = 0; i < merged.n; i++) {
        uint32_t lo = merged.r[2 * i], hi = merged.r[2 * i + 1];
        if (lo < CP_SUR_LO)
            cpset_add(&res, lo, hi < CP_SUR_LO ? hi : CP_SUR_LO - 1);
        if (hi > CP_SUR_HI)
            cpset_add(&res, lo > CP_SUR_HI ? lo : CP_SUR_HI + 1, hi);
    }
    cpset_free(&merged);
    cpset_free(s);
    *s = res;
}

void cpset_invert(struct cpset *s)
{
    struct cpset out = {0};
    uint32_t next = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->r[2 * i] > next)
            cpset_add(&out, next, s->r[2 * i] - 1);
        next = s->r[2 * i + 1] + 1;
    }
    if (next <= CP_MAX)
        cpset_add(&out, next, CP_MAX);
    cpset_free(s);
    *s = out;
    cpset_norm(s); /* the gaps include the surrogates */
}

void cpset_clip(const struct cpset *s, uint32_t lo, uint32_t hi, struct cpset *out)
{
    for (int i = 0; i < s->n; i++) {
        uint32_t a = s->r[2 * i] > lo ? s->r[2 * i] : lo, b = s->r[2 * i + 1] < hi ? s->r[2 * i + 1] : hi;
        if (a <= b)
            cpset_add(out, a, b);
    }
}

int cpset_has(const struct cpset *s, uint32_t c)
{
    for (int i = 0; i < s->n; i++)
        if (c >= s->r[2 * i] && c <= s->r[2 * i + 1])
            return 1;
    return 0;
}
