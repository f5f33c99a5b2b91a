#include "tokenizer/added_tokens.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"

/* A byte trie with children in an open-addressing table keyed by
 * (node, byte); node 0 is the root. terminal[node] = token index + 1. */
struct trie {
    uint64_t *keys; /* (node << 8 | byte) + 1; 0 = empty */
    int32_t *child;
    size_t n_slots;
    size_t n_edges;
    int32_t *terminal;
    int32_t n_nodes, cap_nodes;
};

static size_t slot_of(const struct trie *t, uint64_t key)
{
    size_t s = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (t->n_slots - 1);
    while (t->keys[s] && t->keys[s] != key)
        s = (s + 1) & (t->n_slots - 1);
    return s;
}

static int32_t trie_child(const struct trie *t, int32_t node, uint8_t b)
{
    size_t s = slot_of(t, ((uint64_t)node << 8 | b) + 1);
    return t->keys[s] ? t->child[s] : -1;
}

static void trie_grow(struct trie *t)
{
    uint64_t *ok = t->keys;
    int32_t *oc = t->child;
    size_t on = t->n_slots;
    t->n_slots = on ? on * 2 : 1024;
    t->keys = xcalloc(t->n_slots, sizeof *t->keys);
    t->child = xcalloc(t->n_slots, sizeof *t->child);
    for (size_t i = 0; i < on; i++)
        if (ok[i]) {
            size_t s = slot_of(t, ok[i]);
            t->keys[s] = ok[i];
            t->child[s] = oc[i];
        }
    free(ok);
    free(oc);
}

static void trie_insert(struct trie *t, const char *s, size_t len, int32_t token_index)
{
    int32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        int32_t c = trie_child(t, node, (uint8_t)s[i]);
        if (c < 0) {
            if ((t->n_edges + 1) * 2 > t->n_slots)
                trie_grow(t);
            if (t->n_nodes == t->cap_nodes) {
                t->cap_nodes *= 2;
                t->terminal = xrealloc(t->terminal, (size_t)t->cap_nodes * sizeof *t->terminal);
            }
            c = t->n_nodes++;
            t->terminal[c] = 0;
            uint64_t key = ((uint64_t)node << 8 | (uint8_t)s[i]) + 1;
            size_t slot = slot_of(t, key);
            t->keys[slot] = key;
            t->child[slot] = c;
            t->n_edges++;
        }
        node = c;
    }
    if (!t->terminal[node]) /* the first token with this content wins */
        t->terminal[node] = token_index + 1;
}

static struct trie *trie_new(void)
{
    struct trie *t = xcalloc(1, sizeof *t);
    t->cap_nodes = 64;
    t->terminal = xcalloc((size_t)t->cap_nodes, sizeof *t->terminal);
    t->n_nodes = 1;
    trie_grow(t);
    return t;
}

static void trie_free(struct trie *t)
{
    if (!t)
        return;
    free(t->keys);
    free(t->child);
    free(t->terminal);
    free(t);
}

void added_tokens_build(struct added_tokens *a)
{
    a->raw = trie_new();
    a->normalized = trie_new();
    a->max_id = -1;
    for (int i = 0; i < a->n; i++)
        a->max_id = a->v[i].id > a->max_id ? a->v[i].id : a->max_id;
    a->index_of_id = xmalloc((size_t)(a->max_id + 2) * sizeof *a->index_of_id);
    for (int32_t id = 0; id <= a->max_id; id++)
        a->index_of_id[id] = -1;
    for (int i = 0; i < a->n; i++)
        a->index_of_id[a->v[i].id] = i;
    for (int i = 0; i < a->n; i++)
        if (a->v[i].len > 0)
            trie_insert(a->v[i].normalized ? a->normalized : a->raw, a->v[i].content, a->v[i].len, i);
}

void added_tokens_free(struct added_tokens *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->v[i].content);
    free(a->v);
    free(a->index_of_id);
    trie_free(a->raw);
    trie_free(a->normalized);
    memset(a, 0, sizeof *a);
}

const struct added_token *added_tokens_by_id(const struct added_tokens *a, int32_t id)
{
    if (id < 0 || id > a->max_id || a->index_of_id[id] < 0)
        return NULL;
    return &a->v[a->index_of_id[id]];
}

/* Longest token starting at s[i], as a token index, or -1. */
static int longest_at(const struct trie *t, const char *s, size_t len, size_t i, size_t *end)
{
    int32_t node = 0, best = -1;
    for (size_t k = i; k < len; k++) {
        node = trie_child(t, node, (uint8_t)s[k]);
        if (node < 0)
            break;
        if (t->terminal[node]) {
            best = t->terminal[node] - 1;
            *end = k + 1;
        }
    }
    return best;
}

static int single_word_ok(const char *s, size_t len, size_t start, size_t stop)
{
    size_t at = start > 0 ? utf8_prev(s, start) : 0, after = stop;
    if (start > 0 && utf8_is_word_char(utf8_next(s, len, &at)))
        return 0;
    return !(stop < len && utf8_is_word_char(utf8_next(s, len, &after)));
}

void added_tokens_split(const struct added_tokens *a, int which, const char *s, size_t len, struct pieces *out)
{
    const struct trie *t = which ? a->normalized : a->raw;
    size_t done = 0; /* text before this offset has been emitted */
    size_t i = 0;
    while (t && t->n_nodes > 1 && i < len) {
        size_t stop = 0;
        int k = longest_at(t, s, len, i, &stop);
        if (k < 0) {
            i++;
            continue;
        }
        if (a->v[k].single_word && !single_word_ok(s, len, i, stop)) {
            i = stop; /* the matcher resumes after a discarded match */
            continue;
        }
        const struct added_token *tok = &a->v[k];
        size_t start = i;
        if (tok->lstrip) /* swallow whitespace before it, not past earlier output */
            while (start > done) {
                const size_t p = utf8_prev(s, start);
                size_t at = p;
                if (!utf8_is_whitespace(utf8_next(s, len, &at)))
                    break;
                start = p;
            }
        if (tok->rstrip)
            while (stop < len) {
                size_t next = stop;
                if (!utf8_is_whitespace(utf8_next(s, len, &next)))
                    break;
                stop = next;
            }
        pieces_push(out, s + done, start - done, -1);
        pieces_push(out, s + start, stop - start, tok->id);
        done = i = stop;
    }
    pieces_push(out, s + done, len - done, -1);
}
