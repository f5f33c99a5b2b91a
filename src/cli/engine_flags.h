/* The engine and CUDA graph flags that `generate` and `serve` share:
 * --max-num-batched-tokens, --max-num-seqs, --max-model-len,
 * --disable-prefix-caching, --gpu-memory-utilization and the
 * --cuda-graph-* family, parsed into struct engine_opts. */
#ifndef INFER_CLI_ENGINE_FLAGS_H
#define INFER_CLI_ENGINE_FLAGS_H

#include "cli/args.h"
#include "engine/engine.h"

struct engine_flags {
    int max_batched_tokens, max_seqs, max_context, disable_prefix_caching;
    double mem_util;
    const char *graph_mode; /* NULL: full where the backend has graphs, else none */
    const char *graph_bs;   /* explicit bucket list */
    int graph_max_bs, no_graph_padding;
    const char *graph_tokens; /* explicit token-bucket list (piecewise, full) */
    int graph_max_tokens;
    int *bucket_list, *token_list; /* parsed lists, owned (engine_flags_free) */
};

#define ENGINE_FLAGS_N_OPTS 11

struct engine_flags engine_flags_default(void);
/* Writes the flags' ENGINE_FLAGS_N_OPTS options into opts (pointing into f). */
void engine_flags_opts(struct engine_flags *f, struct cli_opt *opts);
/* o = the defaults with the flags applied; the graph flags are checked
 * against the backend of m (errors name the flag). */
int engine_flags_apply(struct engine_flags *f, const struct model *m, struct engine_opts *o, struct err *e);
void engine_flags_free(struct engine_flags *f);

#endif
