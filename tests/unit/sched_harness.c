#include "sched_harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct spec_seq spec_seq_of(const struct sequence *s)
{
    return (struct spec_seq){.id = s->id,
                             .tokens = s->tokens,
                             .n_prompt = s->n_prompt,
                             .n_known = sequence_known(s),
                             .sampling = &s->sampling,
                             .step = sequence_rng_step(s)};
}

static int harness_propose(void *ctx, const struct sequence *s, int max_k, int32_t *out)
{
    const struct spec_seq q = spec_seq_of(s);
    return spec_propose(ctx, &q, max_k, out);
}

static void harness_prepare(void *ctx, struct sequence *const *seqs, const int *max_k, int n)
{
    struct spec_seq q[256];
    CHECK(n <= 256);
    for (int i = 0; i < n; i++)
        q[i] = spec_seq_of(seqs[i]);
    spec_prepare(ctx, q, max_k, n);
}

void harness_init(struct harness *h, struct model *m, int n_blocks, int budget, int max_seqs,
                  int prefix_cache)
{
    harness_init_spec(h, m, n_blocks, budget, max_seqs, prefix_cache, NULL, 0);
}

void harness_init_spec(struct harness *h, struct model *m, int n_blocks, int budget, int max_seqs,
                       int prefix_cache, struct spec_proposer *spec, int spec_k)
{
    struct err e = {{0}};
    memset(h, 0, sizeof *h);
    h->m = m;
    h->n_blocks = n_blocks;
    /* a block table as wide as the pool: no sequence holds more */
    const int table = (n_blocks - 1) * HARNESS_BS;
    const struct runner_opts ro = {.max_tokens = budget,
                                   .max_seqs = max_seqs,
                                   .max_draws = max_seqs * (1 + spec_k),
                                   .max_context = table < m->cfg.max_positions ? table : m->cfg.max_positions,
                                   .block_size = HARNESS_BS,
                                   .kv_blocks = n_blocks,
                                   .gpu_memory_utilization = 0.9};
    cr_assert_eq(runner_init(&h->runner, m, &ro, &e), 0, "%s", e.msg);
    cr_assert_eq(h->runner.kv.n_blocks, n_blocks);
    block_pool_init(&h->pool, n_blocks, 1);
    scheduler_init(&h->s, &h->pool, HARNESS_BS, budget, max_seqs, m->cfg.max_positions, m->cfg.eos_ids,
                   m->cfg.n_eos);
    if (prefix_cache)
        scheduler_enable_prefix_cache(&h->s);
    h->work = calloc((size_t)max_seqs, sizeof *h->work);
    h->seqs = calloc((size_t)max_seqs, sizeof *h->seqs);
    h->drawn = calloc((size_t)(max_seqs * (1 + spec_k)), sizeof *h->drawn);
    if (spec) {
        h->spec = spec;
        h->s.propose = harness_propose;
        h->s.prepare = spec->ops->prepare ? harness_prepare : NULL;
        h->s.propose_ctx = spec;
        h->s.spec_k = spec_k;
    }
}

int harness_step(struct harness *h)
{
    struct err e = {{0}};
    int n = scheduler_plan(&h->s, h->work, h->seqs);
    if (n == 0)
        return 0;
    cr_assert_eq(runner_step(&h->runner, h->work, n, h->drawn, &e), 0, "%s", e.msg);
    scheduler_commit(&h->s, h->work, h->seqs, n, h->drawn);
    for (int i = 0; i < n && h->spec; i++) /* what finished goes to the proposer (suffix decoding keeps it) */
        if (h->seqs[i]->state == SEQUENCE_FINISHED) {
            const struct sequence *s = h->seqs[i];
            const struct spec_seq q = spec_seq_of(s);
            spec_finish(h->spec, &q);
        }
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
    cr_assert_eq(block_pool_n_free(&h->pool) + cached, h->n_blocks - 1,
                 "blocks leaked: %d free, %d cached of %d", block_pool_n_free(&h->pool), cached,
                 h->n_blocks - 1);
    free(h->work), free(h->seqs), free(h->drawn);
    scheduler_free(&h->s);
    cr_assert_eq(block_pool_n_free(&h->pool), h->n_blocks - 1,
                 "the cache's blocks come back when it is freed");
    block_pool_free(&h->pool);
    runner_free(&h->runner);
}

int32_t *alone_greedy(struct model *m, const int32_t *prompt, int n_prompt, int max_tokens, int *n,
                      enum finish_reason *finish)
{
    struct harness h;
    const int blocks = (n_prompt + max_tokens) / HARNESS_BS + 2;
    harness_init(&h, m, blocks, 128, 1, 0);
    struct sequence seq = {.prompt = prompt,
                           .n_prompt = n_prompt,
                           .max_tokens = max_tokens,
                           .sampling = sampling_params_default()};
    scheduler_add(&h.s, &seq);
    harness_run(&h);
    int32_t *ids = malloc((size_t)(seq.n_out ? seq.n_out : 1) * sizeof *ids);
    memcpy(ids, seq.out, (size_t)seq.n_out * sizeof *ids);
    *n = seq.n_out;
    if (finish)
        *finish = seq.finish;
    sequence_free(&seq);
    harness_free(&h);
    return ids;
}
