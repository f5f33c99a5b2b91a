/* Drawing a step's tokens: one sample_result per request whose row has
 * logits. Where the backend has a sample op the draw runs there and only
 * the results come back (on CUDA: one upload of the rows' parameters and
 * seen-token lists, one kernel, one download); otherwise, or when a row's
 * history is longer than the op's lists hold (SAMPLE_MAX_SEEN distinct
 * tokens, SAMPLE_MAX_BIAS biases), the logits come to the host and
 * sample_token runs there. Both give the same tokens. */
#ifndef INFER_ENGINE_STEP_SAMPLE_H
#define INFER_ENGINE_STEP_SAMPLE_H

#include "backend/ops.h"
#include "engine/scheduler.h"

struct step_sampler {
    int max_rows, vocab;
    int on_backend;              /* the backend's sample op is sized and used */
    struct sample_row *rows;     /* [max_rows] */
    struct sample_seen *seen;    /* [max_rows * SAMPLE_MAX_SEEN] the rows' lists */
    int32_t *slot;               /* [vocab] -1 between calls: sample_seen_build's scratch */
    float *host_logits;          /* [max_rows, vocab], allocated on the first host draw */
    float *scratch;              /* [2 * vocab] */
    long host_draws;             /* steps drawn on the host although the backend samples */
    int n_rows;                  /* the prepared step's rows with logits */
    int backend_rows;            /* n_rows when rows[] holds them for the backend's draw, else 0 */
};

/* Sizes everything once (calls the backend's sample_init when it has a
 * sample op). Free with step_sampler_free. */
int step_sampler_init(struct step_sampler *ss, struct backend *be, int max_rows, int vocab, struct err *e);
void step_sampler_free(struct step_sampler *ss);

/* Draws for the requests req[i] with q[i].want_logits, in order, from the
 * step's logits ([rows, vocab] in backend memory, one row per such request)
 * into out; returns the number of rows, or -1 with e set. */
int step_sample(struct step_sampler *ss, struct backend *be, const float *logits, struct request *const *req,
                const struct step_seq *q, int n, struct sample_result *out, struct err *e);

/* step_sample in two halves, so that a graph can draw in between:
 * prepare counts the step's rows and, where the backend can draw them all,
 * fills ss->rows (ss->backend_rows set); draw then samples them after the
 * forward (on the backend, or on the host). A graph runner that drew them
 * itself (sample_stage / sample_enqueue / sample_finish) skips draw. */
int step_sample_prepare(struct step_sampler *ss, struct request *const *req, const struct step_seq *q, int n,
                        struct err *e);
int step_sample_draw(struct step_sampler *ss, struct backend *be, const float *logits, struct request *const *req,
                     const struct step_seq *q, int n, struct sample_result *out, struct err *e);

#endif
