/* CUDA graphs for the runner's steps (docs/graphs.md;
 * `--cuda-graph-mode`): which graph takes a step, padded to what shape, and
 * their capture at start-up.
 * - none: every step eagerly (the reference for graph correctness);
 * - decode: a step whose rows are all decode rows (one token per sequence,
 *   every row drawing) replays the graph of the smallest batch-size bucket
 *   that holds it; other steps run eagerly;
 * - piecewise: decode steps as in decode; any other step is padded to the
 *   smallest token bucket that holds it and replays that bucket's pieces
 *   (one graph per stretch between attention calls, model/forward.h), with
 *   attention, the logits and the draw run eagerly on the step's real counts;
 * - full: decode steps as in decode; any other step is padded to a (token
 *   bucket, sequence-slot bucket) pair and replays one graph of the whole
 *   step. The attention kernels find their work on the device (tiles from
 *   query_start, key ranges from kv_len), so a grid fixed by the bucket
 *   serves any step that fits it.
 * Decode and full graphs hold the whole step: the metadata upload, the
 * forward and the draw of every logit row (the sampler's padding rows draw
 * greedily and are ignored). Padding (step_build) costs compute and changes
 * nothing. Steps past the largest bucket, and steps returning more logit
 * rows than a graph draws, run eagerly.
 * Graphs are captured at start-up, largest first, each after one eager
 * warm-up (which creates cuBLASLt plans outside the capture); every graph
 * shares the one workspace and metadata buffer, so a replay's CPU work is
 * writing the pinned staging and launching. */
#ifndef INFER_RUNNER_GRAPH_RUNNER_H
#define INFER_RUNNER_GRAPH_RUNNER_H

#include <stddef.h>

#include "core/error.h"
#include "runner/graph_opts.h"
#include "runner/step_builder.h"

struct runner;

/* How one step runs. */
enum step_path { STEP_PATH_EAGER, STEP_PATH_DECODE, STEP_PATH_PIECEWISE, STEP_PATH_FULL };

struct step_plan {
    enum step_path path;
    struct step_shape padded; /* what the step builder writes */
    int draw_rows;            /* logit rows the sampler draws (the graph's, or the real draws) */
    int graph_index;          /* which graph of its kind: the same on every rank of a split model */
    void *graph;              /* decode, full */
    void *const *pieces;      /* piecewise: n_layers + 1 graphs */
    const char *why_eager;    /* in a graph mode: why this step runs eagerly */
};

struct graph_runner {
    enum graph_mode mode;
    int padding;
    int n_layers;
    int *buckets; /* decode batch sizes, ascending */
    int n_buckets;
    void **graphs;    /* [n_buckets] */
    int *tok_buckets; /* piecewise and full: token buckets, ascending */
    int n_tok_buckets;
    int *seq_buckets; /* full: sequence-slot buckets, ascending */
    int n_seq_buckets;
    void **pieces; /* piecewise: [n_tok_buckets][n_layers + 1] */
    void **full;   /* full: [n_tok_buckets][n_seq_buckets], NULL for pairs not captured */
    int max_draws;   /* logit rows a full graph draws at most (the sampler's rows) */
    int extra_draws; /* of them, past a row per sequence: verify steps' (0 without speculation) */
    int n_full_graphs;
    double capture_seconds;
    size_t free_before, free_after; /* device memory around the capture */
};

/* Captures the graphs of o's mode over r's buffers (nothing for none); any
 * other mode needs a backend with graphs. r is complete but for its graphs.
 * Prints a progress bar and one summary line on stderr. */
int graph_runner_init(struct graph_runner *gr, struct runner *r, const struct graph_opts *o, struct err *e);

/* How a step of shape real runs: the graph that takes it and its padded
 * shape, or eagerly as it is. */
void graph_runner_plan(const struct graph_runner *gr, const struct step_shape *real, struct step_plan *p);

/* The graph (or pieces) of p's path and graph_index in gr: how a rank
 * follows the plan rank 0 made. -1 when gr has no such graph. */
int graph_runner_lookup(const struct graph_runner *gr, struct step_plan *p);

void graph_runner_free(struct graph_runner *gr, struct backend *be);

#endif
