/* Taking a sequence out of the scheduler, and the integrity check of the
 * whole KV cache that tests run after every step. */
#include <stdlib.h>
#include <string.h>

#include "sched/scheduler.h"

static int remove_from(struct sequence **list, int *n, const struct sequence *r)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == r) {
            memmove(list + i, list + i + 1, (size_t)(*n - i - 1) * sizeof *list);
            (*n)--;
            return 1;
        }
    return 0;
}

void scheduler_abort(struct scheduler *s, struct sequence *r)
{
    if (r->state == SEQUENCE_FINISHED)
        return;
    CHECK(remove_from(s->running, &s->n_running, r) || remove_from(s->waiting, &s->n_waiting, r));
    seq_blocks_release(&r->blocks, s->pool);
    r->n_cached = 0;
    r->finish = FINISH_REASON_ABORT;
    r->state = SEQUENCE_FINISHED;
}

static int check_sequence(const struct scheduler *s, const struct sequence *r, int32_t *counts, uint8_t *mine,
                         struct err *e)
{
    const int known = sequence_known(r);
    if (r->n_cached < 0 || r->n_cached > known || r->n_cached > r->blocks.n * s->block_size)
        return err_set(e, "sequence %ld: %d cached tokens of %d known, %d blocks", r->id, r->n_cached, known,
                       r->blocks.n);
    memset(mine, 0, (size_t)s->pool->n_blocks);
    for (int i = 0; i < r->blocks.n; i++) {
        int32_t b = r->blocks.ids[i];
        if (b < s->pool->n_reserved || b >= s->pool->n_blocks)
            return err_set(e, "sequence %ld holds invalid block %d", r->id, b);
        if (mine[b]++)
            return err_set(e, "sequence %ld holds block %d twice", r->id, b);
        counts[b]++;
    }
    return 0;
}

/* free + cached (held by the tree alone) + in use (held by a sequence) must
 * be every usable block; tree[b] is 1 for cached blocks. */
static int check_totals(const struct block_pool *p, const int32_t *tree, struct err *e)
{
    int cached_only = 0, in_use = 0;
    for (int b = 0; b < p->n_blocks; b++) {
        cached_only += tree[b] == 1 && p->refs[b] == 1;
        in_use += p->refs[b] > tree[b];
    }
    if (block_pool_n_free(p) + cached_only + in_use != block_pool_n_usable(p))
        return err_set(e, "%d free + %d cached + %d in use != %d blocks", block_pool_n_free(p), cached_only, in_use,
                       block_pool_n_usable(p));
    return 0;
}

int scheduler_check(const struct scheduler *s, struct err *e)
{
    const struct block_pool *p = s->pool;
    if (block_pool_check(p, e) || (s->prefix_caching && radix_check(&s->radix, e)))
        return -1;
    int32_t *tree = xcalloc((size_t)p->n_blocks, sizeof *tree);
    int32_t *counts = xcalloc((size_t)p->n_blocks, sizeof *counts);
    uint8_t *mine = xmalloc((size_t)p->n_blocks);
    int rc = 0;
    if (s->prefix_caching) {
        radix_count_blocks(&s->radix, tree);
        memcpy(counts, tree, (size_t)p->n_blocks * sizeof *counts);
    }
    for (int i = 0; i < s->n_running && !rc; i++)
        rc = s->running[i]->state != SEQUENCE_RUNNING
                 ? err_set(e, "sequence %ld is on the running list but not running", s->running[i]->id)
                 : check_sequence(s, s->running[i], counts, mine, e);
    for (int i = 0; i < s->n_waiting && !rc; i++)
        if (s->waiting[i]->blocks.n != 0 || s->waiting[i]->n_cached != 0)
            rc = err_set(e, "waiting sequence %ld holds %d blocks", s->waiting[i]->id, s->waiting[i]->blocks.n);
    for (int b = 0; b < p->n_blocks && !rc; b++)
        if (counts[b] != p->refs[b])
            rc = err_set(e, "block %d: %d references in the pool, %d holders found", b, p->refs[b], counts[b]);
    if (!rc)
        rc = check_totals(p, tree, e);
    free(tree);
    free(counts);
    free(mine);
    return rc;
}
