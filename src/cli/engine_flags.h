/* The engine and CUDA graph flags that every subcommand running the model
 * shares (generate, logits, bench, serve): --max-num-batched-tokens,
 * --max-num-seqs, --max-model-len, --max-total-tokens, --gpu-memory-utilization,
 * --disable-prefix-caching, speculative decoding's --speculative,
 * --num-speculative-tokens, --speculative-model, --prompt-lookup-min/max and
 * --suffix-*, and
 * the --cuda-graph-* family, parsed straight
 * into a struct engine_opts whose defaults (engine_opts_default) are the
 * flags' defaults. */
#ifndef INFER_CLI_ENGINE_FLAGS_H
#define INFER_CLI_ENGINE_FLAGS_H

#include "cli/args.h"
#include "engine/engine.h"
#include "model/model.h"

struct engine_flags {
    struct engine_opts o;     /* the numeric flags land here */
    const char *graph_mode;   /* NULL: full where the backend has graphs, else none */
    const char *graph_bs;     /* explicit decode bucket list */
    const char *graph_tokens; /* explicit token-bucket list (piecewise, full) */
    int no_graph_padding, disable_prefix_caching;
    int max_total_tokens;   /* 0: the device's memory share, or four full contexts on the CPU */
    const char *speculative; /* NULL: none */
    double suffix_factor, suffix_min_prob; /* --suffix-spec-factor, --suffix-min-prob (floats in o) */
    int graph_mode_given;   /* set by engine_flags_check */
    const char *graph_flag; /* set by engine_flags_check: a graph-shaping flag that was given, or NULL */
    int *bucket_list, *token_list; /* the parsed lists, owned (engine_flags_free) */
};

#define ENGINE_FLAGS_N_OPTS 21

struct engine_flags engine_flags_default(void);
/* Writes the ENGINE_FLAGS_N_OPTS options into opts (pointing into f). */
void engine_flags_opts(struct engine_flags *f, struct cli_opt *opts);
/* After parsing, before anything loads: every value on its own (the mode's
 * name, the bucket lists, the memory share); opts tells which were given.
 * Errors name the flag. */
int engine_flags_check(struct engine_flags *f, const struct cli_opt *opts, struct err *e);
/* The engine's options for the model m: the graph mode's default for its
 * backend, and the flags that need a graph mode. */
int engine_flags_apply(struct engine_flags *f, const struct model *m, struct engine_opts *o, struct err *e);
void engine_flags_free(struct engine_flags *f);

#endif
