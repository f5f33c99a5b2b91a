/* Runs the engine's forward steps, replaying a captured CUDA graph where one
 * fits (ARCHITECTURE.md section 4; `--cuda-graph-mode`):
 * - none: every step eagerly (the reference for graph correctness);
 * - decode: a step whose rows are all decode rows (one token per sequence,
 *   every row with logits) replays the graph of the smallest batch-size
 *   bucket that holds it, padded with rows whose slot mapping is -1 and
 *   whose KV length is 0 (they read nothing and write nothing); other steps,
 *   and batches past the largest bucket, run eagerly.
 * Graphs are captured at start-up, largest bucket first, after one eager
 * warm-up each (which creates cuBLASLt plans outside the capture); every
 * graph shares the one workspace and metadata buffers, so a replay's CPU
 * work is writing the pinned staging and one launch. */
#ifndef INFER_ENGINE_GRAPH_RUNNER_H
#define INFER_ENGINE_GRAPH_RUNNER_H

#include "model/forward.h"

enum graph_mode { GRAPH_MODE_NONE, GRAPH_MODE_DECODE };

struct graph_opts {
    enum graph_mode mode;
    const int *buckets; /* explicit schedule (ascending), or NULL: the default up to max_bs */
    int n_buckets;
    int max_bs;  /* largest bucket of the default schedule */
    int padding; /* 0: a batch replays only a bucket of exactly its size */
};

struct graph_runner {
    const struct model *m; /* borrowed, as ws and kv */
    struct forward_ws *ws;
    struct kv_store *kv;
    enum graph_mode mode;
    int padding;
    int *buckets; /* ascending */
    int n_buckets;
    void **graphs; /* [n_buckets] */
    int max_blocks_per_seq;
    /* host arrays of a padded batch (largest bucket) */
    int32_t *tokens, *positions, *slots, *seq_of, *query_start, *kv_len, *tables, *logit_rows;
    long n_replays, n_eager;
    double capture_seconds;
    size_t free_before, free_after; /* device memory around the capture */
};

/* Parses "--cuda-graph-mode" values. */
int graph_mode_parse(const char *s, enum graph_mode *mode, struct err *e);

/* The buckets of o (the default schedule 1, 2, 4, 8, 16, 24, 32, then every
 * 16 up to max_bs, or o's list), checked: positive, ascending, at most
 * max_seqs (the sequences of a step) and max_tokens (its token budget); the
 * flag is named in e. *out is malloc'd. */
int graph_buckets(const struct graph_opts *o, int max_seqs, int max_tokens, int **out, int *n, struct err *e);

/* Captures the graphs of o's buckets (nothing for mode none); needs a
 * backend with graphs for any other mode. max_blocks_per_seq: the step
 * builder's block-table row stride. Prints a progress bar and one summary
 * line on stderr. */
int graph_runner_init(struct graph_runner *gr, const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                      const struct graph_opts *o, int max_seqs, int max_tokens, int max_blocks_per_seq,
                      struct err *e);

/* One step: a replay or model_forward. The step's logits land in ws as
 * model_forward leaves them (rows past b's are padding). */
int graph_runner_forward(struct graph_runner *gr, const struct fwd_batch *b, struct err *e);

void graph_runner_free(struct graph_runner *gr);

/* The padding that replays rely on, apart (tests use it on any backend):
 * init_padding sizes gr's host arrays for batches of up to max_bs rows (gr
 * zeroed first; free with graph_runner_free); pad writes into them the
 * decode batch src (NULL: none) followed by padding rows up to bs — slot
 * -1, KV length 0, their own sequence and logit row — so b's first rows
 * give exactly src's results. */
void graph_runner_init_padding(struct graph_runner *gr, const struct model *m, struct forward_ws *ws,
                               struct kv_store *kv, int max_bs, int max_blocks_per_seq);
void graph_runner_pad(struct graph_runner *gr, const struct fwd_batch *src, int bs, struct fwd_batch *b);

#endif
