#include "cli/engine_flags.h"

#include <stdlib.h>

struct engine_flags engine_flags_default(void)
{
    return (struct engine_flags){.max_batched_tokens = 2048, .max_seqs = 64, .mem_util = 0.90, .graph_max_bs = 256};
}

void engine_flags_opts(struct engine_flags *f, struct cli_opt *opts)
{
    const struct cli_opt list[ENGINE_FLAGS_N_OPTS] = {
        {"max-num-batched-tokens", CLI_OPT_INT, &f->max_batched_tokens, 0, 1, 1 << 20,
         "token budget of one engine step (default 2048)", 0},
        {"max-num-seqs", CLI_OPT_INT, &f->max_seqs, 0, 1, 1 << 16, "sequences in one engine step (default 64)", 0},
        {"max-model-len", CLI_OPT_INT, &f->max_context, 0, 0, 1 << 24,
         "context length of one sequence (default: the model's)", 0},
        {"gpu-memory-utilization", CLI_OPT_DOUBLE, &f->mem_util, 0, 0, 0,
         "share of the GPU memory left after weights for the KV cache (default 0.90)", 0},
        {"cuda-graph-mode", CLI_OPT_STRING, &f->graph_mode, 0, 0, 0,
         "none, decode (decode steps as CUDA graphs), piecewise (also other steps, attention eager between "
         "graphs) or full (every step one graph); default full on cuda",
         0},
        {"cuda-graph-max-bs", CLI_OPT_INT, &f->graph_max_bs, 0, 1, 1 << 16,
         "largest batch of the default graph schedule (default 256)", 0},
        {"cuda-graph-bs", CLI_OPT_STRING, &f->graph_bs, 0, 0, 0, "graph batch sizes, ascending (comma-separated)", 0},
        {"disable-cuda-graph-padding", CLI_OPT_FLAG, &f->no_graph_padding, 0, 0, 0,
         "replay only batches of exactly a captured size", 0},
        {"piecewise-cuda-graph-tokens", CLI_OPT_STRING, &f->graph_tokens, 0, 0, 0,
         "token buckets of piecewise and full graphs, ascending (comma-separated)", 0},
        {"piecewise-cuda-graph-max-tokens", CLI_OPT_INT, &f->graph_max_tokens, 0, 1, 1 << 20,
         "largest token bucket of the default schedule (default: --max-num-batched-tokens)", 0},
        {"disable-prefix-caching", CLI_OPT_FLAG, &f->disable_prefix_caching, 0, 0, 0,
         "do not reuse the KV blocks of shared prompt prefixes", 0},
    };
    for (int i = 0; i < ENGINE_FLAGS_N_OPTS; i++)
        opts[i] = list[i];
}

/* --cuda-graph-mode, --cuda-graph-bs, --cuda-graph-max-bs, --disable-cuda-graph-padding,
 * --piecewise-cuda-graph-tokens, --piecewise-cuda-graph-max-tokens */
static int graph_flags(struct engine_flags *f, const struct model *m, struct graph_opts *g, struct err *e)
{
    g->mode = m->be->ops->graph_begin ? GRAPH_MODE_FULL : GRAPH_MODE_NONE;
    if (f->graph_mode && graph_mode_parse(f->graph_mode, &g->mode, e))
        return -1;
    g->max_bs = f->graph_max_bs;
    g->padding = !f->no_graph_padding;
    if (f->graph_bs) {
        if (cli_parse_int_list(f->graph_bs, "cuda-graph-bs", &f->bucket_list, &g->n_buckets, e))
            return -1;
        g->buckets = f->bucket_list;
    }
    if (g->mode == GRAPH_MODE_NONE && (f->graph_bs || f->no_graph_padding))
        return err_set(e, "--cuda-graph-bs and --disable-cuda-graph-padding need a --cuda-graph-mode other than "
                          "none");
    g->max_graph_tokens = f->graph_max_tokens;
    if (f->graph_tokens) {
        if (cli_parse_int_list(f->graph_tokens, "piecewise-cuda-graph-tokens", &f->token_list, &g->n_token_buckets,
                               e))
            return -1;
        g->token_buckets = f->token_list;
    }
    if (g->mode != GRAPH_MODE_PIECEWISE && g->mode != GRAPH_MODE_FULL && (f->graph_tokens || f->graph_max_tokens))
        return err_set(e, "--piecewise-cuda-graph-tokens and --piecewise-cuda-graph-max-tokens need "
                          "--cuda-graph-mode piecewise or full");
    return 0;
}

int engine_flags_apply(struct engine_flags *f, const struct model *m, struct engine_opts *o, struct err *e)
{
    *o = engine_opts_default();
    o->max_batched_tokens = f->max_batched_tokens;
    o->max_seqs = f->max_seqs;
    o->max_context = f->max_context;
    o->prefix_caching = !f->disable_prefix_caching;
    o->gpu_memory_utilization = f->mem_util;
    return graph_flags(f, m, &o->graph, e);
}

void engine_flags_free(struct engine_flags *f)
{
    free(f->bucket_list);
    free(f->token_list);
    f->bucket_list = f->token_list = NULL;
}
