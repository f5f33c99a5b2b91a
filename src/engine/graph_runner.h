/* Runs the engine's forward steps, replaying captured CUDA graphs where one
 * fits (ARCHITECTURE.md section 4; `--cuda-graph-mode`):
 * - none: every step eagerly (the reference for graph correctness);
 * - decode: a step whose rows are all decode rows (one token per sequence,
 *   every row with logits) replays the graph of the smallest batch-size
 *   bucket that holds it; other steps run eagerly;
 * - piecewise: decode steps as in decode; any other step is padded to the
 *   smallest token bucket that holds it and replays that bucket's pieces
 *   (one graph per stretch between attention calls, model/forward.h), with
 *   attention and the logits run eagerly on the step's real counts;
 * - full: decode steps as in decode; any other step is padded to a (token
 *   bucket, sequence-slot bucket) pair and replays one graph of the whole
 *   step. The attention kernels find their work on the device (tiles from
 *   query_start, key ranges from kv_len), so a grid fixed by the bucket
 *   serves any step that fits it.
 * Padding (graph_runner_pad): tokens with slot -1 (no KV write) in
 * sequences with KV length 0 (attention sees nothing), their own logit
 * rows; they cost compute and change nothing. Steps past the largest bucket
 * run eagerly.
 * Graphs are captured at start-up, largest first, each after one eager
 * warm-up (which creates cuBLASLt plans outside the capture); every graph
 * shares the one workspace and metadata buffers, so a replay's CPU work is
 * writing the pinned staging and launching. */
#ifndef INFER_ENGINE_GRAPH_RUNNER_H
#define INFER_ENGINE_GRAPH_RUNNER_H

#include "model/forward.h"

enum graph_mode { GRAPH_MODE_NONE, GRAPH_MODE_DECODE, GRAPH_MODE_PIECEWISE, GRAPH_MODE_FULL };

struct graph_opts {
    enum graph_mode mode;
    const int *buckets; /* decode batch sizes (ascending), or NULL: the default up to max_bs */
    int n_buckets;
    int max_bs;  /* largest bucket of the default decode schedule */
    int padding; /* 0: a step replays only a bucket of exactly its size */
    const int *token_buckets; /* piecewise / full token buckets (ascending), or NULL: the default */
    int n_token_buckets;
    int max_graph_tokens; /* largest token bucket of the default schedule; 0: the token budget */
    int sample_vocab;     /* > 0: decode and full graphs also draw the step's tokens (backend sample_*) */
};

struct graph_runner {
    const struct model *m; /* borrowed, as ws and kv */
    struct forward_ws *ws;
    struct kv_store *kv;
    enum graph_mode mode;
    int padding;
    int *buckets; /* decode batch sizes, ascending */
    int n_buckets;
    void **graphs; /* [n_buckets] */
    int *tok_buckets; /* piecewise and full: token buckets, ascending */
    int n_tok_buckets;
    int *seq_buckets; /* full: sequence-slot buckets, ascending */
    int n_seq_buckets;
    void **pieces; /* piecewise: [n_tok_buckets][n_layers + 1] */
    void **full;   /* full: [n_tok_buckets][n_seq_buckets], NULL for pairs not captured */
    int max_blocks_per_seq, max_logits;
    /* host arrays of a padded batch */
    int32_t *tokens, *positions, *slots, *seq_of, *query_start, *kv_len, *tables, *logit_rows;
    int cap_tokens, cap_seqs;
    long n_replays, n_eager; /* replays of any kind; steps run eagerly */
    int n_full_graphs;
    int logged_eager; /* the first eager step in a graph mode was logged */
    int sample_vocab; /* as in graph_opts */
    double capture_seconds;
    size_t free_before, free_after; /* device memory around the capture */
};

/* Parses "--cuda-graph-mode" values. */
int graph_mode_parse(const char *s, enum graph_mode *mode, struct err *e);
const char *graph_mode_name(enum graph_mode mode);

/* The decode buckets of o (the default schedule 1, 2, 4, 8, 16, 24, 32,
 * then every 16 up to max_bs, or o's list), checked: positive, ascending, at
 * most max_seqs (the sequences of a step) and max_tokens (its token
 * budget); the flag is named in e. *out is malloc'd. */
int graph_buckets(const struct graph_opts *o, int max_seqs, int max_tokens, int **out, int *n, struct err *e);

/* The token buckets of piecewise and full graphs: o's list, or 16, 32, 48,
 * 64, then every 64 up to 512, every 128 up to 1024, every 256 up to 4096,
 * every 512 beyond, closed by the largest itself (o->max_graph_tokens, or
 * the token budget max_tokens); checked like graph_buckets. */
int graph_token_buckets(const struct graph_opts *o, int max_tokens, int **out, int *n, struct err *e);

/* Captures the graphs of o's mode (nothing for none); needs a backend with
 * graphs for any other mode. max_seqs: the scheduler's sequence limit (the
 * backend's metadata must hold max_seqs + 1 sequences: a padded step may
 * need one more); max_tokens: the token budget; max_blocks_per_seq: the
 * step builder's block-table row stride. Prints a progress bar and one
 * summary line on stderr. */
int graph_runner_init(struct graph_runner *gr, const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                      const struct graph_opts *o, int max_seqs, int max_tokens, int max_blocks_per_seq,
                      struct err *e);

/* One step: a replay or model_forward. The step's logits land in ws as
 * model_forward leaves them (rows past b's are padding). rows[n_rows] (or
 * NULL): the step's draws for the backend's sampler; where the replayed
 * graph draws (decode and full graphs with sample_vocab), they are staged
 * for it and 1 is returned: the caller collects the draws with
 * sample_finish. 0: only the forward ran (the caller draws); -1: error. */
int graph_runner_forward(struct graph_runner *gr, const struct fwd_batch *b, const struct sample_row *rows,
                         int n_rows, struct err *e);

void graph_runner_free(struct graph_runner *gr);

/* The padding that replays rely on, apart (tests use it on any backend):
 * init_padding sizes gr's host arrays for padded steps of up to max_tokens
 * tokens and max_seqs sequences (gr zeroed first; free with
 * graph_runner_free); pad writes into them the step src (NULL: none),
 * followed by padding up to n_tokens tokens, n_seqs sequences and n_logits
 * logit rows: padding token j (slot -1, position 0) goes to sequence
 * src's + j while there are sequences left, the rest to the last one;
 * padding sequences have KV length 0; padding logit rows point at padding
 * tokens (or the last token). Needs n_seqs > src's sequences when n_tokens >
 * src's tokens. b's first rows then give exactly src's results. */
void graph_runner_init_padding(struct graph_runner *gr, const struct model *m, struct forward_ws *ws,
                               struct kv_store *kv, int max_tokens, int max_seqs, int max_blocks_per_seq);
void graph_runner_pad(struct graph_runner *gr, const struct fwd_batch *src, int n_tokens, int n_seqs,
                      int n_logits, struct fwd_batch *b);

#endif
