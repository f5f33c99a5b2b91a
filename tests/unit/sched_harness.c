#include "sched_harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>

#include "engine/greedy.h"

void harness_init(struct harness *h, struct model *m, int n_blocks, int budget, int max_seqs, int prefix_cache)
{
    struct err e = {{0}};
    h->m = m;
    h->n_blocks = n_blocks;
    h->steps = 0;
    cr_assert_eq(kv_store_init(&h->kv, &m->cfg, m->be, n_blocks, HARNESS_BS, &e), 0, "%s", e.msg);
    block_pool_init(&h->pool, n_blocks, 1);
    cr_assert_eq(forward_ws_init(&h->ws, m, budget, max_seqs, &e), 0, "%s", e.msg);
    struct meta_caps caps = {budget, max_seqs, n_blocks, max_seqs};
    step_builder_init(&h->sb, &caps, HARNESS_BS);
    scheduler_init(&h->s, &h->pool, HARNESS_BS, budget, max_seqs, m->cfg.max_positions, m->cfg.eos_ids,
                   m->cfg.n_eos);
    if (prefix_cache)
        scheduler_enable_prefix_cache(&h->s);
    h->q = calloc((size_t)max_seqs, sizeof *h->q);
    h->rq = calloc((size_t)max_seqs, sizeof *h->rq);
    cr_assert_eq(step_sampler_init(&h->sampler, m->be, max_seqs, m->cfg.vocab_size, &e), 0, "%s", e.msg);
    h->drawn = calloc((size_t)max_seqs, sizeof *h->drawn);
}

int harness_step(struct harness *h)
{
    struct err e = {{0}};
    int n = scheduler_plan(&h->s, h->q, h->rq);
    if (n == 0)
        return 0;
    struct fwd_batch b;
    cr_assert_eq(step_build(&h->sb, h->q, n, &b, &e), 0, "%s", e.msg);
    cr_assert_eq(model_forward(h->m, &h->ws, &h->kv, &b, &e), 0, "%s", e.msg);
    cr_assert(step_sample(&h->sampler, h->m->be, h->ws.logits, h->rq, h->q, n, h->drawn, &e) >= 0, "%s", e.msg);
    scheduler_commit(&h->s, h->q, h->rq, n, h->drawn);
    cr_assert_eq(scheduler_check(&h->s, &e), 0, "step %ld: %s", h->steps, e.msg);
    h->steps++;
    return 1;
}

void harness_run(struct harness *h)
{
    while (!scheduler_idle(&h->s)) {
        cr_assert(harness_step(h), "the scheduler made no progress with %d waiting", h->s.n_waiting);
        cr_assert(h->steps < 100000);
    }
}

void harness_free(struct harness *h)
{
    struct err e = {{0}};
    cr_assert_eq(scheduler_check(&h->s, &e), 0, "%s", e.msg);
    int cached = h->s.prefix_caching ? h->s.radix.n_nodes : 0;
    cr_assert_eq(block_pool_n_free(&h->pool) + cached, h->n_blocks - 1, "blocks leaked: %d free, %d cached of %d",
                 block_pool_n_free(&h->pool), cached, h->n_blocks - 1);
    free(h->q), free(h->rq), free(h->drawn);
    step_sampler_free(&h->sampler);
    scheduler_free(&h->s);
    cr_assert_eq(block_pool_n_free(&h->pool), h->n_blocks - 1, "the cache's blocks come back when it is freed");
    step_builder_free(&h->sb);
    forward_ws_free(&h->ws, h->m);
    block_pool_free(&h->pool);
    kv_store_free(&h->kv, h->m->be);
}

int32_t *alone_greedy(struct model *m, const int32_t *prompt, int n_prompt, int max_tokens, int *n,
                      enum finish_reason *finish)
{
    struct err e = {{0}};
    struct seq_runner r;
    cr_assert_eq(seq_runner_init(&r, m, n_prompt + max_tokens, 128, 1, HARNESS_BS, &e), 0, "%s", e.msg);
    struct greedy_result g;
    cr_assert_eq(greedy_generate(&r, prompt, n_prompt, max_tokens, 0, &g, &e), 0, "%s", e.msg);
    seq_runner_free(&r);
    *n = g.n_ids;
    if (finish)
        *finish = g.finish;
    return g.ids;
}
