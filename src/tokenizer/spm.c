#include "tokenizer/spm.h"

#include <stdlib.h>

#include "core/error.h"
#include "tokenizer/heap.h"

struct spm_sym {
    size_t off, len; /* len 0: merged into its left neighbour */
    int32_t prev, next;
};

struct spm_bigram {
    float score;
    int32_t left;
    size_t len; /* of the pair when it was queued: stale once either side changed */
};

/* a before b in the queue: higher score, then further left */
static int before(const struct spm_bigram *a, const struct spm_bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

HEAP_DEFINE(spm_queue, struct spm_bigram, before)

/* Queues the pair (left, right) when together they spell a token. */
static void try_pair(const struct bpe *vocab, const float *scores, const char *text, const struct spm_sym *s,
                     int32_t left, int32_t right, struct spm_queue *q)
{
    if (left < 0 || right < 0)
        return;
    size_t len = s[left].len + s[right].len;
    int32_t id = strmap_get(&vocab->vocab, text + s[left].off, len);
    if (id >= 0)
        spm_queue_push(q, (struct spm_bigram){scores[id], left, len});
}

static void push_id(int32_t **ids, int *n, int *cap, int32_t id)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *ids = xrealloc(*ids, (size_t)*cap * sizeof **ids);
    }
    (*ids)[(*n)++] = id;
}

static size_t char_len(const char *t, size_t left)
{
    uint8_t c = (uint8_t)t[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    return n < left ? n : left;
}

void spm_encode(const struct bpe *vocab, const float *scores, const char *text, size_t len, int32_t **ids, int *n,
                int *cap)
{
    if (len == 0)
        return;
    struct spm_sym *s = xmalloc(len * sizeof *s);
    int32_t n_sym = 0;
    for (size_t off = 0; off < len; n_sym++) {
        s[n_sym] = (struct spm_sym){off, char_len(text + off, len - off), n_sym - 1, -1};
        if (n_sym > 0)
            s[n_sym - 1].next = n_sym;
        off += s[n_sym].len;
    }
    struct spm_queue q = {0};
    for (int32_t i = 1; i < n_sym; i++)
        try_pair(vocab, scores, text, s, i - 1, i, &q);
    while (q.n > 0) {
        struct spm_bigram b = spm_queue_pop(&q);
        struct spm_sym *l = &s[b.left];
        if (l->len == 0 || l->next < 0 || l->len + s[l->next].len != b.len)
            continue; /* one side merged elsewhere since this pair was queued */
        struct spm_sym *r = &s[l->next];
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0)
            s[r->next].prev = b.left;
        try_pair(vocab, scores, text, s, l->prev, b.left, &q);
        try_pair(vocab, scores, text, s, b.left, l->next, &q);
    }
    /* every merged symbol is a token; a lone character may not be */
    for (int32_t i = 0; i >= 0 && i < n_sym; i = s[i].next) {
        int32_t id = strmap_get(&vocab->vocab, text + s[i].off, s[i].len);
        if (id >= 0) {
            push_id(ids, n, cap, id);
            continue;
        }
        /* a character outside the vocabulary: its byte tokens when it has
         * them all, else one unk (as tokenizers' byte fallback does) */
        size_t k = 0;
        while (k < s[i].len && vocab->byte_ids[(uint8_t)text[s[i].off + k]] >= 0)
            k++;
        if (k == s[i].len)
            for (k = 0; k < s[i].len; k++)
                push_id(ids, n, cap, vocab->byte_ids[(uint8_t)text[s[i].off + k]]);
        else if (vocab->unk_id >= 0)
            push_id(ids, n, cap, vocab->unk_id);
    }
    free(q.v);
    free(s);
}
