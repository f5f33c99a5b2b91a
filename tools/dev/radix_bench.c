/* The prefix cache's costs as its tree grows (CPU, not CI): the old engine
 * gauge (radix_evictable, a full walk), the O(1) count that replaced it,
 * inserting a new sequence, and evicting one block, over a tree of NSEQ
 * finished sequences of LEN blocks with distinct first blocks (NSEQ root
 * children). Build and run (after `make build/infer`):
 *   cc -O2 -std=c11 -Isrc -o /tmp/radix_bench tools/dev/radix_bench.c build/libinfer.a -lm -lpthread
 *   /tmp/radix_bench
 * Before a1fc894 (11ef473's radix and block pool, with their headers first):
 *   mkdir -p /tmp/old/kvcache && for f in radix.c radix.h block_pool.c block_pool.h; do
 *     git show 11ef473:src/kvcache/$f >/tmp/old/kvcache/$f; done
 *   cc -O2 -std=c11 -DBEFORE_A1FC894 -I/tmp/old -Isrc -o /tmp/radix_bench_old tools/dev/radix_bench.c \
 *     /tmp/old/kvcache/radix.c /tmp/old/kvcache/block_pool.c build/libinfer.a -lm -lpthread */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kvcache/radix.h"

enum { BS = 16, NSEQ = 4000, LEN = 20 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A new random sequence of LEN blocks, cached and then released by its holder. */
static void add_sequence(struct radix_tree *t, struct block_pool *p)
{
    static int32_t toks[LEN * BS], blocks[LEN];
    for (int i = 0; i < LEN * BS; i++)
        toks[i] = rand() % 100000;
    for (int k = 0; k < LEN; k++)
        blocks[k] = block_pool_alloc(p);
    radix_insert(t, toks, LEN, blocks);
    for (int k = 0; k < LEN; k++)
        block_pool_unref(p, blocks[k]);
}

int main(void)
{
    struct block_pool p;
    block_pool_init(&p, NSEQ * LEN + 2000, 1);
    struct radix_tree t;
    radix_init(&t, &p, BS);
    srand(1);
    for (int s = 0; s < NSEQ; s++)
        add_sequence(&t, &p);
    printf("nodes %d\n", t.n_nodes);
    double t0 = now();
    long acc = 0;
    for (int i = 0; i < 20; i++)
        acc += radix_evictable(&t);
    printf("radix_evictable (the engine gauge before a1fc894, twice a step): %.3f ms a call (%ld)\n",
           (now() - t0) / 20 * 1e3, acc / 20);
#ifndef BEFORE_A1FC894
    printf("block_pool_n_cached_only (the gauge now): %d blocks, O(1)\n", block_pool_n_cached_only(&p));
#endif
    t0 = now();
    for (int s = 0; s < 64; s++)
        add_sequence(&t, &p);
    printf("insert of a new %d-block sequence: %.1f us\n", LEN, (now() - t0) / 64 * 1e6);
    t0 = now();
    int freed = 0;
    for (int i = 0; i < 200; i++)
        freed += radix_evict(&t, 1);
    printf("evict one block: %.1f us (%d evicted)\n", (now() - t0) / 200 * 1e6, freed);
    radix_free(&t);
    block_pool_free(&p);
    return 0;
}
