/* Suffix decoding proposals (spec/suffix.h). */
#include "spec/suffix.h"

#include <stdlib.h>
#include <string.h>

#include "spec/suffix_index.h"

#define MAX_MATCHES 64   /* occurrences weighed per proposal, the newest of each bigram */
#define MAX_PROPOSAL 64  /* the longest proposal (callers ask for 16 at most) */
#define MAX_DEPTH 64

/* One running sequence's own index. */
struct seq_index {
    long id;
    const int32_t *tokens; /* whose they are: a new sequence under a reused id starts over */
    struct suffix_index ix;
};

/* A finished sequence in the shared index: [start, start + len), its
 * separator last; used: a proposal came from it since it was (re)added. */
struct segment {
    int64_t start, len;
    int used;
};

struct suffix {
    struct spec_proposer base;
    struct spec_suffix_opts o;
    struct seq_index *seqs;
    int n_seqs, cap_seqs;
    struct suffix_index shared; /* cap 0: none */
    struct segment *segs;       /* segs[seg_head, seg_head + n_segs): oldest first */
    int seg_head, n_segs, cap_segs;
    long requeued;
    int32_t *scratch; /* a segment's tokens while it moves up */
};

/* A proposal and what it is worth: the sum over its tokens of the chance
 * that all of it up to there is kept. from: the newest occurrence it
 * follows. */
struct proposal {
    float score;
    int n;
    int64_t from;
    int32_t tok[MAX_PROPOSAL];
};

struct spec_suffix_opts spec_suffix_opts_default(void)
{
    return (struct spec_suffix_opts){.max_depth = 24, .spec_factor = 1.0f, .min_prob = 0.1f, .cache_tokens = 1 << 20};
}

/* Follows the occurrences m[0, n) forward: at each step the token most of
 * the surviving ones continue with (ties: the longest match, then the
 * newest), while the surviving share times the shares before it stays at
 * or above min_prob. */
static void follow(const struct suffix_index *ix, const struct suffix_match *m, int n, int max_tokens, float min_prob,
                   struct proposal *out)
{
    int alive[MAX_MATCHES], na = n;
    for (int j = 0; j < n; j++)
        alive[j] = j;
    float prob = 1.f;
    *out = (struct proposal){.from = m[0].pos};
    for (int t = 0; t < max_tokens; t++) {
        int32_t toks[MAX_MATCHES];
        int counts[MAX_MATCHES], nd = 0, best = 0;
        for (int j = 0; j < na; j++) {
            const int32_t tok = suffix_index_token(ix, m[alive[j]].pos + 1 + t);
            if (tok == SUFFIX_SEP)
                continue; /* this occurrence ends here: it still counts against the others */
            int d = 0;
            while (d < nd && toks[d] != tok)
                d++;
            if (d == nd)
                toks[nd] = tok, counts[nd++] = 0;
            counts[d]++;
        }
        if (nd == 0)
            break;
        for (int d = 1; d < nd; d++) /* toks are in the occurrences' order: the first of the most */
            if (counts[d] > counts[best])
                best = d;
        const float p = prob * (float)counts[best] / (float)na;
        if (p < min_prob)
            break;
        prob = p;
        out->tok[out->n++] = toks[best];
        out->score += p;
        int k = 0;
        for (int j = 0; j < na; j++)
            if (suffix_index_token(ix, m[alive[j]].pos + 1 + t) == toks[best])
                alive[k++] = alive[j];
        na = k;
        out->from = m[alive[0]].pos;
    }
}

/* The best proposal from ix for the query q[0, nq) into *best (kept if
 * it scores no higher). */
static void propose_from(const struct suffix *g, const struct suffix_index *ix, const int32_t *q, int nq, int max_k,
                         struct proposal *best)
{
    struct suffix_match m[MAX_MATCHES];
    const int n = suffix_index_find(ix, q, nq, g->o.max_depth, m, MAX_MATCHES);
    struct proposal cand;
    /* m is longest first: each distinct length's occurrences are a prefix of it */
    for (int i = 0; i < n; i++) {
        if (i + 1 < n && m[i + 1].len == m[i].len)
            continue;
        int max_tokens = (int)((float)m[i].len * g->o.spec_factor + 1e-6f);
        max_tokens = max_tokens < max_k ? max_tokens : max_k;
        if (max_tokens <= 0)
            continue;
        follow(ix, m, i + 1, max_tokens, g->o.min_prob, &cand);
        if (cand.score > best->score)
            *best = cand;
    }
}

static struct seq_index *seq_index_of(struct suffix *g, const struct spec_seq *s)
{
    for (int i = 0; i < g->n_seqs; i++)
        if (g->seqs[i].id == s->id) {
            struct seq_index *si = &g->seqs[i];
            if (si->tokens != s->tokens || si->ix.end > s->n_known) { /* not the sequence it indexed */
                suffix_index_free(&si->ix);
                suffix_index_init(&si->ix, s->n_known * 2, 1);
                si->tokens = s->tokens;
            }
            return si;
        }
    if (g->n_seqs == g->cap_seqs) {
        g->cap_seqs = g->cap_seqs ? 2 * g->cap_seqs : 16;
        g->seqs = xrealloc(g->seqs, (size_t)g->cap_seqs * sizeof *g->seqs);
    }
    struct seq_index *si = &g->seqs[g->n_seqs++];
    si->id = s->id;
    si->tokens = s->tokens;
    suffix_index_init(&si->ix, s->n_known * 2, 1);
    return si;
}

/* The live segment holding position p (segments are in position order). */
static struct segment *segment_at(struct suffix *g, int64_t p)
{
    int lo = 0, hi = g->n_segs - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (g->segs[g->seg_head + mid].start <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return g->n_segs ? &g->segs[g->seg_head + lo] : NULL;
}

static int suffix_propose(struct spec_proposer *p, const struct spec_seq *s, int max_k, int32_t *out)
{
    struct suffix *g = (struct suffix *)p;
    if (s->n_known < 2)
        return 0;
    max_k = max_k < MAX_PROPOSAL ? max_k : MAX_PROPOSAL;
    struct seq_index *si = seq_index_of(g, s);
    while (si->ix.end < s->n_known)
        suffix_index_push(&si->ix, s->tokens[si->ix.end]);
    struct proposal own = {0}, shared = {0};
    propose_from(g, &si->ix, s->tokens, s->n_known, max_k, &own);
    if (g->shared.cap)
        propose_from(g, &g->shared, s->tokens, s->n_known, max_k, &shared);
    const struct proposal *best = &own;
    if (shared.score > own.score) {
        best = &shared;
        segment_at(g, shared.from)->used = 1;
    }
    memcpy(out, best->tok, (size_t)best->n * sizeof *out);
    return best->n;
}

static void append_segment(struct suffix *g, const int32_t *t, int64_t n)
{
    if (g->seg_head + g->n_segs == g->cap_segs) {
        if (g->seg_head > g->cap_segs / 2) { /* the front is mostly gone: move down */
            memmove(g->segs, g->segs + g->seg_head, (size_t)g->n_segs * sizeof *g->segs);
            g->seg_head = 0;
        } else {
            g->cap_segs = g->cap_segs ? 2 * g->cap_segs : 64;
            g->segs = xrealloc(g->segs, (size_t)g->cap_segs * sizeof *g->segs);
        }
    }
    g->segs[g->seg_head + g->n_segs++] = (struct segment){.start = g->shared.end, .len = n + 1};
    for (int64_t i = 0; i < n; i++)
        suffix_index_push(&g->shared, t[i]);
    suffix_index_push(&g->shared, SUFFIX_SEP);
}

/* Drops the oldest segment, or, if a proposal came from it since it was
 * added and it is not too big, moves it to the newest end (a second
 * chance: the least recently used go first). */
static void evict_oldest(struct suffix *g)
{
    const struct segment s = g->segs[g->seg_head++];
    g->n_segs--;
    const int64_t n = s.len - 1;
    const int requeue = s.used && s.len <= g->shared.cap / 4;
    if (requeue)
        for (int64_t i = 0; i < n; i++)
            g->scratch[i] = suffix_index_at(&g->shared, s.start + i);
    suffix_index_drop(&g->shared, s.len);
    if (requeue) {
        append_segment(g, g->scratch, n);
        g->requeued++;
    }
}

static void shared_add(struct suffix *g, const int32_t *t, int64_t n)
{
    const int64_t cap = g->shared.cap;
    if (n + 1 > cap / 2) /* the newest half of the index at most */
        t += n - (cap / 2 - 1), n = cap / 2 - 1;
    while (g->shared.end - g->shared.begin + n + 1 > cap)
        evict_oldest(g);
    append_segment(g, t, n);
}

static void suffix_finish(struct spec_proposer *p, const struct spec_seq *s)
{
    struct suffix *g = (struct suffix *)p;
    if (g->shared.cap && s->n_known > s->n_prompt) {
        /* the output, after the prompt's last tokens: what it answered to */
        const int from = s->n_prompt > g->o.max_depth ? s->n_prompt - g->o.max_depth : 0;
        shared_add(g, s->tokens + from, s->n_known - from);
    }
    for (int i = 0; i < g->n_seqs; i++)
        if (g->seqs[i].id == s->id) {
            suffix_index_free(&g->seqs[i].ix);
            g->seqs[i] = g->seqs[--g->n_seqs];
            break;
        }
}

static void suffix_free(struct spec_proposer *p)
{
    struct suffix *g = (struct suffix *)p;
    for (int i = 0; i < g->n_seqs; i++)
        suffix_index_free(&g->seqs[i].ix);
    free(g->seqs);
    if (g->shared.cap)
        suffix_index_free(&g->shared);
    free(g->segs);
    free(g->scratch);
    free(g);
}

void spec_suffix_stats(const struct spec_proposer *p, struct spec_suffix_stats *st)
{
    const struct suffix *g = (const struct suffix *)p;
    *st = (struct spec_suffix_stats){.cached_seqs = g->n_segs,
                                     .cached_tokens = g->shared.end - g->shared.begin,
                                     .requeued = g->requeued};
}

static const struct spec_proposer_ops suffix_ops = {
    .name = "suffix", .propose = suffix_propose, .finish = suffix_finish, .free = suffix_free};

static int check_opts(const struct spec_suffix_opts *o, struct err *e)
{
    if (o->max_depth < 2 || o->max_depth > MAX_DEPTH)
        return err_set(e, "suffix decoding: the match depth %d must be in [2, %d]", o->max_depth, MAX_DEPTH);
    if (!(o->spec_factor > 0) || o->spec_factor > 1000)
        return err_set(e, "suffix decoding: the proposal factor %g must be in (0, 1000]", (double)o->spec_factor);
    if (!(o->min_prob >= 0 && o->min_prob <= 1))
        return err_set(e, "suffix decoding: the least chance %g must be in [0, 1]", (double)o->min_prob);
    if (o->cache_tokens != 0 && (o->cache_tokens < 64 || o->cache_tokens > 1 << 30))
        return err_set(e, "suffix decoding: the shared cache's %d tokens must be 0 or in [64, 2^30]", o->cache_tokens);
    return 0;
}

struct spec_proposer *spec_suffix_create(const struct spec_suffix_opts *o, struct err *e)
{
    if (check_opts(o, e))
        return NULL;
    struct suffix *g = xcalloc(1, sizeof *g);
    g->base.ops = &suffix_ops;
    g->o = *o;
    if (o->cache_tokens) {
        suffix_index_init(&g->shared, o->cache_tokens, 0);
        g->scratch = xmalloc((size_t)(g->shared.cap / 4 + 1) * sizeof *g->scratch);
    }
    return &g->base;
}
