/* The graph runner's host side: the bucket schedule and its validation
 * (errors name the flag), --cuda-graph-mode parsing, a backend without
 * graphs refusing the graph modes, the choice of graph per step shape, and
 * the padding contract replays rest on (the step builder's padding, on the
 * CPU backend). Replays against eager are checked on the GPU machine:
 * tools/engine_check.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"
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

static struct runner_opts small_opts(void)
{
    return (struct runner_opts){.max_tokens = 32, .max_seqs = 8, .max_context = 16, .block_size = 4,
                                .kv_blocks = 40, .gpu_memory_utilization = 0.9};
}

Test(graph_runner, cpu_backend_refuses_graphs)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-llama", &be);
    struct err e = {{0}};
    struct runner r;
    struct runner_opts o = small_opts();
    o.graph = (struct graph_opts){.mode = GRAPH_MODE_DECODE, .max_bs = 8, .padding = 1};
    cr_assert_neq(runner_init(&r, m, &o, &e), 0);
    cr_assert(strstr(e.msg, "--cuda-graph-mode decode needs --device cuda"), "%s", e.msg);
    o.graph.mode = GRAPH_MODE_FULL;
    cr_assert_neq(runner_init(&r, m, &o, &e), 0);
    cr_assert(strstr(e.msg, "--cuda-graph-mode full needs --device cuda"), "%s", e.msg);
    o.graph.mode = GRAPH_MODE_NONE;
    cr_assert_eq(runner_init(&r, m, &o, &e), 0, "%s", e.msg);
    cr_assert_eq(r.graphs.n_buckets, 0);
    runner_free(&r);
    test_free_model(m, be);
}

/* The choice per step, on a schedule set by hand (no capture needed). */
Test(graph_runner, plans_pick_bucket_and_padding)
{
    int dec[] = {1, 2, 4, 8}, tok[] = {16, 32}, seqs[] = {1, 2, 4, 9};
    void *marks[8 * 4] = {0};
    for (int i = 0; i < 8; i++)
        marks[i] = &marks[i]; /* any non-NULL graph */
    struct graph_runner gr = {.mode = GRAPH_MODE_FULL, .padding = 1, .n_layers = 2, .buckets = dec, .n_buckets = 4,
                              .graphs = marks, .tok_buckets = tok, .n_tok_buckets = 2, .seq_buckets = seqs,
                              .n_seq_buckets = 4, .full = marks, .max_draws = 8};
    struct step_plan p;
    struct step_shape decode3 = {.n_tokens = 3, .n_seqs = 3, .n_draws = 3, .n_logits = 3, .decode = 1};
    graph_runner_plan(&gr, &decode3, &p);
    cr_assert_eq(p.path, STEP_PATH_DECODE);
    cr_assert(p.padded.n_tokens == 4 && p.padded.n_seqs == 4 && p.padded.n_logits == 4 && p.draw_rows == 4);
    /* a mixed step of 20 tokens in 3 sequences: tokens 32, sequences 4 (3 + one for padding) */
    struct step_shape mixed = {.n_tokens = 20, .n_seqs = 3, .n_draws = 2, .n_logits = 2};
    graph_runner_plan(&gr, &mixed, &p);
    cr_assert_eq(p.path, STEP_PATH_FULL);
    cr_assert(p.padded.n_tokens == 32 && p.padded.n_seqs == 4 && p.padded.n_logits == 4 && p.draw_rows == 4,
              "padded %d %d %d, draws %d", p.padded.n_tokens, p.padded.n_seqs, p.padded.n_logits, p.draw_rows);
    /* returning more logit rows than the graph draws: eager, said why */
    struct step_shape scoring = {.n_tokens = 10, .n_seqs = 1, .n_draws = 1, .n_logits = 11};
    graph_runner_plan(&gr, &scoring, &p);
    cr_assert_eq(p.path, STEP_PATH_EAGER);
    cr_assert(p.why_eager && strstr(p.why_eager, "logit rows"));
    cr_assert(p.padded.n_tokens == 10 && p.padded.n_logits == 11 && p.draw_rows == 1);
    /* past the largest token bucket */
    struct step_shape big = {.n_tokens = 33, .n_seqs = 2, .n_draws = 2, .n_logits = 2};
    graph_runner_plan(&gr, &big, &p);
    cr_assert_eq(p.path, STEP_PATH_EAGER);
    /* without padding only exact sizes replay */
    gr.padding = 0;
    graph_runner_plan(&gr, &decode3, &p);
    cr_assert_eq(p.path, STEP_PATH_EAGER);
    /* decode mode leaves mixed steps eager; piecewise pads them by tokens only */
    gr.padding = 1, gr.mode = GRAPH_MODE_DECODE;
    graph_runner_plan(&gr, &mixed, &p);
    cr_assert(p.path == STEP_PATH_EAGER && strstr(p.why_eager, "decode mode"));
    gr.mode = GRAPH_MODE_PIECEWISE, gr.pieces = marks;
    graph_runner_plan(&gr, &mixed, &p);
    cr_assert_eq(p.path, STEP_PATH_PIECEWISE);
    cr_assert(p.padded.n_tokens == 32 && p.padded.n_seqs == 4 && p.padded.n_logits == 2 && p.draw_rows == 2);
}

/* Verify steps (several rows a sequence): full graphs draw a row a sequence
 * and, where the runner speculates (extra_draws), as many more as the
 * tokens allow; past that a step is eager. */
Test(graph_runner, verify_steps_replay_full_graphs)
{
    int dec[] = {1, 2, 4, 8}, tok[] = {16, 32}, seqs[] = {1, 2, 4, 9};
    void *marks[8 * 4] = {0};
    for (int i = 0; i < 8; i++)
        marks[i] = &marks[i];
    struct graph_runner gr = {.mode = GRAPH_MODE_FULL, .padding = 1, .n_layers = 2, .buckets = dec, .n_buckets = 4,
                              .graphs = marks, .tok_buckets = tok, .n_tok_buckets = 2, .seq_buckets = seqs,
                              .n_seq_buckets = 4, .full = marks, .max_draws = 8};
    struct step_plan p;
    /* two sequences, one verifying 4 proposals: 6 tokens, 6 rows */
    const struct step_shape verify = {.n_tokens = 6, .n_seqs = 2, .n_draws = 6, .n_logits = 6};
    graph_runner_plan(&gr, &verify, &p);
    cr_assert(p.path == STEP_PATH_EAGER && strstr(p.why_eager, "logit rows"), "without extra rows: eager");
    gr.max_draws = 8 + 32, gr.extra_draws = 32;
    graph_runner_plan(&gr, &verify, &p);
    cr_assert_eq(p.path, STEP_PATH_FULL);
    /* 16 tokens, 4 sequence slots (2 + one for padding): rows 4 + 32, at most the 16 tokens */
    cr_assert(p.padded.n_tokens == 16 && p.padded.n_seqs == 4 && p.padded.n_logits == 16 && p.draw_rows == 16,
              "padded %d %d %d, draws %d", p.padded.n_tokens, p.padded.n_seqs, p.padded.n_logits, p.draw_rows);
}

/* Sequence s of a hand-made step: blocks 1 + 4s .. 4 + 4s (block size 4),
 * tokens from position pos[s]. */
struct hand {
    struct seq_blocks blocks[8];
    int32_t ids[8][4];
    int32_t tok[8][16];
    struct step_seq seqs[8];
};

static void hand_init(struct hand *h)
{
    memset(h, 0, sizeof *h);
    for (int s = 0; s < 8; s++) {
        for (int b = 0; b < 4; b++)
            h->ids[s][b] = 1 + 4 * s + b;
        h->blocks[s] = (struct seq_blocks){.ids = h->ids[s], .n = 4, .cap = 4};
        for (int p = 0; p < 16; p++)
            h->tok[s][p] = (int32_t)((s * 37 + p * 11 + 3) % 200);
    }
}

static const struct step_seq *hand_step(struct hand *h, int n, const int *first, const int *count, int draw)
{
    for (int s = 0; s < n; s++)
        h->seqs[s] = (struct step_seq){.blocks = &h->blocks[s], .tokens = h->tok[s] + first[s],
                                       .n_tokens = count[s], .start_pos = first[s], .draw = draw};
    return h->seqs;
}

/* Builds seqs padded to `padded` (or as they are) and runs the forward. */
static void forward(struct runner *r, const struct step_seq *seqs, int n, const struct step_shape *padded)
{
    struct err e = {{0}};
    struct step_shape real;
    step_shape_of(seqs, n, &real);
    const struct step_shape *shape = padded ? padded : &real;
    cr_assert_eq(step_build(&r->builder, seqs, n, shape, &e), 0, "%s", e.msg);
    cr_assert_eq(runner_enqueue_step(r, shape, 0, &e), 0, "%s", e.msg);
}

static void expect_rows(const struct runner *r, const float *ref, int rows, const char *what)
{
    const size_t bytes = (size_t)rows * r->m->cfg.vocab_size * sizeof(float);
    cr_assert_eq(memcmp(r->ws.logits, ref, bytes), 0, "%s: real rows changed by padding", what);
}

/* A fixture model with two runners on its backend: one the test pads, one
 * that never sees padding. */
static struct model *two_runners(const char *fixture, struct backend **be, struct runner *r, struct runner *fresh)
{
    struct model *m = test_load_model(fixture, be);
    struct err e = {{0}};
    const struct runner_opts o = small_opts();
    cr_assert_eq(runner_init(r, m, &o, &e), 0, "%s", e.msg);
    cr_assert_eq(runner_init(fresh, m, &o, &e), 0, "%s", e.msg);
    return m;
}

static float *copy_rows(const struct runner *r, int rows)
{
    const size_t bytes = (size_t)rows * r->m->cfg.vocab_size * sizeof(float);
    float *p = malloc(bytes);
    memcpy(p, r->ws.logits, bytes);
    return p;
}

/* The contract replays rest on: a decode step padded to a bucket gives its
 * real rows exactly the logits the unpadded step gives, and the padding
 * rows write nothing (a second unpadded step afterwards still matches a run
 * that never saw padding). */
Test(graph_runner, padding_rows_leave_real_rows_exact)
{
    struct backend *be;
    struct runner r, fresh;
    struct model *m = two_runners("tiny-qwen3", &be, &r, &fresh);
    struct hand h;
    hand_init(&h);
    const int zero[3] = {0, 0, 0}, plen[3] = {5, 6, 7}, one[3] = {1, 1, 1}, two[3] = {6, 7, 8};
    forward(&r, hand_step(&h, 3, zero, plen, 0), 3, NULL); /* prefill */
    forward(&r, hand_step(&h, 3, plen, one, 1), 3, NULL); /* decode, eager */
    float *ref = copy_rows(&r, 3);
    const struct step_shape padded = {.n_tokens = 8, .n_seqs = 8, .n_draws = 8, .n_logits = 8, .decode = 1};
    forward(&r, hand_step(&h, 3, plen, one, 1), 3, &padded); /* the same decode step again (same KV writes) */
    const struct meta_layout *l = &r.meta.layout;
    cr_assert_eq(r.meta.host[l->slot_mapping + 5], -1);
    cr_assert_eq(r.meta.host[l->kv_len + 5], 0);
    cr_assert_eq(r.meta.host[l->seq_of_token + 5], 5);
    cr_assert_eq(r.meta.host[l->query_start + 8], 8);
    expect_rows(&r, ref, 3, "decode");
    for (long i = 3L * m->cfg.vocab_size; i < 8L * m->cfg.vocab_size; i++)
        cr_assert(isfinite(r.ws.logits[i]), "padding row logit %ld is not finite", i);

    /* the next step, unpadded: padding wrote no KV, so it equals a fresh run's */
    forward(&r, hand_step(&h, 3, two, one, 1), 3, NULL);
    float *got = copy_rows(&r, 3);
    forward(&fresh, hand_step(&h, 3, zero, plen, 0), 3, NULL);
    forward(&fresh, hand_step(&h, 3, plen, one, 1), 3, NULL);
    forward(&fresh, hand_step(&h, 3, two, one, 1), 3, NULL);
    expect_rows(&fresh, got, 3, "padding left a trace in the KV cache:");
    free(ref), free(got);
    runner_free(&r), runner_free(&fresh);
    test_free_model(m, be);
}

/* Mixed steps (a prefill chunk beside decode rows) padded the two ways the
 * runner replays them give their real rows exactly the eager logits:
 * - full: padded to (12 tokens, 5 sequences, 5 logit rows), the whole
 *   forward over the padded step;
 * - piecewise: padded to 12 tokens and one padding sequence, the pieces on
 *   the padded step with attention and logits on the real counts.
 * Padding writes no KV: the next step still equals a run that never saw it. */
static void mixed_prefix(struct runner *r, struct hand *h)
{
    const int zero[3] = {0, 0, 0}, plen[3] = {5, 6, 7}, cnt[3] = {3, 1, 1};
    forward(r, hand_step(h, 3, zero, plen, 0), 3, NULL);
    forward(r, hand_step(h, 3, plen, cnt, 1), 3, NULL); /* 5 tokens: 3 of a chunk, 2 decode rows */
}

Test(graph_runner, mixed_padding_full_and_piecewise_exact)
{
    struct backend *be;
    struct runner r, fresh;
    struct model *m = two_runners("tiny-gemma3", &be, &r, &fresh);
    struct err e = {{0}};
    struct hand h;
    hand_init(&h);
    mixed_prefix(&r, &h);
    float *ref = copy_rows(&r, 3);
    const int plen[3] = {5, 6, 7}, cnt[3] = {3, 1, 1};
    const struct step_seq *mixed = hand_step(&h, 3, plen, cnt, 1);
    const struct step_shape full = {.n_tokens = 12, .n_seqs = 5, .n_draws = 5, .n_logits = 5};
    forward(&r, mixed, 3, &full); /* full: the same step again, padded */
    const struct meta_layout *l = &r.meta.layout;
    const int32_t *hs = r.meta.host;
    cr_assert_eq(hs[l->query_start + 3], 5);
    cr_assert_eq(hs[l->query_start + 4], 6); /* padding sequence 3 holds token 5, sequence 4 the rest */
    cr_assert_eq(hs[l->query_start + 5], 12);
    cr_assert_eq(hs[l->seq_of_token + 11], 4);
    cr_assert_eq(hs[l->slot_mapping + 8], -1);
    cr_assert_eq(hs[l->kv_len + 4], 0);
    cr_assert_eq(hs[l->logit_rows + 3], 5);
    expect_rows(&r, ref, 3, "full");

    /* piecewise: the pieces over the padded step, attention and logits as it is */
    struct step_shape real, padded;
    step_shape_of(mixed, 3, &real);
    padded = real;
    padded.n_tokens = 12, padded.n_seqs = 4;
    cr_assert_eq(step_build(&r.builder, mixed, 3, &padded, &e), 0, "%s", e.msg);
    struct fwd_meta meta;
    cr_assert_eq(be->ops->meta_upload(be, &r.meta, padded.n_tokens, padded.n_seqs, padded.n_logits, &meta, &e), 0);
    struct fwd_meta as_is = meta;
    as_is.n_tokens = real.n_tokens, as_is.n_seqs = real.n_seqs, as_is.n_logits = real.n_logits;
    for (int i = 0; i <= m->cfg.n_layers; i++) {
        forward_piece(m, &r.ws, &r.kv, &meta, i);
        if (i < m->cfg.n_layers)
            forward_attention(m, &r.ws, &r.kv, &as_is, i);
    }
    forward_logits(m, &r.ws, &as_is);
    expect_rows(&r, ref, 3, "piecewise");

    /* the next decode step equals the one of a run without padding */
    const int at[3] = {8, 7, 8}, one[3] = {1, 1, 1};
    forward(&r, hand_step(&h, 3, at, one, 1), 3, NULL);
    float *got = copy_rows(&r, 3);
    mixed_prefix(&fresh, &h);
    forward(&fresh, hand_step(&h, 3, at, one, 1), 3, NULL);
    expect_rows(&fresh, got, 3, "padding left a trace in the KV cache:");
    free(ref), free(got);
    runner_free(&r), runner_free(&fresh);
    test_free_model(m, be);
}
