/* One sequence's block table: the pool blocks that hold its KV entries, in
 * position order (position p lives in block ids[p / block_size] at offset
 * p % block_size). */
#ifndef INFER_KVCACHE_SEQ_BLOCKS_H
#define INFER_KVCACHE_SEQ_BLOCKS_H

#include <stdint.h>

#include "kvcache/block_pool.h"

struct seq_blocks {
    int32_t *ids;
    int n;
    int cap;
};

/* Grows the table until it covers n_tokens positions. Returns 0, or -1 when
 * the pool ran out (blocks taken so far stay in the table). */
int seq_blocks_reserve(struct seq_blocks *s, struct block_pool *p, int n_tokens, int block_size);
/* KV slot (block * block_size + offset) of position pos; pos must be covered. */
int32_t seq_blocks_slot(const struct seq_blocks *s, int pos, int block_size);
/* Drops the sequence's reference on every block and empties the table. */
void seq_blocks_release(struct seq_blocks *s, struct block_pool *p);
void seq_blocks_free(struct seq_blocks *s);

#endif
