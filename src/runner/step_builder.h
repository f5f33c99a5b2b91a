/* The step builder: writes the scheduler's work for one step (every
 * sequence's new tokens: decode rows and prefill chunks alike) straight into
 * the backend's metadata staging, at the offsets of its meta_layout, padded
 * to the shape of the graph that will run it. That is the step's only host
 * copy: a replayed graph uploads the staging with one copy and runs.
 *
 * Logit rows: first one per drawing sequence (its last token), in order;
 * then every token of the sequences that return logits, in order (a
 * drawing sequence that also returns logits has its last token twice: the
 * draws stay the first rows, which is what the sampler reads). */
#ifndef INFER_RUNNER_STEP_BUILDER_H
#define INFER_RUNNER_STEP_BUILDER_H

#include "backend/ops.h"
#include "sched/step_seq.h"

/* The counts that size a step's metadata and pick its graph. */
struct step_shape {
    int n_tokens;
    int n_seqs;
    int n_draws;  /* logit rows that draw a token: rows [0, n_draws) */
    int n_logits; /* logit rows in all */
    int decode; /* every sequence feeds one token and draws from it, nothing more: row i = token i = sequence
                   i */
};

/* The shape of seqs[n] as it is. */
void step_shape_of(const struct step_seq *seqs, int n, struct step_shape *s);

/* Where seqs[i]'s returned logits start among the logit rows (its tokens'
 * rows follow in order); -1 when it returns none. */
int step_returned_row(const struct step_seq *seqs, int n, int i);

struct step_builder {
    const struct meta_buffer *mb; /* borrowed: the backend's buffer the builder writes */
    int block_size;
    /* the backend sampler's rule (sampler_ops.needs_logit_cols; NULL: every
     * row): which drawing rows a split model's rank 0 needs every rank's
     * logit columns for */
    int (*needs_logit_cols)(const struct sampling_params *p, int masked);
};

void step_builder_init(struct step_builder *b, const struct meta_buffer *mb, int block_size,
                       int (*needs_logit_cols)(const struct sampling_params *p, int masked));

/* Writes seqs[n] into the staging, then padding up to `padded` (at least
 * the real counts; more sequences than the real ones when there are more
 * tokens): padding token j (token 0, position 0, slot -1: no KV write) goes
 * to padding sequence j while there are any, the rest to the last one;
 * padding sequences have KV length 0 (attention sees nothing); padding logit
 * rows point at padding tokens (or the last token). The real rows' results
 * are then exactly those of the unpadded step. Fails, naming the limit, when
 * the step exceeds the buffer's capacities or a block table does not cover
 * its tokens. n may be 0 (a padding-only step, for capture). */
int step_build(const struct step_builder *b, const struct step_seq *seqs, int n,
               const struct step_shape *padded, struct err *e);

#endif
