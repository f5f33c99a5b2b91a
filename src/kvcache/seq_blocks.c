#include "kvcache/seq_blocks.h"

#include <stdlib.h>

int seq_blocks_reserve(struct seq_blocks *s, struct block_pool *p, int n_tokens, int block_size)
{
    int need = (n_tokens + block_size - 1) / block_size;
    if (need > s->cap) {
        s->cap = need > 2 * s->cap ? need : 2 * s->cap;
        s->ids = xrealloc(s->ids, (size_t)s->cap * sizeof(int32_t));
    }
    while (s->n < need) {
        int32_t id = block_pool_alloc(p);
        if (id < 0)
            return -1;
        s->ids[s->n++] = id;
    }
    return 0;
}

int32_t seq_blocks_slot(const struct seq_blocks *s, int pos, int block_size)
{
    CHECK(pos >= 0 && pos / block_size < s->n);
    return s->ids[pos / block_size] * block_size + pos % block_size;
}

void seq_blocks_release(struct seq_blocks *s, struct block_pool *p)
{
    for (int i = 0; i < s->n; i++)
        block_pool_unref(p, s->ids[i]);
    s->n = 0;
}

void seq_blocks_free(struct seq_blocks *s)
{
    free(s->ids);
    s->ids = NULL;
    s->n = s->cap = 0;
}
