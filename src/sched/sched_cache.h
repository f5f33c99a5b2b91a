/* The scheduler's use of shared KV blocks (internal to the scheduler):
 * where an admitted sequence starts (a fork of its choice 0, or the longest
 * cached prefix), offering computed blocks to the prefix cache, and block
 * reservation that evicts cached blocks before it gives up. */
#ifndef INFER_SCHED_SCHED_CACHE_H
#define INFER_SCHED_SCHED_CACHE_H

#include "sched/scheduler.h"

/* Whether r must wait for its fork parent to finish prefilling the blocks
 * it will share. */
int sched_fork_pending(const struct scheduler *s, const struct sequence *r);

/* Fills r's block table with shared blocks (fork, else prefix-cache match;
 * each block referenced for r) and sets r->n_cached. Returns the number of
 * shared tokens; the caller counts them with sched_count_admission once the
 * admission holds. */
int sched_share_prefix(struct scheduler *s, struct sequence *r, int *forked);
void sched_count_admission(struct scheduler *s, const struct sequence *r, int shared, int forked);

/* Grows r's table to cover n_tokens, evicting unreferenced cached blocks
 * when the pool is dry. 0, or -1 when even that is not enough. */
int sched_reserve(struct scheduler *s, struct sequence *r, int n_tokens);

/* Offers r's full computed blocks that the cache has not seen yet. */
void sched_offer_blocks(struct scheduler *s, struct sequence *r);

#endif
