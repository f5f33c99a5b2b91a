/* One sequence the scheduler runs: one choice of an API request (n > 1
 * choices are separate sequences), from waiting through running to
 * finished, and why it finished. */
#ifndef INFER_SCHED_SEQUENCE_H
#define INFER_SCHED_SEQUENCE_H

#include <stdint.h>

#include "kvcache/seq_blocks.h"
#include "sampling/sampling.h"

/* LENGTH: max_tokens or the context ran out; STOP: an eos id or a stop
 * string; ABORT: the caller cancelled the request (or its step failed). */
enum finish_reason { FINISH_REASON_LENGTH, FINISH_REASON_STOP, FINISH_REASON_ABORT };

const char *finish_reason_name(enum finish_reason f);

/* Whether id is one of the n end-of-sequence ids. */
static inline int token_is_eos(const int32_t *eos_ids, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (eos_ids[i] == id)
            return 1;
    return 0;
}

enum sequence_state { SEQUENCE_WAITING, SEQUENCE_RUNNING, SEQUENCE_FINISHED };

struct sequence {
    long id; /* the caller's name for it (the engine's are unique) */
    const int32_t *prompt; /* borrowed */
    int n_prompt;
    int max_tokens;
    struct sampling_params sampling;
    int ignore_eos;
    const int32_t *forced; /* borrowed: the first n_forced output tokens are these, not draws */
    int n_forced;
    int return_logits;            /* every position's logits come back (no prefix sharing then) */
    int choice;                   /* index among its API request's choices: the RNG stream */
    struct sequence *fork_parent; /* choice 0 of the same API request (must outlive this one), or NULL */
    void *user;                   /* the caller's, untouched */
    /* state, owned by the scheduler */
    enum sequence_state state;
    int32_t *tokens; /* [n_prompt + max_tokens]: the prompt, then the output */
    int32_t *out;    /* = tokens + n_prompt */
    int n_out;
    int n_cached;  /* known tokens (prompt, then output) whose KV is in the cache */
    int n_offered; /* full blocks already offered to the prefix cache */
    struct seq_blocks blocks;
    enum finish_reason finish;
    int n_preempted;
    /* speculative decoding: the share of recent proposals kept (a moving
     * average, 1 to begin with), and steps to wait before proposing again
     * once it fell low */
    float spec_rate;
    int spec_wait;
};

/* Tokens known so far: the prompt and the output. */
static inline int sequence_known(const struct sequence *s) { return s->n_prompt + s->n_out; }

/* The RNG counter of s's next token: its output index, with the choice
 * index in the high word so that each choice has its own stream. */
static inline uint64_t sequence_rng_step(const struct sequence *s)
{
    return (uint64_t)(uint32_t)s->choice << 32 | (uint32_t)s->n_out;
}

/* Frees what the scheduler allocated for s (its blocks must be released). */
void sequence_free(struct sequence *s);

#endif
