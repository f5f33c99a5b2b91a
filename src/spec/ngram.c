/* Prompt lookup proposals (spec/ngram.h). */
#include "spec/ngram.h"

#include <stdlib.h>

#define NGRAM_LIMIT 64 /* the longest n-gram a caller may ask to match */

struct ngram {
    struct spec_proposer base;
    struct spec_ngram_opts o;
};

struct spec_ngram_opts spec_ngram_opts_default(void) { return (struct spec_ngram_opts){.n_min = 2, .n_max = 4}; }

/* Whether tokens[j, j + len) equals the last len of tokens[0, n), compared
 * from the end (where a near miss differs first in a backward scan). */
static int ends_match(const int32_t *tokens, int n, int j, int len)
{
    for (int i = len - 1; i >= 0; i--)
        if (tokens[j + i] != tokens[n - len + i])
            return 0;
    return 1;
}

int spec_ngram_match(const int32_t *tokens, int n, int n_min, int n_max, int *len)
{
    for (int l = n_max < n - 1 ? n_max : n - 1; l >= n_min; l--)
        /* an occurrence ending before the suffix's own last token, so at
         * least one token follows it */
        for (int j = n - l - 1; j >= 0; j--)
            if (ends_match(tokens, n, j, l)) {
                *len = l;
                return j + l;
            }
    return -1;
}

static int ngram_propose(struct spec_proposer *p, const struct spec_seq *s, int max_k, int32_t *out)
{
    const struct ngram *g = (const struct ngram *)p;
    int len;
    const int at = spec_ngram_match(s->tokens, s->n_known, g->o.n_min, g->o.n_max, &len);
    if (at < 0)
        return 0;
    /* what followed the match, then on as a repeat: where the match is the
     * loop just before the end (the last tokens repeating with period
     * n_known - at), past the known tokens the proposal copies itself */
    for (int i = 0; i < max_k; i++)
        out[i] = at + i < s->n_known ? s->tokens[at + i] : out[at + i - s->n_known];
    return max_k;
}

static void ngram_free(struct spec_proposer *p) { free(p); }

static const struct spec_proposer_ops ngram_ops = {.name = "ngram", .propose = ngram_propose, .free = ngram_free};

struct spec_proposer *spec_ngram_create(const struct spec_ngram_opts *o, struct err *e)
{
    if (o->n_min < 1 || o->n_max < o->n_min || o->n_max > NGRAM_LIMIT) {
        err_set(e, "prompt lookup: n-gram lengths %d..%d must satisfy 1 <= min <= max <= %d", o->n_min, o->n_max,
                NGRAM_LIMIT);
        return NULL;
    }
    struct ngram *g = xcalloc(1, sizeof *g);
    g->base.ops = &ngram_ops;
    g->o = *o;
    return &g->base;
}
