#include "kvcache/block_pool.h"

#include <stdlib.h>

void block_pool_init(struct block_pool *p, int n_blocks, int n_reserved)
{
    CHECK(n_blocks > 0 && n_reserved >= 0 && n_reserved < n_blocks);
    p->n_blocks = n_blocks;
    p->n_reserved = n_reserved;
    p->free_stack = xmalloc((size_t)n_blocks * sizeof(int32_t));
    p->refs = xcalloc((size_t)n_blocks, sizeof(int32_t));
    p->cached = xcalloc((size_t)n_blocks, 1);
    p->n_cached_only = 0;
    p->on_cached_only = NULL;
    p->on_cached_only_ctx = NULL;
    p->n_free = 0;
    /* push in reverse so that allocation hands out low ids first */
    for (int id = n_blocks - 1; id >= n_reserved; id--)
        p->free_stack[p->n_free++] = id;
}

void block_pool_free(struct block_pool *p)
{
    free(p->free_stack);
    free(p->refs);
    free(p->cached);
    p->free_stack = p->refs = NULL;
    p->cached = NULL;
    p->n_free = p->n_blocks = 0;
}

int32_t block_pool_alloc(struct block_pool *p)
{
    if (p->n_free == 0)
        return -1;
    int32_t id = p->free_stack[--p->n_free];
    CHECK(p->refs[id] == 0);
    p->refs[id] = 1;
    return id;
}

void block_pool_ref(struct block_pool *p, int32_t id)
{
    CHECK(id >= p->n_reserved && id < p->n_blocks && p->refs[id] > 0);
    if (p->cached[id] && p->refs[id] == 1)
        p->n_cached_only--;
    p->refs[id]++;
}

void block_pool_unref(struct block_pool *p, int32_t id)
{
    CHECK(id >= p->n_reserved && id < p->n_blocks && p->refs[id] > 0);
    CHECK(!p->cached[id] || p->refs[id] > 1); /* the cache's own reference goes by drop_cached */
    if (--p->refs[id] == 0) {
        p->free_stack[p->n_free++] = id;
    } else if (p->refs[id] == 1 && p->cached[id]) {
        p->n_cached_only++;
        if (p->on_cached_only)
            p->on_cached_only(p->on_cached_only_ctx, id);
    }
}

void block_pool_mark_cached(struct block_pool *p, int32_t id)
{
    CHECK(id >= p->n_reserved && id < p->n_blocks && p->refs[id] > 0 && !p->cached[id]);
    p->cached[id] = 1;
    if (p->refs[id] == 1)
        p->n_cached_only++;
}

void block_pool_drop_cached(struct block_pool *p, int32_t id)
{
    CHECK(id >= p->n_reserved && id < p->n_blocks && p->refs[id] > 0 && p->cached[id]);
    p->cached[id] = 0;
    if (p->refs[id] == 1)
        p->n_cached_only--;
    block_pool_unref(p, id);
}

int block_pool_n_cached_only(const struct block_pool *p) { return p->n_cached_only; }

int block_pool_n_free(const struct block_pool *p) { return p->n_free; }

int block_pool_n_usable(const struct block_pool *p) { return p->n_blocks - p->n_reserved; }

int block_pool_check(const struct block_pool *p, struct err *e)
{
    uint8_t *on_stack = xcalloc((size_t)p->n_blocks, 1);
    int rc = 0;
    for (int i = 0; i < p->n_free && !rc; i++) {
        int32_t id = p->free_stack[i];
        if (id < p->n_reserved || id >= p->n_blocks)
            rc = err_set(e, "block pool: free list holds invalid block %d", id);
        else if (on_stack[id]++)
            rc = err_set(e, "block pool: block %d is on the free list twice", id);
        else if (p->refs[id] != 0)
            rc = err_set(e, "block pool: free block %d has %d references", id, p->refs[id]);
    }
    int held = 0, cached_only = 0;
    for (int id = 0; id < p->n_blocks && !rc; id++) {
        cached_only += p->cached[id] && p->refs[id] == 1;
        if (p->cached[id] && p->refs[id] == 0)
            rc = err_set(e, "block pool: free block %d is flagged as cached", id);
        else if (p->refs[id] < 0)
            rc = err_set(e, "block pool: block %d has negative references (%d)", id, p->refs[id]);
        else if (id < p->n_reserved && p->refs[id] != 0)
            rc = err_set(e, "block pool: reserved block %d is held", id);
        else if (id >= p->n_reserved && !on_stack[id] && p->refs[id] == 0)
            rc = err_set(e, "block pool: block %d is neither free nor held (leaked)", id);
        held += p->refs[id] > 0;
    }
    if (!rc && held + p->n_free != p->n_blocks - p->n_reserved)
        rc = err_set(e, "block pool: %d free + %d held != %d usable", p->n_free, held,
                     p->n_blocks - p->n_reserved);
    if (!rc && cached_only != p->n_cached_only)
        rc = err_set(e, "block pool: %d blocks held by the cache alone, counted %d", cached_only,
                     p->n_cached_only);
    free(on_stack);
    return rc;
}
