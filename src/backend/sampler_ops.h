/* A backend's sampler, the sub-interface of the op table that draws tokens:
 * one token per row of logits[rows, vocab] (f32, backend memory, left
 * unchanged) with sample_token's semantics (sampling/sampling.h), in three
 * parts so that a captured graph can hold the draw. Each backend's sampler
 * owns its buffers, the statistics a split model's gather leaves it
 * (gather_logits) among them, and knows which rows it cannot draw from those
 * statistics alone (needs_logit_cols): nothing above the backend encodes
 * either. */
#ifndef INFER_BACKEND_SAMPLER_OPS_H
#define INFER_BACKEND_SAMPLER_OPS_H

#include <stdint.h>

#include "core/error.h"
#include "sampling/sample_seen.h"
#include "sampling/sampling.h"

/* One logits row's sampling inputs (host memory). */
struct sample_row {
    const struct sampling_params *params; /* its logit_bias list included */
    uint64_t step;                        /* the RNG counter, as sample_token's step */
    const struct sample_seen *seen;       /* [n_seen] the sequence's history (sample_seen_build) */
    int n_seen;
    const uint32_t *mask;                 /* the grammar's allowed tokens (sample_token_masked), or NULL */
};

struct backend;

struct sampler_ops {
    /* Sizes the fixed buffers at start-up, on every rank of a split model:
     * max_rows rows of vocab logits to draw (0 on a rank that draws none),
     * and whatever a split model's gather of max_logit_rows rows leaves for
     * the draw. Again to resize. */
    int (*init)(struct backend *be, int max_rows, int max_logit_rows, int vocab, struct err *e);
    /* Takes the step's rows (host memory, valid until finish), padded up to
     * pad_rows with greedy rows whose draws are ignored, and queues whatever
     * varies in size. */
    int (*stage)(struct backend *be, int n_rows, int pad_rows, int vocab, const struct sample_row *rows,
                 struct err *e);
    /* Queues the draw of pad_rows rows, its results bound for host memory,
     * touching only fixed addresses (capturable). */
    int (*enqueue)(struct backend *be, const float *logits, int pad_rows, int vocab, struct err *e);
    /* The staged rows' masks are written now (where sample_row.mask points).
     * A backend with this op reads them when the draw runs on the device, so
     * the caller may write them after enqueue, while the step's forward pass
     * runs, and call this before finish: the draw waits for it. NULL: the
     * masks are read at enqueue, so they must be written before it. */
    int (*masks_ready)(struct backend *be, struct err *e);
    /* Waits and writes out[n_rows] (host memory). */
    int (*finish)(struct backend *be, int n_rows, struct sample_result *out, struct err *e);
    /* A split model: 1 when rank 0 needs the other ranks' logit columns to
     * draw a row of these parameters (masked: under a grammar's mask), 0
     * when what the gather leaves the sampler is enough. NULL: every row
     * needs them. */
    int (*needs_logit_cols)(const struct sampling_params *p, int masked);
};
/* Each call is -1 with e set when it exceeds what init sized, or a row has
 * more than SAMPLE_MAX_SEEN seen tokens or SAMPLE_MAX_BIAS biases (the
 * caller then samples it on the host). */

#endif
