/* The stacks of stacks.h. */
#include "grammar/stacks.h"

#include <stdlib.h>
#include <string.h>

void stack_pool_init(struct stack_pool *p)
{
    memset(p, 0, sizeof(*p));
    p->n_bucket = 1024;
    p->bucket = xmalloc((size_t)p->n_bucket * sizeof(int32_t));
    memset(p->bucket, 0xff, (size_t)p->n_bucket * sizeof(int32_t));
}

void stack_pool_free(struct stack_pool *p)
{
    free(p->state), free(p->parent), free(p->chain), free(p->bucket);
    memset(p, 0, sizeof(*p));
}

static inline uint64_t config_key(int32_t state, int32_t parent)
{
    return (uint64_t)(uint32_t)state << 32 | (uint32_t)parent;
}

static inline uint32_t key_hash(uint64_t k) { return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 32); }

static void rehash(struct stack_pool *p)
{
    free(p->bucket);
    p->n_bucket *= 2;
    p->bucket = xmalloc((size_t)p->n_bucket * sizeof(int32_t));
    memset(p->bucket, 0xff, (size_t)p->n_bucket * sizeof(int32_t));
    /* re-linked in creation order, so that truncation (newest first) stays LIFO per bucket */
    for (int i = 0; i < p->n; i++) {
        uint32_t h = key_hash(config_key(p->state[i], p->parent[i])) & (uint32_t)(p->n_bucket - 1);
        p->chain[i] = p->bucket[h];
        p->bucket[h] = i;
    }
}

int32_t stack_node(struct stack_pool *p, int32_t state, int32_t parent)
{
    uint32_t h = key_hash(config_key(state, parent)) & (uint32_t)(p->n_bucket - 1);
    for (int32_t i = p->bucket[h]; i >= 0; i = p->chain[i])
        if (p->state[i] == state && p->parent[i] == parent)
            return i;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 1024;
        p->state = xrealloc(p->state, (size_t)p->cap * sizeof(int32_t));
        p->parent = xrealloc(p->parent, (size_t)p->cap * sizeof(int32_t));
        p->chain = xrealloc(p->chain, (size_t)p->cap * sizeof(int32_t));
    }
    int32_t i = p->n++;
    p->state[i] = state;
    p->parent[i] = parent;
    p->chain[i] = p->bucket[h];
    p->bucket[h] = i;
    if (p->n > p->n_bucket)
        rehash(p);
    return i;
}

void stack_pool_truncate(struct stack_pool *p, int n)
{
    while (p->n > n) {
        int32_t i = --p->n;
        uint32_t h = key_hash(config_key(p->state[i], p->parent[i])) & (uint32_t)(p->n_bucket - 1);
        p->bucket[h] = p->chain[i]; /* newest first in its bucket */
    }
}

void stack_set_free(struct stack_set *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static inline void set_push(struct stack_set *s, struct config c)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = xrealloc(s->v, (size_t)s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = c;
}

void stack_set_copy(struct stack_set *dst, const struct stack_set *src)
{
    if (dst->cap < src->n) {
        dst->cap = src->n;
        dst->v = xrealloc(dst->v, (size_t)dst->cap * sizeof(*dst->v));
    }
    if (src->n)
        memcpy(dst->v, src->v, (size_t)src->n * sizeof(*src->v));
    dst->n = src->n;
    dst->end = src->end;
    dst->leave = src->leave;
}

void config_seen_free(struct config_seen *s)
{
    free(s->key), free(s->stamp);
    memset(s, 0, sizeof(*s));
}

void config_seen_reset(struct config_seen *s)
{
    s->n = 0;
    if (++s->now == 0) { /* wrapped: clear the stamps for real */
        if (s->stamp)
            memset(s->stamp, 0, (size_t)s->cap * sizeof(uint32_t));
        s->now = 1;
    }
}

/* 1 when c was new (and is now seen). */
static int seen_add(struct config_seen *s, struct config c)
{
    if (2 * (s->n + 1) > s->cap) {
        int old = s->cap;
        uint64_t *ok = s->key;
        uint32_t *os = s->stamp;
        s->cap = old ? old * 2 : 64;
        s->key = xmalloc((size_t)s->cap * sizeof(uint64_t));
        s->stamp = xcalloc((size_t)s->cap, sizeof(uint32_t));
        for (int i = 0; i < old; i++)
            if (os[i] == s->now) {
                uint32_t h = key_hash(ok[i]) & (uint32_t)(s->cap - 1);
                while (s->stamp[h] == s->now)
                    h = (h + 1) & (uint32_t)(s->cap - 1);
                s->key[h] = ok[i];
                s->stamp[h] = s->now;
            }
        free(ok), free(os);
    }
    uint64_t k = config_key(c.state, c.parent);
    uint32_t h = key_hash(k) & (uint32_t)(s->cap - 1);
    while (s->stamp[h] == s->now) {
        if (s->key[h] == k)
            return 0;
        h = (h + 1) & (uint32_t)(s->cap - 1);
    }
    s->key[h] = k;
    s->stamp[h] = s->now;
    s->n++;
    return 1;
}

struct work {
    struct config local[32], *v;
    int n, cap;
};

static inline void work_push(struct work *w, struct config c)
{
    if (w->n == w->cap) {
        w->cap *= 2;
        if (w->v == w->local) {
            w->v = xmalloc((size_t)w->cap * sizeof(*w->v));
            memcpy(w->v, w->local, sizeof(w->local));
        } else {
            w->v = xrealloc(w->v, (size_t)w->cap * sizeof(*w->v));
        }
    }
    w->v[w->n++] = c;
}

void stack_expand(struct stack_pool *p, const struct grammar *g, struct config c, struct stack_set *out,
                  struct config_seen *seen)
{
    uint8_t f = g->flags[c.state];
    if (!(f & (GS_CALLS | GS_FINAL))) { /* the common case: a state inside a rule */
        if (seen_add(seen, c))
            set_push(out, c);
        return;
    }
    struct work w;
    w.v = w.local, w.n = 0, w.cap = 32;
    work_push(&w, c);
    while (w.n > 0) {
        struct config y = w.v[--w.n];
        if (!seen_add(seen, y))
            continue;
        f = g->flags[y.state];
        if (f & GS_BYTES)
            set_push(out, y);
        if (f & GS_CALLS)
            for (int k = g->call_off[y.state]; k < g->call_off[y.state + 1]; k++) {
                const struct gcall *call = &g->calls[k];
                int32_t ret = (g->flags[call->ret] & GS_TAIL) ? y.parent : stack_node(p, call->ret, y.parent);
                work_push(&w, (struct config){g->rule_start[call->rule], ret});
            }
        if (f & GS_FINAL) {
            if (y.parent == STACK_EMPTY)
                out->end = 1;
            else if (y.parent == STACK_BOTTOM)
                out->leave = 1;
            else
                work_push(&w, (struct config){p->state[y.parent], p->parent[y.parent]});
        }
    }
    if (w.v != w.local)
        free(w.v);
}

int stack_step(struct stack_pool *p, const struct grammar *g, const struct stack_set *in, unsigned char b,
               struct stack_set *out, struct config_seen *seen)
{
    stack_set_clear(out);
    if (in->n == 1) { /* one stack staying inside its rule: nothing to dedup */
        int32_t t = grammar_next(g, in->v[0].state, b);
        if (t < 0)
            return 0;
        if (!(g->flags[t] & (GS_CALLS | GS_FINAL))) {
            set_push(out, (struct config){t, in->v[0].parent});
            return 1;
        }
    }
    config_seen_reset(seen);
    for (int i = 0; i < in->n; i++) {
        int32_t t = grammar_next(g, in->v[i].state, b);
        if (t >= 0)
            stack_expand(p, g, (struct config){t, in->v[i].parent}, out, seen);
    }
    return out->n || out->end || out->leave;
}
