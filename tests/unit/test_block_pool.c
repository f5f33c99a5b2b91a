/* The block pool and per-sequence block tables: basic behaviour, the
 * integrity check catching real corruption, and a randomized run against a
 * plain reference model (refcount array) over thousands of operations. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kvcache/block_pool.h"
#include "kvcache/seq_blocks.h"

Test(block_pool, alloc_until_empty_then_free_all)
{
    struct block_pool p;
    block_pool_init(&p, 10, 1);
    cr_assert_eq(block_pool_n_usable(&p), 9);
    int seen[10] = {0};
    for (int i = 0; i < 9; i++) {
        int32_t id = block_pool_alloc(&p);
        cr_assert(id >= 1 && id < 10, "reserved block 0 must never be handed out (got %d)", id);
        cr_assert_eq(seen[id]++, 0, "block %d handed out twice", id);
    }
    cr_assert_eq(block_pool_alloc(&p), -1);
    cr_assert_eq(block_pool_n_free(&p), 0);
    struct err e;
    cr_assert_eq(block_pool_check(&p, &e), 0, "%s", e.msg);
    for (int id = 1; id < 10; id++)
        block_pool_unref(&p, id);
    cr_assert_eq(block_pool_n_free(&p), 9);
    cr_assert_eq(block_pool_check(&p, &e), 0, "%s", e.msg);
    block_pool_free(&p);
}

Test(block_pool, shared_block_frees_on_last_unref)
{
    struct block_pool p;
    block_pool_init(&p, 4, 0);
    int32_t id = block_pool_alloc(&p);
    block_pool_ref(&p, id);
    block_pool_unref(&p, id);
    cr_assert_eq(block_pool_n_free(&p), 3, "still held once");
    block_pool_unref(&p, id);
    cr_assert_eq(block_pool_n_free(&p), 4);
    block_pool_free(&p);
}

Test(block_pool, check_detects_corruption)
{
    struct block_pool p;
    struct err e;
    block_pool_init(&p, 6, 1);
    int32_t a = block_pool_alloc(&p);
    p.refs[a] = 0; /* leaked: neither free nor held */
    cr_assert_eq(block_pool_check(&p, &e), -1);
    cr_assert(strstr(e.msg, "leaked"), "%s", e.msg);
    p.refs[a] = 1;
    cr_assert_eq(block_pool_check(&p, &e), 0, "%s", e.msg);
    p.free_stack[p.n_free++] = a; /* held and free at once */
    cr_assert_eq(block_pool_check(&p, &e), -1);
    p.n_free--;
    p.free_stack[0] = p.free_stack[1]; /* duplicate on the free list */
    cr_assert_eq(block_pool_check(&p, &e), -1);
    cr_assert(strstr(e.msg, "twice") || strstr(e.msg, "leaked"), "%s", e.msg);
    block_pool_free(&p);
}

Test(seq_blocks, slots_follow_the_table)
{
    struct block_pool p;
    block_pool_init(&p, 8, 1);
    struct seq_blocks s = {0};
    int32_t hole = block_pool_alloc(&p); /* make the sequence's blocks non-contiguous */
    cr_assert_eq(seq_blocks_reserve(&s, &p, 5, 4), 0);
    cr_assert_eq(s.n, 2);
    for (int pos = 0; pos < 5; pos++)
        cr_assert_eq(seq_blocks_slot(&s, pos, 4), s.ids[pos / 4] * 4 + pos % 4);
    cr_assert_eq(seq_blocks_reserve(&s, &p, 8, 4), 0);
    cr_assert_eq(s.n, 2, "8 positions still fit in two blocks of 4");
    cr_assert_eq(seq_blocks_reserve(&s, &p, 100, 4), -1, "pool of 7 usable blocks cannot hold 25");
    seq_blocks_release(&s, &p);
    block_pool_unref(&p, hole);
    struct err e;
    cr_assert_eq(block_pool_check(&p, &e), 0, "%s", e.msg);
    cr_assert_eq(block_pool_n_free(&p), 7);
    seq_blocks_free(&s);
    block_pool_free(&p);
}

/* Random alloc/ref/unref against a reference refcount array. */
Test(block_pool, randomized_against_reference)
{
    enum { N = 64, RESERVED = 1, OPS = 20000 };
    struct block_pool p;
    block_pool_init(&p, N, RESERVED);
    int ref[N] = {0};
    struct rng r;
    rng_seed(&r, 42, 0, 0);
    struct err e;
    for (int op = 0; op < OPS; op++) {
        int kind = (int)(rng_next(&r) % 3);
        int32_t id = RESERVED + (int32_t)(rng_next(&r) % (N - RESERVED));
        if (kind == 0) {
            int32_t got = block_pool_alloc(&p);
            int any_free = 0;
            for (int i = RESERVED; i < N; i++)
                any_free |= ref[i] == 0;
            if (!any_free) {
                cr_assert_eq(got, -1);
            } else {
                cr_assert(got >= RESERVED && got < N && ref[got] == 0, "op %d: bad block %d", op, got);
                ref[got] = 1;
            }
        } else if (kind == 1 && ref[id] > 0) {
            block_pool_ref(&p, id);
            ref[id]++;
        } else if (kind == 2 && ref[id] > 0) {
            block_pool_unref(&p, id);
            ref[id]--;
        }
        int n_free = 0;
        for (int i = RESERVED; i < N; i++) {
            cr_assert_eq(p.refs[i], ref[i], "op %d: block %d refs %d, reference %d", op, i, p.refs[i], ref[i]);
            n_free += ref[i] == 0;
        }
        cr_assert_eq(block_pool_n_free(&p), n_free);
        if (op % 97 == 0)
            cr_assert_eq(block_pool_check(&p, &e), 0, "op %d: %s", op, e.msg);
    }
    cr_assert_eq(block_pool_check(&p, &e), 0, "%s", e.msg);
    block_pool_free(&p);
}
