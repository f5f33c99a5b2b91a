/* Continuous batching's core property on the CPU reference: sequences run
 * together in one step (prefills of different lengths, a prompt split into
 * chunks, decode rows mixed with a prefill chunk) give exactly the logits
 * each gives alone. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/seq_runner.h"
#include "engine/step_builder.h"
#include "test_util.h"

enum { N_SEQ = 4, DECODE = 5, BS = 4 };
static const int prompt_len[N_SEQ] = {1, 7, 23, 40};

/* Logits of each sequence alone: after the prompt, then after each decode token. */
static void run_alone(struct model *m, int32_t **prompts, int32_t dec[N_SEQ][DECODE], float *want)
{
    const int V = m->cfg.vocab_size;
    struct err e = {{0}};
    for (int s = 0; s < N_SEQ; s++) {
        struct seq_runner r;
        cr_assert_eq(seq_runner_init(&r, m, prompt_len[s] + DECODE, 64, 1, BS, &e), 0, "%s", e.msg);
        float *row = want + (size_t)s * (DECODE + 1) * V;
        cr_assert_eq(seq_runner_feed(&r, prompts[s], prompt_len[s], 0, row, NULL, &e), 0, "%s", e.msg);
        for (int d = 0; d < DECODE; d++)
            cr_assert_eq(seq_runner_feed(&r, &dec[s][d], 1, 0, row + (size_t)(d + 1) * V, NULL, &e), 0, "%s", e.msg);
        seq_runner_free(&r);
    }
}

static void check_arch(const char *fixture)
{
    struct backend *be;
    struct model *m = test_load_model(fixture, &be);
    const int V = m->cfg.vocab_size;
    struct err e = {{0}};
    int32_t *prompts[N_SEQ], dec[N_SEQ][DECODE];
    for (int s = 0; s < N_SEQ; s++) {
        prompts[s] = malloc((size_t)prompt_len[s] * sizeof(int32_t));
        for (int i = 0; i < prompt_len[s]; i++)
            prompts[s][i] = (int32_t)((s * 131 + i * 17 + 5) % V);
        for (int d = 0; d < DECODE; d++)
            dec[s][d] = (int32_t)((s * 7 + d * 29 + 3) % V);
    }
    float *want = malloc((size_t)N_SEQ * (DECODE + 1) * V * sizeof(float));
    run_alone(m, prompts, dec, want);

    /* together: one pool and cache for all sequences */
    struct kv_store kv;
    struct block_pool pool;
    struct forward_ws ws;
    const int n_blocks = 64;
    cr_assert_eq(kv_store_init(&kv, &m->cfg, be, n_blocks, BS, &e), 0, "%s", e.msg);
    block_pool_init(&pool, n_blocks, 1);
    cr_assert_eq(forward_ws_init(&ws, m, 128, N_SEQ, &e), 0, "%s", e.msg);
    struct meta_caps caps = {128, N_SEQ, 16, N_SEQ};
    struct step_builder sb;
    step_builder_init(&sb, &caps, BS);
    struct seq_blocks blocks[N_SEQ] = {{0}};
    int done[N_SEQ] = {0}; /* positions in the cache */

    /* step 1: three whole prompts and the first half of the fourth (no logits for it yet)
     * step 2: decode rows of the first three and the rest of the fourth prompt (a mixed step)
     * steps 3..: everyone decodes */
    for (int step = 0; step < DECODE + 1; step++) {
        struct step_seq q[N_SEQ];
        int n = 0, owner[N_SEQ], row_of[N_SEQ];
        for (int s = 0; s < N_SEQ; s++) {
            const int32_t *toks;
            int count, want_row;
            if (done[s] < prompt_len[s]) { /* prefill, the long prompt in two chunks */
                int chunk = s == 3 && done[s] == 0 ? 20 : prompt_len[s] - done[s];
                toks = prompts[s] + done[s];
                count = chunk;
                want_row = done[s] + chunk == prompt_len[s] ? 0 : -1;
            } else {
                int d = done[s] - prompt_len[s];
                if (d >= DECODE)
                    continue;
                toks = &dec[s][d];
                count = 1;
                want_row = d + 1;
            }
            cr_assert_eq(seq_blocks_reserve(&blocks[s], &pool, done[s] + count, BS), 0);
            q[n] = (struct step_seq){&blocks[s], toks, count, done[s], want_row >= 0};
            owner[n] = s;
            row_of[n] = want_row;
            n++;
        }
        struct fwd_batch b;
        cr_assert_eq(step_build(&sb, q, n, &b, &e), 0, "%s", e.msg);
        cr_assert_eq(model_forward(m, &ws, &kv, &b, &e), 0, "%s", e.msg);
        int logit = 0;
        for (int i = 0; i < n; i++) {
            int s = owner[i];
            done[s] += q[i].n_tokens;
            if (row_of[i] < 0)
                continue;
            const float *a = ws.logits + (size_t)logit++ * V;
            const float *ref = want + ((size_t)s * (DECODE + 1) + row_of[i]) * V;
            double err = max_rel_err(a, ref, V);
            cr_assert(err <= 1e-6, "%s: step %d sequence %d row %d: rel err %.3g against running alone", fixture,
                      step, s, row_of[i], err);
        }
    }
    for (int s = 0; s < N_SEQ; s++) {
        seq_blocks_release(&blocks[s], &pool);
        seq_blocks_free(&blocks[s]);
        free(prompts[s]);
    }
    struct err ie;
    cr_assert_eq(block_pool_check(&pool, &ie), 0, "%s", ie.msg);
    free(want);
    step_builder_free(&sb);
    forward_ws_free(&ws, m);
    block_pool_free(&pool);
    kv_store_free(&kv, be);
    test_free_model(m, be);
}

Test(step_builder, llama_batched_equals_alone) { check_arch("tiny-llama"); }
Test(step_builder, qwen3_batched_equals_alone) { check_arch("tiny-qwen3"); }
Test(step_builder, gemma3_batched_equals_alone) { check_arch("tiny-gemma3"); }

Test(step_builder, limits_are_refused)
{
    struct block_pool pool;
    block_pool_init(&pool, 8, 1);
    struct seq_blocks blk = {0};
    cr_assert_eq(seq_blocks_reserve(&blk, &pool, 4, 4), 0);
    struct meta_caps caps = {4, 1, 2, 1};
    struct step_builder sb;
    step_builder_init(&sb, &caps, 4);
    int32_t toks[8] = {0};
    struct fwd_batch b;
    struct err e;
    struct step_seq q = {&blk, toks, 5, 0, 1};
    cr_assert_eq(step_build(&sb, &q, 1, &b, &e), -1, "more tokens than the capacity");
    q.n_tokens = 2;
    q.start_pos = 3; /* position 4 is not covered by one block of 4 */
    cr_assert_eq(step_build(&sb, &q, 1, &b, &e), -1);
    cr_assert(strstr(e.msg, "block table"), "%s", e.msg);
    struct step_seq two[2] = {{&blk, toks, 1, 0, 1}, {&blk, toks, 1, 1, 1}};
    cr_assert_eq(step_build(&sb, two, 2, &b, &e), -1, "more sequences than the capacity");
    step_builder_free(&sb);
    seq_blocks_release(&blk, &pool);
    seq_blocks_free(&blk);
    block_pool_free(&pool);
}
