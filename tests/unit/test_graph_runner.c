/* The graph runner's host side: the bucket schedule and its validation
 * (errors name the flag), --cuda-graph-mode parsing, a backend without
 * graphs refusing decode mode, and the padding contract replays rest on
 * (on the CPU backend). Replays against eager are checked on the GPU
 * machine: tools/engine_check.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/graph_runner.h"
#include "test_util.h"

static void expect_buckets(const struct graph_opts *o, int max_seqs, int max_tokens, const int *want, int n_want)
{
    int *b = NULL, n = 0;
    struct err e = {{0}};
    cr_assert_eq(graph_buckets(o, max_seqs, max_tokens, &b, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, n_want, "got %d buckets", n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(b[i], want[i], "bucket %d: %d, want %d", i, b[i], want[i]);
    free(b);
}

static void expect_error(const struct graph_opts *o, int max_seqs, int max_tokens, const char *needle)
{
    int *b = NULL, n = 0;
    struct err e = {{0}};
    cr_assert_neq(graph_buckets(o, max_seqs, max_tokens, &b, &n, &e), 0);
    cr_assert(strstr(e.msg, needle), "'%s' lacks '%s'", e.msg, needle);
}

Test(graph_runner, default_schedule)
{
    struct graph_opts o = {.mode = GRAPH_MODE_DECODE, .max_bs = 256, .padding = 1};
    const int full[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256};
    expect_buckets(&o, 256, 8192, full, 21);
    const int to64[] = {1, 2, 4, 8, 16, 24, 32, 48, 64}; /* clipped at --max-num-seqs */
    expect_buckets(&o, 64, 8192, to64, 9);
    const int to20[] = {1, 2, 4, 8, 16, 20}; /* the limit itself closes the schedule */
    expect_buckets(&o, 64, 20, to20, 6);
    o.max_bs = 40;
    const int to40[] = {1, 2, 4, 8, 16, 24, 32, 40};
    expect_buckets(&o, 64, 8192, to40, 8);
}

Test(graph_runner, explicit_list_checked)
{
    const int good[] = {1, 3, 8};
    struct graph_opts o = {.mode = GRAPH_MODE_DECODE, .buckets = good, .n_buckets = 3, .padding = 1};
    expect_buckets(&o, 8, 8, good, 3);
    const int desc[] = {4, 2}, zero[] = {0, 2}, big[] = {2, 100};
    o.buckets = desc, o.n_buckets = 2;
    expect_error(&o, 64, 2048, "ascending");
    o.buckets = zero;
    expect_error(&o, 64, 2048, "positive");
    o.buckets = big;
    expect_error(&o, 64, 2048, "--max-num-seqs");
    expect_error(&o, 256, 50, "--max-num-batched-tokens");
    o.buckets = NULL, o.max_bs = 0;
    expect_error(&o, 64, 2048, "--cuda-graph-max-bs");
}

static void expect_tokens(const struct graph_opts *o, int max_tokens, const int *want, int n_want)
{
    int *b = NULL, n = 0;
    struct err e = {{0}};
    cr_assert_eq(graph_token_buckets(o, max_tokens, &b, &n, &e), 0, "%s", e.msg);
    cr_assert_eq(n, n_want, "got %d token buckets", n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(b[i], want[i], "token bucket %d: %d, want %d", i, b[i], want[i]);
    free(b);
}

static void expect_token_error(const struct graph_opts *o, int max_tokens, const char *needle)
{
    int *b = NULL, n = 0;
    struct err e = {{0}};
    cr_assert_neq(graph_token_buckets(o, max_tokens, &b, &n, &e), 0);
    cr_assert(strstr(e.msg, needle), "'%s' lacks '%s'", e.msg, needle);
}

Test(graph_runner, token_schedule)
{
    struct graph_opts o = {.mode = GRAPH_MODE_FULL, .max_bs = 256, .padding = 1};
    const int to2048[] = {16,  32,  48,  64,  128, 192, 256,  320,  384,  448,  512,
                          640, 768, 896, 1024, 1280, 1536, 1792, 2048};
    expect_tokens(&o, 2048, to2048, 19);
    const int to100[] = {16, 32, 48, 64, 100}; /* the budget closes the schedule */
    expect_tokens(&o, 100, to100, 5);
    const int to8[] = {8};
    expect_tokens(&o, 8, to8, 1);
    o.max_graph_tokens = 300;
    const int to300[] = {16, 32, 48, 64, 128, 192, 256, 300};
    expect_tokens(&o, 2048, to300, 8);
    o.max_graph_tokens = 4096;
    expect_token_error(&o, 2048, "--piecewise-cuda-graph-max-tokens 4096 exceeds --max-num-batched-tokens 2048");
    o.max_graph_tokens = 0;
    const int list[] = {10, 100, 1000}, desc[] = {100, 10}, zero[] = {0, 8};
    o.token_buckets = list, o.n_token_buckets = 3;
    expect_tokens(&o, 2048, list, 3);
    expect_token_error(&o, 512, "--piecewise-cuda-graph-tokens: size 1000 exceeds --max-num-batched-tokens 512");
    o.max_graph_tokens = 200;
    expect_token_error(&o, 2048, "size 1000 exceeds --piecewise-cuda-graph-max-tokens 200");
    o.max_graph_tokens = 0;
    o.token_buckets = desc, o.n_token_buckets = 2;
    expect_token_error(&o, 2048, "ascending");
    o.token_buckets = zero;
    expect_token_error(&o, 2048, "positive");
}

Test(graph_runner, modes_parse)
{
    enum graph_mode m;
    struct err e = {{0}};
    cr_assert_eq(graph_mode_parse("none", &m, &e), 0);
    cr_assert_eq(m, GRAPH_MODE_NONE);
    cr_assert_eq(graph_mode_parse("decode", &m, &e), 0);
    cr_assert_eq(m, GRAPH_MODE_DECODE);
    cr_assert_eq(graph_mode_parse("piecewise", &m, &e), 0);
    cr_assert_eq(m, GRAPH_MODE_PIECEWISE);
    cr_assert_eq(graph_mode_parse("full", &m, &e), 0);
    cr_assert_eq(m, GRAPH_MODE_FULL);
    cr_assert_str_eq(graph_mode_name(GRAPH_MODE_PIECEWISE), "piecewise");
    cr_assert_neq(graph_mode_parse("sometimes", &m, &e), 0);
    cr_assert(strstr(e.msg, "--cuda-graph-mode") && strstr(e.msg, "unknown"), "%s", e.msg);
}

Test(graph_runner, cpu_backend_refuses_graphs)
{
    struct err e = {{0}};
    struct backend *be = backend_create(BACKEND_KIND_CPU, 1, &e);
    cr_assert(be, "%s", e.msg);
    struct model m = {0};
    m.be = be;
    struct graph_runner gr;
    struct graph_opts o = {.mode = GRAPH_MODE_DECODE, .max_bs = 8, .padding = 1};
    cr_assert_neq(graph_runner_init(&gr, &m, NULL, NULL, &o, 8, 64, 4, &e), 0);
    cr_assert(strstr(e.msg, "--device cuda"), "%s", e.msg);
    o.mode = GRAPH_MODE_FULL;
    cr_assert_neq(graph_runner_init(&gr, &m, NULL, NULL, &o, 8, 64, 4, &e), 0);
    cr_assert(strstr(e.msg, "--cuda-graph-mode full needs --device cuda"), "%s", e.msg);
    o.mode = GRAPH_MODE_NONE;
    cr_assert_eq(graph_runner_init(&gr, &m, NULL, NULL, &o, 8, 64, 4, &e), 0);
    cr_assert_eq(gr.n_buckets, 0);
    graph_runner_free(&gr);
    backend_free(be);
}

/* One step of n sequences: sequence s has its blocks at 1 + 4s.. (block
 * size 4), new tokens at positions pos[s].. */
struct steps {
    int32_t tok[32], pos[32], slot[32], seq[32], qs[9], kvl[8], tables[8 * 4], rows[32];
};

static struct fwd_batch step_of(struct steps *st, int n, const int *first, const int *count, int with_logits)
{
    int t = 0, nl = 0;
    for (int s = 0; s < n; s++) {
        st->qs[s] = t;
        for (int b = 0; b < 4; b++)
            st->tables[s * 4 + b] = 1 + 4 * s + b;
        for (int j = 0; j < count[s]; j++, t++) {
            const int p = first[s] + j;
            st->tok[t] = (int32_t)((s * 37 + p * 11 + 3) % 200);
            st->pos[t] = p;
            st->slot[t] = st->tables[s * 4 + p / 4] * 4 + p % 4;
            st->seq[t] = s;
        }
        st->kvl[s] = first[s] + count[s];
        if (with_logits)
            st->rows[nl++] = t - 1;
    }
    st->qs[n] = t;
    return (struct fwd_batch){.n_tokens = t, .n_seqs = n, .n_logits = nl, .max_blocks_per_seq = 4,
                              .token_ids = st->tok, .positions = st->pos, .slot_mapping = st->slot,
                              .seq_of_token = st->seq, .query_start = st->qs, .kv_len = st->kvl,
                              .block_tables = st->tables, .logit_rows = st->rows};
}

/* Frees what the padding tests set up. */
static void teardown(struct graph_runner *gr, struct kv_store *kv, struct kv_store *kv2, struct forward_ws *ws,
                     struct model *m, struct backend *be)
{
    graph_runner_free(gr);
    kv_store_free(kv, be);
    kv_store_free(kv2, be);
    forward_ws_free(ws, m);
    test_free_model(m, be);
}

/* The contract replays rest on: a decode batch padded to a bucket with
 * graph_runner_pad gives its real rows exactly the logits the unpadded
 * batch gives, and the padding rows write nothing (a second unpadded step
 * afterwards still matches a run that never saw padding). */
Test(graph_runner, padding_rows_leave_real_rows_exact)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    const int V = m->cfg.vocab_size, n = 3;
    struct err e = {{0}};
    struct forward_ws ws;
    struct kv_store kv;
    struct meta_caps caps = {32, 8, 4, 8};
    cr_assert_eq(forward_ws_init(&ws, m, 32, 8, &e), 0, "%s", e.msg);
    cr_assert_eq(be->ops->meta_init(be, &caps, &e), 0, "%s", e.msg);
    cr_assert_eq(kv_store_init(&kv, &m->cfg, be, 40, 4, &e), 0, "%s", e.msg);
    struct steps st;
    const int zero[3] = {0, 0, 0}, plen[3] = {5, 6, 7}, one[3] = {1, 1, 1};
    struct fwd_batch b = step_of(&st, n, zero, plen, 0); /* prefill */
    cr_assert_eq(model_forward(m, &ws, &kv, &b, &e), 0, "%s", e.msg);
    b = step_of(&st, n, plen, one, 1); /* decode, eager */
    cr_assert_eq(model_forward(m, &ws, &kv, &b, &e), 0, "%s", e.msg);
    float *ref = malloc((size_t)n * V * sizeof(float)), *got = malloc((size_t)8 * V * sizeof(float));
    cr_assert_eq(be->ops->copy_to_host(be, ref, ws.logits, (size_t)n * V * sizeof(float), &e), 0);

    struct graph_runner gr = {0};
    graph_runner_init_padding(&gr, m, &ws, &kv, 8, 8, 4);
    struct fwd_batch p;
    graph_runner_pad(&gr, &b, 8, 8, 8, &p); /* the same decode step again (same KV writes), padded */
    cr_assert_eq(p.n_tokens, 8);
    cr_assert_eq(p.slot_mapping[5], -1);
    cr_assert_eq(p.kv_len[5], 0);
    cr_assert_eq(model_forward(m, &ws, &kv, &p, &e), 0, "%s", e.msg);
    cr_assert_eq(be->ops->copy_to_host(be, got, ws.logits, (size_t)8 * V * sizeof(float), &e), 0);
    cr_assert_eq(memcmp(got, ref, (size_t)n * V * sizeof(float)), 0, "real rows changed by padding");
    for (long i = (long)n * V; i < 8L * V; i++)
        cr_assert(isfinite(got[i]), "padding row logit %ld is not finite", i);

    /* the next step, unpadded: padding wrote no KV, so it equals a fresh run's */
    const int two[3] = {6, 7, 8};
    struct fwd_batch b2 = step_of(&st, n, two, one, 1);
    cr_assert_eq(model_forward(m, &ws, &kv, &b2, &e), 0, "%s", e.msg);
    cr_assert_eq(be->ops->copy_to_host(be, got, ws.logits, (size_t)n * V * sizeof(float), &e), 0);
    struct kv_store kv2;
    cr_assert_eq(kv_store_init(&kv2, &m->cfg, be, 40, 4, &e), 0, "%s", e.msg);
    b = step_of(&st, n, zero, plen, 0);
    cr_assert_eq(model_forward(m, &ws, &kv2, &b, &e), 0, "%s", e.msg);
    b = step_of(&st, n, plen, one, 0);
    cr_assert_eq(model_forward(m, &ws, &kv2, &b, &e), 0, "%s", e.msg);
    b2 = step_of(&st, n, two, one, 1);
    cr_assert_eq(model_forward(m, &ws, &kv2, &b2, &e), 0, "%s", e.msg);
    cr_assert_eq(be->ops->copy_to_host(be, ref, ws.logits, (size_t)n * V * sizeof(float), &e), 0);
    cr_assert_eq(memcmp(got, ref, (size_t)n * V * sizeof(float)), 0, "padding rows left a trace in the KV cache");

    free(ref), free(got);
    teardown(&gr, &kv, &kv2, &ws, m, be);
}

/* Mixed steps (a prefill chunk beside decode rows) padded the two ways the
 * runner replays them give their real rows exactly the eager logits:
 * - full: padded to (12 tokens, 5 sequences, 5 logit rows), the whole
 *   forward over the padded step;
 * - piecewise: padded to 12 tokens and one padding sequence, the pieces on
 *   the padded step with attention and logits on the real counts.
 * Padding writes no KV: the next step still equals a run that never saw it. */
static void mixed_prefix(struct model *m, struct forward_ws *ws, struct kv_store *kv, struct steps *st,
                         struct fwd_batch *mixed)
{
    struct err e = {{0}};
    const int zero[3] = {0, 0, 0}, plen[3] = {5, 6, 7}, cnt[3] = {3, 1, 1};
    struct fwd_batch b = step_of(st, 3, zero, plen, 0);
    cr_assert_eq(model_forward(m, ws, kv, &b, &e), 0, "%s", e.msg);
    *mixed = step_of(st, 3, plen, cnt, 1); /* 5 tokens: 3 of a chunk, 2 decode rows */
    mixed->skip_argmax = 1;
    cr_assert_eq(model_forward(m, ws, kv, mixed, &e), 0, "%s", e.msg);
}

static void expect_rows(struct backend *be, const struct forward_ws *ws, const float *ref, int rows, int V,
                        const char *what)
{
    struct err e = {{0}};
    float *got = malloc((size_t)rows * V * sizeof(float));
    cr_assert_eq(be->ops->copy_to_host(be, got, ws->logits, (size_t)rows * V * sizeof(float), &e), 0);
    cr_assert_eq(memcmp(got, ref, (size_t)rows * V * sizeof(float)), 0, "%s: real rows changed by padding", what);
    free(got);
}

Test(graph_runner, mixed_padding_full_and_piecewise_exact)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-gemma3", &be);
    const int V = m->cfg.vocab_size;
    struct err e = {{0}};
    struct forward_ws ws;
    struct kv_store kv, kv2;
    struct meta_caps caps = {32, 8, 4, 8};
    cr_assert_eq(forward_ws_init(&ws, m, 32, 8, &e), 0, "%s", e.msg);
    cr_assert_eq(be->ops->meta_init(be, &caps, &e), 0, "%s", e.msg);
    cr_assert_eq(kv_store_init(&kv, &m->cfg, be, 40, 4, &e), 0, "%s", e.msg);
    cr_assert_eq(kv_store_init(&kv2, &m->cfg, be, 40, 4, &e), 0, "%s", e.msg);
    struct steps st;
    struct fwd_batch b;
    mixed_prefix(m, &ws, &kv, &st, &b);
    float *ref = malloc((size_t)3 * V * sizeof(float));
    cr_assert_eq(be->ops->copy_to_host(be, ref, ws.logits, (size_t)3 * V * sizeof(float), &e), 0);

    struct graph_runner gr = {0};
    graph_runner_init_padding(&gr, m, &ws, &kv, 16, 8, 4);
    struct fwd_batch p;
    graph_runner_pad(&gr, &b, 12, 5, 5, &p); /* full: the same step again, padded */
    cr_assert_eq(p.query_start[3], 5);
    cr_assert_eq(p.query_start[4], 6); /* padding sequence 3 holds token 5, sequence 4 the rest */
    cr_assert_eq(p.query_start[5], 12);
    cr_assert_eq(p.seq_of_token[11], 4);
    cr_assert_eq(p.slot_mapping[8], -1);
    cr_assert_eq(p.kv_len[4], 0);
    cr_assert_eq(p.logit_rows[3], 5);
    cr_assert_eq(model_forward(m, &ws, &kv, &p, &e), 0, "%s", e.msg);
    expect_rows(be, &ws, ref, 3, V, "full");

    graph_runner_pad(&gr, &b, 12, 4, 3, &p); /* piecewise */
    struct fwd_meta meta;
    cr_assert_eq(be->ops->batch_upload(be, &p, &meta, &e), 0, "%s", e.msg);
    struct fwd_meta real = meta;
    real.n_tokens = b.n_tokens, real.n_seqs = b.n_seqs, real.n_logits = b.n_logits;
    for (int i = 0; i <= m->cfg.n_layers; i++) {
        forward_piece(m, &ws, &kv, &meta, i);
        if (i < m->cfg.n_layers)
            forward_attention(m, &ws, &kv, &real, i);
    }
    forward_logits(m, &ws, &real, 1);
    expect_rows(be, &ws, ref, 3, V, "piecewise");

    /* the next decode step equals the one of a run without padding */
    const int at[3] = {8, 7, 8}, one[3] = {1, 1, 1};
    struct fwd_batch nxt = step_of(&st, 3, at, one, 1);
    cr_assert_eq(model_forward(m, &ws, &kv, &nxt, &e), 0, "%s", e.msg);
    float *got = malloc((size_t)3 * V * sizeof(float));
    cr_assert_eq(be->ops->copy_to_host(be, got, ws.logits, (size_t)3 * V * sizeof(float), &e), 0);
    mixed_prefix(m, &ws, &kv2, &st, &b);
    nxt = step_of(&st, 3, at, one, 1);
    cr_assert_eq(model_forward(m, &ws, &kv2, &nxt, &e), 0, "%s", e.msg);
    expect_rows(be, &ws, got, 3, V, "padding left a trace in the KV cache:");

    free(ref), free(got);
    teardown(&gr, &kv, &kv2, &ws, m, be);
}
