/* The CPU sampler: greedy, temperature draws that follow softmax and depend
 * only on (seed, step), each filter and penalty, logit bias, log-probs, and
 * parameter validation. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "sampling/sampling.h"

#define V 8

static int32_t draw(const float *logits, const struct sampling_params *p, uint64_t step)
{
    float scratch[2 * V];
    struct sample_result r;
    sample_token(logits, V, p, NULL, 0, NULL, 0, step, scratch, &r);
    return r.token;
}

Test(sampling, greedy_takes_the_lowest_of_tied_maxima)
{
    float l[V] = {0, 3, 1, 3, -2, 0, 0, 0};
    struct sampling_params p = sampling_params_default();
    cr_assert_eq(draw(l, &p, 0), 1);
}

Test(sampling, seeded_draws_repeat_and_follow_softmax)
{
    float l[V] = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -30.0f, -30.0f, -30.0f};
    struct sampling_params p = sampling_params_default();
    p.temperature = 1.0f;
    p.seed = 1234;
    double z = 0, want[V];
    for (int i = 0; i < V; i++)
        z += exp(l[i]);
    for (int i = 0; i < V; i++)
        want[i] = exp(l[i]) / z;
    int counts[V] = {0};
    const int N = 40000;
    for (int s = 0; s < N; s++) {
        int32_t t = draw(l, &p, (uint64_t)s);
        cr_assert_eq(t, draw(l, &p, (uint64_t)s), "same seed and step, same token");
        counts[t]++;
    }
    for (int i = 0; i < V; i++)
        cr_assert(fabs((double)counts[i] / N - want[i]) < 0.01, "token %d: %.4f drawn, softmax %.4f", i,
                  (double)counts[i] / N, want[i]);
    p.seed = 99;
    int differ = 0;
    for (int s = 0; s < 200; s++) {
        p.seed = 1234;
        int32_t a = draw(l, &p, (uint64_t)s);
        p.seed = 99;
        differ += a != draw(l, &p, (uint64_t)s);
    }
    cr_assert(differ > 50, "another seed gives other draws (%d of 200 differ)", differ);
}

static int support(const float *l, const struct sampling_params *p, int *seen)
{
    memset(seen, 0, V * sizeof *seen);
    int n = 0;
    for (int s = 0; s < 3000; s++) {
        int32_t t = draw(l, p, (uint64_t)s);
        n += !seen[t];
        seen[t] = 1;
    }
    return n;
}

Test(sampling, filters_restrict_the_support)
{
    /* probabilities at temperature 1: about .50 .30 .15 .05 and tiny rest */
    float l[V] = {logf(.50f), logf(.30f), logf(.15f), logf(.05f), -40, -40, -40, -40};
    struct sampling_params p = sampling_params_default();
    p.temperature = 1.0f;
    int seen[V];
    p.top_k = 1;
    cr_assert_eq(support(l, &p, seen), 1);
    cr_assert(seen[0]);
    p.top_k = 2;
    cr_assert_eq(support(l, &p, seen), 2);
    cr_assert(seen[0] && seen[1]);
    p.top_k = 0;
    p.top_p = 0.7f; /* .50 < .7 <= .80 */
    cr_assert_eq(support(l, &p, seen), 2);
    p.top_p = 0.85f; /* needs the third */
    cr_assert_eq(support(l, &p, seen), 3);
    p.top_p = 1.0f;
    p.min_p = 0.25f; /* keeps p >= .125 */
    cr_assert_eq(support(l, &p, seen), 3);
    cr_assert(seen[0] && seen[1] && seen[2] && !seen[3]);
}

Test(sampling, penalties_and_bias)
{
    float l[V] = {4, 2, -2, 1, 0, 0, 0, 0};
    struct sampling_params p = sampling_params_default();
    float scratch[2 * V];
    struct sample_result r;
    int32_t out1[] = {0};
    /* repetition 3: token 0 (4 -> 1.33) loses to token 1 (2) */
    p.repetition_penalty = 3.0f;
    sample_token(l, V, &p, NULL, 0, out1, 1, 0, scratch, &r);
    cr_assert_eq(r.token, 1);
    /* a negative logit is multiplied: token 2 falls further */
    int32_t prompt[] = {2};
    p.repetition_penalty = 2.0f;
    p.bias = (struct logit_bias[]){{0, -100.f}, {1, -100.f}, {3, -100.f}};
    p.n_bias = 3;
    sample_token(l, V, &p, prompt, 1, NULL, 0, 0, scratch, &r);
    cr_assert_eq(r.token, 4, "tokens 4..7 (0) beat token 2 (-4), lowest id first");
    /* presence + frequency: 4 - (0.5 + 2 * 1.5) = 0.5 < 1 */
    p = sampling_params_default();
    int32_t out2[] = {0, 0};
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 1.5f;
    sample_token(l, V, &p, NULL, 0, out2, 2, 0, scratch, &r);
    cr_assert_eq(r.token, 1);
    /* bias forces a token */
    p = sampling_params_default();
    p.bias = (struct logit_bias[]){{7, 100.f}};
    p.n_bias = 1;
    sample_token(l, V, &p, NULL, 0, NULL, 0, 0, scratch, &r);
    cr_assert_eq(r.token, 7);
}

Test(sampling, logprobs_are_the_models)
{
    float l[V] = {1, 2, 3, 0, 0, 0, 0, -1};
    struct sampling_params p = sampling_params_default();
    p.top_logprobs = 3;
    p.bias = (struct logit_bias[]){{0, 50.f}};
    p.n_bias = 1;
    float scratch[2 * V];
    struct sample_result r;
    sample_token(l, V, &p, NULL, 0, NULL, 0, 0, scratch, &r);
    cr_assert_eq(r.token, 0, "the bias chose token 0");
    double z = 0;
    for (int i = 0; i < V; i++)
        z += exp(l[i]);
    cr_assert_float_eq(r.logprob, 1 - log(z), 1e-5, "log-probs ignore the bias");
    cr_assert(r.top_ids[0] == 2 && r.top_ids[1] == 1 && r.top_ids[2] == 0);
    cr_assert_float_eq(r.top_logprobs[0], 3 - log(z), 1e-5);
}

Test(sampling, invalid_parameters_name_the_field)
{
    struct err e;
    struct sampling_params p = sampling_params_default();
    cr_assert_eq(sampling_params_check(&p, V, &e), 0);
    p.temperature = -1;
    cr_assert_eq(sampling_params_check(&p, V, &e), -1);
    cr_assert(strstr(e.msg, "temperature"));
    p = sampling_params_default();
    p.temperature = NAN;
    cr_assert_eq(sampling_params_check(&p, V, &e), -1);
    p = sampling_params_default();
    p.top_p = 0;
    cr_assert_eq(sampling_params_check(&p, V, &e), -1);
    cr_assert(strstr(e.msg, "top_p"));
    p = sampling_params_default();
    p.top_k = -3;
    cr_assert_eq(sampling_params_check(&p, V, &e), -1);
    cr_assert(strstr(e.msg, "top_k"));
    p = sampling_params_default();
    p.presence_penalty = 3;
    cr_assert_eq(sampling_params_check(&p, V, &e), -1);
    cr_assert(strstr(e.msg, "presence_penalty"));
    p = sampling_params_default();
    p.bias = (struct logit_bias[]){{V, 1.f}};
    p.n_bias = 1;
    cr_assert_eq(sampling_params_check(&p, V, &e), -1);
    cr_assert(strstr(e.msg, "logit_bias"));
    p = sampling_params_default();
    p.top_logprobs = 21;
    cr_assert_eq(sampling_params_check(&p, V, &e), -1);
    cr_assert(strstr(e.msg, "top_logprobs"));
}

Test(sampling, philox_known_answer)
{
    /* Random123's known-answer test for philox4x32-10: counter and key all ones */
    uint32_t r[4];
    philox4x32(0xffffffffffffffffull, 0xffffffffffffffffull, 0xffffffffffffffffull, r);
    cr_assert_eq(r[0], 0x408f276du);
    cr_assert_eq(r[1], 0x41c83b0eu);
    cr_assert_eq(r[2], 0xa20bc7c6u);
    cr_assert_eq(r[3], 0x6d5451fdu);
}

/* A grammar's mask: the draw and every filter see only the allowed tokens,
 * the log-probabilities are of the model's distribution restricted to them
 * (renormalized), a masked token never appears among top_logprobs (fewer
 * allowed than asked: the rest are -1), and a mask allowing everything is
 * no mask. */
Test(sampling, masks_restrict_draws_and_logprobs)
{
    float l[V] = {5.0f, 1.0f, 0.5f, 4.0f, -1.0f, 3.0f, 2.0f, 0.0f};
    float scratch[3 * V];
    const uint32_t mask = (1u << 1) | (1u << 2) | (1u << 6); /* tokens 1, 2, 6 */
    for (int cfg = 0; cfg < 4; cfg++) {
        struct sampling_params p = sampling_params_default();
        p.top_logprobs = 5;
        if (cfg >= 1)
            p.temperature = 1.f;
        if (cfg == 2)
            p.top_k = 2;
        if (cfg == 3)
            p.top_p = 0.5f, p.min_p = 0.1f;
        int seen[V] = {0};
        for (uint64_t step = 0; step < 300; step++) {
            struct sample_result r;
            sample_token_masked(l, V, &mask, &p, NULL, 0, NULL, 0, step, scratch, &r);
            cr_assert(mask >> r.token & 1, "cfg %d step %lu drew masked token %d", cfg, (unsigned long)step, r.token);
            seen[r.token]++;
            double lse = log(exp(1.0) + exp(0.5) + exp(2.0));
            cr_assert_float_eq(r.logprob, l[r.token] - lse, 1e-5);
            cr_assert_eq(r.top_ids[0], 6);
            cr_assert_eq(r.top_ids[1], 1);
            cr_assert_eq(r.top_ids[2], 2);
            cr_assert_eq(r.top_ids[3], -1, "only three tokens are allowed");
            cr_assert_eq(r.top_ids[4], -1);
            cr_assert(isinf(r.top_logprobs[3]) && r.top_logprobs[3] < 0);
        }
        if (cfg == 0)
            cr_assert_eq(seen[6], 300, "greedy under a mask takes the best allowed token");
        if (cfg == 1)
            cr_assert(seen[1] > 0 && seen[2] > 0 && seen[6] > 0, "sampling reaches every allowed token");
        if (cfg == 2)
            cr_assert_eq(seen[2], 0, "top_k counts the allowed tokens only");
    }
    /* everything allowed: the same as no mask */
    const uint32_t all = (1u << V) - 1;
    struct sampling_params p = sampling_params_default();
    p.temperature = 0.7f, p.top_logprobs = 3;
    for (uint64_t step = 0; step < 50; step++) {
        struct sample_result a, b;
        sample_token_masked(l, V, &all, &p, NULL, 0, NULL, 0, step, scratch, &a);
        sample_token(l, V, &p, NULL, 0, NULL, 0, step, scratch, &b);
        cr_assert(memcmp(&a, &b, sizeof a) == 0);
    }
}

/* A draw without log-probabilities is the same draw: logprobs only says
 * whether the sum over the vocabulary is wanted. */
Test(sampling, logprobs_off_draws_the_same)
{
    enum { W = 4096 };
    static float l[W], scratch[2 * W];
    struct rng g;
    rng_seed(&g, 11, 0, 0);
    for (int t = 0; t < W; t++)
        l[t] = (float)(rng_next(&g) % 2000) / 250.f;
    for (int cfg = 0; cfg < 3; cfg++) {
        struct sampling_params on = sampling_params_default();
        on.temperature = cfg == 0 ? 0.f : 0.8f;
        on.top_k = cfg == 2 ? 40 : 0;
        struct sampling_params off = on;
        off.logprobs = 0;
        for (uint64_t step = 0; step < 20; step++) {
            struct sample_result a, b;
            sample_token(l, W, &on, NULL, 0, NULL, 0, step, scratch, &a);
            sample_token(l, W, &off, NULL, 0, NULL, 0, step, scratch, &b);
            cr_assert_eq(a.token, b.token, "cfg %d step %lu", cfg, (unsigned long)step);
            cr_assert(a.logprob < 0.f && b.logprob == 0.f, "reported only when asked");
        }
    }
}
