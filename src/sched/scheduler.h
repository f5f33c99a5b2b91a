/* The scheduler: continuous batching over the paged KV cache.
 *
 * Each step takes every running sequence's next work — a decode row, or the
 * next chunk of its prompt — then admits waiting sequences first come first
 * served, all under a token budget (max_batched_tokens) and a sequence limit
 * (max_seqs), so prefill and decode share steps and long prompts are
 * chunked. When the block pool runs dry, unreferenced prefix-cache blocks
 * are evicted first; then the newest running sequence is preempted: its
 * blocks go back and it is recomputed later from its prompt and the tokens
 * it already produced, so it is never failed.
 *
 * With the prefix cache on (scheduler_enable_prefix_cache), admission starts
 * a sequence after the longest cached block-aligned prefix of its tokens
 * (locked by the sequence's references), and every full block a sequence
 * computes is offered to the cache. The last known token is always computed,
 * since its logits draw the next token.
 *
 * n > 1 choices of one API request are separate sequences; choices 1.. name
 * choice 0 as fork_parent, wait until it has prefilled the prompt's full
 * blocks (all but the one holding the last prompt token), then share them
 * and compute only the rest (less than one block each: recomputing it costs
 * less than a device-side copy of a partial block would). */
#ifndef INFER_SCHED_SCHEDULER_H
#define INFER_SCHED_SCHEDULER_H

#include "kvcache/block_pool.h"
#include "kvcache/radix.h"
#include "sched/sequence.h"
#include "sched/step_seq.h"

struct scheduler_stats {
    long lookup_tokens, hit_tokens; /* admitted tokens, and those the prefix cache supplied */
    long lookup_blocks, hit_blocks; /* the same in full blocks (the last token's block excluded) */
    long forked_blocks;             /* prompt blocks choices shared with their choice 0 */
    long computed_tokens;           /* tokens fed to the model */
    long evicted_blocks;
    long spec_steps, spec_proposed, spec_accepted; /* verify entries, the tokens they proposed, those kept */
};

/* Speculative decoding: up to max_k tokens that may follow s's known ones
 * (written to out, which has room for them); returns how many (0: none). */
typedef int (*scheduler_propose_fn)(void *ctx, const struct sequence *s, int max_k, int32_t *out);

/* Before a step is planned: the running sequences that may get proposals
 * in it (seqs[n]) and the most each may get (max_k[i], before the step's
 * budget), so a proposer can make them all at once. */
typedef void (*scheduler_prepare_fn)(void *ctx, struct sequence *const *seqs, const int *max_k, int n);

/* Called for every drawn token after it is appended to s->out, with the
 * finish reason the scheduler decided (eos id, max_tokens, context) or -1;
 * returns the final decision (e.g. a stop string matched: FINISH_REASON_STOP). */
typedef int (*scheduler_token_fn)(void *ctx, struct sequence *s, const struct sample_result *res, int finish);

struct scheduler {
    struct block_pool *pool; /* borrowed */
    int block_size;
    int max_batched_tokens;
    int max_seqs;
    int max_context;
    const int32_t *eos_ids;
    int n_eos;
    struct sequence **running; /* in admission order */
    int n_running;
    struct sequence **waiting; /* FIFO; preempted sequences go back to the front */
    int n_waiting, cap_waiting;
    long n_preemptions;
    int prefix_caching;
    struct radix_tree radix; /* when prefix_caching */
    struct scheduler_stats stats;
    scheduler_token_fn on_token; /* optional */
    void *on_token_ctx;
    scheduler_propose_fn propose; /* optional: a decoding sequence's proposals, checked in its next step */
    scheduler_prepare_fn prepare; /* optional, with propose */
    void *propose_ctx;
    struct sequence **spec_seqs; /* [max_seqs], prepare's */
    int *spec_max_k;
    int spec_k; /* the most proposals a sequence's step checks (0: no speculation) */
    int spec_rows; /* the most proposed tokens one step checks, all sequences together (SCHED_SPEC_ROWS) */
};

/* spec_rows' default: a step's logit rows are at most its sequences + this. */
#define SCHED_SPEC_ROWS 32

void scheduler_init(struct scheduler *s, struct block_pool *pool, int block_size, int max_batched_tokens, int max_seqs,
                    int max_context, const int32_t *eos_ids, int n_eos);
/* Turns the radix prefix cache on (before any sequence is added). */
void scheduler_enable_prefix_cache(struct scheduler *s);
/* Drops the prefix cache's blocks; sequences still queued are the caller's. */
void scheduler_free(struct scheduler *s);
/* Queues a sequence (its token buffer is allocated here; free with sequence_free). */
void scheduler_add(struct scheduler *s, struct sequence *seq);
int scheduler_idle(const struct scheduler *s);

/* Plans the next step into work (capacity max_seqs); seqs[i] is work[i]'s
 * sequence. Returns the number of entries (0: nothing runnable). With
 * propose set, a decoding sequence's entry may carry up to spec_k proposed
 * tokens after its last one (written to its token buffer past the known
 * ones, within the budget, max_tokens and the context), drawn as a verify
 * step (step_seq.draw = 1 + k). */
int scheduler_plan(struct scheduler *s, struct step_seq *work, struct sequence **seqs);

/* After the step ran: its tokens are cached; each sequence whose entry drew
 * takes its token (in order: an entry's draw rows follow the previous
 * entries', drawn[k] the k-th row; or its next forced token) and may finish
 * (eos, max_tokens, context, on_token), releasing its blocks. A verify
 * entry takes the proposals its draws agree with, then its own next draw,
 * one token at a time (each may finish it); the rejected proposals' KV is
 * not the sequence's (it is overwritten as the sequence moves on, and the
 * prefix cache is offered only blocks of kept tokens). */
void scheduler_commit(struct scheduler *s, const struct step_seq *work, struct sequence **seqs, int n,
                      const struct sample_result *drawn);

/* Takes a waiting or running sequence out (finish = ABORT) and frees its
 * blocks; a finished one is left as it is. */
void scheduler_abort(struct scheduler *s, struct sequence *seq);

/* Integrity of the whole cache: the pool's and the tree's own checks, then
 * every block's reference count rebuilt from its holders (tree + running
 * sequences, each holding a block at most once; waiting sequences hold none)
 * must equal the pool's, so that free + cached + in use == total. 0, or -1
 * with e naming the first violation. */
int scheduler_check(const struct scheduler *s, struct err *e);

#endif
