#include "sched/scheduler.h"

#include "sched/sched_cache.h"

#include <stdlib.h>
#include <string.h>

/* Speculation's brakes. A step checks at most SCHED_SPEC_ROWS proposed
 * tokens (scheduler.spec_rows): a decode step's extra rows are nearly free
 * while the weights' reads dominate it, not once the batch makes it compute.
 * A sequence whose kept share (a moving average, SPEC_RATE_WEIGHT a step)
 * falls below SPEC_RATE_LOW stops proposing for SPEC_WAIT_STEPS steps, then
 * tries again from SPEC_RATE_RETRY. */
#define SPEC_RATE_WEIGHT 0.3f
#define SPEC_RATE_LOW 0.15f
#define SPEC_WAIT_STEPS 16
#define SPEC_RATE_RETRY 0.5f

const char *finish_reason_name(enum finish_reason f)
{
    return f == FINISH_REASON_STOP ? "stop" : f == FINISH_REASON_ABORT ? "abort" : "length";
}

void scheduler_init(struct scheduler *s, struct block_pool *pool, int block_size, int max_batched_tokens,
                    int max_seqs, int max_context, const int32_t *eos_ids, int n_eos)
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
    s->spec_rows = SCHED_SPEC_ROWS;
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
    free(s->spec_seqs);
    free(s->spec_max_k);
    memset(s, 0, sizeof *s);
}

void sequence_free(struct sequence *seq)
{
    seq_blocks_free(&seq->blocks);
    free(seq->tokens);
    seq->tokens = seq->out = NULL;
}

static void waiting_insert(struct scheduler *s, struct sequence *seq, int at_front)
{
    if (s->n_waiting == s->cap_waiting) {
        s->cap_waiting = s->cap_waiting ? 2 * s->cap_waiting : 16;
        s->waiting = xrealloc(s->waiting, (size_t)s->cap_waiting * sizeof *s->waiting);
    }
    if (at_front) {
        memmove(s->waiting + 1, s->waiting, (size_t)s->n_waiting * sizeof *s->waiting);
        s->waiting[0] = seq;
    } else {
        s->waiting[s->n_waiting] = seq;
    }
    s->n_waiting++;
    seq->state = SEQUENCE_WAITING;
}

void scheduler_add(struct scheduler *s, struct sequence *seq)
{
    CHECK(seq->n_prompt > 0 && seq->max_tokens > 0 && seq->n_forced <= seq->max_tokens);
    seq->tokens = xmalloc((size_t)(seq->n_prompt + seq->max_tokens) * sizeof(int32_t));
    memcpy(seq->tokens, seq->prompt, (size_t)seq->n_prompt * sizeof(int32_t));
    seq->out = seq->tokens + seq->n_prompt;
    seq->n_out = 0;
    seq->n_cached = 0;
    seq->n_offered = 0;
    seq->n_preempted = 0;
    seq->spec_rate = 1.0f;
    seq->spec_wait = 0;
    memset(&seq->blocks, 0, sizeof seq->blocks);
    waiting_insert(s, seq, 0);
}

int scheduler_idle(const struct scheduler *s) { return s->n_running == 0 && s->n_waiting == 0; }

/* Recompute later: the blocks go back (the computed ones stay cached when
 * the prefix cache is on, for the recompute to find); prompt and output are
 * kept. */
static void preempt_newest(struct scheduler *s)
{
    struct sequence *v = s->running[--s->n_running];
    sched_offer_blocks(s, v);
    seq_blocks_release(&v->blocks, s->pool);
    v->n_cached = 0;
    v->n_preempted++;
    s->n_preemptions++;
    waiting_insert(s, v, 1);
}

/* count tokens from the first uncached one, the last `proposed` of them
 * proposals past the known tokens. */
static void plan_entry(struct step_seq *w, struct sequence *seq, int count, int proposed)
{
    const int draw = seq->n_cached + count - proposed == sequence_known(seq) ? 1 + proposed : 0;
    *w = (struct step_seq){.blocks = &seq->blocks,
                           .tokens = seq->tokens + seq->n_cached,
                           .n_tokens = count,
                           .start_pos = seq->n_cached,
                           .draw = draw,
                           .return_logits = seq->return_logits,
                           .sample = {.params = &seq->sampling,
                                      .prompt = seq->tokens,
                                      .n_prompt = seq->n_prompt,
                                      .output = seq->out,
                                      .n_output = seq->n_out,
                                      .step = sequence_rng_step(seq)}};
}

/* The most tokens a decoding seq may have proposed this step before the
 * budget: none while a forced continuation or returned logits are due, or
 * while it waits after a low kept share (wait: count this step off), else
 * within its output buffer (the proposals, then the target's token after
 * them) and the context. */
static int proposal_limit(const struct scheduler *s, struct sequence *seq, int wait)
{
    const int known = sequence_known(seq);
    if (!s->propose || s->spec_k <= 0 || known - seq->n_cached != 1 || seq->n_out < seq->n_forced ||
        seq->return_logits)
        return 0;
    if (seq->spec_wait > 0 && (wait ? --seq->spec_wait : seq->spec_wait - 1) > 0)
        return 0;
    int k = s->spec_k;
    k = k < seq->max_tokens - seq->n_out - 1 ? k : seq->max_tokens - seq->n_out - 1;
    k = k < s->max_context - known ? k : s->max_context - known;
    return k > 0 ? k : 0;
}

/* ... and within the step's budget (besides its own token) and its rows. */
static int proposal_room(const struct scheduler *s, struct sequence *seq, int budget, int rows_left)
{
    int k = proposal_limit(s, seq, 1);
    k = k < rows_left ? k : rows_left;
    k = k < budget - 1 ? k : budget - 1;
    return k > 0 ? k : 0;
}

/* The prepare hook's call: every running seq that may get proposals. */
static void prepare_proposals(struct scheduler *s)
{
    if (!s->prepare || s->spec_k <= 0)
        return;
    if (!s->spec_seqs) {
        s->spec_seqs = xmalloc((size_t)s->max_seqs * sizeof *s->spec_seqs);
        s->spec_max_k = xmalloc((size_t)s->max_seqs * sizeof *s->spec_max_k);
    }
    int n = 0;
    for (int i = 0; i < s->n_running; i++) {
        const int k = proposal_limit(s, s->running[i], 0);
        if (k > 0)
            s->spec_seqs[n] = s->running[i], s->spec_max_k[n++] = k;
    }
    if (n > 0)
        s->prepare(s->propose_ctx, s->spec_seqs, s->spec_max_k, n);
}

int scheduler_plan(struct scheduler *s, struct step_seq *work, struct sequence **seqs)
{
    prepare_proposals(s);
    int budget = s->max_batched_tokens, n = 0, rows_left = s->spec_rows;
    for (int i = 0; i < s->n_running && budget > 0; i++) {
        struct sequence *seq = s->running[i];
        int count = sequence_known(seq) - seq->n_cached;
        count = count < budget ? count : budget;
        const int room = proposal_room(s, seq, budget, rows_left);
        const int proposed = room ? s->propose(s->propose_ctx, seq, room, seq->out + seq->n_out) : 0;
        CHECK(proposed >= 0 && proposed <= room);
        count += proposed;
        rows_left -= proposed;
        int preempted_self = 0;
        while (sched_reserve(s, seq, seq->n_cached + count)) {
            preempted_self = s->running[s->n_running - 1] == seq;
            preempt_newest(s);
            if (preempted_self)
                break;
        }
        if (preempted_self)
            break; /* seq was the newest; everything after it is gone too */
        plan_entry(&work[n], seq, count, proposed);
        seqs[n++] = seq;
        budget -= count;
    }
    while (s->n_waiting > 0 && budget > 0 && s->n_running < s->max_seqs) {
        struct sequence *seq = s->waiting[0];
        if (sched_fork_pending(s, seq))
            break; /* its choice 0 is still prefilling the prompt they share */
        int forked, shared = sched_share_prefix(s, seq, &forked);
        int count = sequence_known(seq) - shared < budget ? sequence_known(seq) - shared : budget;
        if (sched_reserve(s, seq, shared + count)) {
            seq_blocks_release(&seq->blocks, s->pool); /* admission never preempts */
            seq->n_cached = 0;
            break;
        }
        sched_count_admission(s, seq, shared, forked);
        memmove(s->waiting, s->waiting + 1, (size_t)--s->n_waiting * sizeof *s->waiting);
        seq->state = SEQUENCE_RUNNING;
        s->running[s->n_running++] = seq;
        plan_entry(&work[n], seq, count, 0);
        seqs[n++] = seq;
        budget -= count;
    }
    return n;
}

/* Appends one drawn token (or the next forced one) to seq; 1 when that
 * finished seq (its blocks released). */
static int take_token(struct scheduler *s, struct sequence *seq, const struct sample_result *drawn)
{
    struct sample_result res = *drawn;
    const int forced = seq->n_out < seq->n_forced;
    if (forced) /* a given continuation: its token, not the draw (whose log-probs no longer apply) */
        res = (struct sample_result){.token = seq->forced[seq->n_out]};
    seq->out[seq->n_out++] = res.token;
    int finish = -1;
    if (!forced && !seq->ignore_eos && token_is_eos(s->eos_ids, s->n_eos, res.token))
        finish = FINISH_REASON_STOP;
    else if (seq->n_out == seq->max_tokens || sequence_known(seq) >= s->max_context)
        finish = FINISH_REASON_LENGTH;
    if (s->on_token)
        finish = s->on_token(s->on_token_ctx, seq, &res, finish);
    if (finish < 0)
        return 0;
    seq->finish = (enum finish_reason)finish;
    seq->state = SEQUENCE_FINISHED;
    seq_blocks_release(&seq->blocks, s->pool);
    return 1;
}

void scheduler_commit(struct scheduler *s, const struct step_seq *work, struct sequence **seqs, int n,
                      const struct sample_result *drawn)
{
    int row = 0;
    for (int i = 0; i < n; i++) {
        struct sequence *seq = seqs[i];
        const struct sample_result *rows = drawn + row;
        row += work[i].draw;
        /* a verify entry keeps the proposals its draws agree with, then its own draw */
        const int k = work[i].draw > 1 ? work[i].draw - 1 : 0;
        const int kept = sample_kept(rows, seq->out + seq->n_out, k);
        if (k) {
            s->stats.spec_steps++;
            s->stats.spec_proposed += k;
            s->stats.spec_accepted += kept;
            seq->spec_rate += SPEC_RATE_WEIGHT * ((float)kept / (float)k - seq->spec_rate);
            if (seq->spec_rate < SPEC_RATE_LOW)
                seq->spec_wait = SPEC_WAIT_STEPS, seq->spec_rate = SPEC_RATE_RETRY;
        }
        seq->n_cached += work[i].n_tokens - (k - kept);
        s->stats.computed_tokens += work[i].n_tokens;
        sched_offer_blocks(s, seq);
        for (int d = 0; d < (work[i].draw ? kept + 1 : 0); d++)
            if (take_token(s, seq, &rows[d]))
                break;
    }
    int k = 0; /* keep admission order */
    for (int i = 0; i < s->n_running; i++)
        if (s->running[i]->state == SEQUENCE_RUNNING)
            s->running[k++] = s->running[i];
    s->n_running = k;
}

