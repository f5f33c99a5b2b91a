/* Requests and the scheduler: continuous batching over the paged KV cache.
 *
 * Each step takes every running sequence's next work — a decode row, or the
 * next chunk of its prompt — then admits waiting requests first come first
 * served, all under a token budget (max_batched_tokens) and a sequence limit
 * (max_seqs), so prefill and decode share steps and long prompts are
 * chunked. When the block pool runs dry, the newest running request is
 * preempted: its blocks go back and it is recomputed later from its prompt
 * and the tokens it already produced, so it is never failed. */
#ifndef INFER_ENGINE_SCHEDULER_H
#define INFER_ENGINE_SCHEDULER_H

#include "engine/greedy.h"
#include "engine/sampling.h"
#include "engine/step_builder.h"
#include "kvcache/block_pool.h"
#include "kvcache/seq_blocks.h"

enum request_state { REQUEST_WAITING, REQUEST_RUNNING, REQUEST_FINISHED };

struct request {
    int id;
    const int32_t *prompt; /* borrowed */
    int n_prompt;
    int max_tokens;
    struct sampling_params sampling;
    /* state, owned by the scheduler */
    enum request_state state;
    int32_t *tokens; /* [n_prompt + max_tokens]: the prompt, then the output */
    int32_t *out;    /* = tokens + n_prompt */
    int n_out;
    int n_cached; /* known tokens (prompt, then output) whose KV is in the cache */
    struct seq_blocks blocks;
    enum finish_reason finish;
    int n_preempted;
};

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
};

void scheduler_init(struct scheduler *s, struct block_pool *pool, int block_size, int max_batched_tokens, int max_seqs,
                    int max_context, const int32_t *eos_ids, int n_eos);
void scheduler_free(struct scheduler *s);
/* Queues a request (its out buffer is allocated here; free with request_free). */
void scheduler_add(struct scheduler *s, struct request *r);
void request_free(struct request *r);
int scheduler_idle(const struct scheduler *s);

/* Plans the next step into q (capacity max_seqs); req[i] is q[i]'s request.
 * Returns the number of entries (0: nothing runnable). */
int scheduler_plan(struct scheduler *s, struct step_seq *q, struct request **req);

/* After the forward pass: the step's tokens are cached; each request whose
 * row had logits (in order, logits[i] of vocab floats) draws its next token
 * and may finish (eos, max_tokens, context), releasing its blocks. scratch:
 * 2 * vocab floats. */
void scheduler_commit(struct scheduler *s, struct step_seq *q, struct request **req, int n, const float *logits,
                      int vocab, float *scratch);

#endif
