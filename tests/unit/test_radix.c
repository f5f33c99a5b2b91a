/* The radix prefix cache against a simple reference model: a flat list of
 * cached prefixes (whole blocks) with their block and last-use time, the
 * same LRU rule applied by brute force. Thousands of random operations over
 * sequences that share prefixes; after every one the tree, the pool and the
 * reference must agree (node count, matches, evictable count, and exactly
 * which blocks are free), and both integrity checks must hold. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kvcache/radix.h"

enum { BS = 4, N_BLOCKS = 48, MAX_BLOCKS = 6, MAX_SEQS = 6, MAX_REF = 1024, OPS = 6000 };

struct ref_entry {
    int32_t tokens[MAX_BLOCKS * BS];
    int n_blocks; /* length of this prefix in blocks */
    int32_t block;
    uint64_t last_used;
};

struct seq {
    int32_t tokens[MAX_BLOCKS * BS];
    int n_blocks;
    int32_t blocks[MAX_BLOCKS];
};

struct sim {
    struct block_pool pool;
    struct radix_tree tree;
    struct ref_entry ref[MAX_REF];
    int n_ref;
    uint64_t clock;
    struct seq seqs[MAX_SEQS];
    int n_seqs;
    struct rng rng;
};

static int ref_find(const struct sim *s, const int32_t *tokens, int k)
{
    for (int i = 0; i < s->n_ref; i++)
        if (s->ref[i].n_blocks == k && !memcmp(s->ref[i].tokens, tokens, (size_t)k * BS * sizeof(int32_t)))
            return i;
    return -1;
}

static int ref_is_leaf(const struct sim *s, int i)
{
    for (int j = 0; j < s->n_ref; j++)
        if (s->ref[j].n_blocks == s->ref[i].n_blocks + 1 &&
            !memcmp(s->ref[j].tokens, s->ref[i].tokens, (size_t)s->ref[i].n_blocks * BS * sizeof(int32_t)))
            return 0;
    return 1;
}

/* The reference's eviction, decided before the tree's: up to n times, the
 * least recently used leaf whose block nobody but the cache holds.
 * Returns how many it removed. */
static int ref_evict(struct sim *s, int n)
{
    int removed = 0;
    while (removed < n) {
        int victim = -1;
        for (int i = 0; i < s->n_ref; i++)
            if (ref_is_leaf(s, i) && s->pool.refs[s->ref[i].block] == 1 &&
                (victim < 0 || s->ref[i].last_used < s->ref[victim].last_used))
                victim = i;
        if (victim < 0)
            break;
        s->ref[victim] = s->ref[--s->n_ref];
        removed++;
    }
    return removed;
}

/* what the reference says the free blocks are */
static void check_agreement(struct sim *s, int op)
{
    struct err e;
    cr_assert_eq(radix_check(&s->tree, &e), 0, "op %d: %s", op, e.msg);
    cr_assert_eq(block_pool_check(&s->pool, &e), 0, "op %d: %s", op, e.msg);
    cr_assert_eq(s->tree.n_nodes, s->n_ref, "op %d: tree has %d nodes, reference %d", op, s->tree.n_nodes, s->n_ref);
    int held[N_BLOCKS] = {0};
    for (int i = 0; i < s->n_ref; i++)
        held[s->ref[i].block]++;
    for (int q = 0; q < s->n_seqs; q++)
        for (int b = 0; b < s->seqs[q].n_blocks; b++)
            held[s->seqs[q].blocks[b]]++;
    for (int b = 1; b < N_BLOCKS; b++)
        cr_assert_eq(s->pool.refs[b], held[b], "op %d: block %d has %d references, reference model %d", op, b,
                     s->pool.refs[b], held[b]);
}

static void start_seq(struct sim *s, int op)
{
    if (s->n_seqs == MAX_SEQS)
        return;
    struct seq *q = &s->seqs[s->n_seqs];
    q->n_blocks = 1 + (int)(rng_next(&s->rng) % MAX_BLOCKS);
    /* a small alphabet, and mostly one of a few stems, so prefixes repeat */
    int stem = (int)(rng_next(&s->rng) % 3);
    for (int i = 0; i < q->n_blocks * BS; i++)
        q->tokens[i] = i < 8 && rng_next(&s->rng) % 8 ? stem * 7 + i : (int32_t)(rng_next(&s->rng) % 3);
    int m = radix_match(&s->tree, q->tokens, q->n_blocks * BS, q->blocks);
    s->clock++;
    int want = 0;
    while (want < q->n_blocks && ref_find(s, q->tokens, want + 1) >= 0)
        want++;
    cr_assert_eq(m, want, "op %d: matched %d blocks, reference %d", op, m, want);
    for (int k = 1; k <= m; k++) {
        int i = ref_find(s, q->tokens, k);
        cr_assert_eq(q->blocks[k - 1], s->ref[i].block, "op %d: block %d differs", op, k);
        s->ref[i].last_used = s->clock;
    }
    for (int k = m; k < q->n_blocks; k++) {
        int32_t b = block_pool_alloc(&s->pool);
        if (b < 0) { /* make room: the reference decides first, then the tree must agree */
            int want = ref_evict(s, 1);
            cr_assert_eq(radix_evict(&s->tree, 1), want, "op %d: eviction disagrees with the reference", op);
            b = want ? block_pool_alloc(&s->pool) : -1;
        }
        if (b < 0) { /* out of memory: give back what this sequence holds */
            for (int j = 0; j < k; j++)
                block_pool_unref(&s->pool, q->blocks[j]);
            return;
        }
        q->blocks[k] = b;
    }
    s->n_seqs++;
}

static void finish_seq(struct sim *s, int idx)
{
    struct seq *q = &s->seqs[idx];
    int cached = radix_insert(&s->tree, q->tokens, q->n_blocks, q->blocks);
    s->clock++;
    int added = 0;
    for (int k = 1; k <= q->n_blocks; k++) {
        int i = ref_find(s, q->tokens, k);
        if (i < 0) {
            CHECK(s->n_ref < MAX_REF);
            i = s->n_ref++;
            memcpy(s->ref[i].tokens, q->tokens, (size_t)k * BS * sizeof(int32_t));
            s->ref[i].n_blocks = k;
            s->ref[i].block = q->blocks[k - 1];
            added++;
        }
        s->ref[i].last_used = s->clock;
    }
    cr_assert_eq(cached, added);
    for (int b = 0; b < q->n_blocks; b++)
        block_pool_unref(&s->pool, q->blocks[b]);
    s->seqs[idx] = s->seqs[--s->n_seqs];
}

Test(radix, randomized_against_reference)
{
    struct sim *s = calloc(1, sizeof *s);
    block_pool_init(&s->pool, N_BLOCKS, 1);
    radix_init(&s->tree, &s->pool, BS);
    rng_seed(&s->rng, 7, 0, 0);
    long evictions = 0;
    for (int op = 0; op < OPS; op++) {
        int kind = (int)(rng_next(&s->rng) % 10);
        if (kind < 5)
            start_seq(s, op);
        else if (kind < 9 && s->n_seqs > 0)
            finish_seq(s, (int)(rng_next(&s->rng) % (uint64_t)s->n_seqs));
        else {
            int before = s->tree.n_nodes, evictable = radix_evictable(&s->tree);
            int n = 1 + (int)(rng_next(&s->rng) % 4);
            int want = ref_evict(s, n);
            int freed = radix_evict(&s->tree, n);
            cr_assert_eq(freed, want, "op %d: evicted %d, the reference %d", op, freed, want);
            cr_assert_eq(freed, n < evictable ? n : evictable, "op %d: evicted %d of %d, evictable %d", op, freed,
                         n, evictable);
            cr_assert_eq(s->tree.n_nodes, before - freed);
            evictions += freed;
        }
        check_agreement(s, op);
    }
    cr_assert(evictions > 50, "the test should exercise eviction (%ld)", evictions);
    cr_assert(s->tree.stats.hit_blocks > 100, "and prefix hits (%ld)", s->tree.stats.hit_blocks);
    while (s->n_seqs > 0)
        finish_seq(s, 0);
    radix_evict(&s->tree, N_BLOCKS);
    cr_assert_eq(s->tree.n_nodes, 0);
    cr_assert_eq(block_pool_n_free(&s->pool), N_BLOCKS - 1, "every block is free again");
    radix_free(&s->tree);
    block_pool_free(&s->pool);
    free(s);
}

Test(radix, shared_prefix_is_matched_and_locked)
{
    struct block_pool p;
    block_pool_init(&p, 16, 1);
    struct radix_tree t;
    radix_init(&t, &p, 2);
    int32_t toks[6] = {1, 2, 3, 4, 5, 6}, blocks[3], got[3];
    for (int i = 0; i < 3; i++)
        blocks[i] = block_pool_alloc(&p);
    cr_assert_eq(radix_insert(&t, toks, 3, blocks), 3);
    for (int i = 0; i < 3; i++)
        block_pool_unref(&p, blocks[i]); /* the sequence ends; the tree keeps them */
    cr_assert_eq(radix_evictable(&t), 3);
    int32_t other[5] = {1, 2, 3, 4, 9}; /* shares two blocks, the last is partial */
    cr_assert_eq(radix_match(&t, other, 5, got), 2);
    cr_assert(got[0] == blocks[0] && got[1] == blocks[1]);
    cr_assert_eq(radix_evictable(&t), 1, "matched blocks are locked; only the unused leaf can go");
    cr_assert_eq(radix_evict(&t, 3), 1);
    block_pool_unref(&p, got[0]);
    block_pool_unref(&p, got[1]);
    cr_assert_eq(radix_evict(&t, 3), 2, "parents go once their children have");
    struct err e;
    cr_assert_eq(radix_check(&t, &e), 0, "%s", e.msg);
    cr_assert_eq(block_pool_n_free(&p), 15);
    radix_free(&t);
    block_pool_free(&p);
}

/* Every release of a cached leaf pushes an LRU entry, and the old one goes
 * stale: thousands of reuses must not grow the heap past its bound, the
 * pool's count of blocks the cache alone holds must follow every step, and
 * eviction must still take the least recently used leaf. */
Test(radix, lru_heap_bounded_under_reuse_and_exact)
{
    struct block_pool p;
    block_pool_init(&p, 16, 1);
    struct radix_tree t;
    radix_init(&t, &p, 2);
    int32_t seqs[3][2] = {{1, 2}, {3, 4}, {5, 6}}, blocks[3], got;
    for (int i = 0; i < 3; i++) {
        blocks[i] = block_pool_alloc(&p);
        cr_assert_eq(radix_insert(&t, seqs[i], 1, &blocks[i]), 1);
        cr_assert_eq(block_pool_n_cached_only(&p), i, "the sequence still holds its block");
        block_pool_unref(&p, blocks[i]);
        cr_assert_eq(block_pool_n_cached_only(&p), i + 1);
    }
    for (int round = 0; round < 5000; round++) { /* {1, 2} used again and again */
        cr_assert_eq(radix_match(&t, seqs[0], 3, &got), 1);
        cr_assert_eq(block_pool_n_cached_only(&p), 2, "round %d: a matched block is in use", round);
        block_pool_unref(&p, got);
        cr_assert_leq(t.heap_n, 2 * t.n_nodes + 1025, "round %d: %d heap entries for %d nodes", round, t.heap_n,
                      t.n_nodes);
    }
    cr_assert_eq(radix_match(&t, seqs[1], 3, &got), 1); /* {3, 4} used last */
    block_pool_unref(&p, got);
    struct err e;
    cr_assert_eq(radix_check(&t, &e), 0, "%s", e.msg);
    cr_assert_eq(block_pool_check(&p, &e), 0, "%s", e.msg);
    const int order[3] = {2, 0, 1}; /* {5, 6} was never used again, then {1, 2}, then {3, 4} */
    for (int i = 0; i < 3; i++) {
        int free_before = block_pool_n_free(&p);
        cr_assert_eq(radix_evict(&t, 1), 1);
        cr_assert_eq(p.refs[blocks[order[i]]], 0, "eviction %d took the wrong leaf", i);
        cr_assert_eq(block_pool_n_free(&p), free_before + 1);
        cr_assert_eq(block_pool_n_cached_only(&p), 2 - i);
        cr_assert_eq(radix_check(&t, &e), 0, "%s", e.msg);
    }
    cr_assert_eq(radix_evict(&t, 1), 0);
    radix_free(&t);
    cr_assert_eq(block_pool_check(&p, &e), 0, "%s", e.msg);
    block_pool_free(&p);
}
