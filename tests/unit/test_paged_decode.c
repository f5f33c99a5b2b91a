/* Paged decode over the block pool gives the same logits as recomputing the
 * whole sequence in one prefill: through the step runner, with a small
 * block size, blocks handed out out of order, and chunked prefill, for
 * every architecture. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"
#include "test_util.h"

#define PROMPT 37
#define STEPS 10
#define BLOCK 4

/* One step of seq's tokens [at, at + n) with its logits returned. */
static const float *step(struct runner *r, struct seq_blocks *blocks, struct block_pool *pool,
                         const int32_t *ids, int at, int n)
{
    struct err e = {{0}};
    struct sample_result none;
    cr_assert_eq(seq_blocks_reserve(blocks, pool, at + n, BLOCK), 0);
    const struct step_seq q = {
        .blocks = blocks, .tokens = ids + at, .n_tokens = n, .start_pos = at, .return_logits = 1};
    cr_assert_eq(runner_step(r, &q, 1, &none, &e), 0, "%s", e.msg);
    return runner_returned_logits(r, &q, 1, 0);
}

static void check_arch(const char *fixture)
{
    struct backend *be;
    struct model *m = test_load_model(fixture, &be);
    const int V = m->cfg.vocab_size, total = PROMPT + STEPS;
    struct err e = {{0}};
    int32_t ids[PROMPT + STEPS];
    for (int i = 0; i < total; i++)
        ids[i] = (int32_t)((i * 7919 + 13) % V);

    /* incremental: prefill in chunks of 8, then one token per step */
    struct runner inc;
    const struct runner_opts o = {.max_tokens = 8,
                                  .max_seqs = 1,
                                  .max_context = total,
                                  .block_size = BLOCK,
                                  .kv_blocks = total / BLOCK + 16,
                                  .gpu_memory_utilization = 0.9,
                                  .return_logits = 1};
    cr_assert_eq(runner_init(&inc, m, &o, &e), 0, "%s", e.msg);
    struct block_pool pool;
    block_pool_init(&pool, inc.kv.n_blocks, 1);
    /* scramble the pool: take blocks, give back every other one */
    int32_t held[8];
    for (int i = 0; i < 8; i++)
        held[i] = block_pool_alloc(&pool);
    for (int i = 0; i < 8; i += 2)
        block_pool_unref(&pool, held[i]);
    struct seq_blocks blocks = {0};
    for (int at = 0; at < PROMPT; at += 8)
        step(&inc, &blocks, &pool, ids, at, PROMPT - at < 8 ? PROMPT - at : 8);
    float *step_logits = malloc((size_t)STEPS * V * sizeof(float));
    for (int s = 0; s < STEPS; s++)
        memcpy(step_logits + (size_t)s * V, step(&inc, &blocks, &pool, ids, PROMPT + s, 1),
               (size_t)V * sizeof(float));
    int contiguous = 1;
    for (int i = 1; i < blocks.n; i++)
        contiguous &= blocks.ids[i] == blocks.ids[i - 1] + 1;
    cr_assert(!contiguous, "the test meant to exercise a scattered block table");

    /* recompute: the whole sequence in one step, logits for every row */
    struct runner full;
    struct runner_opts fo = o;
    fo.max_tokens = total;
    fo.block_size = 16;
    fo.kv_blocks = total / 16 + 2;
    cr_assert_eq(runner_init(&full, m, &fo, &e), 0, "%s", e.msg);
    struct block_pool full_pool;
    block_pool_init(&full_pool, full.kv.n_blocks, 1);
    struct seq_blocks full_blocks = {0};
    cr_assert_eq(seq_blocks_reserve(&full_blocks, &full_pool, total, 16), 0);
    struct sample_result none;
    const struct step_seq q = {.blocks = &full_blocks, .tokens = ids, .n_tokens = total, .return_logits = 1};
    cr_assert_eq(runner_step(&full, &q, 1, &none, &e), 0, "%s", e.msg);
    const float *all = runner_returned_logits(&full, &q, 1, 0);
    for (int s = 0; s < STEPS; s++) {
        double err = max_rel_err(step_logits + (size_t)s * V, all + (size_t)(PROMPT + s) * V, V);
        cr_assert(err <= 1e-5, "%s: decode step %d differs from recompute: rel err %.3g", fixture, s, err);
    }
    struct err ie;
    for (int i = 1; i < 8; i += 2)
        block_pool_unref(&pool, held[i]);
    seq_blocks_release(&blocks, &pool);
    seq_blocks_free(&blocks);
    cr_assert_eq(block_pool_check(&pool, &ie), 0, "%s", ie.msg);
    cr_assert_eq(block_pool_n_free(&pool), block_pool_n_usable(&pool));
    seq_blocks_release(&full_blocks, &full_pool);
    seq_blocks_free(&full_blocks);
    block_pool_free(&pool);
    block_pool_free(&full_pool);
    free(step_logits);
    runner_free(&inc);
    runner_free(&full);
    test_free_model(m, be);
}

Test(paged_decode, llama_matches_recompute) { check_arch("tiny-llama"); }
Test(paged_decode, qwen3_matches_recompute) { check_arch("tiny-qwen3"); }
Test(paged_decode, gemma3_matches_recompute) { check_arch("tiny-gemma3"); }
