/* The KV block pool: which of the cache's fixed blocks are free, and how many
 * holders each used block has (sequences and the radix prefix cache).
 * Knows nothing of devices: block ids index the backend's KV arrays. The
 * first n_reserved blocks are never handed out (block 0: block-table
 * entries a step does not use may point at it, so it must hold no one's KV). */
#ifndef INFER_KVCACHE_BLOCK_POOL_H
#define INFER_KVCACHE_BLOCK_POOL_H

#include <stdint.h>

#include "core/error.h"

struct block_pool {
    int n_blocks;
    int n_reserved;
    int32_t *free_stack; /* ids of free blocks; top at n_free - 1 */
    int n_free;
    int32_t *refs; /* [n_blocks] holders of each block; 0 = free */
    /* The prefix cache's blocks: flagged while the cache holds a reference,
     * counted while that is the only one, and announced to the cache the
     * moment its reference becomes the only one again (the cache learns of
     * newly evictable blocks without walking itself). */
    uint8_t *cached;    /* [n_blocks] */
    int n_cached_only;  /* flagged blocks with refs == 1 */
    void (*on_cached_only)(void *ctx, int32_t id);
    void *on_cached_only_ctx;
};

/* Frees with block_pool_free. n_reserved < n_blocks. */
void block_pool_init(struct block_pool *p, int n_blocks, int n_reserved);
void block_pool_free(struct block_pool *p);

/* A free block with one reference, or -1 when none is left. */
int32_t block_pool_alloc(struct block_pool *p);
void block_pool_ref(struct block_pool *p, int32_t id);
/* Drops one reference; the block is free again at zero. */
void block_pool_unref(struct block_pool *p, int32_t id);
int block_pool_n_free(const struct block_pool *p);
int block_pool_n_usable(const struct block_pool *p);

/* The prefix cache's side: mark_cached after the cache has taken its
 * reference on id; drop_cached gives that reference back (the block is
 * free when no one else holds it). */
void block_pool_mark_cached(struct block_pool *p, int32_t id);
void block_pool_drop_cached(struct block_pool *p, int32_t id);
/* Blocks the prefix cache holds that no one else does (O(1)). */
int block_pool_n_cached_only(const struct block_pool *p);

/* Integrity: every usable block is either free (refcount 0, on the free stack
 * exactly once) or held (refcount > 0, not on the stack); reserved blocks are
 * neither; cached flags only on held blocks, n_cached_only their count with
 * one holder. Returns 0, or -1 with e describing the first violation. */
int block_pool_check(const struct block_pool *p, struct err *e);

#endif
