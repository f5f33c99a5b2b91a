/* Continuous batching's core property on the CPU reference: sequences run
 * together in one step (prefills of different lengths, a prompt split into
 * chunks, decode rows mixed with a prefill chunk) give exactly the logits
 * each gives alone, through the step builder and the runner. And the
 * builder refuses steps past its capacities, naming the limit. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"
#include "test_util.h"

enum { N_SEQ = 4, DECODE = 5, BS = 4 };
static const int prompt_len[N_SEQ] = {1, 7, 23, 40};

static void init_runner(struct runner *r, struct model *m, int n_seqs, struct block_pool *pool)
{
    struct err e = {{0}};
    const struct runner_opts o = {.max_tokens = 128,
                                  .max_seqs = n_seqs,
                                  .max_context = 64,
                                  .block_size = BS,
                                  .kv_blocks = 64,
                                  .gpu_memory_utilization = 0.9,
                                  .return_logits = 1};
    cr_assert_eq(runner_init(r, m, &o, &e), 0, "%s", e.msg);
    block_pool_init(pool, r->kv.n_blocks, 1);
}

/* One sequence's entry: its tokens [at, at + n), its logits returned when
 * want is set. */
static struct step_seq entry(struct seq_blocks *blocks, struct block_pool *pool, const int32_t *toks, int at,
                             int n, int want)
{
    cr_assert_eq(seq_blocks_reserve(blocks, pool, at + n, BS), 0);
    return (struct step_seq){
        .blocks = blocks, .tokens = toks, .n_tokens = n, .start_pos = at, .return_logits = want};
}

/* The last row of entry i's returned logits. */
static const float *last_row(const struct runner *r, const struct step_seq *q, int n, int i)
{
    return runner_returned_logits(r, q, n, i) + (size_t)(q[i].n_tokens - 1) * r->m->cfg.vocab_size;
}

/* Logits of each sequence alone: after the prompt, then after each decode token. */
static void run_alone(struct model *m, int32_t **prompts, int32_t dec[N_SEQ][DECODE], float *want)
{
    const int V = m->cfg.vocab_size;
    struct err e = {{0}};
    struct sample_result none;
    for (int s = 0; s < N_SEQ; s++) {
        struct runner r;
        struct block_pool pool;
        struct seq_blocks blocks = {0};
        init_runner(&r, m, 1, &pool);
        float *row = want + (size_t)s * (DECODE + 1) * V;
        struct step_seq q = entry(&blocks, &pool, prompts[s], 0, prompt_len[s], 1);
        cr_assert_eq(runner_step(&r, &q, 1, &none, &e), 0, "%s", e.msg);
        memcpy(row, last_row(&r, &q, 1, 0), (size_t)V * sizeof(float));
        for (int d = 0; d < DECODE; d++) {
            q = entry(&blocks, &pool, &dec[s][d], prompt_len[s] + d, 1, 1);
            cr_assert_eq(runner_step(&r, &q, 1, &none, &e), 0, "%s", e.msg);
            memcpy(row + (size_t)(d + 1) * V, last_row(&r, &q, 1, 0), (size_t)V * sizeof(float));
        }
        seq_blocks_release(&blocks, &pool);
        seq_blocks_free(&blocks);
        block_pool_free(&pool);
        runner_free(&r);
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

    /* together: one runner, pool and cache for all sequences */
    struct runner r;
    struct block_pool pool;
    init_runner(&r, m, N_SEQ, &pool);
    struct seq_blocks blocks[N_SEQ] = {{0}};
    int done[N_SEQ] = {0}; /* positions in the cache */
    struct sample_result none[N_SEQ];

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
            q[n] = entry(&blocks[s], &pool, toks, done[s], count, want_row >= 0);
            owner[n] = s;
            row_of[n] = want_row;
            n++;
        }
        cr_assert_eq(runner_step(&r, q, n, none, &e), 0, "%s", e.msg);
        for (int i = 0; i < n; i++) {
            int s = owner[i];
            done[s] += q[i].n_tokens;
            if (row_of[i] < 0)
                continue;
            const float *ref = want + ((size_t)s * (DECODE + 1) + row_of[i]) * V;
            double err = max_rel_err(last_row(&r, q, n, i), ref, V);
            cr_assert(err <= 1e-6, "%s: step %d sequence %d row %d: rel err %.3g against running alone",
                      fixture, step, s, row_of[i], err);
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
    block_pool_free(&pool);
    runner_free(&r);
    test_free_model(m, be);
}

Test(step_builder, llama_batched_equals_alone) { check_arch("tiny-llama"); }
Test(step_builder, qwen3_batched_equals_alone) { check_arch("tiny-qwen3"); }
Test(step_builder, gemma3_batched_equals_alone) { check_arch("tiny-gemma3"); }

Test(step_builder, limits_are_refused)
{
    struct backend *be = backend_create(BACKEND_KIND_CPU_REFERENCE, 1, NULL);
    struct block_pool pool;
    block_pool_init(&pool, 8, 1);
    struct seq_blocks blk = {0};
    cr_assert_eq(seq_blocks_reserve(&blk, &pool, 4, 4), 0);
    struct meta_caps caps = {4, 1, 2, 1};
    struct meta_buffer mb;
    struct err e;
    cr_assert_eq(be->ops->meta_init(be, &caps, &mb, &e), 0);
    struct step_builder sb;
    step_builder_init(&sb, &mb, 4, NULL);
    int32_t toks[8] = {0};
    struct step_seq q = {.blocks = &blk, .tokens = toks, .n_tokens = 5, .draw = 1};
    struct step_shape s;
    step_shape_of(&q, 1, &s);
    cr_assert_eq(step_build(&sb, &q, 1, &s, &e), -1, "more tokens than the capacity");
    cr_assert(strstr(e.msg, "tokens"), "%s", e.msg);
    q.n_tokens = 2;
    q.start_pos = 3; /* position 4 is not covered by one block of 4 */
    step_shape_of(&q, 1, &s);
    cr_assert_eq(step_build(&sb, &q, 1, &s, &e), -1);
    cr_assert(strstr(e.msg, "block table"), "%s", e.msg);
    struct step_seq two[2] = {{.blocks = &blk, .tokens = toks, .n_tokens = 1, .draw = 1},
                              {.blocks = &blk, .tokens = toks, .n_tokens = 1, .start_pos = 1, .draw = 1}};
    step_shape_of(two, 2, &s);
    cr_assert_eq(step_build(&sb, two, 2, &s, &e), -1, "more sequences than the capacity");
    cr_assert(strstr(e.msg, "sequences"), "%s", e.msg);
    q = (struct step_seq){.blocks = &blk, .tokens = toks, .n_tokens = 1, .draw = 1, .return_logits = 1};
    step_shape_of(&q, 1, &s);
    cr_assert_eq(step_build(&sb, &q, 1, &s, &e), -1, "more logit rows than the capacity");
    cr_assert(strstr(e.msg, "logit rows"), "%s", e.msg);
    be->ops->meta_free(be, &mb);
    seq_blocks_release(&blk, &pool);
    seq_blocks_free(&blk);
    block_pool_free(&pool);
    backend_free(be);
}

/* A sampler's rule as the CUDA sampler's is: rows it draws from the
 * statistics alone are the plain greedy ones. */
static int unless_plain_greedy(const struct sampling_params *p, int masked)
{
    return masked || !sampling_params_plain_greedy(p);
}

/* The step's logit-columns word: 0 only when the sampler's rule needs the
 * columns for no draw (here: every draw is plain greedy, or every row of a
 * sampler without a rule) and no row returns its logits; padding rows
 * change nothing. */
Test(step_builder, logit_columns_word_says_when_rank_0_needs_them)
{
    struct backend *be = backend_create(BACKEND_KIND_CPU_REFERENCE, 1, NULL);
    struct block_pool pool;
    block_pool_init(&pool, 8, 1);
    struct seq_blocks blk[2] = {{0}};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(seq_blocks_reserve(&blk[i], &pool, 4, 4), 0);
    struct meta_caps caps = {8, 4, 2, 4};
    struct meta_buffer mb;
    struct err e;
    cr_assert_eq(be->ops->meta_init(be, &caps, &mb, &e), 0);
    struct step_builder sb;
    step_builder_init(&sb, &mb, 4, unless_plain_greedy);
    int32_t toks[2] = {0};
    struct sampling_params greedy = sampling_params_default();
    greedy.temperature = 0.f;
    struct sampling_params kinds[5];
    for (int k = 0; k < 5; k++)
        kinds[k] = greedy;
    kinds[0].temperature = 0.7f;
    kinds[1].top_logprobs = 2;
    kinds[2].repetition_penalty = 1.1f;
    kinds[3].frequency_penalty = 0.5f;
    const struct logit_bias bias = {3, 1.f};
    kinds[4].bias = &bias, kinds[4].n_bias = 1;
    const struct step_shape padded = {.n_tokens = 4, .n_seqs = 4, .n_draws = 4, .n_logits = 4, .decode = 1};
    struct step_seq q[2];
    for (int i = 0; i < 2; i++)
        q[i] = (struct step_seq){.blocks = &blk[i], .tokens = toks, .n_tokens = 1, .draw = 1,
                                 .sample = {.params = &greedy}};
    cr_assert_eq(step_build(&sb, q, 2, &padded, &e), 0, "%s", e.msg);
    cr_assert_eq(mb.host[mb.layout.logit_cols], 0, "two plain greedy rows need no columns");
    for (int k = 0; k < 5; k++) {
        q[1].sample.params = &kinds[k];
        cr_assert_eq(step_build(&sb, q, 2, &padded, &e), 0, "%s", e.msg);
        cr_assert_eq(mb.host[mb.layout.logit_cols], 1, "row kind %d reads its logits", k);
    }
    q[1].sample.params = &greedy;
    const uint32_t mask = 1;
    q[1].sample.mask = &mask;
    cr_assert_eq(step_build(&sb, q, 2, &padded, &e), 0, "%s", e.msg);
    cr_assert_eq(mb.host[mb.layout.logit_cols], 1, "a greedy row under a grammar's mask reads its logits");
    q[1].sample.mask = NULL;
    q[1].draw = 0, q[1].return_logits = 1;
    cr_assert_eq(step_build(&sb, q, 2, &padded, &e), 0, "%s", e.msg);
    cr_assert_eq(mb.host[mb.layout.logit_cols], 1, "a row that returns its logits");
    cr_assert_eq(step_build(&sb, NULL, 0, &padded, &e), 0, "%s", e.msg);
    cr_assert_eq(mb.host[mb.layout.logit_cols], 0, "a padding-only step (a capture's)");
    q[1].draw = 1, q[1].return_logits = 0;
    step_builder_init(&sb, &mb, 4, NULL);
    cr_assert_eq(step_build(&sb, q, 2, &padded, &e), 0, "%s", e.msg);
    cr_assert_eq(mb.host[mb.layout.logit_cols], 1, "a sampler without a rule: every draw needs them");
    be->ops->meta_free(be, &mb);
    for (int i = 0; i < 2; i++) {
        seq_blocks_release(&blk[i], &pool);
        seq_blocks_free(&blk[i]);
    }
    block_pool_free(&pool);
    backend_free(be);
}
