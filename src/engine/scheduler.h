/* Requests and the scheduler: continuous batching over the paged KV cache.
 *
 * Each step takes every running sequence's next work — a decode row, or the
 * next chunk of its prompt — then admits waiting requests first come first
 * served, all under a token budget (max_batched_tokens) and a sequence limit
 * (max_seqs), so prefill and decode share steps and long prompts are
 * chunked. When the block pool runs dry, unreferenced prefix-cache blocks
 * are evicted first; then the newest running request is preempted: its
 * blocks go back and it is recomputed later from its prompt and the tokens
 * it already produced, so it is never failed.
 *
 * With the prefix cache on (scheduler_enable_prefix_cache), admission starts
 * a request after the longest cached block-aligned prefix of its tokens
 * (locked by the request's references), and every full block a request
 * computes is offered to the cache. The last known token is always computed,
 * since its logits draw the next token.
 *
 * n > 1 choices of one API request are separate requests; choices 1.. name
 * choice 0 as fork_parent, wait until it has prefilled the prompt's full
 * blocks (all but the one holding the last prompt token), then share them
 * and compute only the rest (less than one block each: recomputing it costs
 * less than a device-side copy of a partial block would). */
#ifndef INFER_ENGINE_SCHEDULER_H
#define INFER_ENGINE_SCHEDULER_H

#include "engine/greedy.h"
#include "backend/sampling.h"
#include "engine/step_builder.h"
#include "kvcache/block_pool.h"
#include "kvcache/radix.h"
#include "kvcache/seq_blocks.h"

enum request_state { REQUEST_WAITING, REQUEST_RUNNING, REQUEST_FINISHED };

struct request {
    int id;
    const int32_t *prompt; /* borrowed */
    int n_prompt;
    int max_tokens;
    struct sampling_params sampling;
    int ignore_eos;
    int choice;                  /* index among its API request's choices: the RNG stream */
    struct request *fork_parent; /* choice 0 of the same API request (must outlive this one), or NULL */
    void *user;                  /* the caller's, untouched */
    /* state, owned by the scheduler */
    enum request_state state;
    int32_t *tokens; /* [n_prompt + max_tokens]: the prompt, then the output */
    int32_t *out;    /* = tokens + n_prompt */
    int n_out;
    int n_cached; /* known tokens (prompt, then output) whose KV is in the cache */
    int n_offered; /* full blocks already offered to the prefix cache */
    struct seq_blocks blocks;
    enum finish_reason finish;
    int n_preempted;
};

struct scheduler_stats {
    long lookup_tokens, hit_tokens; /* admitted tokens, and those the prefix cache supplied */
    long lookup_blocks, hit_blocks; /* the same in full blocks (the last token's block excluded) */
    long forked_blocks;             /* prompt blocks choices shared with their choice 0 */
    long computed_tokens;           /* tokens fed to the model */
    long evicted_blocks;
};

/* Called for every drawn token after it is appended to r->out, with the
 * finish reason the scheduler decided (eos id, max_tokens, context) or -1;
 * returns the final decision (e.g. a stop string matched: FINISH_REASON_STOP). */
typedef int (*scheduler_token_fn)(void *ctx, struct request *r, const struct sample_result *res, int finish);

struct scheduler {
    struct block_pool *pool; /* borrowed */
    int block_size;
    int max_batched_tokens;
    int max_seqs;
    int max_context;
    const int32_t *eos_ids;
    int n_eos;
    struct request **running; /* in admission order */
    int n_running;
    struct request **waiting; /* FIFO; preempted requests go back to the front */
    int n_waiting, cap_waiting;
    long n_preemptions;
    int prefix_caching;
    struct radix_tree radix; /* when prefix_caching */
    struct scheduler_stats stats;
    scheduler_token_fn on_token; /* optional */
    void *on_token_ctx;
};

void scheduler_init(struct scheduler *s, struct block_pool *pool, int block_size, int max_batched_tokens, int max_seqs,
                    int max_context, const int32_t *eos_ids, int n_eos);
/* Turns the radix prefix cache on (before any request is added). */
void scheduler_enable_prefix_cache(struct scheduler *s);
/* Drops the prefix cache's blocks; requests still queued are the caller's. */
void scheduler_free(struct scheduler *s);
/* Queues a request (its out buffer is allocated here; free with request_free). */
void scheduler_add(struct scheduler *s, struct request *r);
void request_free(struct request *r);
int scheduler_idle(const struct scheduler *s);

/* Plans the next step into q (capacity max_seqs); req[i] is q[i]'s request.
 * Returns the number of entries (0: nothing runnable). */
int scheduler_plan(struct scheduler *s, struct step_seq *q, struct request **req);

/* After the forward pass: the step's tokens are cached; each request whose
 * row had logits takes its drawn token (in order, drawn[i]: step_sample)
 * and may finish (eos, max_tokens, context, on_token), releasing its blocks. */
void scheduler_commit(struct scheduler *s, struct step_seq *q, struct request **req, int n,
                      const struct sample_result *drawn);

/* Takes a waiting or running request out (finish = ABORT) and frees its
 * blocks; a finished one is left as it is. */
void scheduler_abort(struct scheduler *s, struct request *r);

/* Integrity of the whole cache: the pool's and the tree's own checks, then
 * every block's reference count rebuilt from its holders (tree + running
 * requests, each holding a block at most once; waiting requests hold none)
 * must equal the pool's, so that free + cached + in use == total. 0, or -1
 * with e naming the first violation. */
int scheduler_check(const struct scheduler *s, struct err *e);

#endif
