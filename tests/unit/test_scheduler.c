/* Continuous batching end to end on the CPU reference: 64 requests with
 * prompts of 1 to 300 tokens and various output lengths run through the
 * scheduler with chunked prefill and a KV pool small enough to force
 * preemption, with the prefix cache off and on (then half the prompts share
 * prefixes, and the small pool forces evictions too). Every greedy request
 * must produce exactly the tokens it produces alone, and seeded sampled
 * requests the same tokens whatever the batch mix (budgets, pool size,
 * prefix cache). The whole cache's integrity is checked after every step. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#
#include "sched/scheduler.h"
#
#include "sched_harness.h"
#include "test_util.h"

enum { N_REQ = 64 };

struct workload {
    int32_t *prompts[N_REQ];
    int n_prompt[N_REQ];
    int max_tokens[N_REQ];
};

/* shared: every other request starts with one of two common prefixes (up
 * to 70 tokens), so that the prefix cache has something to find. */
static void make_workload(struct workload *w, int vocab, int shared)
{
    for (int i = 0; i < N_REQ; i++) {
        w->n_prompt[i] = 1 + (i * 37) % 300;
        w->max_tokens[i] = 1 + (i * 11) % 24;
        w->prompts[i] = malloc((size_t)w->n_prompt[i] * sizeof(int32_t));
        for (int j = 0; j < w->n_prompt[i]; j++)
            w->prompts[i][j] = (int32_t)((i * 7919 + j * 104729 + 13) % vocab);
        for (int j = 0; shared && i % 2 == 0 && j < w->n_prompt[i] && j < 70; j++)
            w->prompts[i][j] = (int32_t)((i % 4 * 31 + j * 17 + 5) % vocab);
    }
}

/* Runs all requests through the scheduler (integrity checked after every
 * step); outputs land in reqs[i].out. Returns the scheduler's preemptions. */
static long run_engine(struct model *m, struct workload *w, struct sequence *reqs, int n_blocks, int budget,
                       int max_seqs, float temperature, int prefix_cache, struct scheduler_stats *stats)
{
    struct harness h;
    harness_init(&h, m, n_blocks, budget, max_seqs, prefix_cache);
    for (int i = 0; i < N_REQ; i++) {
        reqs[i] = (struct sequence){.id = i, .prompt = w->prompts[i], .n_prompt = w->n_prompt[i],
                                   .max_tokens = w->max_tokens[i], .sampling = sampling_params_default()};
        reqs[i].sampling.temperature = temperature;
        reqs[i].sampling.seed = 1000 + (uint64_t)i;
        scheduler_add(&h.s, &reqs[i]);
    }
    harness_run(&h);
    long preemptions = h.s.n_preemptions;
    if (stats)
        *stats = h.s.stats;
    harness_free(&h);
    return preemptions;
}

static void check_greedy(const char *fixture, int prefix_cache)
{
    struct backend *be;
    struct model *m = test_load_model(fixture, &be);
    struct workload w;
    make_workload(&w, m->cfg.vocab_size, prefix_cache);
    static struct sequence reqs[N_REQ];
    struct scheduler_stats st;
    /* 40 blocks of 16 = 640 tokens for 16 sequences of up to 324: preemption */
    long pre = run_engine(m, &w, reqs, 40, 96, 16, 0.f, prefix_cache, &st);
    cr_assert(pre > 0, "%s: the pool was meant to force preemption", fixture);
    if (prefix_cache)
        cr_assert(st.hit_blocks > 0 && st.evicted_blocks > 0, "%s: %ld cache hits, %ld evictions", fixture,
                  st.hit_blocks, st.evicted_blocks);
    for (int i = 0; i < N_REQ; i++) {
        int n;
        enum finish_reason finish;
        int32_t *ids = alone_greedy(m, w.prompts[i], w.n_prompt[i], w.max_tokens[i], &n, &finish);
        cr_assert_eq(reqs[i].n_out, n, "%s request %d: %d tokens batched, %d alone", fixture, i, reqs[i].n_out, n);
        cr_assert_eq(memcmp(reqs[i].out, ids, (size_t)n * sizeof(int32_t)), 0,
                     "%s request %d (preempted %d times): tokens differ from running alone", fixture, i,
                     reqs[i].n_preempted);
        cr_assert_eq(reqs[i].finish, finish);
        free(ids);
        sequence_free(&reqs[i]);
        free(w.prompts[i]);
    }
    cr_log_info("%s: %d requests, %ld preemptions, prefix cache %s (%ld of %ld blocks hit, %ld evicted), greedy "
                "outputs equal to running alone",
                fixture, N_REQ, pre, prefix_cache ? "on" : "off", st.hit_blocks, st.lookup_blocks,
                st.evicted_blocks);
    test_free_model(m, be);
}

Test(scheduler, llama_64_requests_greedy_equal_alone) { check_greedy("tiny-llama", 0); }
Test(scheduler, qwen3_64_requests_greedy_equal_alone) { check_greedy("tiny-qwen3", 0); }
Test(scheduler, gemma3_64_requests_greedy_equal_alone) { check_greedy("tiny-gemma3", 0); }
Test(scheduler, llama_64_requests_prefix_cache_equal_alone) { check_greedy("tiny-llama", 1); }
Test(scheduler, qwen3_64_requests_prefix_cache_equal_alone) { check_greedy("tiny-qwen3", 1); }
Test(scheduler, gemma3_64_requests_prefix_cache_equal_alone) { check_greedy("tiny-gemma3", 1); }

Test(scheduler, seeded_sampling_is_independent_of_the_batch_mix)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    struct workload w;
    make_workload(&w, m->cfg.vocab_size, 1);
    static struct sequence a[N_REQ], b[N_REQ];
    run_engine(m, &w, a, 40, 96, 16, 0.8f, 0, NULL);
    run_engine(m, &w, b, 64, 37, 5, 0.8f, 1, NULL);
    int multi_token_requests = 0;
    for (int i = 0; i < N_REQ; i++) {
        cr_assert_eq(a[i].n_out, b[i].n_out, "request %d", i);
        cr_assert_eq(memcmp(a[i].out, b[i].out, (size_t)a[i].n_out * sizeof(int32_t)), 0,
                     "request %d: seeded tokens depend on the batch mix", i);
        multi_token_requests += a[i].n_out > 1;
        sequence_free(&a[i]);
        sequence_free(&b[i]);
        free(w.prompts[i]);
    }
    cr_assert(multi_token_requests > 10);
    test_free_model(m, be);
}
