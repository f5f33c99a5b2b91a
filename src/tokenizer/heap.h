/* A binary min-heap over a value type, generated per type so the
 * comparison inlines in the merge loops (bpe.c, spm.c):
 *
 *     HEAP_DEFINE(name, type, less)
 *
 * defines struct name { type *v; int n, cap; }, name_push(h, item) and
 * name_pop(h) (h non-empty), with less(const type *, const type *) putting
 * the first item out first. Free h->v when done. */
#ifndef INFER_TOKENIZER_HEAP_H
#define INFER_TOKENIZER_HEAP_H

#include "core/error.h"

#define HEAP_DEFINE(name, type, less)                                                                                  \
    struct name {                                                                                                      \
        type *v;                                                                                                       \
        int n, cap;                                                                                                    \
    };                                                                                                                 \
    static void name##_push(struct name *h, type it)                                                                   \
    {                                                                                                                  \
        if (h->n == h->cap) {                                                                                          \
            h->cap = h->cap ? h->cap * 2 : 64;                                                                         \
            h->v = xrealloc(h->v, (size_t)h->cap * sizeof *h->v);                                                      \
        }                                                                                                              \
        int i = h->n++;                                                                                                \
        while (i > 0 && less(&it, &h->v[(i - 1) / 2])) {                                                               \
            h->v[i] = h->v[(i - 1) / 2];                                                                               \
            i = (i - 1) / 2;                                                                                           \
        }                                                                                                              \
        h->v[i] = it;                                                                                                  \
    }                                                                                                                  \
    static type name##_pop(struct name *h)                                                                             \
    {                                                                                                                  \
        type top = h->v[0], last = h->v[--h->n];                                                                       \
        int i = 0;                                                                                                     \
        for (;;) {                                                                                                     \
            int c = 2 * i + 1;                                                                                         \
            if (c >= h->n)                                                                                             \
                break;                                                                                                 \
            if (c + 1 < h->n && less(&h->v[c + 1], &h->v[c]))                                                         \
                c++;                                                                                                   \
            if (!less(&h->v[c], &last))                                                                                \
                break;                                                                                                 \
            h->v[i] = h->v[c];                                                                                         \
            i = c;                                                                                                     \
        }                                                                                                              \
        if (h->n > 0)                                                                                                  \
            h->v[i] = last;                                                                                            \
        return top;                                                                                                    \
    }

#endif
