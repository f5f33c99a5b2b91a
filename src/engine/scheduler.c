#include "engine/scheduler.h"

#include "engine/sched_cache.h"

#include <stdlib.h>
#include <string.h>

void scheduler_init(struct scheduler *s, struct block_pool *pool, int block_size, int max_batched_tokens, int max_seqs,
                    int max_context, const int32_t *eos_ids, int n_eos)
{
    memset(s, 0, sizeof *s);
    CHECK(block_size > 0 && max_batched_tokens > 0 && max_seqs > 0);
    s->pool = pool;
    s->block_size = block_size;
    s->max_batched_tokens = max_batched_tokens;
    s->max_seqs = max_seqs;
    s->max_context = max_context;
    s->eos_ids = eos_ids;
    s->n_eos = n_eos;
    s->running = xcalloc((size_t)max_seqs, sizeof *s->running);
}

void scheduler_enable_prefix_cache(struct scheduler *s)
{
    CHECK(!s->prefix_caching && scheduler_idle(s));
    radix_init(&s->radix, s->pool, s->block_size);
    s->prefix_caching = 1;
}

void scheduler_free(struct scheduler *s)
{
    if (s->prefix_caching)
        radix_free(&s->radix);
    free(s->running);
    free(s->waiting);
    memset(s, 0, sizeof *s);
}

void request_free(struct request *r)
{
    seq_blocks_free(&r->blocks);
    free(r->tokens);
    r->tokens = r->out = NULL;
}

static void waiting_insert(struct scheduler *s, struct request *r, int at_front)
{
    if (s->n_waiting == s->cap_waiting) {
        s->cap_waiting = s->cap_waiting ? 2 * s->cap_waiting : 16;
        s->waiting = xrealloc(s->waiting, (size_t)s->cap_waiting * sizeof *s->waiting);
    }
    if (at_front) {
        memmove(s->waiting + 1, s->waiting, (size_t)s->n_waiting * sizeof *s->waiting);
        s->waiting[0] = r;
    } else {
        s->waiting[s->n_waiting] = r;
    }
    s->n_waiting++;
    r->state = REQUEST_WAITING;
}

void scheduler_add(struct scheduler *s, struct request *r)
{
    CHECK(r->n_prompt > 0 && r->max_tokens > 0);
    r->tokens = xmalloc((size_t)(r->n_prompt + r->max_tokens) * sizeof(int32_t));
    memcpy(r->tokens, r->prompt, (size_t)r->n_prompt * sizeof(int32_t));
    r->out = r->tokens + r->n_prompt;
    r->n_out = 0;
    r->n_cached = 0;
    r->n_offered = 0;
    r->n_preempted = 0;
    memset(&r->blocks, 0, sizeof r->blocks);
    waiting_insert(s, r, 0);
}

int scheduler_idle(const struct scheduler *s) { return s->n_running == 0 && s->n_waiting == 0; }

/* Recompute later: the blocks go back (the computed ones stay cached when
 * the prefix cache is on, for the recompute to find); prompt and output are
 * kept. */
static void preempt_newest(struct scheduler *s)
{
    struct request *v = s->running[--s->n_running];
    sched_offer_blocks(s, v);
    seq_blocks_release(&v->blocks, s->pool);
    v->n_cached = 0;
    v->n_preempted++;
    s->n_preemptions++;
    waiting_insert(s, v, 1);
}

static int known(const struct request *r) { return r->n_prompt + r->n_out; }

static void plan_entry(struct step_seq *q, struct request *r, int count)
{
    *q = (struct step_seq){&r->blocks, r->tokens + r->n_cached, count, r->n_cached,
                           r->n_cached + count == known(r)};
}

int scheduler_plan(struct scheduler *s, struct step_seq *q, struct request **req)
{
    int budget = s->max_batched_tokens, n = 0;
    for (int i = 0; i < s->n_running && budget > 0; i++) {
        struct request *r = s->running[i];
        int count = known(r) - r->n_cached;
        count = count < budget ? count : budget;
        int preempted_self = 0;
        while (sched_reserve(s, r, r->n_cached + count)) {
            preempted_self = s->running[s->n_running - 1] == r;
            preempt_newest(s);
            if (preempted_self)
                break;
        }
        if (preempted_self)
            break; /* r was the newest; everything after it is gone too */
        plan_entry(&q[n], r, count);
        req[n++] = r;
        budget -= count;
    }
    while (s->n_waiting > 0 && budget > 0 && s->n_running < s->max_seqs) {
        struct request *r = s->waiting[0];
        if (sched_fork_pending(s, r))
            break; /* its choice 0 is still prefilling the prompt they share */
        int forked, shared = sched_share_prefix(s, r, &forked);
        int count = known(r) - shared < budget ? known(r) - shared : budget;
        if (sched_reserve(s, r, shared + count)) {
            seq_blocks_release(&r->blocks, s->pool); /* admission never preempts */
            r->n_cached = 0;
            break;
        }
        sched_count_admission(s, r, shared, forked);
        memmove(s->waiting, s->waiting + 1, (size_t)--s->n_waiting * sizeof *s->waiting);
        r->state = REQUEST_RUNNING;
        s->running[s->n_running++] = r;
        plan_entry(&q[n], r, count);
        req[n++] = r;
        budget -= count;
    }
    return n;
}

void scheduler_commit(struct scheduler *s, struct step_seq *q, struct request **req, int n,
                      const struct sample_result *drawn)
{
    int row = 0;
    for (int i = 0; i < n; i++) {
        struct request *r = req[i];
        r->n_cached += q[i].n_tokens;
        s->stats.computed_tokens += q[i].n_tokens;
        sched_offer_blocks(s, r);
        if (!q[i].want_logits)
            continue;
        const struct sample_result *res = &drawn[row++];
        r->out[r->n_out++] = res->token;
        int finish = -1;
        if (!r->ignore_eos && token_is_eos(s->eos_ids, s->n_eos, res->token))
            finish = FINISH_REASON_STOP;
        else if (r->n_out == r->max_tokens || known(r) >= s->max_context)
            finish = FINISH_REASON_LENGTH;
        if (s->on_token)
            finish = s->on_token(s->on_token_ctx, r, res, finish);
        if (finish < 0)
            continue;
        r->finish = (enum finish_reason)finish;
        r->state = REQUEST_FINISHED;
        seq_blocks_release(&r->blocks, s->pool);
    }
    int k = 0; /* keep admission order */
    for (int i = 0; i < s->n_running; i++)
        if (s->running[i]->state == REQUEST_RUNNING)
            s->running[k++] = s->running[i];
    s->n_running = k;
}
