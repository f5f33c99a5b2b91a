/* Slices: token sets precomputed once per vocabulary for the character
 * classes grammars loop on (a JSON string's body above all), so that a
 * state that loops on such a class accepts the whole slice at once and its
 * trie walk visits only the subtrees holding tokens outside it. A state
 * contains a slice when every character of the slice's class, read from
 * it, comes back to it (checked on the product of the two automata); then
 * every token made of whole characters of the class is accepted there. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

/* The slices' classes: the characters a JSON string holds raw, with and
 * without DEL (llama.cpp's json.gbnf leaves DEL out). */
static int slice_expr(struct gir *g, int which)
{
    uint32_t out[] = {'"', '"', '\\', '\\', 0, 0x1F, 0x7F, 0x7F};
    return gx_codepoints_not(g, out, which == 0 ? 3 : 4);
}

static struct grammar *slice_dfa(int which)
{
    struct gir g;
    gir_init(&g);
    int r = gir_rule(&g, "slice");
    gir_define(&g, r, gx_star(&g, slice_expr(&g, which)));
    gir_set_root(&g, r);
    struct err e;
    struct grammar *d = grammar_compile(&g, &e);
    CHECK(d);
    gir_free(&g);
    return d;
}

void vocab_slices_build(struct grammar_vocab *v)
{
    v->n_slices = VOCAB_SLICES;
    for (int k = 0; k < VOCAB_SLICES; k++) {
        struct vocab_slice *sl = &v->slices[k];
        sl->dfa = slice_dfa(k);
        sl->tokens = xcalloc((size_t)v->words + 1, sizeof(uint32_t));
        sl->outside = xcalloc((size_t)v->n_nodes + 1, 1);
        const struct grammar *d = sl->dfa;
        for (int i = 0; i < v->n; i++) {
            if (!(v->allowed[i >> 5] >> (i & 31) & 1))
                continue;
            int32_t q = d->rule_start[0];
            for (uint32_t b = 0; b < v->len[i] && q >= 0; b++)
                q = grammar_next(d, q, (unsigned char)v->bytes[i][b]);
            if (q >= 0 && (d->flags[q] & GS_FINAL)) {
                sl->tokens[i >> 5] |= 1u << (i & 31);
                sl->n_tokens++;
            }
        }
        /* outside[i]: node i's subtree holds a token not in the slice */
        int32_t path[GRAMMAR_MAX_TOKEN_BYTES + 1];
        for (int i = v->n_nodes - 1; i >= 0; i--) {
            uint8_t own = 0;
            for (int32_t t = v->node_token[i]; t >= 0; t = v->dup_next[t])
                own |= !(sl->tokens[t >> 5] >> (t & 31) & 1);
            sl->outside[i] |= own;
        }
        /* up to the root: a node's parent is the last node one level shallower before it */
        int32_t *parent = xmalloc((size_t)v->n_nodes * sizeof(int32_t) + 4);
        for (int i = 0; i < v->n_nodes; i++) {
            int d_i = v->node_depth[i];
            path[d_i - 1] = i;
            parent[i] = d_i > 1 ? path[d_i - 2] : -1;
        }
        for (int i = v->n_nodes - 1; i >= 0; i--)
            if (sl->outside[i] && parent[i] >= 0)
                sl->outside[parent[i]] = 1;
        free(parent);
    }
}

void vocab_slices_free(struct grammar_vocab *v)
{
    for (int k = 0; k < v->n_slices; k++) {
        grammar_free(v->slices[k].dfa);
        free(v->slices[k].tokens);
        free(v->slices[k].outside);
    }
}

/* Whether every string of whole slice characters leads from s back to s
 * through byte edges: a search over (slice state, grammar state) pairs. */
int vocab_slice_contains(const struct vocab_slice *sl, const struct grammar *g, int32_t s)
{
    const struct grammar *d = sl->dfa;
    /* every slice holds these one-byte characters, which must lead back to s: most states fail here */
    static const char probe[] = "a 0Z~";
    for (const char *c = probe; *c; c++)
        if (grammar_next(g, s, (unsigned char)*c) != s)
            return 0;
    enum { MAX_PAIRS = 4096 };
    int32_t qs[MAX_PAIRS], ts[MAX_PAIRS];
    int n = 0, head = 0;
    qs[n] = d->rule_start[0], ts[n] = s, n++;
    while (head < n) {
        int32_t q = qs[head], t = ts[head];
        head++;
        if ((d->flags[q] & GS_FINAL) && t != s)
            return 0;
        for (int b = 0; b < 256; b++) {
            int32_t qn = grammar_next(d, q, (unsigned char)b);
            if (qn < 0)
                continue;
            int32_t tn = grammar_next(g, t, (unsigned char)b);
            if (tn < 0)
                return 0;
            int seen = 0;
            for (int k = 0; k < n && !seen; k++)
                seen = qs[k] == qn && ts[k] == tn;
            if (seen)
                continue;
            if (n == MAX_PAIRS)
                return 0;
            qs[n] = qn, ts[n] = tn, n++;
        }
    }
    return 1;
}
