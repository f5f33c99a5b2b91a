/* The step runner: one engine step on the device, the only way the model
 * runs. It owns what a step needs, sized once at start-up in the order of
 * the memory plan (docs/architecture.md, section 3): the activation workspace,
 * the metadata buffer, the sampler, the KV cache (the rest of the memory
 * budget, runner/kv_plan.h), then the captured graphs. Each step:
 * the graph runner picks the graph and padded shape (or eager), the step
 * builder writes the padded batch into the pinned staging, the sampler
 * stages the draws, a graph replays (or the forward runs eagerly), and the
 * sampler collects the tokens. */
#ifndef INFER_RUNNER_RUNNER_H
#define INFER_RUNNER_RUNNER_H

#include "model/forward.h"
#include "runner/graph_runner.h"
#include "runner/sampler.h"
#include "runner/step_builder.h"
#include "parallel/relay.h"

struct runner_opts {
    int max_tokens;                /* token budget of one step */
    int max_seqs;                  /* sequences of one step (a graph's padding may add one) */
    int max_draws;                 /* logit rows one step draws (verify steps: several a sequence); 0: max_seqs */
    int max_context;               /* tokens one sequence may reach */
    int block_size;                /* tokens per KV block */
    int kv_blocks; /* KV blocks (block 0 included): a host's count, a device's most; 0: a host four full contexts */
    double gpu_memory_utilization; /* device backends: share of the memory left for the KV cache */
    int return_logits;             /* steps may return logits to the host (max_tokens more logit rows) */
    struct graph_opts graph;
    const struct relay *relay; /* a split model's ranks (rank 0 drives, the others follow), or NULL */
};

struct runner {
    const struct model *m; /* borrowed */
    struct runner_opts o;
    struct forward_ws ws;
    struct kv_store kv;
    struct meta_buffer meta;
    struct step_builder builder;
    struct sampler sampler;
    struct graph_runner graphs;
    int max_blocks_per_seq;
    float *returned;         /* [max_tokens + max_seqs, vocab]: the last step's logit rows past its draws */
    long n_replays, n_eager; /* steps that replayed a graph (of any kind), that ran eagerly */
    /* seconds in runner_step: building, relaying and launching the step
     * (the host's part), then waiting for its draws (the device's); of
     * launch_s, relay_s sending it to the other ranks and enqueue_s the
     * graph launch (or the eager forward's) */
    double launch_s, wait_s, relay_s, enqueue_s;
    int logged_eager;        /* the first eager step in a graph mode was logged */
    /* Writes the step's grammar masks (where step_seq.sample.mask points),
     * or NULL when the caller writes them before runner_step. Called after
     * the launch where the backend takes masks late (sampler_ops.masks_ready:
     * the host writes them while the device runs the forward pass), else
     * before the draws are staged. */
    void (*write_masks)(void *ctx);
    void *write_masks_ctx;
};

/* Sizes and captures everything; the KV cache gets r->kv.n_blocks blocks
 * (block 0 is the scratch block padding rows may touch: the caller's block
 * pool must reserve it). Prints the memory plan on a device backend. Free
 * with runner_free. */
int runner_init(struct runner *r, const struct model *m, const struct runner_opts *o, struct err *e);
/* The logit rows a step of o may draw: at least a row for each sequence,
 * at most one for each token. */
int runner_max_draws(const struct runner_opts *o);
void runner_free(struct runner *r);

/* Runs one step over seqs[n] (n >= 1): draws[k] is the token of the k-th
 * sequence with draw set. The logits of sequences with return_logits are
 * then on the host: runner_returned_logits. -1 with e set when the step
 * does not fit the runner or the backend failed. */
int runner_step(struct runner *r, const struct step_seq *seqs, int n, struct sample_result *draws,
                struct err *e);

/* After runner_step over the same seqs: seqs[i]'s logits, [n_tokens,
 * vocab] f32 (one row per token fed), or NULL when it returned none. */
const float *runner_returned_logits(const struct runner *r, const struct step_seq *seqs, int n, int i);

/* A rank other than 0 of a split model: follows rank 0's runners until
 * the group ends (relay->recv says so): each runner rank 0 starts is
 * started here with the same options (and captures the same graphs, in
 * step with rank 0's collectives), runs every step rank 0 runs from the
 * metadata rank 0 wrote, and ends with rank 0's. */
int runner_follow(const struct model *m, const struct relay *relay, struct err *e);

/* relay.c, for rank 0's runner: the messages that start a runner on the
 * other ranks, run a step there, and end the runner. */
int runner_relay_start(const struct runner *r, struct err *e);
int runner_relay_step(const struct runner *r, const struct step_plan *p, const struct step_shape *real,
                      struct err *e);
int runner_relay_end(const struct runner *r, struct err *e);

/* Runs a planned step whose metadata is in the staging (the sampler
 * staged): a graph, the pieces, or eagerly. */
int runner_run_plan(struct runner *r, const struct step_plan *p, const struct step_shape *real, struct err *e);

/* Queues one step of the given shape over what the staging holds: the
 * upload, the forward and the draw of draw_rows rows (what a decode or full
 * graph holds; the capture uses it too). */
int runner_enqueue_step(struct runner *r, const struct step_shape *shape, int draw_rows, struct err *e);

#endif
