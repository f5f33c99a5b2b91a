/* Tensor parallelism's arithmetic on the CPU, in one process: N ranks as
 * threads, each with its own CPU backend, its share of a tiny fixture model
 * (model_load_shard) and a step runner, joined by the CPU communicator. They
 * run the same steps (a chunked prefill, then decode steps); rank 0's
 * logits must equal the whole model's within 1e-5 (fp32: only the order of
 * the partial sums differs). N = 2 and 4 on the fixtures (4 attention
 * heads); N = 8 on 8-head variants of the Llama and Qwen3 fixtures with
 * random weights (each rank one query head, each of the 2 KV heads on 4
 * ranks). The process-level protocol (bootstrap, control messages,
 * watchdog) is tested through the CLI (tests/cli/tensor_parallel.py). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/threadpool.h"
#include "parallel/comm_cpu.h"
#include "io/model_config.h"
#include "model/random_init.h"
#include "runner/runner.h"
#include "test_util.h"

enum { PROMPT = 20, DECODE = 8, TOTAL = PROMPT + DECODE, CHUNK = 8, BS = 4, MAX_RANKS = 8 };

struct rank_run {
    const char *model; /* the model's folder */
    int rank, size;
    struct comm *comm; /* made before the threads start: rank 0's creates the segment */
    int32_t ids[TOTAL];
    float *logits; /* rank 0: [TOTAL, vocab] */
    char err[1100];
};

/* One rank: the prompt in chunks, then one token a step, every row's logits returned. */
static void *run_rank(void *arg)
{
    struct rank_run *rr = arg;
    struct err e = {{0}};
    struct backend *be = backend_create(BACKEND_KIND_CPU_REFERENCE, 1, &e);
    struct model *m = NULL;
    struct runner r = {0};
    struct block_pool pool = {0};
    struct seq_blocks blocks = {0};
    be->comm = rr->comm;
    if (!(m = model_load_shard(rr->model, be, rr->rank, rr->size, &e)))
        goto done;
    const struct runner_opts o = {.max_tokens = CHUNK, .max_seqs = 2, .max_context = TOTAL, .block_size = BS,
                                  .kv_blocks = TOTAL / BS + 2, .gpu_memory_utilization = 0.9,
                                  .return_logits = 1};
    if (runner_init(&r, m, &o, &e))
        goto done;
    block_pool_init(&pool, r.kv.n_blocks, 1);
    const int V = m->cfg.vocab_size;
    for (int at = 0; at < TOTAL;) {
        const int n = at < PROMPT ? (PROMPT - at < CHUNK ? PROMPT - at : CHUNK) : 1;
        struct sample_result none;
        CHECK(seq_blocks_reserve(&blocks, &pool, at + n, BS) == 0);
        const struct step_seq q = {.blocks = &blocks, .tokens = rr->ids + at, .n_tokens = n, .start_pos = at,
                                   .return_logits = 1};
        if (runner_step(&r, &q, 1, &none, &e))
            goto done;
        if (rr->rank == 0)
            memcpy(rr->logits + (size_t)at * V, runner_returned_logits(&r, &q, 1, 0), (size_t)n * V * sizeof(float));
        at += n;
    }
done:
    snprintf(rr->err, sizeof rr->err, "%s", e.msg);
    seq_blocks_release(&blocks, &pool);
    seq_blocks_free(&blocks);
    if (pool.refs)
        block_pool_free(&pool);
    runner_free(&r);
    model_free(m);
    if (rr->comm)
        rr->comm->ops->free(rr->comm);
    backend_free(be);
    return NULL;
}

/* The logits of the model split over size ranks (rank 0's), malloc'ed. */
static float *run_split(const char *model, int size, int vocab)
{
    struct rank_run rr[MAX_RANKS];
    pthread_t th[MAX_RANKS];
    char shm[64];
    comm_cpu_name(shm, sizeof shm);
    float *logits = malloc((size_t)TOTAL * vocab * sizeof(float));
    for (int r = 0; r < size; r++) {
        struct err e = {{0}};
        struct comm *c = size > 1 ? comm_cpu_create(shm, r, size, 1 << 16, &e) : NULL;
        cr_assert(size == 1 || c, "%s", e.msg);
        rr[r] = (struct rank_run){.model = model, .rank = r, .size = size, .comm = c, .logits = logits};
        for (int i = 0; i < TOTAL; i++)
            rr[r].ids[i] = (int32_t)((i * 7919 + 13) % vocab);
    }
    for (int r = 0; r < size; r++)
        cr_assert_eq(pthread_create(&th[r], NULL, run_rank, &rr[r]), 0);
    for (int r = 0; r < size; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < size; r++)
        cr_assert(!rr[r].err[0], "%s rank %d of %d: %s", model, r, size, rr[r].err);
    return logits;
}

/* Rank 0's logits over 2, 4, ... max_size ranks against one rank's. */
static void check(const char *model, int V, int max_size)
{
    float *whole = run_split(model, 1, V);
    for (int size = 2; size <= max_size; size *= 2) {
        float *split = run_split(model, size, V);
        double worst = 0;
        for (int t = 0; t < TOTAL; t++) {
            const double err = max_rel_err(split + (size_t)t * V, whole + (size_t)t * V, V);
            worst = err > worst ? err : worst;
            cr_assert(err <= 1e-5, "%s over %d ranks: position %d (%s): rel err %.3g against one rank", model,
                      size, t, t < PROMPT ? "prefill" : "decode", err);
        }
        cr_log_info("%s over %d ranks: max rel err %.3g over %d prefill and %d decode rows", model, size, worst,
                    PROMPT, DECODE);
        free(split);
    }
    free(whole);
}

static void check_fixture(const char *fixture)
{
    struct backend *be;
    struct model *m = test_load_model(fixture, &be);
    const int V = m->cfg.vocab_size;
    test_free_model(m, be);
    check(fixture_path(fixture), V, 4);
}

Test(tensor_parallel, llama_split_equals_whole) { check_fixture("tiny-llama"); }
Test(tensor_parallel, qwen3_split_equals_whole) { check_fixture("tiny-qwen3"); }
Test(tensor_parallel, gemma3_split_equals_whole) { check_fixture("tiny-gemma3"); }

/* The fixture's config with 8 attention heads and random weights (seed 1),
 * in the test's temp folder; its path. */
static struct tpath eight_heads(const char *fixture, int *vocab)
{
    char name[64], *text = NULL;
    size_t n = 0;
    struct err e = {{0}};
    struct tpath src;
    snprintf(src.s, sizeof src.s, "%s/config.json", fixture_path(fixture));
    cr_assert_eq(fs_read_file(src.s, 1 << 16, &text, &n, &e), 0, "%s", e.msg);
    char *heads = strstr(text, "\"num_attention_heads\": 4,");
    cr_assert(heads, "%s's config: no \"num_attention_heads\": 4", fixture);
    heads[strlen("\"num_attention_heads\": ")] = '8';
    const struct tpath dir = test_tmp_path(fixture);
    snprintf(name, sizeof name, "%s/config.json", fixture);
    cr_assert_eq(fs_mkdir_p(dir.s, &e), 0, "%s", e.msg);
    cr_assert_eq(fs_write_atomic(test_tmp_path(name).s, text, n, &e), 0, "%s", e.msg);
    struct model_config cfg;
    cr_assert_eq(model_config_parse(text, n, fixture, &cfg, &e), 0, "%s", e.msg);
    cr_assert_eq(cfg.n_heads, 8);
    free(text);
    struct threadpool *pool = threadpool_create(1);
    snprintf(name, sizeof name, "%s/model.safetensors", fixture);
    cr_assert_eq(random_init_write(&cfg, test_tmp_path(name).s, 1, pool, &e), 0, "%s", e.msg);
    threadpool_free(pool);
    *vocab = cfg.vocab_size;
    return dir;
}

Test(tensor_parallel, llama_8_heads_over_8_ranks, .init = test_tmp_setup, .fini = test_tmp_teardown)
{
    int V;
    const struct tpath model = eight_heads("tiny-llama", &V);
    check(model.s, V, 8);
}

Test(tensor_parallel, qwen3_8_heads_over_8_ranks, .init = test_tmp_setup, .fini = test_tmp_teardown)
{
    int V;
    const struct tpath model = eight_heads("tiny-qwen3", &V);
    check(model.s, V, 8);
}

Test(tensor_parallel, refusals_name_the_flag)
{
    struct err e = {{0}};
    struct backend *be = backend_create(BACKEND_KIND_CPU_REFERENCE, 1, &e);
    cr_assert_null(model_load_shard(fixture_path("tiny-llama"), be, 0, 3, &e));
    cr_assert(strstr(e.msg, "--tensor-parallel-size 3 does not divide the model's 4 attention heads"), "%s", e.msg);
    cr_assert_null(model_load_shard(fixture_path("tiny-llama"), be, 0, 8, &e));
    cr_assert(strstr(e.msg, "--tensor-parallel-size 8"), "%s", e.msg);
    struct model_config cfg = {.n_heads = 8, .n_kv_heads = 8, .intermediate_size = 30, .vocab_size = 64};
    struct model_shard sh;
    cr_assert_neq(model_shard_plan(&cfg, 0, 4, &sh, &e), 0);
    cr_assert(strstr(e.msg, "MLP width 30"), "%s", e.msg);
    cfg.intermediate_size = 32, cfg.vocab_size = 66;
    cr_assert_neq(model_shard_plan(&cfg, 0, 4, &sh, &e), 0);
    cr_assert(strstr(e.msg, "vocabulary of 66"), "%s", e.msg);
    cfg.vocab_size = 64, cfg.n_kv_heads = 3, cfg.n_heads = 12;
    cr_assert_neq(model_shard_plan(&cfg, 0, 4, &sh, &e), 0);
    cr_assert(strstr(e.msg, "3 KV heads"), "%s", e.msg);
    /* more ranks than KV heads: each rank keeps the head its queries read */
    cfg.n_kv_heads = 2, cfg.n_heads = 8;
    cr_assert_eq(model_shard_plan(&cfg, 3, 4, &sh, &e), 0, "%s", e.msg);
    cr_assert(sh.n_heads == 2 && sh.n_kv_heads == 1 && sh.kv_head0 == 1 && sh.ffn == 8 && sh.vocab_lo == 48);
    backend_free(be);
}
