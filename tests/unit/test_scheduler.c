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

#include "core/rng.h"
#include "sched/scheduler.h"
#include "spec/ngram.h"
#include "spec/suffix.h"
#include "engine/spec_draft.h"
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

/* A draft proposer: the fixture's own model again (what the target itself
 * would draw, so nearly every proposal is kept). */
static struct spec_proposer *same_model_draft(const struct model *m, const char *fixture, int max_seqs, int budget)
{
    struct err e = {{0}};
    const struct spec_draft_opts o = {.path = fixture_path(fixture),
                                      .max_seqs = max_seqs,
                                      .max_tokens = budget,
                                      .max_context = 512,
                                      .block_size = HARNESS_BS,
                                      .kv_blocks = 64,
                                      .gpu_memory_utilization = 0.9};
    struct spec_proposer *p = spec_draft_create(m, &o, &e);
    cr_assert(p, "%s", e.msg);
    return p;
}

/* Runs all requests through the scheduler (integrity checked after every
 * step), speculating with spec (up to spec_k tokens) unless it is NULL;
 * outputs land in reqs[i].out. Returns the scheduler's preemptions. */
static long run_spec(struct model *m, struct workload *w, struct sequence *reqs, int n_blocks, int budget,
                     int max_seqs, float temperature, int prefix_cache, struct spec_proposer *spec, int spec_k,
                     struct scheduler_stats *stats)
{
    struct harness h;
    harness_init_spec(&h, m, n_blocks, budget, max_seqs, prefix_cache, spec, spec_k);
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

static long run_engine(struct model *m, struct workload *w, struct sequence *reqs, int n_blocks, int budget,
                       int max_seqs, float temperature, int prefix_cache, struct scheduler_stats *stats)
{
    return run_spec(m, w, reqs, n_blocks, budget, max_seqs, temperature, prefix_cache, NULL, 0, stats);
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

/* Every b[i] has a[i]'s tokens (b freed after); why: what differs between the runs. */
static void same_outputs(struct sequence *a, struct sequence *b, const char *why)
{
    for (int i = 0; i < N_REQ; i++) {
        cr_assert_eq(a[i].n_out, b[i].n_out, "request %d (%s)", i, why);
        cr_assert_eq(memcmp(a[i].out, b[i].out, (size_t)a[i].n_out * sizeof(int32_t)), 0,
                     "request %d: seeded tokens depend on %s", i, why);
        sequence_free(&b[i]);
    }
}

Test(scheduler, seeded_sampling_is_independent_of_the_batch_mix)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    struct workload w;
    make_workload(&w, m->cfg.vocab_size, 1);
    static struct sequence a[N_REQ], b[N_REQ];
    run_engine(m, &w, a, 40, 96, 16, 0.8f, 0, NULL);
    run_engine(m, &w, b, 64, 37, 5, 0.8f, 1, NULL);
    same_outputs(a, b, "the batch mix");
    int multi_token_requests = 0;
    for (int i = 0; i < N_REQ; i++) {
        multi_token_requests += a[i].n_out > 1;
        sequence_free(&a[i]);
        free(w.prompts[i]);
    }
    cr_assert(multi_token_requests > 10);
    test_free_model(m, be);
}

/* Speculative decoding through the same workload, greedy, preemption and
 * (on) the prefix cache's evictions included: every output equals running
 * alone with no speculation, for three proposers: prompt lookup; an oracle
 * that proposes the true continuation (every proposal kept, up to k); and
 * noise (k random tokens: nearly all rejected, their KV rolled back). */
struct oracle {
    struct spec_proposer base;
    const struct workload *w;
    int32_t **truth; /* [N_REQ] each request's output alone */
    int *n_truth;
    struct rng r;
    int noise;
};

static int oracle_propose(struct spec_proposer *p, const struct spec_seq *s, int max_k, int32_t *out)
{
    struct oracle *o = (struct oracle *)p;
    const int done = s->n_known - s->n_prompt;
    int k = 0;
    for (; k < max_k; k++)
        if (o->noise)
            out[k] = (int32_t)(rng_next(&o->r) % 64);
        else if (done + k < o->n_truth[s->id])
            out[k] = o->truth[s->id][done + k];
        else
            break;
    return k;
}

static void oracle_free(struct spec_proposer *p) { (void)p; }

static const struct spec_proposer_ops oracle_ops = {.name = "oracle", .propose = oracle_propose, .free = oracle_free};

static void check_speculative(const char *fixture, int prefix_cache)
{
    struct backend *be;
    struct model *m = test_load_model(fixture, &be);
    struct workload w;
    make_workload(&w, m->cfg.vocab_size, prefix_cache);
    static struct sequence reqs[N_REQ];
    int32_t *truth[N_REQ];
    int n_truth[N_REQ];
    for (int i = 0; i < N_REQ; i++)
        truth[i] = alone_greedy(m, w.prompts[i], w.n_prompt[i], w.max_tokens[i], &n_truth[i], NULL);
    struct err e;
    const struct spec_ngram_opts no = {1, 3};
    struct spec_proposer *ngram = spec_ngram_create(&no, &e);
    struct oracle oracle = {{&oracle_ops}, &w, truth, n_truth, {{0}}, 0}, noise = oracle;
    noise.noise = 1;
    rng_seed(&noise.r, 3, 0, 0);
    struct spec_suffix_opts so = spec_suffix_opts_default();
    so.cache_tokens = 4096; /* small enough to evict */
    struct spec_proposer *suffix = spec_suffix_create(&so, &e);
    struct spec_proposer *draft = same_model_draft(m, fixture, 16, 96);
    struct spec_proposer *props[] = {ngram, suffix, &oracle.base, &noise.base, draft};
    const char *names[] = {"prompt lookup", "suffix decoding", "oracle", "noise", "draft model"};
    for (int p = 0; p < 5; p++) {
        struct scheduler_stats st;
        const long pre = run_spec(m, &w, reqs, 40, 96, 16, 0.f, prefix_cache, props[p], 4, &st);
        cr_assert(pre > 0, "%s: the pool was meant to force preemption", fixture);
        cr_assert_gt(st.spec_proposed, 0, "%s, %s: nothing proposed", fixture, names[p]);
        if (p == 2)
            cr_assert_eq(st.spec_accepted, st.spec_proposed, "%s: the oracle's proposals are all right", fixture);
        else if (p == 3)
            cr_assert_lt(st.spec_accepted * 4, st.spec_proposed, "%s: noise is mostly wrong", fixture);
        else if (p == 4)
            cr_assert_gt(st.spec_accepted * 10, st.spec_proposed * 9, "%s: the model drafting for itself: %ld of %ld",
                         fixture, st.spec_accepted, st.spec_proposed);
        for (int i = 0; i < N_REQ; i++) {
            cr_assert_eq(reqs[i].n_out, n_truth[i], "%s, %s, request %d: %d tokens, %d alone", fixture, names[p], i,
                         reqs[i].n_out, n_truth[i]);
            cr_assert_eq(memcmp(reqs[i].out, truth[i], (size_t)n_truth[i] * sizeof(int32_t)), 0,
                         "%s, %s, request %d: tokens differ from running alone", fixture, names[p], i);
            sequence_free(&reqs[i]);
        }
        cr_log_info("%s, %s, prefix cache %s: %ld verify steps, %ld of %ld proposals accepted, %ld preemptions",
                    fixture, names[p], prefix_cache ? "on" : "off", st.spec_steps, st.spec_accepted,
                    st.spec_proposed, pre);
    }
    for (int i = 0; i < N_REQ; i++)
        free(truth[i]), free(w.prompts[i]);
    struct spec_suffix_stats ss;
    spec_suffix_stats(suffix, &ss);
    cr_assert_gt(ss.cached_seqs, 0, "%s: finished outputs are kept", fixture);
    struct spec_draft_stats ds;
    spec_draft_stats(draft, &ds);
    cr_log_info("%s: %ld draft steps fed %ld tokens", fixture, ds.steps, ds.tokens);
    spec_free(ngram);
    spec_free(suffix);
    spec_free(draft);
    test_free_model(m, be);
}

Test(scheduler, llama_speculative_equal_alone) { check_speculative("tiny-llama", 0); }
Test(scheduler, qwen3_speculative_equal_alone) { check_speculative("tiny-qwen3", 1); }
Test(scheduler, gemma3_speculative_equal_alone) { check_speculative("tiny-gemma3", 1); }

/* Seeded sampled requests: the same tokens with speculation as without,
 * whether the proposals are the sampled continuation itself (all kept) or
 * prompt lookup's (on a tiny model's flat distributions, mostly not) or
 * suffix decoding's from an earlier run of the same requests. */
Test(scheduler, seeded_sampling_is_the_same_speculating)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    struct workload w;
    make_workload(&w, m->cfg.vocab_size, 1);
    static struct sequence a[N_REQ], b[N_REQ];
    run_engine(m, &w, a, 40, 96, 16, 0.8f, 0, NULL);
    int32_t *truth[N_REQ];
    int n_truth[N_REQ];
    for (int i = 0; i < N_REQ; i++)
        truth[i] = a[i].out, n_truth[i] = a[i].n_out;
    struct err e;
    const struct spec_ngram_opts no = {1, 3};
    struct spec_proposer *ngram = spec_ngram_create(&no, &e);
    struct oracle oracle = {{&oracle_ops}, &w, truth, n_truth, {{0}}, 0};
    /* suffix decoding as if the same requests had run before: their outputs
     * in its shared index (the flat draws seldom repeat themselves) */
    const struct spec_suffix_opts so = spec_suffix_opts_default();
    struct spec_proposer *suffix = spec_suffix_create(&so, &e);
    for (int i = 0; i < N_REQ; i++) {
        const struct spec_seq q = {.id = 1000 + i, .tokens = a[i].tokens, .n_prompt = a[i].n_prompt,
                                   .n_known = sequence_known(&a[i])};
        spec_finish(suffix, &q);
    }
    /* the model drafting for itself, its draws on the sequences' own noise: the same tokens, so kept */
    struct spec_proposer *draft = same_model_draft(m, "tiny-qwen3", 16, 96);
    struct spec_proposer *props[] = {&oracle.base, ngram, suffix, draft};
    for (int p = 0; p < 4; p++) {
        struct scheduler_stats st;
        run_spec(m, &w, b, 40, 96, 16, 0.8f, 1, props[p], 4, &st);
        cr_assert_gt(st.spec_proposed, 0);
        if (p == 0)
            cr_assert_eq(st.spec_accepted, st.spec_proposed, "the sampled continuation itself is kept");
        if (p == 2)
            cr_assert_gt(st.spec_accepted * 2, st.spec_proposed, "the earlier run's outputs are mostly kept: %ld of %ld",
                         st.spec_accepted, st.spec_proposed);
        if (p == 3)
            cr_assert_gt(st.spec_accepted * 10, st.spec_proposed * 9,
                         "the model's own sampled draws on the same noise are kept: %ld of %ld", st.spec_accepted,
                         st.spec_proposed);
        same_outputs(a, b, props[p]->ops->name);
    }
    for (int i = 0; i < N_REQ; i++) {
        sequence_free(&a[i]);
        free(w.prompts[i]);
    }
    spec_free(ngram);
    spec_free(suffix);
    spec_free(draft);
    test_free_model(m, be);
}
