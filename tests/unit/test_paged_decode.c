/* Paged decode over the block pool gives the same logits as recomputing the
 * whole sequence in one prefill: with a small block size, blocks handed out
 * out of order, and chunked prefill, for every architecture. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "engine/seq_runner.h"
#include "test_util.h"

#define PROMPT 37
#define STEPS 10
#define BLOCK 4

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
    struct seq_runner inc;
    /* room for the blocks held below besides the sequence's own */
    cr_assert_eq(seq_runner_init(&inc, m, total + 8 * BLOCK, 8, 8, BLOCK, &e), 0, "%s", e.msg);
    /* scramble the pool: take blocks, give back every other one */
    int32_t held[8];
    for (int i = 0; i < 8; i++)
        held[i] = block_pool_alloc(&inc.pool);
    for (int i = 0; i < 8; i += 2)
        block_pool_unref(&inc.pool, held[i]);
    float *step_logits = malloc((size_t)STEPS * V * sizeof(float));
    cr_assert_eq(seq_runner_feed(&inc, ids, PROMPT, 0, NULL, NULL, &e), 0, "%s", e.msg);
    for (int s = 0; s < STEPS; s++)
        cr_assert_eq(seq_runner_feed(&inc, ids + PROMPT + s, 1, 0, step_logits + (size_t)s * V, NULL, &e),
                     0, "%s", e.msg);
    int contiguous = 1;
    for (int i = 1; i < inc.blocks.n; i++)
        contiguous &= inc.blocks.ids[i] == inc.blocks.ids[i - 1] + 1;
    cr_assert(!contiguous, "the test meant to exercise a scattered block table");

    /* recompute: the whole sequence in one step, logits for every row */
    struct seq_runner full;
    cr_assert_eq(seq_runner_init(&full, m, total, total, total, 16, &e), 0, "%s", e.msg);
    float *all = malloc((size_t)total * V * sizeof(float));
    cr_assert_eq(seq_runner_feed(&full, ids, total, 1, all, NULL, &e), 0, "%s", e.msg);
    for (int s = 0; s < STEPS; s++) {
        double err = max_rel_err(step_logits + (size_t)s * V, all + (size_t)(PROMPT + s) * V, V);
        cr_assert(err <= 1e-5, "%s: decode step %d differs from recompute: rel err %.3g", fixture, s, err);
    }
    struct err ie;
    for (int i = 1; i < 8; i += 2)
        block_pool_unref(&inc.pool, held[i]);
    seq_runner_reset(&inc);
    cr_assert_eq(block_pool_check(&inc.pool, &ie), 0, "%s", ie.msg);
    cr_assert_eq(block_pool_n_free(&inc.pool), block_pool_n_usable(&inc.pool));
    free(step_logits);
    free(all);
    seq_runner_free(&inc);
    seq_runner_free(&full);
    test_free_model(m, be);
}

Test(paged_decode, llama_matches_recompute) { check_arch("tiny-llama"); }
Test(paged_decode, qwen3_matches_recompute) { check_arch("tiny-qwen3"); }
Test(paged_decode, gemma3_matches_recompute) { check_arch("tiny-gemma3"); }
