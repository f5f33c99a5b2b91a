/* The radix prefix cache at block granularity: a tree whose edges are full
 * blocks of token ids and whose nodes own the KV block holding them, so a
 * new sequence that starts with a cached prefix reuses those blocks instead
 * of recomputing them.
 *
 * Ownership through the block pool's reference counts: the tree holds one
 * reference on each node's block; every sequence using a cached block holds
 * another. A node whose block has no holder but the tree is evictable once
 * it is a leaf; eviction takes the least recently used such leaf.
 *
 * Costs do not grow with the tree: a node's children are found through their
 * first tokens (a flat array), and the evictable leaves wait in a min-heap by
 * last use, pushed when one appears (the pool announces a block whose only
 * holder the tree has become; a parent whose last child goes) and checked when
 * popped (entries that went stale are dropped). Knows nothing of devices or
 * models. */
#ifndef INFER_KVCACHE_RADIX_H
#define INFER_KVCACHE_RADIX_H

#include <stdint.h>

#include "kvcache/block_pool.h"

struct radix_node;

struct radix_stats {
    long hit_blocks;    /* blocks found by radix_match */
    long lookup_blocks; /* full blocks radix_match was asked about */
    long inserted;      /* nodes added */
    long evicted;       /* nodes evicted */
};

struct radix_lru_entry {
    uint64_t last_used;
    int32_t block;
};

struct radix_tree {
    struct block_pool *pool; /* borrowed */
    int block_size;
    struct radix_node *root;
    int n_nodes;        /* excluding the root */
    uint64_t clock;     /* LRU time */
    struct radix_stats stats;
    struct radix_node **node_of; /* [pool->n_blocks]: the node owning a block, or NULL */
    struct radix_lru_entry *heap; /* evictable leaves (and stale entries), min last_used first */
    int heap_n, heap_cap;
};

/* One tree a pool: the tree registers itself for the pool's announcements,
 * so it must stay where it is until radix_free. */
void radix_init(struct radix_tree *t, struct block_pool *pool, int block_size);
/* Drops the tree's references (blocks still held by sequences stay held). */
void radix_free(struct radix_tree *t);

/* Longest cached prefix of tokens[0, n) in whole blocks: writes its block
 * ids to blocks (capacity n / block_size) and takes one reference on each
 * for the caller, who gives them back with block_pool_unref. Returns the
 * number of blocks. */
int radix_match(struct radix_tree *t, const int32_t *tokens, int n, int32_t *blocks);

/* Caches the first n_blocks full blocks of tokens, whose KV lives in
 * blocks[i]. Chunks already cached keep their existing block (the caller's
 * duplicate stays the caller's); new nodes take a reference on the caller's
 * block. Returns the number of nodes added. */
int radix_insert(struct radix_tree *t, const int32_t *tokens, int n_blocks, const int32_t *blocks);

/* Frees up to n blocks by evicting least recently used unreferenced leaves
 * (repeatedly: a parent whose last child goes becomes a leaf). Returns the
 * number of blocks returned to the pool. */
int radix_evict(struct radix_tree *t, int n);

/* Blocks that eviction could free now (held by the tree alone). */
int radix_evictable(const struct radix_tree *t);

/* Adds one to counts[block] for every cached block (counts has
 * pool->n_blocks entries), so that callers can rebuild reference counts. */
void radix_count_blocks(const struct radix_tree *t, int32_t *counts);

/* Integrity: links consistent, node count right, every node's block held
 * (refcount >= 1) and owned by one node only. 0, or -1 with e set. */
int radix_check(const struct radix_tree *t, struct err *e);

#endif
