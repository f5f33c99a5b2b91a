#include "cli/engine_flags.h"

#include <stdlib.h>
#include <string.h>

struct engine_flags engine_flags_default(void)
{
    struct engine_flags f = {.o = engine_opts_default()};
    f.suffix_factor = f.o.spec_suffix.spec_factor;
    f.suffix_min_prob = f.o.spec_suffix.min_prob;
    return f;
}

void engine_flags_opts(struct engine_flags *f, struct cli_opt *opts)
{
    struct engine_opts *o = &f->o;
    const struct cli_opt list[ENGINE_FLAGS_N_OPTS] = {
        {"max-num-batched-tokens", CLI_OPT_INT, &o->max_batched_tokens, 0, 1, 1 << 20,
         "token budget of one engine step", 0},
        {"max-num-seqs", CLI_OPT_INT, &o->max_seqs, 0, 1, 1 << 16, "sequences in one engine step", 0},
        {"max-model-len", CLI_OPT_INT, &o->max_context, 0, 0, 1 << 24,
         "context length of one sequence (0: the model's)", 0},
        {"max-total-tokens", CLI_OPT_INT, &f->max_total_tokens, 0, 0, 1 << 30,
         "tokens the KV cache holds, all sequences together (0: on the CPU four full contexts, on a GPU what "
         "--gpu-memory-utilization leaves; on a GPU at most this)",
         0},
        {"gpu-memory-utilization", CLI_OPT_DOUBLE, &o->gpu_memory_utilization, 0, 0, 0,
         "share of the GPU memory left after weights for the KV cache, in (0, 1]", 0},
        {"cuda-graph-mode", CLI_OPT_STRING, &f->graph_mode, 0, 0, 0,
         "none, decode (decode steps as CUDA graphs), piecewise (also other steps, attention eager between "
         "graphs) or full (every step one graph); default full on cuda, none on cpu",
         0},
        {"cuda-graph-max-bs", CLI_OPT_INT, &o->graph.max_bs, 0, 1, 1 << 16,
         "largest batch of the default graph schedule", 0},
        {"cuda-graph-bs", CLI_OPT_STRING, &f->graph_bs, 0, 0, 0,
         "graph batch sizes, ascending (comma-separated)", 0},
        {"disable-cuda-graph-padding", CLI_OPT_FLAG, &f->no_graph_padding, 0, 0, 0,
         "replay only batches of exactly a captured size", 0},
        {"piecewise-cuda-graph-tokens", CLI_OPT_STRING, &f->graph_tokens, 0, 0, 0,
         "token buckets of piecewise and full graphs, ascending (comma-separated)", 0},
        {"piecewise-cuda-graph-max-tokens", CLI_OPT_INT, &o->graph.max_graph_tokens, 0, 1, 1 << 20,
         "largest token bucket of the default schedule (default: --max-num-batched-tokens)", 0},
        {"disable-prefix-caching", CLI_OPT_FLAG, &f->disable_prefix_caching, 0, 0, 0,
         "do not reuse the KV blocks of shared prompt prefixes", 0},
        {"speculative", CLI_OPT_STRING, &f->speculative, 0, 0, 0,
         "speculative decoding: ngram (prompt lookup: the last n tokens found earlier in the prompt or output "
         "propose what followed them) or suffix (suffix decoding: the longest recent match in the prompt, the "
         "output or earlier requests' outputs proposes the continuation most of its occurrences share) or draft "
         "(a smaller model of the same vocabulary, --speculative-model, runs ahead); default none",
         0},
        {"num-speculative-tokens", CLI_OPT_INT, &o->spec_k, 0, 1, 32,
         "the most tokens one step proposes for a sequence (default: 8 with ngram, 16 with suffix, 4 with draft)",
         0},
        {"prompt-lookup-min", CLI_OPT_INT, &o->spec_ngram.n_min, 0, 1, 64, "the shortest n-gram prompt lookup matches",
         0},
        {"prompt-lookup-max", CLI_OPT_INT, &o->spec_ngram.n_max, 0, 1, 64, "the longest n-gram prompt lookup matches",
         0},
        {"speculative-model", CLI_OPT_STRING, &o->spec_model, 0, 0, 0,
         "the draft model of --speculative draft: a checkpoint directory or .gguf file", 0},
        {"suffix-max-depth", CLI_OPT_INT, &o->spec_suffix.max_depth, 0, 2, 64,
         "the longest match suffix decoding looks for", 0},
        {"suffix-spec-factor", CLI_OPT_DOUBLE, &f->suffix_factor, 0, 0, 0,
         "suffix decoding proposes at most this times the match's length, > 0", 0},
        {"suffix-min-prob", CLI_OPT_DOUBLE, &f->suffix_min_prob, 0, 0, 0,
         "suffix decoding stops a proposal where the share of occurrences agreeing falls below this, in [0, 1]", 0},
        {"suffix-cache-tokens", CLI_OPT_INT, &o->spec_suffix.cache_tokens, 0, 0, 1 << 30,
         "finished outputs suffix decoding keeps for later requests, in tokens (0: none)", 0},
    };
    for (int i = 0; i < ENGINE_FLAGS_N_OPTS; i++)
        opts[i] = list[i];
}

static int given(const struct cli_opt *opts, const void *dst)
{
    for (int i = 0; i < ENGINE_FLAGS_N_OPTS; i++)
        if (opts[i].dst == dst)
            return opts[i].seen;
    return 0;
}

int engine_flags_check(struct engine_flags *f, const struct cli_opt *opts, struct err *e)
{
    struct engine_opts *o = &f->o;
    if (!(o->gpu_memory_utilization > 0 && o->gpu_memory_utilization <= 1))
        return err_set(e, "--gpu-memory-utilization must be in (0, 1], got %g", o->gpu_memory_utilization);
    if (f->graph_mode && graph_mode_parse(f->graph_mode, &o->graph.mode, e))
        return -1;
    if (f->graph_bs &&
        (cli_parse_int_list(f->graph_bs, "cuda-graph-bs", &f->bucket_list, &o->graph.n_buckets, e) ||
         graph_check_list(f->bucket_list, o->graph.n_buckets, "--cuda-graph-bs", e)))
        return -1;
    if (f->graph_tokens &&
        (cli_parse_int_list(f->graph_tokens, "piecewise-cuda-graph-tokens", &f->token_list,
                            &o->graph.n_token_buckets, e) ||
         graph_check_list(f->token_list, o->graph.n_token_buckets, "--piecewise-cuda-graph-tokens", e)))
        return -1;
    o->graph.buckets = f->bucket_list;
    o->graph.token_buckets = f->token_list;
    o->graph.padding = !f->no_graph_padding;
    o->prefix_caching = !f->disable_prefix_caching;
    if (f->speculative && !strcmp(f->speculative, "ngram"))
        o->spec_method = SPEC_METHOD_NGRAM;
    else if (f->speculative && !strcmp(f->speculative, "suffix"))
        o->spec_method = SPEC_METHOD_SUFFIX;
    else if (f->speculative && !strcmp(f->speculative, "draft"))
        o->spec_method = SPEC_METHOD_DRAFT;
    else if (f->speculative && strcmp(f->speculative, "none"))
        return err_set(e, "--speculative must be ngram, suffix, draft or none, got '%s'", f->speculative);
    if (o->spec_method == SPEC_METHOD_DRAFT && !o->spec_model)
        return err_set(e, "--speculative draft needs --speculative-model PATH (the draft model)");
    if (o->spec_model && o->spec_method != SPEC_METHOD_DRAFT)
        return err_set(e, "--speculative-model needs --speculative draft");
    if (!(f->suffix_factor > 0 && f->suffix_factor <= 1000))
        return err_set(e, "--suffix-spec-factor must be in (0, 1000], got %g", f->suffix_factor);
    if (!(f->suffix_min_prob >= 0 && f->suffix_min_prob <= 1))
        return err_set(e, "--suffix-min-prob must be in [0, 1], got %g", f->suffix_min_prob);
    if (o->spec_suffix.cache_tokens > 0 && o->spec_suffix.cache_tokens < 64)
        return err_set(e, "--suffix-cache-tokens must be 0 or at least 64, got %d", o->spec_suffix.cache_tokens);
    o->spec_suffix.spec_factor = (float)f->suffix_factor;
    o->spec_suffix.min_prob = (float)f->suffix_min_prob;
    if (o->spec_ngram.n_min > o->spec_ngram.n_max)
        return err_set(e, "--prompt-lookup-min %d is above --prompt-lookup-max %d", o->spec_ngram.n_min,
                       o->spec_ngram.n_max);
    const char *spec_flag = given(opts, &o->spec_k) ? "--num-speculative-tokens" : NULL;
    const char *ngram_flag = given(opts, &o->spec_ngram.n_min)   ? "--prompt-lookup-min"
                             : given(opts, &o->spec_ngram.n_max) ? "--prompt-lookup-max"
                                                                 : NULL;
    const char *suffix_flag = given(opts, &o->spec_suffix.max_depth)      ? "--suffix-max-depth"
                              : given(opts, &f->suffix_factor)            ? "--suffix-spec-factor"
                              : given(opts, &f->suffix_min_prob)          ? "--suffix-min-prob"
                              : given(opts, &o->spec_suffix.cache_tokens) ? "--suffix-cache-tokens"
                                                                          : NULL;
    if (spec_flag && o->spec_method == SPEC_METHOD_NONE)
        return err_set(e, "%s needs --speculative", spec_flag);
    if (ngram_flag && o->spec_method != SPEC_METHOD_NGRAM)
        return err_set(e, "%s needs --speculative ngram", ngram_flag);
    if (suffix_flag && o->spec_method != SPEC_METHOD_SUFFIX)
        return err_set(e, "%s needs --speculative suffix", suffix_flag);
    /* whole blocks, and block 0 (padding rows' scratch) besides */
    if (f->max_total_tokens > 0)
        o->kv_blocks = (f->max_total_tokens + o->block_size - 1) / o->block_size + 1;
    /* the flags that shape graphs need a mode with them (the default is chosen by device later) */
    const char *decode_flag = f->graph_bs                     ? "--cuda-graph-bs"
                              : f->no_graph_padding           ? "--disable-cuda-graph-padding"
                              : given(opts, &o->graph.max_bs) ? "--cuda-graph-max-bs"
                                                              : NULL;
    const char *token_flag = f->graph_tokens                           ? "--piecewise-cuda-graph-tokens"
                             : given(opts, &o->graph.max_graph_tokens) ? "--piecewise-cuda-graph-max-tokens"
                                                                       : NULL;
    f->graph_flag = decode_flag ? decode_flag : token_flag;
    f->graph_mode_given = f->graph_mode != NULL;
    if (f->graph_mode && o->graph.mode == GRAPH_MODE_NONE && f->graph_flag)
        return err_set(e, "%s needs a --cuda-graph-mode other than none", f->graph_flag);
    if (f->graph_mode && o->graph.mode == GRAPH_MODE_DECODE && token_flag)
        return err_set(e, "%s needs --cuda-graph-mode piecewise or full", token_flag);
    return 0;
}

int engine_flags_apply(struct engine_flags *f, const struct model *m, struct engine_opts *o, struct err *e)
{
    *o = f->o;
    const int has_graphs = m->be->ops->graph_begin != NULL;
    if (!f->graph_mode_given)
        o->graph.mode = has_graphs ? GRAPH_MODE_FULL : GRAPH_MODE_NONE;
    if (o->graph.mode == GRAPH_MODE_NONE && f->graph_flag)
        return err_set(e, "%s needs CUDA graphs (--device %s has none)", f->graph_flag, m->be->ops->name);
    if (o->graph.mode != GRAPH_MODE_NONE && !has_graphs)
        return err_set(e, "--cuda-graph-mode %s needs --device cuda (this backend has no graphs; use none)",
                       graph_mode_name(o->graph.mode));
    return 0;
}

void engine_flags_free(struct engine_flags *f)
{
    free(f->bucket_list);
    free(f->token_list);
    f->bucket_list = f->token_list = NULL;
}
