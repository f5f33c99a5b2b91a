#include "sched/sched_cache.h"

#include <string.h>

/* Prompt tokens a choice shares with its fork parent: whole blocks, short
 * of the block holding the last prompt token (whose logits it needs). */
static int fork_tokens(const struct scheduler *s, const struct sequence *r)
{
    return (r->n_prompt - 1) / s->block_size * s->block_size;
}

int sched_fork_pending(const struct scheduler *s, const struct sequence *r)
{
    const struct sequence *p = r->fork_parent;
    return p && p->state == SEQUENCE_RUNNING && fork_tokens(s, r) > 0 && p->n_cached < fork_tokens(s, r);
}

static void table_reserve(struct seq_blocks *b, int n)
{
    if (n > b->cap) {
        b->cap = n;
        b->ids = xrealloc(b->ids, (size_t)n * sizeof(int32_t));
    }
}

int sched_share_prefix(struct scheduler *s, struct sequence *r, int *forked)
{
    CHECK(r->blocks.n == 0 && r->n_cached == 0);
    const struct sequence *p = r->fork_parent;
    int k = 0;
    *forked = 0;
    if (p && p->state == SEQUENCE_RUNNING && fork_tokens(s, r) > 0 && p->n_cached >= fork_tokens(s, r)) {
        k = fork_tokens(s, r) / s->block_size;
        table_reserve(&r->blocks, k);
        for (int i = 0; i < k; i++) {
            block_pool_ref(s->pool, p->blocks.ids[i]);
            r->blocks.ids[i] = p->blocks.ids[i];
        }
        *forked = 1;
    } else if (s->prefix_caching && !r->return_logits) { /* logits of every position: all computed */
        /* known - 1: the last token is always computed */
        table_reserve(&r->blocks, (sequence_known(r) - 1) / s->block_size);
        k = radix_match(&s->radix, r->tokens, sequence_known(r) - 1, r->blocks.ids);
    }
    r->blocks.n = k;
    r->n_cached = k * s->block_size;
    r->n_offered = *forked ? 0 : k;
    return r->n_cached;
}

void sched_count_admission(struct scheduler *s, const struct sequence *r, int shared, int forked)
{
    int bs = s->block_size;
    if (forked) {
        s->stats.forked_blocks += shared / bs;
        return;
    }
    if (!s->prefix_caching || r->return_logits) /* no lookup was made */
        return;
    s->stats.lookup_tokens += sequence_known(r);
    s->stats.hit_tokens += shared;
    s->stats.lookup_blocks += (sequence_known(r) - 1) / bs;
    s->stats.hit_blocks += shared / bs;
}

int sched_reserve(struct scheduler *s, struct sequence *r, int n_tokens)
{
    const int need = (n_tokens + s->block_size - 1) / s->block_size;
    while (seq_blocks_reserve(&r->blocks, s->pool, n_tokens, s->block_size)) {
        int freed = s->prefix_caching ? radix_evict(&s->radix, need - r->blocks.n) : 0;
        if (freed == 0)
            return -1;
        s->stats.evicted_blocks += freed;
    }
    return 0;
}

void sched_offer_blocks(struct scheduler *s, struct sequence *r)
{
    int full = r->n_cached / s->block_size;
    if (!s->prefix_caching || full <= r->n_offered)
        return;
    radix_insert(&s->radix, r->tokens, full, r->blocks.ids);
    r->n_offered = full;
}
