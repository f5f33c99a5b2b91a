/* The compiled-constraint cache of cache.h: a list in recency order
 * (small: hundreds of entries), its lookups and inserts under one mutex,
 * the compiles outside it. */
#include "grammar/cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

struct grammar_ref {
    atomic_int refs;
    struct grammar *g;
    struct grammar_tokens *t;
    struct json_schema_notes notes;
    /* the key */
    enum grammar_kind kind;
    int strict, ws_max, ws_lines;
    char *text;
    size_t len;
    char *think_open, *think_close;
    int think_inside;
    size_t bytes;
    struct grammar_ref *prev, *next; /* the cache's list, most recent first */
};

struct grammar_cache {
    const struct tokenizer *tok;
    int n_vocab, n_eos;
    int32_t *eos;
    struct grammar_vocab *v; /* built by the first compile, under vocab_mu */
    pthread_mutex_t vocab_mu;
    pthread_mutex_t mu;
    struct grammar_ref *head, *tail;
    int n, max_entries;
    size_t bytes, max_bytes;
    long hits, misses;
};

struct grammar_cache *grammar_cache_new(const struct tokenizer *tok, int n_vocab, const int32_t *eos, int n_eos,
                                        int max_entries, size_t max_bytes)
{
    struct grammar_cache *c = xcalloc(1, sizeof(*c));
    c->tok = tok;
    c->n_vocab = n_vocab;
    c->n_eos = n_eos;
    c->eos = xmalloc((size_t)(n_eos + 1) * sizeof(int32_t));
    if (n_eos)
        memcpy(c->eos, eos, (size_t)n_eos * sizeof(int32_t));
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    pthread_mutex_init(&c->vocab_mu, NULL);
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static const struct grammar_vocab *vocab_of(struct grammar_cache *c)
{
    pthread_mutex_lock(&c->vocab_mu);
    if (!c->v)
        c->v = grammar_vocab_from_tokenizer(c->tok, c->n_vocab, c->eos, c->n_eos);
    pthread_mutex_unlock(&c->vocab_mu);
    return c->v;
}

static void notes_copy(struct json_schema_notes *dst, const struct json_schema_notes *src)
{
    dst->n_ignored = src->n_ignored;
    dst->ignored = src->n_ignored ? xmalloc((size_t)src->n_ignored * sizeof(char *)) : NULL;
    for (int i = 0; i < src->n_ignored; i++)
        dst->ignored[i] = xstrdup(src->ignored[i]);
}

static void ref_free(struct grammar_ref *r)
{
    grammar_tokens_free(r->t);
    grammar_free(r->g);
    json_schema_notes_free(&r->notes);
    free(r->text);
    free(r->think_open), free(r->think_close);
    free(r);
}

void grammar_ref_retain(struct grammar_ref *r) { atomic_fetch_add(&r->refs, 1); }

void grammar_ref_release(struct grammar_ref *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1)
        ref_free(r);
}

const struct grammar_tokens *grammar_ref_tokens(const struct grammar_ref *r) { return r->t; }

static int same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static int same_key(const struct grammar_ref *r, const struct grammar_spec *s)
{
    return r->kind == s->kind && r->strict == s->strict && r->ws_max == s->ws_max &&
           r->ws_lines == s->ws_lines && r->len == s->len &&
           (s->len == 0 || memcmp(r->text, s->text, s->len) == 0) && same_str(r->think_open, s->think_open) &&
           same_str(r->think_close, s->think_close) && r->think_inside == s->think_inside;
}

static void unlink_ref(struct grammar_cache *c, struct grammar_ref *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        c->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        c->tail = r->prev;
    r->prev = r->next = NULL;
}

static void push_front(struct grammar_cache *c, struct grammar_ref *r)
{
    r->next = c->head;
    r->prev = NULL;
    if (c->head)
        c->head->prev = r;
    c->head = r;
    if (!c->tail)
        c->tail = r;
}

/* Called with mu held. */
static struct grammar_ref *lookup(struct grammar_cache *c, const struct grammar_spec *s)
{
    for (struct grammar_ref *r = c->head; r; r = r->next)
        if (same_key(r, s)) {
            unlink_ref(c, r);
            push_front(c, r);
            grammar_ref_retain(r);
            return r;
        }
    return NULL;
}

/* The bytes a compiled constraint holds (its automaton and token lists). */
static size_t ref_bytes(const struct grammar_ref *r)
{
    const struct grammar *g = r->g;
    size_t b = (size_t)g->n_states * ((size_t)g->n_classes * 4 + 16) + r->len;
    for (int s = 0; s < g->n_states; s++)
        b += (size_t)r->t->states[s].n_list * 4 + (size_t)r->t->states[s].n_rests * sizeof(struct token_rest);
    return b;
}

struct grammar_ref *grammar_cache_get(struct grammar_cache *c, const struct grammar_spec *spec,
                                      struct json_schema_notes *notes, struct err *e)
{
    pthread_mutex_lock(&c->mu);
    struct grammar_ref *r = lookup(c, spec);
    if (r)
        c->hits++;
    else
        c->misses++;
    pthread_mutex_unlock(&c->mu);
    if (!r) {
        struct gir ir;
        gir_init(&ir);
        struct json_schema_notes n = {0};
        struct grammar *g = NULL;
        struct grammar_tokens *t = NULL;
        int ok = grammar_spec_build(spec, &ir, &n, e) == 0 && (g = grammar_compile(&ir, e)) &&
                 (t = grammar_tokens_new(g, vocab_of(c), e));
        gir_free(&ir);
        if (!ok) {
            grammar_tokens_free(t);
            grammar_free(g);
            json_schema_notes_free(&n);
            return NULL;
        }
        r = xcalloc(1, sizeof(*r));
        atomic_init(&r->refs, 2); /* the caller's and the cache's */
        r->g = g;
        r->t = t;
        r->notes = n;
        r->kind = spec->kind;
        r->strict = spec->strict;
        r->ws_max = spec->ws_max;
        r->ws_lines = spec->ws_lines;
        r->len = spec->len;
        r->text = xmalloc(spec->len + 1);
        if (spec->len)
            memcpy(r->text, spec->text, spec->len);
        r->think_open = spec->think_open ? xstrdup(spec->think_open) : NULL;
        r->think_close = spec->think_close ? xstrdup(spec->think_close) : NULL;
        r->think_inside = spec->think_inside;
        r->bytes = ref_bytes(r);
        pthread_mutex_lock(&c->mu);
        struct grammar_ref *other = lookup(c, spec); /* compiled meanwhile by another thread */
        if (other) {
            pthread_mutex_unlock(&c->mu);
            ref_free(r);
            r = other;
        } else {
            push_front(c, r);
            c->n++;
            c->bytes += r->bytes;
            while ((c->n > c->max_entries || c->bytes > c->max_bytes) && c->tail != r) {
                struct grammar_ref *old = c->tail;
                unlink_ref(c, old);
                c->n--;
                c->bytes -= old->bytes;
                grammar_ref_release(old);
            }
            pthread_mutex_unlock(&c->mu);
        }
    }
    if (notes)
        notes_copy(notes, &r->notes);
    return r;
}

void grammar_cache_get_stats(struct grammar_cache *c, struct grammar_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    out->hits = c->hits;
    out->misses = c->misses;
    out->entries = c->n;
    out->bytes = c->bytes;
    pthread_mutex_unlock(&c->mu);
}

void grammar_cache_free(struct grammar_cache *c)
{
    if (!c)
        return;
    for (struct grammar_ref *r = c->head, *next; r; r = next) {
        next = r->next;
        grammar_ref_release(r);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->vocab_mu);
    grammar_vocab_free(c->v);
    free(c->eos);
    free(c);
}
