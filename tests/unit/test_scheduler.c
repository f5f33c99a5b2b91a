/* Continuous batching end to end on the CPU reference: 64 requests with
 * prompts of 1 to 300 tokens and various output lengths run through the
 * scheduler with chunked prefill and a KV pool small enough to force
 * preemption. Every greedy request must produce exactly the tokens it
 * produces alone, and seeded sampled requests the same tokens whatever the
 * batch mix (budgets, pool size). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/greedy.h"
#include "engine/scheduler.h"
#include "engine/step_builder.h"
#include "test_util.h"

enum { N_REQ = 64, BS = 16 };

struct workload {
    int32_t *prompts[N_REQ];
    int n_prompt[N_REQ];
    int max_tokens[N_REQ];
};

static void make_workload(struct workload *w, int vocab)
{
    for (int i = 0; i < N_REQ; i++) {
        w->n_prompt[i] = 1 + (i * 37) % 300;
        w->max_tokens[i] = 1 + (i * 11) % 24;
        w->prompts[i] = malloc((size_t)w->n_prompt[i] * sizeof(int32_t));
        for (int j = 0; j < w->n_prompt[i]; j++)
            w->prompts[i][j] = (int32_t)((i * 7919 + j * 104729 + 13) % vocab);
    }
}

/* Runs all requests through the scheduler; outputs land in reqs[i].out. */
static long run_engine(struct model *m, struct workload *w, struct request *reqs, int n_blocks, int budget,
                       int max_seqs, float temperature)
{
    struct backend *be = m->be;
    const int V = m->cfg.vocab_size;
    struct err e = {{0}};
    struct kv_store kv;
    struct block_pool pool;
    struct forward_ws ws;
    cr_assert_eq(kv_store_init(&kv, &m->cfg, be, n_blocks, BS, &e), 0, "%s", e.msg);
    block_pool_init(&pool, n_blocks, 1);
    cr_assert_eq(forward_ws_init(&ws, m, budget, max_seqs, &e), 0, "%s", e.msg);
    struct meta_caps caps = {budget, max_seqs, n_blocks, max_seqs};
    struct step_builder sb;
    step_builder_init(&sb, &caps, BS);
    struct scheduler s;
    scheduler_init(&s, &pool, BS, budget, max_seqs, m->cfg.max_positions, m->cfg.eos_ids, m->cfg.n_eos);
    for (int i = 0; i < N_REQ; i++) {
        reqs[i] = (struct request){.id = i, .prompt = w->prompts[i], .n_prompt = w->n_prompt[i],
                                   .max_tokens = w->max_tokens[i], .sampling = sampling_params_default()};
        reqs[i].sampling.temperature = temperature;
        reqs[i].sampling.seed = 1000 + (uint64_t)i;
        scheduler_add(&s, &reqs[i]);
    }
    struct step_seq *q = calloc((size_t)max_seqs, sizeof *q);
    struct request **rq = calloc((size_t)max_seqs, sizeof *rq);
    float *scratch = malloc(2 * (size_t)V * sizeof(float));
    int steps = 0;
    while (!scheduler_idle(&s)) {
        int n = scheduler_plan(&s, q, rq);
        cr_assert(n > 0, "the scheduler made no progress with %d waiting", s.n_waiting);
        struct fwd_batch b;
        cr_assert_eq(step_build(&sb, q, n, &b, &e), 0, "%s", e.msg);
        cr_assert_eq(model_forward(m, &ws, &kv, &b, &e), 0, "%s", e.msg);
        scheduler_commit(&s, q, rq, n, ws.logits, V, scratch);
        struct err ie;
        cr_assert_eq(block_pool_check(&pool, &ie), 0, "step %d: %s", steps, ie.msg);
        cr_assert(++steps < 100000);
    }
    cr_assert_eq(block_pool_n_free(&pool), n_blocks - 1, "every block is free at the end");
    long preemptions = s.n_preemptions;
    free(q), free(rq), free(scratch);
    scheduler_free(&s);
    step_builder_free(&sb);
    forward_ws_free(&ws, m);
    block_pool_free(&pool);
    kv_store_free(&kv, be);
    return preemptions;
}

static void check_greedy(const char *fixture)
{
    struct backend *be;
    struct model *m = test_load_model(fixture, &be);
    struct workload w;
    make_workload(&w, m->cfg.vocab_size);
    static struct request reqs[N_REQ];
    /* 40 blocks of 16 = 640 tokens for 16 sequences of up to 324: preemption */
    long pre = run_engine(m, &w, reqs, 40, 96, 16, 0.f);
    cr_assert(pre > 0, "%s: the pool was meant to force preemption", fixture);
    struct err e = {{0}};
    for (int i = 0; i < N_REQ; i++) {
        struct seq_runner r;
        cr_assert_eq(seq_runner_init(&r, m, w.n_prompt[i] + w.max_tokens[i], 128, 1, BS, &e), 0, "%s", e.msg);
        struct greedy_result g;
        cr_assert_eq(greedy_generate(&r, w.prompts[i], w.n_prompt[i], w.max_tokens[i], 0, &g, &e), 0, "%s", e.msg);
        cr_assert_eq(reqs[i].n_out, g.n_ids, "%s request %d: %d tokens batched, %d alone", fixture, i, reqs[i].n_out,
                     g.n_ids);
        cr_assert_eq(memcmp(reqs[i].out, g.ids, (size_t)g.n_ids * sizeof(int32_t)), 0,
                     "%s request %d (preempted %d times): tokens differ from running alone", fixture, i,
                     reqs[i].n_preempted);
        cr_assert_eq(reqs[i].finish, g.finish);
        free(g.ids);
        seq_runner_free(&r);
        request_free(&reqs[i]);
        free(w.prompts[i]);
    }
    cr_log_info("%s: %d requests, %ld preemptions, greedy outputs equal to running alone", fixture, N_REQ, pre);
    test_free_model(m, be);
}

Test(scheduler, llama_64_requests_greedy_equal_alone) { check_greedy("tiny-llama"); }
Test(scheduler, qwen3_64_requests_greedy_equal_alone) { check_greedy("tiny-qwen3"); }
Test(scheduler, gemma3_64_requests_greedy_equal_alone) { check_greedy("tiny-gemma3"); }

Test(scheduler, seeded_sampling_is_independent_of_the_batch_mix)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    struct workload w;
    make_workload(&w, m->cfg.vocab_size);
    static struct request a[N_REQ], b[N_REQ];
    run_engine(m, &w, a, 40, 96, 16, 0.8f);
    run_engine(m, &w, b, 64, 37, 5, 0.8f);
    int multi_token_requests = 0;
    for (int i = 0; i < N_REQ; i++) {
        cr_assert_eq(a[i].n_out, b[i].n_out, "request %d", i);
        cr_assert_eq(memcmp(a[i].out, b[i].out, (size_t)a[i].n_out * sizeof(int32_t)), 0,
                     "request %d: seeded tokens depend on the batch mix", i);
        multi_token_requests += a[i].n_out > 1;
        request_free(&a[i]);
        request_free(&b[i]);
        free(w.prompts[i]);
    }
    cr_assert(multi_token_requests > 10);
    test_free_model(m, be);
}
