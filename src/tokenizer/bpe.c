#include "tokenizer/bpe.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/heap.h"

/* ---- merges: pair -> (rank, new id) ---- */

static uint64_t pair_key(int32_t a, int32_t b) { return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1; }

static size_t pair_slot(const struct bpe *b, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    size_t s = (size_t)(h >> 20) & (b->n_merge_slots - 1);
    while (b->merges[s].pair && b->merges[s].pair != key)
        s = (s + 1) & (b->n_merge_slots - 1);
    return s;
}

static const struct bpe_merge_slot *merge_find(const struct bpe *b, int32_t l, int32_t r)
{
    if (!b->n_merge_slots)
        return NULL;
    const struct bpe_merge_slot *m = &b->merges[pair_slot(b, pair_key(l, r))];
    return m->pair ? m : NULL;
}

int bpe_add_merge(struct bpe *b, const char *left, size_t left_len, const char *right, size_t right_len,
                  int32_t rank, struct err *e)
{
    int32_t l = strmap_get(&b->vocab, left, left_len), r = strmap_get(&b->vocab, right, right_len);
    char buf[1024];
    if (left_len + right_len >= sizeof buf)
        return err_set(e, "merge %d: tokens too long", rank);
    memcpy(buf, left, left_len);
    memcpy(buf + left_len, right, right_len);
    int32_t merged = strmap_get(&b->vocab, buf, left_len + right_len);
    if (l < 0 || r < 0 || merged < 0)
        return err_set(e, "merge %d ('%.*s' + '%.*s'): %s is not in the vocabulary", rank, (int)left_len,
                       left, (int)right_len, right, l < 0 ? "the left part" : r < 0 ? "the right part" : "the merged token");
    if ((size_t)(rank + 1) * 2 > b->n_merge_slots) {
        size_t old_n = b->n_merge_slots;
        struct bpe_merge_slot *old = b->merges;
        b->n_merge_slots = old_n ? old_n * 2 : 1 << 16;
        b->merges = xcalloc(b->n_merge_slots, sizeof *b->merges);
        for (size_t i = 0; i < old_n; i++)
            if (old[i].pair)
                b->merges[pair_slot(b, old[i].pair)] = old[i];
        free(old);
    }
    struct bpe_merge_slot *m = &b->merges[pair_slot(b, pair_key(l, r))];
    if (!m->pair) /* the first listing of a pair wins, as in tokenizers */
        *m = (struct bpe_merge_slot){pair_key(l, r), rank, merged};
    return 0;
}

/* ---- a small cache of word -> ids for short words ---- */

#define CACHE_SLOTS (1 << 16)
#define CACHE_MAX_WORD 48
#define CACHE_MAX_IDS 16

struct bpe_cache_entry {
    uint64_t hash;
    uint8_t word_len;
    uint8_t n_ids;
    char word[CACHE_MAX_WORD];
    int32_t ids[CACHE_MAX_IDS];
};

#define CACHE_STRIPES 64

/* Striped locks: encoders on several threads (HTTP workers) share it. */
struct bpe_cache {
    pthread_mutex_t locks[CACHE_STRIPES];
    struct bpe_cache_entry e[CACHE_SLOTS];
};

void bpe_finish(struct bpe *b)
{
    for (int i = 0; i < 256; i++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", i);
        b->byte_ids[i] = b->byte_fallback ? strmap_get(&b->vocab, name, 6) : -1;
    }
    b->cache = xcalloc(1, sizeof *b->cache);
    /* Resident from the start (a write per page): its 8 MB are a fixed cost of the tokenizer, not
     * RSS that creeps up over hours of serving as new words fill it. */
    for (size_t off = 0; off < sizeof *b->cache; off += 4096)
        ((volatile char *)b->cache)[off] = 0;
    for (int i = 0; i < CACHE_STRIPES; i++)
        pthread_mutex_init(&b->cache->locks[i], NULL);
}

void bpe_free(struct bpe *b)
{
    for (int32_t i = 0; i < b->n_ids; i++)
        free(b->id_to_token[i]);
    free(b->id_to_token);
    free(b->id_len);
    free(b->merges);
    if (b->cache)
        for (int i = 0; i < CACHE_STRIPES; i++)
            pthread_mutex_destroy(&b->cache->locks[i]);
    free(b->cache);
    strmap_free(&b->vocab);
    memset(b, 0, sizeof *b);
}

/* ---- the merge loop ---- */

struct sym {
    int32_t id;
    int32_t prev, next; /* -1 = none */
    int alive;
};

struct heap_item {
    int32_t rank, pos, new_id;
};

static int item_less(const struct heap_item *a, const struct heap_item *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

HEAP_DEFINE(heap, struct heap_item, item_less)

static void push_pair(const struct bpe *b, struct heap *h, const struct sym *s, int32_t pos)
{
    if (s[pos].next < 0)
        return;
    const struct bpe_merge_slot *m = merge_find(b, s[pos].id, s[s[pos].next].id);
    if (m)
        heap_push(h, (struct heap_item){m->rank, pos, m->new_id});
}

static void append_id(int32_t **ids, int *n, int *cap, int32_t id)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *ids = xrealloc(*ids, (size_t)*cap * sizeof **ids);
    }
    (*ids)[(*n)++] = id;
}

static int utf8_len(uint8_t c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

/* Initial symbols: one per character, or its byte tokens, or unk. */
static int initial_symbols(const struct bpe *b, const char *w, size_t len, struct sym *s)
{
    int n = 0;
    for (size_t i = 0; i < len;) {
        size_t cl = (size_t)utf8_len((uint8_t)w[i]);
        if (i + cl > len)
            cl = len - i;
        int32_t id = strmap_get(&b->vocab, w + i, cl);
        if (id >= 0) {
            s[n++].id = id;
        } else {
            int all_bytes = b->byte_fallback;
            for (size_t k = 0; all_bytes && k < cl; k++)
                all_bytes = b->byte_ids[(uint8_t)w[i + k]] >= 0;
            if (all_bytes) {
                for (size_t k = 0; k < cl; k++)
                    s[n++].id = b->byte_ids[(uint8_t)w[i + k]];
            } else if (b->unk_id >= 0 && !(b->fuse_unk && n > 0 && s[n - 1].id == b->unk_id)) {
                s[n++].id = b->unk_id;
            } /* else: the character is dropped, as tokenizers does without an unk token */
        }
        i += cl;
    }
    for (int i = 0; i < n; i++) {
        s[i].prev = i - 1;
        s[i].next = i + 1 < n ? i + 1 : -1;
        s[i].alive = 1;
    }
    return n;
}

static void merge_word(const struct bpe *b, const char *w, size_t len, int32_t **ids, int *n_ids, int *cap)
{
    struct sym stack_syms[128]; /* at most one symbol per byte */
    struct sym *s = len <= 128 ? stack_syms : xmalloc(len * sizeof *s);
    int n = initial_symbols(b, w, len, s);
    struct heap h = {0};
    for (int i = 0; i < n; i++)
        push_pair(b, &h, s, i);
    while (h.n > 0) {
        struct heap_item top = heap_pop(&h);
        struct sym *left = &s[top.pos];
        if (!left->alive || left->next < 0)
            continue;
        const struct bpe_merge_slot *m = merge_find(b, left->id, s[left->next].id);
        if (!m || m->new_id != top.new_id)
            continue; /* stale entry */
        struct sym *right = &s[left->next];
        left->id = top.new_id;
        right->alive = 0;
        left->next = right->next;
        if (right->next >= 0)
            s[right->next].prev = top.pos;
        if (left->prev >= 0)
            push_pair(b, &h, s, left->prev);
        push_pair(b, &h, s, top.pos);
    }
    for (int i = 0; i < n; i++)
        if (s[i].alive)
            append_id(ids, n_ids, cap, s[i].id);
    free(h.v);
    if (s != stack_syms)
        free(s);
}

void bpe_encode_word(const struct bpe *b, const char *word, size_t len, int32_t **ids, int *n, int *cap)
{
    if (len == 0)
        return;
    if (b->ignore_merges) {
        int32_t id = strmap_get(&b->vocab, word, len);
        if (id >= 0) {
            append_id(ids, n, cap, id);
            return;
        }
    }
    struct bpe_cache_entry *ce = NULL;
    pthread_mutex_t *lock = NULL;
    uint64_t hash = 0;
    if (len <= CACHE_MAX_WORD) {
        hash = strmap_hash(word, len);
        size_t slot = hash & (CACHE_SLOTS - 1);
        ce = &b->cache->e[slot];
        lock = &b->cache->locks[slot % CACHE_STRIPES];
        pthread_mutex_lock(lock);
        int hit = ce->hash == hash && ce->word_len == len && !memcmp(ce->word, word, len);
        for (int i = 0; hit && i < ce->n_ids; i++)
            append_id(ids, n, cap, ce->ids[i]);
        pthread_mutex_unlock(lock);
        if (hit)
            return;
    }
    int start = *n;
    merge_word(b, word, len, ids, n, cap);
    if (ce && *n - start <= CACHE_MAX_IDS) {
        pthread_mutex_lock(lock);
        ce->hash = hash;
        ce->word_len = (uint8_t)len;
        memcpy(ce->word, word, len);
        ce->n_ids = (uint8_t)(*n - start);
        if (ce->n_ids)
            memcpy(ce->ids, *ids + start, (size_t)ce->n_ids * sizeof(int32_t));
        pthread_mutex_unlock(lock);
    }
}
