/* The radix prefix cache inside the scheduler, the forks of n > 1 choices
 * and aborts, on the CPU reference with the tiny models. The scheduler's
 * integrity check (pool, tree, every block's holders) runs after every step
 * (sched_harness.c). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"
#include "test_util.h"

enum { N_SYS = 100, N_USERS = 8 };

/* N_USERS prompts: one 100-token system prompt, then 5..26 tokens each. */
static int32_t *user_prompt(int i, int vocab, int *n)
{
    *n = N_SYS + 5 + i * 3;
    int32_t *p = malloc((size_t)*n * sizeof(int32_t));
    for (int j = 0; j < *n; j++)
        p[j] = j < N_SYS ? (int32_t)((j * 131 + 7) % vocab) : (int32_t)((i * 977 + j * 31 + 3) % vocab);
    return p;
}

/* Request 0 alone, then the rest (so that the system prompt is cached when
 * they arrive). Outputs land in reqs. */
static struct scheduler_stats run_users(struct model *m, int32_t **prompts, const int *n_prompt, struct sequence *reqs,
                                        int prefix_cache)
{
    struct harness h;
    harness_init(&h, m, 128, 64, 8, prefix_cache);
    for (int i = 0; i < N_USERS; i++) {
        reqs[i] = (struct sequence){.id = i, .prompt = prompts[i], .n_prompt = n_prompt[i], .max_tokens = 12,
                                   .sampling = sampling_params_default()};
        scheduler_add(&h.s, &reqs[i]);
        if (i == 0)
            harness_run(&h);
    }
    harness_run(&h);
    struct scheduler_stats st = h.s.stats;
    harness_free(&h);
    return st;
}

static void system_prompt_reuse(const char *fixture)
{
    struct backend *be;
    struct model *m = test_load_model(fixture, &be);
    int32_t *prompts[N_USERS];
    int n_prompt[N_USERS];
    for (int i = 0; i < N_USERS; i++)
        prompts[i] = user_prompt(i, m->cfg.vocab_size, &n_prompt[i]);
    static struct sequence off[N_USERS], on[N_USERS];
    struct scheduler_stats a = run_users(m, prompts, n_prompt, off, 0);
    struct scheduler_stats b = run_users(m, prompts, n_prompt, on, 1);
    /* the 6 full blocks of the system prompt, for each of the 7 later requests */
    const int sys_blocks = N_SYS / HARNESS_BS;
    cr_assert_eq(b.hit_blocks, (N_USERS - 1) * sys_blocks, "%ld blocks hit", b.hit_blocks);
    cr_assert_eq(b.hit_tokens, (long)(N_USERS - 1) * sys_blocks * HARNESS_BS);
    cr_assert_eq(a.hit_tokens, 0);
    cr_assert_eq(a.computed_tokens - b.computed_tokens, b.hit_tokens,
                 "the model computed %ld tokens without the cache, %ld with it, %ld hit", a.computed_tokens,
                 b.computed_tokens, b.hit_tokens);
    long prompt_tokens = 0;
    for (int i = 0; i < N_USERS; i++)
        prompt_tokens += n_prompt[i];
    cr_assert_eq(b.lookup_tokens, prompt_tokens);
    for (int i = 0; i < N_USERS; i++) {
        cr_assert_eq(on[i].n_out, off[i].n_out);
        cr_assert_eq(memcmp(on[i].out, off[i].out, (size_t)on[i].n_out * sizeof(int32_t)), 0,
                     "%s request %d: output differs with the prefix cache", fixture, i);
        sequence_free(&on[i]);
        sequence_free(&off[i]);
        free(prompts[i]);
    }
    test_free_model(m, be);
}

Test(prefix_cache, llama_system_prompt_is_reused) { system_prompt_reuse("tiny-llama"); }
Test(prefix_cache, gemma3_system_prompt_is_reused) { system_prompt_reuse("tiny-gemma3"); }

/* A prompt cached whole (block aligned) still computes its last block: the
 * last token's logits draw the first output token. */
Test(prefix_cache, fully_cached_prompt_computes_its_last_token)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    int32_t prompt[64];
    for (int j = 0; j < 64; j++)
        prompt[j] = (int32_t)((j * 29 + 1) % m->cfg.vocab_size);
    struct harness h;
    harness_init(&h, m, 32, 64, 4, 1);
    struct sequence r[2];
    for (int i = 0; i < 2; i++) {
        r[i] = (struct sequence){.id = i, .prompt = prompt, .n_prompt = 64, .max_tokens = 5,
                                .sampling = sampling_params_default()};
        scheduler_add(&h.s, &r[i]);
        harness_run(&h);
    }
    cr_assert_eq(h.s.stats.hit_tokens, 48, "3 of 4 blocks come from the cache, got %ld tokens",
                 h.s.stats.hit_tokens);
    cr_assert_eq(h.s.stats.computed_tokens, (64 + 4) + (16 + 4));
    cr_assert_eq(r[1].n_out, r[0].n_out);
    cr_assert_eq(memcmp(r[0].out, r[1].out, (size_t)r[0].n_out * sizeof(int32_t)), 0);
    harness_free(&h);
    sequence_free(&r[0]);
    sequence_free(&r[1]);
    test_free_model(m, be);
}

/* Many requests over a few shared prefixes in a pool far too small to keep
 * them: cached blocks are evicted (LRU, unlocked only) before anything is
 * preempted, the integrity check holds after every step, and the outputs
 * are those without the cache. */
Test(prefix_cache, eviction_pressure_keeps_integrity_and_outputs)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-llama", &be);
    enum { N = 40 };
    static int32_t prompts[N][90];
    static struct sequence a[N], b[N];
    int n_prompt[N];
    for (int i = 0; i < N; i++) {
        n_prompt[i] = 20 + (i * 13) % 70;
        for (int j = 0; j < n_prompt[i]; j++)
            prompts[i][j] = j < 48 ? (int32_t)((i % 5 * 101 + j * 7 + 1) % m->cfg.vocab_size)
                                   : (int32_t)((i * 53 + j) % m->cfg.vocab_size);
    }
    struct scheduler_stats st[2];
    for (int pass = 0; pass < 2; pass++) {
        struct sequence *reqs = pass ? b : a;
        struct harness h;
        harness_init(&h, m, 24, 48, 4, pass);
        for (int i = 0; i < N; i++) {
            reqs[i] = (struct sequence){.id = i, .prompt = prompts[i], .n_prompt = n_prompt[i],
                                       .max_tokens = 1 + i % 9, .sampling = sampling_params_default()};
            scheduler_add(&h.s, &reqs[i]);
        }
        harness_run(&h);
        st[pass] = h.s.stats;
        harness_free(&h);
    }
    cr_assert(st[1].evicted_blocks > 10 && st[1].hit_blocks > 10, "%ld evicted, %ld hit", st[1].evicted_blocks,
              st[1].hit_blocks);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(a[i].n_out, b[i].n_out);
        cr_assert_eq(memcmp(a[i].out, b[i].out, (size_t)a[i].n_out * sizeof(int32_t)), 0, "request %d", i);
        sequence_free(&a[i]);
        sequence_free(&b[i]);
    }
    test_free_model(m, be);
}

/* n = 3 choices: the prompt's full blocks are prefilled once and shared;
 * each choice draws from its own stream (seed, choice), so each equals the
 * same choice run on its own, and the choices differ. */
static void run_choices(struct model *m, const int32_t *prompt, int n_prompt, struct sequence *r, int n, int fork,
                        int prefix_cache, struct scheduler_stats *st)
{
    struct harness h;
    harness_init(&h, m, 64, 256, 8, prefix_cache);
    for (int i = 0; i < n; i++) {
        r[i] = (struct sequence){.id = i, .prompt = prompt, .n_prompt = n_prompt, .max_tokens = 10,
                                .sampling = sampling_params_default(), .choice = i,
                                .fork_parent = fork && i ? &r[0] : NULL, .ignore_eos = 1};
        r[i].sampling.temperature = 1.0f;
        r[i].sampling.seed = 77;
        scheduler_add(&h.s, &r[i]);
    }
    harness_run(&h);
    *st = h.s.stats;
    harness_free(&h);
}

Test(prefix_cache, n_choices_share_the_prompt_and_have_their_own_streams)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    int32_t prompt[50];
    for (int j = 0; j < 50; j++)
        prompt[j] = (int32_t)((j * 41 + 9) % m->cfg.vocab_size);
    struct sequence forked[3], alone[3];
    struct scheduler_stats st, st_alone;
    run_choices(m, prompt, 50, forked, 3, 1, 0, &st);
    cr_assert_eq(st.forked_blocks, 2 * 3, "choices 1 and 2 share 3 blocks each, got %ld", st.forked_blocks);
    /* choice 0 prefills 50 tokens, the others the 2 past the shared blocks */
    cr_assert_eq(st.computed_tokens, 50 + 2 * 2 + 3 * 9, "%ld tokens computed", st.computed_tokens);
    int differ = 0;
    for (int i = 0; i < 3; i++) {
        struct sequence one[3];
        run_choices(m, prompt, 50, one, i + 1, 0, 0, &st_alone);
        alone[i] = one[i];
        for (int j = 0; j < i; j++)
            sequence_free(&one[j]);
        cr_assert_eq(forked[i].n_out, alone[i].n_out);
        cr_assert_eq(memcmp(forked[i].out, alone[i].out, (size_t)alone[i].n_out * sizeof(int32_t)), 0,
                     "choice %d differs from itself run alone", i);
        differ += i && memcmp(forked[i].out, forked[0].out, (size_t)forked[0].n_out * sizeof(int32_t));
    }
    cr_assert(differ > 0, "the choices drew the same tokens: streams are not independent");
    /* with the prefix cache on as well, the fork still takes precedence */
    struct sequence cached[3];
    run_choices(m, prompt, 50, cached, 3, 1, 1, &st);
    cr_assert_eq(st.forked_blocks, 6);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(memcmp(cached[i].out, forked[i].out, (size_t)forked[i].n_out * sizeof(int32_t)), 0);
        sequence_free(&cached[i]);
        sequence_free(&forked[i]);
        sequence_free(&alone[i]);
    }
    test_free_model(m, be);
}

/* Aborting a running and a waiting request frees their blocks; the others
 * finish as before. */
Test(prefix_cache, abort_frees_blocks)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-llama", &be);
    int32_t prompt[40];
    for (int j = 0; j < 40; j++)
        prompt[j] = (int32_t)(j * 3 + 1);
    struct harness h;
    harness_init(&h, m, 32, 64, 2, 1);
    struct sequence r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (struct sequence){.id = i, .prompt = prompt + i, .n_prompt = 36, .max_tokens = 20,
                                .sampling = sampling_params_default(), .ignore_eos = 1};
        scheduler_add(&h.s, &r[i]);
    }
    for (int k = 0; k < 3; k++)
        harness_step(&h);
    cr_assert_eq(r[0].state, SEQUENCE_RUNNING);
    cr_assert_eq(r[3].state, SEQUENCE_WAITING);
    int free_before = block_pool_n_free(&h.pool) + radix_evictable(&h.s.radix);
    scheduler_abort(&h.s, &r[0]);
    scheduler_abort(&h.s, &r[3]);
    struct err e;
    cr_assert_eq(scheduler_check(&h.s, &e), 0, "%s", e.msg);
    cr_assert_eq(block_pool_n_free(&h.pool) + radix_evictable(&h.s.radix), free_before + 3,
                 "the aborted request's 3 blocks are free or evictable");
    cr_assert_eq(r[0].finish, FINISH_REASON_ABORT);
    harness_run(&h);
    cr_assert_eq(r[1].n_out, 20);
    cr_assert_eq(r[2].n_out, 20);
    cr_assert_eq(r[3].n_out, 0);
    harness_free(&h);
    for (int i = 0; i < 4; i++)
        sequence_free(&r[i]);
    test_free_model(m, be);
}
