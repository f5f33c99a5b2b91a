/* The sampler: one object owns a step's draws from start to end. stage
 * turns the drawing sequences into the backend's rows (one upload of their
 * parameters and seen-token lists) padded to the rows the draw will cover;
 * enqueue queues the draw itself, which a graph captures; collect waits and
 * hands the tokens over. Where a row does not fit the backend's lists (more
 * than SAMPLE_MAX_SEEN distinct tokens behind a penalty, or
 * SAMPLE_MAX_BIAS biases), the step is drawn on the host from the logits
 * instead (the backend's draw of greedy padding rows is then ignored): both
 * give the same tokens. A sampler of no rows (the ranks of a split model
 * other than rank 0, which draw nothing) only sizes what the backend's
 * sampler keeps for the gather, and does nothing a step. */
#ifndef INFER_RUNNER_SAMPLER_H
#define INFER_RUNNER_SAMPLER_H

#include "backend/ops.h"
#include "sched/step_seq.h"

struct sampler {
    struct backend *be; /* borrowed */
    int max_rows, vocab;
    struct sample_row *rows;  /* [max_rows] the staged step's rows */
    struct sample_seen *seen; /* [max_rows * SAMPLE_MAX_SEEN] their lists */
    int32_t *slot;            /* [vocab], -1 between calls: sample_seen_build's scratch */
    float *host_logits;       /* [max_rows, vocab], allocated on the first host draw */
    float *scratch;           /* [2 * vocab] */
    long host_draws;          /* steps drawn on the host */
    /* the staged step */
    const struct step_seq *seqs;
    int n_seqs;
    int n_rows;     /* its draws */
    int on_backend; /* the backend draws them */
};

/* Sizes everything once (the backend's sampler included): max_rows draws a
 * step (0: none), of a step of at most max_logit_rows logit rows. Free with
 * sampler_free. */
int sampler_init(struct sampler *s, struct backend *be, int max_rows, int max_logit_rows, int vocab,
                 struct err *e);
void sampler_free(struct sampler *s);

/* Stages the draws of seqs[n] (those with draw set, in order; seqs stays
 * the caller's until collect) for a draw of pad_rows logit rows (>= the
 * draws, <= max_rows). */
int sampler_stage(struct sampler *s, const struct step_seq *seqs, int n, int pad_rows, struct err *e);
/* Queues the draw of pad_rows rows of logits (backend memory); capturable. */
int sampler_enqueue(struct sampler *s, const float *logits, int pad_rows, struct err *e);
/* Whether the backend reads the draws' grammar masks when the draw runs on
 * the device, so they may be written after enqueue (sampler_ops.masks_ready). */
int sampler_masks_late(const struct sampler *s);
/* The staged draws' masks are written; before collect where masks_late. */
int sampler_masks_ready(struct sampler *s, struct err *e);
/* Waits for the step and writes its draws to out[0 .. n_rows). logits: the
 * step's logits, read on the host when the backend could not draw. */
int sampler_collect(struct sampler *s, const float *logits, struct sample_result *out, struct err *e);

#endif
