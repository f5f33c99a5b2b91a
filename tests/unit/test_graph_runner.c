/* The graph runner's host side: the bucket schedule and its validation
 * (errors name the flag), --cuda-graph-mode parsing, and that a backend
 * without graphs refuses decode mode and runs every step eagerly in mode
 * none. (Replays against eager are checked on the GPU machine:
 * tools/engine_check.py.) */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/graph_runner.h"

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

Test(graph_runner, modes_parse)
{
    enum graph_mode m;
    struct err e = {{0}};
    cr_assert_eq(graph_mode_parse("none", &m, &e), 0);
    cr_assert_eq(m, GRAPH_MODE_NONE);
    cr_assert_eq(graph_mode_parse("decode", &m, &e), 0);
    cr_assert_eq(m, GRAPH_MODE_DECODE);
    cr_assert_neq(graph_mode_parse("full", &m, &e), 0);
    cr_assert(strstr(e.msg, "--cuda-graph-mode"));
    cr_assert_neq(graph_mode_parse("sometimes", &m, &e), 0);
    cr_assert(strstr(e.msg, "unknown"));
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
    o.mode = GRAPH_MODE_NONE;
    cr_assert_eq(graph_runner_init(&gr, &m, NULL, NULL, &o, 8, 64, 4, &e), 0);
    cr_assert_eq(gr.n_buckets, 0);
    graph_runner_free(&gr);
    backend_free(be);
}
