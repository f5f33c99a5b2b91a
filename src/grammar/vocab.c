/* grammar_vocab: a model's tokens as bytes, and their trie in preorder
 * (a walk skips a dead prefix's whole subtree in one jump). Tokens with the
 * same bytes (a byte token and a one-byte word piece) share a trie node:
 * the node holds the first and dup_next links the others. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

/* qsort_r's comparison: the vocabulary is its argument (a global would race
 * between threads compiling at once) */
static int cmp_tokens(const void *a, const void *b, void *vocab)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const struct grammar_vocab *v = vocab;
    uint32_t lx = v->len[x], ly = v->len[y];
    int c = memcmp(v->bytes[x], v->bytes[y], lx < ly ? lx : ly);
    if (c)
        return c;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void build_trie(struct grammar_vocab *v)
{
    int32_t *sorted = xmalloc((size_t)v->n * sizeof(int32_t) + 4);
    int n = 0;
    for (int i = 0; i < v->n; i++)
        if (v->allowed[i >> 5] >> (i & 31) & 1)
            sorted[n++] = i;
    qsort_r(sorted, (size_t)n, sizeof(int32_t), cmp_tokens, v);
    v->sorted = sorted;
    v->n_sorted = n;
    size_t cap = 1024;
    v->node_byte = xmalloc(cap);
    v->node_depth = xmalloc(cap * sizeof(uint16_t));
    v->node_token = xmalloc(cap * sizeof(int32_t));
    v->node_end = xmalloc(cap * sizeof(int32_t));
    v->dup_next = xmalloc((size_t)v->n * sizeof(int32_t) + 4);
    for (int i = 0; i < v->n; i++)
        v->dup_next[i] = -1;
    int32_t path[GRAMMAR_MAX_TOKEN_BYTES + 1]; /* open nodes by depth - 1 */
    int depth = 0, nodes = 0, max_depth = 0;
    int32_t prev = -1, last_dup = -1;
    for (int k = 0; k < n; k++) {
        int32_t t = sorted[k];
        const char *s = v->bytes[t];
        uint32_t len = v->len[t];
        uint32_t lcp = 0;
        if (prev >= 0) {
            uint32_t pl = v->len[prev];
            while (lcp < len && lcp < pl && s[lcp] == v->bytes[prev][lcp])
                lcp++;
            if (lcp == len && lcp == pl) { /* the same bytes as the previous token */
                v->dup_next[last_dup] = t;
                last_dup = t;
                continue;
            }
        }
        while ((uint32_t)depth > lcp) /* close the nodes past the shared prefix */
            v->node_end[path[--depth]] = nodes;
        for (uint32_t d = lcp; d < len; d++) {
            if ((size_t)nodes == cap) {
                cap *= 2;
                v->node_byte = xrealloc(v->node_byte, cap);
                v->node_depth = xrealloc(v->node_depth, cap * sizeof(uint16_t));
                v->node_token = xrealloc(v->node_token, cap * sizeof(int32_t));
                v->node_end = xrealloc(v->node_end, cap * sizeof(int32_t));
            }
            v->node_byte[nodes] = (uint8_t)s[d];
            v->node_depth[nodes] = (uint16_t)(d + 1);
            v->node_token[nodes] = -1;
            path[depth++] = nodes++;
        }
        v->node_token[path[depth - 1]] = t;
        if ((int)len > max_depth)
            max_depth = (int)len;
        prev = t;
        last_dup = t;
    }
    while (depth > 0)
        v->node_end[path[--depth]] = nodes;
    v->n_nodes = nodes;
    for (int b = 0; b < 256; b++)
        v->root_child[b] = -1;
    for (int i = 0; i < nodes; i = v->node_end[i])
        v->root_child[v->node_byte[i]] = i;
    v->max_depth = max_depth;
}

struct grammar_vocab *grammar_vocab_new(int n_tokens, const char *const *bytes, const size_t *lens,
                                        const uint8_t *special, const int32_t *eos, int n_eos)
{
    struct grammar_vocab *v = xcalloc(1, sizeof(*v));
    v->n = n_tokens;
    v->words = (n_tokens + 31) / 32;
    v->bytes = xmalloc((size_t)n_tokens * sizeof(char *) + 8);
    v->len = xmalloc((size_t)n_tokens * sizeof(uint32_t) + 4);
    v->special = xcalloc((size_t)n_tokens + 1, 1);
    v->allowed = xcalloc((size_t)v->words + 1, sizeof(uint32_t));
    v->is_eos = xcalloc((size_t)n_tokens + 1, 1);
    for (int i = 0; i < n_tokens; i++) {
        size_t len = lens[i] > GRAMMAR_MAX_TOKEN_BYTES ? 0 : lens[i]; /* a token too long never matches */
        v->bytes[i] = xmalloc(len + 1);
        if (len)
            memcpy(v->bytes[i], bytes[i], len);
        v->len[i] = (uint32_t)len;
        v->special[i] = special ? special[i] : 0;
        if (!v->special[i] && len > 0)
            v->allowed[i >> 5] |= 1u << (i & 31);
    }
    v->eos = xmalloc((size_t)(n_eos + 1) * sizeof(int32_t));
    for (int i = 0; i < n_eos; i++) {
        v->eos[v->n_eos++] = eos[i];
        if (eos[i] >= 0 && eos[i] < n_tokens) {
            v->is_eos[eos[i]] = 1;
            v->allowed[eos[i] >> 5] &= ~(1u << (eos[i] & 31)); /* only at an end */
        }
    }
    build_trie(v);
    vocab_slices_build(v);
    return v;
}

void grammar_vocab_free(struct grammar_vocab *v)
{
    if (!v)
        return;
    vocab_slices_free(v);
    for (int i = 0; i < v->n; i++)
        free(v->bytes[i]);
    free(v->bytes), free(v->len), free(v->special), free(v->allowed), free(v->is_eos), free(v->eos);
    free(v->node_byte), free(v->node_depth), free(v->node_token), free(v->node_end), free(v->sorted);
    free(v->dup_next);
    free(v);
}

int grammar_vocab_size(const struct grammar_vocab *v) { return v->n; }
int grammar_mask_words(const struct grammar_vocab *v) { return v->words; }
