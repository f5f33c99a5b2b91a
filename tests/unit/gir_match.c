/* The reference recognizer of gir_match.h. Positions are bit sets of
 * 0..n; a rule at a position is memoized, and a rule re-entered at the
 * same position before it finishes (left recursion) contributes nothing. */
#include "gir_match.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pset {
    uint64_t *w;
};

struct ctx {
    const struct gir *g;
    const unsigned char *s;
    size_t n;
    int words;
    int prefix;              /* running off the end of s counts as a match (prefix mode) */
    struct pset *memo;       /* [rules * (n + 1)] */
    unsigned char *state;    /* 0 unknown, 1 in progress, 2 done */
};

static struct pset pset_new(const struct ctx *c) { return (struct pset){calloc((size_t)c->words, 8)}; }
static void pset_add(struct pset *p, size_t i) { p->w[i >> 6] |= 1ull << (i & 63); }
static int pset_has(const struct pset *p, size_t i) { return (int)((p->w[i >> 6] >> (i & 63)) & 1); }
static void pset_or(const struct ctx *c, struct pset *a, const struct pset *b)
{
    for (int k = 0; k < c->words; k++)
        a->w[k] |= b->w[k];
}
static int pset_eq(const struct ctx *c, const struct pset *a, const struct pset *b)
{
    return memcmp(a->w, b->w, (size_t)c->words * 8) == 0;
}

/* The end positions x reaches from i, OR-ed into out. In prefix mode
 * position n is "end of input reached", from which anything matches. */
static void match(struct ctx *c, int x, size_t i, struct pset *out);

static void match_set(struct ctx *c, int x, const struct pset *from, struct pset *out)
{
    for (size_t i = 0; i <= c->n; i++)
        if (pset_has(from, i))
            match(c, x, i, out);
}

static void match(struct ctx *c, int x, size_t i, struct pset *out)
{
    const struct gx_node *e = &c->g->nodes[x];
    if (c->prefix && i == c->n && e->kind != GX_NOTHING) {
        pset_add(out, i);
        return;
    }
    switch (e->kind) {
    case GX_NOTHING: return;
    case GX_EMPTY: pset_add(out, i); return;
    case GX_BYTES:
        if (i < c->n && byteset_has(&c->g->sets[e->arg], c->s[i]))
            pset_add(out, i + 1);
        return;
    case GX_SEQ: {
        struct pset cur = pset_new(c);
        pset_add(&cur, i);
        for (int k = 0; k < e->n; k++) {
            struct pset next = pset_new(c);
            match_set(c, c->g->kids[e->first + k], &cur, &next);
            free(cur.w);
            cur = next;
        }
        pset_or(c, out, &cur);
        free(cur.w);
        return;
    }
    case GX_ALT:
        for (int k = 0; k < e->n; k++)
            match(c, c->g->kids[e->first + k], i, out);
        return;
    case GX_REPEAT: {
        int child = c->g->kids[e->first];
        struct pset cur = pset_new(c), all = pset_new(c);
        pset_add(&cur, i);
        for (int k = 0;; k++) {
            if (k >= e->min)
                pset_or(c, &all, &cur);
            if (e->max >= 0 && k == e->max)
                break;
            struct pset next = pset_new(c);
            match_set(c, child, &cur, &next);
            if (k >= e->min) { /* past the minimum only new positions matter */
                struct pset grown = pset_new(c);
                pset_or(c, &grown, &all);
                pset_or(c, &grown, &next);
                int same = pset_eq(c, &grown, &all);
                free(grown.w);
                if (same) {
                    free(next.w);
                    break;
                }
            }
            free(cur.w);
            cur = next;
            int empty = 1;
            for (int w = 0; w < c->words; w++)
                empty &= cur.w[w] == 0;
            if (empty)
                break;
        }
        pset_or(c, out, &all);
        free(cur.w);
        free(all.w);
        return;
    }
    case GX_REF: {
        size_t slot = (size_t)e->arg * (c->n + 1) + i;
        if (c->state[slot] == 0) {
            c->state[slot] = 1;
            struct pset r = pset_new(c);
            if (c->g->rules[e->arg].body >= 0)
                match(c, c->g->rules[e->arg].body, i, &r);
            c->memo[slot] = r;
            c->state[slot] = 2;
        }
        if (c->state[slot] == 2)
            pset_or(c, out, &c->memo[slot]);
        return;
    }
    }
}

static int run(const struct gir *g, const char *s, size_t n, int prefix)
{
    if (g->root < 0 || g->failed)
        return 0;
    struct ctx c = {g, (const unsigned char *)s, n, (int)(n / 64 + 1), prefix, NULL, NULL};
    size_t slots = (size_t)g->n_rules * (n + 1);
    c.memo = calloc(slots, sizeof(*c.memo));
    c.state = calloc(slots, 1);
    struct pset out = pset_new(&c);
    int body = g->rules[g->root].body;
    if (body >= 0)
        match(&c, body, 0, &out);
    int ok = pset_has(&out, n);
    free(out.w);
    for (size_t k = 0; k < slots; k++)
        free(c.memo[k].w);
    free(c.memo);
    free(c.state);
    return ok;
}

int gir_match(const struct gir *g, const char *s, size_t n) { return run(g, s, n, 0); }
int gir_match_prefix(const struct gir *g, const char *s, size_t n) { return run(g, s, n, 1); }
int gir_match_str(const struct gir *g, const char *s) { return run(g, s, strlen(s), 0); }
