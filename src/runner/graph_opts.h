/* The CUDA graph options (`--cuda-graph-mode` and the bucket flags) and
 * their schedules, checked with errors that name the flag
 * (graph_schedule.c). Apart from the graph runner so that the engine's
 * options carry them without the backend's headers. */
#ifndef INFER_RUNNER_GRAPH_OPTS_H
#define INFER_RUNNER_GRAPH_OPTS_H

#include "core/error.h"

enum graph_mode { GRAPH_MODE_NONE, GRAPH_MODE_DECODE, GRAPH_MODE_PIECEWISE, GRAPH_MODE_FULL };

struct graph_opts {
    enum graph_mode mode;
    const int *buckets; /* decode batch sizes (ascending), or NULL: the default up to max_bs */
    int n_buckets;
    int max_bs;               /* largest bucket of the default decode schedule */
    int padding;              /* 0: a step replays only a bucket of exactly its size */
    const int *token_buckets; /* piecewise / full token buckets (ascending), or NULL: the default */
    int n_token_buckets;
    int max_graph_tokens; /* largest token bucket of the default schedule; 0: the token budget */
};

/* Parses "--cuda-graph-mode" values. */
int graph_mode_parse(const char *s, enum graph_mode *mode, struct err *e);
const char *graph_mode_name(enum graph_mode mode);

/* Checks a bucket list given on the command line (positive, ascending),
 * naming the flag; the limits that depend on other flags are checked by
 * graph_buckets and graph_token_buckets. */
int graph_check_list(const int *v, int n, const char *flag, struct err *e);

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

#endif
