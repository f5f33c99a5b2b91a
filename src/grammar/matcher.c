/* grammar_matcher: one request's position in the grammar (a set of
 * stacks), its masks, and the history that rollback restores. */
#include <stdlib.h>
#include <string.h>

#include "grammar/stacks.h"

struct grammar_matcher {
    const struct grammar_tokens *t;
    struct stack_pool pool;
    struct stack_set cur;
    /* the sets before each accepted token, for rollback */
    struct config *hist;
    int n_hist, cap_hist;
    int *hist_off; /* [n_accepted + 1] */
    uint8_t *hist_end;
    int n_accepted, cap_accepted;
    uint8_t *hist_ended;
    int ended; /* an EOS was consumed */
    /* scratch */
    struct stack_set *level; /* [max_depth + 1] */
    int *mark;
    struct stack_set next, next2;
    struct config_seen seen;
    uint32_t *tmp;
};

struct grammar_matcher *grammar_matcher_new(const struct grammar_tokens *t)
{
    struct grammar_matcher *m = xcalloc(1, sizeof(*m));
    m->t = t;
    stack_pool_init(&m->pool);
    const struct grammar *g = t->g;
    config_seen_reset(&m->seen);
    stack_expand(&m->pool, g, (struct config){g->rule_start[g->root], STACK_EMPTY}, &m->cur, &m->seen);
    m->level = xcalloc((size_t)t->v->max_depth + 2, sizeof(*m->level));
    m->mark = xcalloc((size_t)t->v->max_depth + 2, sizeof(int));
    m->tmp = xmalloc((size_t)t->v->words * sizeof(uint32_t) + 4);
    m->hist_off = xcalloc(1, sizeof(int));
    return m;
}

void grammar_matcher_free(struct grammar_matcher *m)
{
    if (!m)
        return;
    stack_pool_free(&m->pool);
    stack_set_free(&m->cur);
    stack_set_free(&m->next);
    stack_set_free(&m->next2);
    config_seen_free(&m->seen);
    for (int d = 0; d < m->t->v->max_depth + 2; d++)
        stack_set_free(&m->level[d]);
    free(m->level), free(m->mark), free(m->tmp);
    free(m->hist), free(m->hist_off), free(m->hist_end), free(m->hist_ended);
    free(m);
}

/* The dependent tokens of head h's state that the real stack lets
 * through: their rests read from h's caller (h's rule left), in byte
 * order, each reusing the levels of the prefix it shares with the last. */
static void walk_rests(struct grammar_matcher *m, struct config h, const struct state_tokens *st, uint32_t *mask)
{
    const struct grammar *g = m->t->g;
    const struct grammar_vocab *v = m->t->v;
    struct stack_pool *p = &m->pool;
    if (h.parent < 0) /* the start rule: leaving it ends the text, so no byte may follow */
        return;
    int base = p->n;
    struct stack_set *L = m->level;
    stack_set_clear(&L[0]);
    config_seen_reset(&m->seen);
    stack_expand(p, g, (struct config){p->state[h.parent], p->parent[h.parent]}, &L[0], &m->seen);
    m->mark[0] = p->n;
    int valid = 0, last_ok = 0; /* levels 0..valid hold the previous rest's prefix */
    const char *prev = NULL;
    uint32_t prev_len = 0;
    for (int k = 0; k < st->n_rests; k++) {
        int32_t tok = st->rests[k].token;
        const char *s = v->bytes[tok] + st->rests[k].off;
        uint32_t len = v->len[tok] - st->rests[k].off;
        uint32_t lcp = 0;
        if (prev)
            while (lcp < len && lcp < prev_len && s[lcp] == prev[lcp])
                lcp++;
        if (prev && lcp == len && len == prev_len) { /* the same rest: the same verdict */
            if (last_ok)
                mask[tok >> 5] |= 1u << (tok & 31);
            continue;
        }
        prev = s;
        prev_len = len;
        int d = (int)lcp < valid ? (int)lcp : valid;
        stack_pool_truncate(p, m->mark[d]);
        int ok = 1;
        for (; d < (int)len; d++) {
            if (!(L[d].n > 0 && stack_step(p, g, &L[d], (unsigned char)s[d], &L[d + 1], &m->seen))) {
                ok = 0;
                break;
            }
            m->mark[d + 1] = p->n;
        }
        valid = d;
        last_ok = ok && (L[len].n > 0 || L[len].end);
        if (last_ok)
            mask[tok >> 5] |= 1u << (tok & 31);
    }
    stack_pool_truncate(p, base);
}

void grammar_matcher_fill_mask(struct grammar_matcher *m, uint32_t *mask)
{
    const struct grammar_vocab *v = m->t->v;
    memset(mask, 0, (size_t)v->words * sizeof(uint32_t));
    if (m->ended)
        return;
    for (int i = 0; i < m->cur.n; i++) {
        struct config h = m->cur.v[i];
        const struct state_tokens *st = &m->t->states[h.state];
        if (st->complement) {
            memcpy(m->tmp, v->allowed, (size_t)v->words * sizeof(uint32_t));
            for (int k = 0; k < st->n_list; k++)
                m->tmp[st->list[k] >> 5] &= ~(1u << (st->list[k] & 31));
            for (int w = 0; w < v->words; w++) /* OR, not copy: earlier configs' bits stay */
                mask[w] |= m->tmp[w];
        } else {
            for (int k = 0; k < st->n_list; k++)
                mask[st->list[k] >> 5] |= 1u << (st->list[k] & 31);
        }
        if (st->n_rests)
            walk_rests(m, h, st, mask);
    }
    if (m->cur.end)
        for (int k = 0; k < v->n_eos; k++)
            if (v->eos[k] >= 0 && v->eos[k] < v->n)
                mask[v->eos[k] >> 5] |= 1u << (v->eos[k] & 31);
}

static void push_history(struct grammar_matcher *m)
{
    if (m->n_accepted == m->cap_accepted) {
        m->cap_accepted = m->cap_accepted ? m->cap_accepted * 2 : 64;
        m->hist_off = xrealloc(m->hist_off, (size_t)(m->cap_accepted + 1) * sizeof(int));
        m->hist_end = xrealloc(m->hist_end, (size_t)m->cap_accepted);
        m->hist_ended = xrealloc(m->hist_ended, (size_t)m->cap_accepted);
    }
    if (m->n_hist + m->cur.n > m->cap_hist) {
        while (m->n_hist + m->cur.n > m->cap_hist)
            m->cap_hist = m->cap_hist ? m->cap_hist * 2 : 256;
        m->hist = xrealloc(m->hist, (size_t)m->cap_hist * sizeof(*m->hist));
    }
    if (m->cur.n)
        memcpy(m->hist + m->n_hist, m->cur.v, (size_t)m->cur.n * sizeof(*m->hist));
    m->n_hist += m->cur.n;
    m->hist_end[m->n_accepted] = m->cur.end;
    m->hist_ended[m->n_accepted] = (uint8_t)m->ended;
    m->n_accepted++;
    m->hist_off[m->n_accepted] = m->n_hist;
}

/* Reads bytes from the current set into m->cur; -1 (cur unchanged, the
 * pool back where it was) when a byte is refused. */
static int read_bytes(struct grammar_matcher *m, const char *s, size_t n)
{
    int base = m->pool.n;
    const struct stack_set *from = &m->cur;
    struct stack_set *buf[2] = {&m->next, &m->next2};
    for (size_t i = 0; i < n; i++) {
        struct stack_set *to = buf[i & 1];
        if (!stack_step(&m->pool, m->t->g, from, (unsigned char)s[i], to, &m->seen)) {
            stack_pool_truncate(&m->pool, base);
            return -1;
        }
        from = to;
    }
    if (n > 0)
        stack_set_copy(&m->cur, from);
    return 0;
}

int grammar_matcher_accept_bytes(struct grammar_matcher *m, const char *s, size_t n)
{
    if (m->ended)
        return -1;
    int n_hist = m->n_hist;
    push_history(m); /* the set before; taken back when the bytes are refused */
    if (read_bytes(m, s, n) < 0) {
        m->n_accepted--;
        m->n_hist = n_hist;
        return -1;
    }
    return 0;
}

int grammar_matcher_accept(struct grammar_matcher *m, int32_t token)
{
    const struct grammar_vocab *v = m->t->v;
    if (m->ended || token < 0 || token >= v->n)
        return -1;
    if (v->is_eos[token]) {
        if (!m->cur.end)
            return -1;
        push_history(m);
        m->ended = 1;
        return 0;
    }
    if (!(v->allowed[token >> 5] >> (token & 31) & 1))
        return -1;
    return grammar_matcher_accept_bytes(m, v->bytes[token], v->len[token]);
}

int grammar_matcher_can_end(const struct grammar_matcher *m) { return !m->ended && m->cur.end; }

int grammar_matcher_done(const struct grammar_matcher *m) { return m->ended || (m->cur.n == 0 && m->cur.end); }

int grammar_matcher_n_accepted(const struct grammar_matcher *m) { return m->n_accepted; }

void grammar_matcher_rollback(struct grammar_matcher *m, int n)
{
    if (n <= 0)
        return;
    if (n > m->n_accepted)
        n = m->n_accepted;
    int k = m->n_accepted - n;
    int off = m->hist_off[k], len = m->hist_off[k + 1] - off;
    struct stack_set past = {m->hist + off, len, len, m->hist_end[k], 0};
    stack_set_copy(&m->cur, &past);
    m->ended = m->hist_ended[k];
    m->n_accepted = k;
    m->n_hist = off;
}
