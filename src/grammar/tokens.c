/* grammar_tokens: for every DFA state a token can start in, its tokens
 * classified by one walk of the vocabulary's trie with the state on a
 * stack of its own: accepted (some path reads the whole token, the rule
 * ending at its last byte at the latest), rejected (every path fails inside
 * the rule's reach), or dependent (a path leaves the rule with bytes left,
 * the next one among the bytes that may follow the rule). For a dependent
 * token the walk keeps where it left (the rest to read from the caller);
 * only the rests are walked again at mask time. */
#include <stdlib.h>
#include <string.h>

#include "grammar/stacks.h"

struct walk {
    struct config_seen seen;
    struct stack_set *level; /* [max_depth + 1]: the configurations after d bytes */
    int *mark;               /* pool size after level d was made */
    uint8_t *dep;            /* a path left the rule before byte d - 1 with a following byte */
    struct token_rest *rests;
    int n_rests, cap_rests;
    int32_t *acc; /* the accepted tokens the walk found */
    int n_acc, cap_acc;
};

static void rest_push(struct walk *w, int32_t token, int off)
{
    if (w->n_rests == w->cap_rests) {
        w->cap_rests = w->cap_rests ? w->cap_rests * 2 : 64;
        w->rests = xrealloc(w->rests, (size_t)w->cap_rests * sizeof(*w->rests));
    }
    w->rests[w->n_rests++] = (struct token_rest){token, (uint16_t)off};
}

/* Token t (and its duplicates) depends: one rest per place a path left the
 * rule, among the first `reached` levels of its path. */
static void add_rests(const struct grammar_vocab *v, struct walk *w, const struct byteset *follow, int32_t t,
                      int reached)
{
    const char *s = v->bytes[t];
    int len = (int)v->len[t];
    for (int k = 0; k < reached && k < len; k++)
        if (w->level[k].leave && byteset_has(follow, (unsigned char)s[k]))
            for (int32_t d = t; d >= 0; d = v->dup_next[d])
                rest_push(w, d, k);
}

/* qsort_r's comparison: the vocabulary is its argument (a global would race
 * between threads compiling at once) */
static int cmp_rest(const void *a, const void *b, void *vocab)
{
    const struct token_rest *x = a, *y = b;
    const struct grammar_vocab *v = vocab;
    uint32_t lx = v->len[x->token] - x->off, ly = v->len[y->token] - y->off;
    int c = memcmp(v->bytes[x->token] + x->off, v->bytes[y->token] + y->off, lx < ly ? lx : ly);
    if (c)
        return c;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x->token < y->token ? -1 : x->token > y->token;
}

static void acc_push(struct walk *w, int32_t t)
{
    if (w->n_acc == w->cap_acc) {
        w->cap_acc = w->cap_acc ? w->cap_acc * 2 : 256;
        w->acc = xrealloc(w->acc, (size_t)w->cap_acc * sizeof(int32_t));
    }
    w->acc[w->n_acc++] = t;
}

/* The walk of one first byte's subtree (root child r) from level 0. */
static void walk_subtree(const struct grammar_tokens *gt, struct stack_pool *pool, struct walk *w, int r,
                         const uint8_t *outside, const struct byteset *follow, uint32_t *accepted)
{
    const struct grammar *g = gt->g;
    const struct grammar_vocab *v = gt->v;
    for (int i = r; i < v->node_end[r];) {
        if (outside && !outside[i]) {
            i = v->node_end[i];
            continue;
        }
        int d = v->node_depth[i];
        unsigned char b = v->node_byte[i];
        struct stack_set *up = &w->level[d - 1], *here = &w->level[d];
        uint8_t dep_here = w->dep[d - 1] || (up->leave && byteset_has(follow, b));
        int32_t t;
        if (up->n == 1 && !up->leave && (t = grammar_next(g, up->v[0].state, b)) >= 0 &&
            !(g->flags[t] & (GS_CALLS | GS_FINAL))) {
            /* one stack moving inside its rule: no allocation, no dedup */
            if (here->cap == 0) {
                here->cap = 8;
                here->v = xmalloc(8 * sizeof(*here->v));
            }
            here->v[0] = (struct config){t, up->v[0].parent};
            here->n = 1, here->end = 0, here->leave = 0;
            w->mark[d] = w->mark[d - 1];
        } else {
            stack_pool_truncate(pool, w->mark[d - 1]);
            if (!(up->n > 0 && stack_step(pool, g, up, b, here, &w->seen)))
                stack_set_clear(here);
            w->mark[d] = pool->n;
        }
        w->dep[d] = dep_here;
        if (!(here->n > 0 || here->leave)) {
            if (dep_here) /* every token below left the rule on the way: they depend on the stack */
                for (int k = i; k < v->node_end[i]; k++)
                    if (v->node_token[k] >= 0)
                        add_rests(v, w, follow, v->node_token[k], d);
            i = v->node_end[i];
            continue;
        }
        for (int32_t tok = v->node_token[i]; tok >= 0; tok = v->dup_next[tok])
            if (!outside || !(accepted[tok >> 5] >> (tok & 31) & 1)) /* a slice's tokens are in already */
                acc_push(w, tok);
        i++;
    }
}

static void classify(const struct grammar_tokens *gt, struct stack_pool *pool, struct walk *w, int32_t s,
                     uint32_t *accepted, struct state_tokens *out)
{
    const struct grammar *g = gt->g;
    const struct grammar_vocab *v = gt->v;
    const struct byteset *follow = &g->follow[g->state_rule[s]];
    stack_pool_truncate(pool, 0);
    struct stack_set start = {&(struct config){s, STACK_BOTTOM}, 1, 1, 0, 0};
    stack_set_copy(&w->level[0], &start);
    w->mark[0] = pool->n;
    w->dep[0] = 0;
    w->n_rests = 0;
    w->n_acc = 0;
    const uint8_t *outside = NULL; /* a slice the state contains: only subtrees with tokens outside it are walked */
    int n_slice = 0;
    for (int k = 0; k < v->n_slices && !outside; k++)
        if (v->slices[k].n_tokens > 0 && vocab_slice_contains(&v->slices[k], g, s)) {
            outside = v->slices[k].outside;
            memcpy(accepted, v->slices[k].tokens, (size_t)v->words * sizeof(uint32_t));
            n_slice = v->slices[k].n_tokens;
        }
    /* only the first bytes the state reads */
    for (int b = 0; b < 256; b++)
        if (v->root_child[b] >= 0 && grammar_next(g, s, (unsigned char)b) >= 0)
            walk_subtree(gt, pool, w, v->root_child[b], outside, follow, accepted);
    /* few accepted: list them; many: list the others instead (rejected or
     * dependent: a dependent token is allowed only when its rest passes
     * the walk with the real stack, which adds it back) */
    const int n_acc = n_slice + w->n_acc;
    out->complement = n_acc * 2 > v->n_sorted;
    int32_t *list = NULL;
    int n = 0;
    if (!out->complement) {
        if (outside) { /* the slice's tokens, then the walk's */
            list = xmalloc((size_t)(n_acc + 1) * sizeof(int32_t));
            for (int wi = 0; wi < v->words; wi++)
                for (uint32_t r = accepted[wi]; r; r &= r - 1)
                    list[n++] = wi * 32 + __builtin_ctz(r);
        } else {
            list = xmalloc((size_t)(n_acc + 1) * sizeof(int32_t));
        }
        memcpy(list + n, w->acc, (size_t)w->n_acc * sizeof(int32_t));
        n += w->n_acc;
    } else {
        if (!outside)
            memset(accepted, 0, (size_t)v->words * sizeof(uint32_t));
        for (int k = 0; k < w->n_acc; k++)
            accepted[w->acc[k] >> 5] |= 1u << (w->acc[k] & 31);
        int cap = 0;
        for (int wi = 0; wi < v->words; wi++) {
            for (uint32_t r = v->allowed[wi] & ~accepted[wi]; r; r &= r - 1) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 64;
                    list = xrealloc(list, (size_t)cap * sizeof(int32_t));
                }
                list[n++] = wi * 32 + __builtin_ctz(r);
            }
        }
    }
    out->list = list;
    out->n_list = n;
    if (w->n_rests) {
        out->rests = xmalloc((size_t)w->n_rests * sizeof(*out->rests));
        memcpy(out->rests, w->rests, (size_t)w->n_rests * sizeof(*out->rests));
        qsort_r(out->rests, (size_t)w->n_rests, sizeof(*out->rests), cmp_rest, (void *)v);
        out->n_rests = w->n_rests;
    }
}

/* Moves every state's lists into one block. A compiled grammar is thousands of small lists made
 * between the walk's temporaries; kept apart, a long-running server that compiles and evicts
 * grammars (grammar/cache.c) is left with a heap of holes and its RSS creeps. One block per
 * grammar is freed whole, a hole of whole pages the server's heap_give_back returns. */
static void pack(struct grammar_tokens *gt)
{
    const int n = gt->g->n_states;
    size_t n_rests = 0, n_lists = 0;
    for (int s = 0; s < n; s++)
        n_rests += (size_t)gt->states[s].n_rests, n_lists += (size_t)gt->states[s].n_list;
    gt->block = xmalloc(n_rests * sizeof(struct token_rest) + n_lists * sizeof(int32_t) + 1);
    struct token_rest *rests = gt->block; /* the rests first: their alignment is at least int32_t's */
    int32_t *lists = (int32_t *)(rests + n_rests);
    for (int s = 0; s < n; s++) {
        struct state_tokens *st = &gt->states[s];
        if (st->n_rests)
            memcpy(rests, st->rests, (size_t)st->n_rests * sizeof(*rests));
        free(st->rests);
        st->rests = rests;
        rests += st->n_rests;
        if (st->n_list)
            memcpy(lists, st->list, (size_t)st->n_list * sizeof(*lists));
        free(st->list);
        st->list = lists;
        lists += st->n_list;
    }
}

struct grammar_tokens *grammar_tokens_new(const struct grammar *g, const struct grammar_vocab *v, struct err *e)
{
    (void)e;
    struct grammar_tokens *gt = xcalloc(1, sizeof(*gt));
    gt->g = g;
    gt->v = v;
    gt->states = xcalloc((size_t)g->n_states, sizeof(*gt->states));
    struct stack_pool pool;
    stack_pool_init(&pool);
    struct walk w;
    memset(&w, 0, sizeof(w));
    w.level = xcalloc((size_t)v->max_depth + 2, sizeof(*w.level));
    w.mark = xcalloc((size_t)v->max_depth + 2, sizeof(int));
    w.dep = xcalloc((size_t)v->max_depth + 2, 1);
    uint32_t *accepted = xmalloc((size_t)v->words * sizeof(uint32_t) + 4);
    for (int s = 0; s < g->n_states; s++)
        if (g->flags[s] & GS_BYTES)
            classify(gt, &pool, &w, s, accepted, &gt->states[s]);
    free(accepted);
    for (int d = 0; d < v->max_depth + 2; d++)
        stack_set_free(&w.level[d]);
    free(w.level), free(w.mark), free(w.dep), free(w.rests), free(w.acc);
    config_seen_free(&w.seen);
    stack_pool_free(&pool);
    pack(gt);
    return gt;
}

void grammar_tokens_free(struct grammar_tokens *t)
{
    if (!t)
        return;
    free(t->block);
    free(t->states);
    free(t);
}

const struct grammar_vocab *grammar_tokens_vocab(const struct grammar_tokens *t) { return t->v; }
