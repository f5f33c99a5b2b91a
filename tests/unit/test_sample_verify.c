/* sampling/verify.c: speculative verification draws exactly what plain
 * decoding draws. Over random logit rows and parameters (greedy, and sampled
 * with temperature, top-k, top-p and the penalties, seeded), proposals that
 * follow plain decoding's tokens up to a random point and then differ:
 * sample_verify keeps exactly the agreeing prefix, and every result it gives
 * (token, log-probability, alternatives) is the one sample_token gives for
 * that output position with the same output before it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "sampling/sampling.h"

#define V 64
#define K 6

static float unit(struct rng *r) { return (float)(rng_next(r) >> 40) / (float)(1 << 24); }

Test(sample_verify, equals_plain_decoding)
{
    struct rng r;
    rng_seed(&r, 21, 0, 0);
    float logits[(K + 1) * V], scratch[3 * V];
    int32_t prompt[5] = {1, 2, 3, 4, 5}, out_tokens[16 + K + 1];
    int accepted_somewhere = 0, rejected_somewhere = 0;
    for (int trial = 0; trial < 3000; trial++) {
        struct sampling_params p = sampling_params_default();
        if (trial % 2) {
            p.temperature = 0.3f + 1.5f * unit(&r);
            p.top_k = trial % 3 ? 0 : 1 + (int)(rng_next(&r) % 20);
            p.top_p = trial % 5 ? 1.0f : 0.5f + 0.5f * unit(&r);
            p.seed = rng_next(&r);
        }
        if (trial % 7 == 0)
            p.repetition_penalty = 1.3f, p.frequency_penalty = 0.5f;
        p.top_logprobs = trial % 4;
        const int n_out = (int)(rng_next(&r) % 16), k = (int)(rng_next(&r) % (K + 1));
        for (int i = 0; i < n_out; i++)
            out_tokens[i] = (int32_t)(rng_next(&r) % V);
        for (int i = 0; i < (k + 1) * V; i++)
            logits[i] = 6.0f * unit(&r) - 3.0f;
        const uint64_t step = (uint64_t)(trial % 3) << 32 | (uint64_t)n_out;
        /* plain decoding's tokens through the k + 1 rows, then proposals that leave them at `wrong` */
        struct sample_result plain[K + 1];
        for (int i = 0; i <= k; i++) {
            sample_token(logits + i * V, V, &p, prompt, 5, out_tokens, n_out + i, step + (uint64_t)i, scratch, &plain[i]);
            out_tokens[n_out + i] = plain[i].token;
        }
        const int wrong = (int)(rng_next(&r) % (uint64_t)(k + 2)); /* k + 1: none wrong */
        if (wrong < k)
            out_tokens[n_out + wrong] = (plain[wrong].token + 1 + (int32_t)(rng_next(&r) % (V - 1))) % V;
        const struct sample_input in = {&p, prompt, 5, out_tokens, n_out, step, NULL};
        struct sample_result got[K + 1];
        const int m = sample_verify(logits, V, k, &in, scratch, got);
        const int want = wrong < k ? wrong + 1 : k + 1;
        cr_assert_eq(m, want, "trial %d: k=%d, proposal %d wrong: %d drawn, want %d", trial, k, wrong, m, want);
        for (int i = 0; i < m; i++) {
            cr_assert_eq(got[i].token, plain[i].token, "trial %d row %d", trial, i);
            cr_assert_eq(memcmp(&got[i], &plain[i], sizeof got[i]), 0, "trial %d row %d: results differ", trial, i);
        }
        accepted_somewhere += m > 1;
        rejected_somewhere += m <= k;
    }
    cr_assert_gt(accepted_somewhere, 1000);
    cr_assert_gt(rejected_somewhere, 1000);
}

/* Under a grammar each row has its own mask (the grammar after the
 * proposals before it): every row's draw is the masked one. */
Test(sample_verify, masked_rows)
{
    float logits[3 * V], scratch[3 * V];
    for (int i = 0; i < 3 * V; i++)
        logits[i] = (float)(i % V); /* unmasked, each row would draw token 63 */
    /* row 0: only 4; row 1: only 9 and 40 (40 wins); row 2: only 33 */
    uint32_t mask[3 * V / 32] = {0x10u, 0, 1u << 9, 1u << 8, 0, 1u << 1};
    struct sampling_params p = sampling_params_default();
    int32_t out[4] = {4, 40};
    const struct sample_input in = {&p, NULL, 0, out, 0, 0, mask};
    struct sample_result got[3];
    cr_assert_eq(sample_verify(logits, V, 2, &in, scratch, got), 3, "both proposals kept");
    cr_assert(got[0].token == 4 && got[1].token == 40 && got[2].token == 33);
    out[1] = 9; /* allowed, but not the draw */
    cr_assert_eq(sample_verify(logits, V, 2, &in, scratch, got), 2);
    cr_assert(got[0].token == 4 && got[1].token == 40);
}

/* The distribution: over 20,000 seeds, a verify step proposing one fixed
 * token draws its first token from the target's own distribution
 * (softmax of logits / T) — a chi-square test over the 8 tokens, 7 degrees
 * of freedom, at significance 0.001 (critical value 24.32) — and keeps the
 * proposal about as often as the target gives it (within 4 standard
 * errors). The second row, drawn only after a kept proposal, follows the
 * target's distribution too. */
Test(sample_verify, draws_follow_the_target_distribution)
{
    enum { W = 8, SEEDS = 20000 };
    const float logits[2 * W] = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, -1.5f, 0.7f, 1.4f,
                                 0.3f, 1.1f, -0.2f, 0.0f, 2.2f, -1.0f, 0.5f, 0.9f};
    const float T = 0.9f;
    double p[2][W];
    for (int r = 0; r < 2; r++) {
        double z = 0;
        for (int t = 0; t < W; t++)
            z += exp(logits[r * W + t] / T);
        for (int t = 0; t < W; t++)
            p[r][t] = exp(logits[r * W + t] / T) / z;
    }
    const int32_t proposal = 3;
    long first[W] = {0}, second[W] = {0}, kept = 0;
    float scratch[3 * W];
    for (int s = 0; s < SEEDS; s++) {
        struct sampling_params sp = sampling_params_default();
        sp.temperature = T;
        sp.seed = (uint64_t)s;
        int32_t out[4] = {proposal, 0, 0, 0};
        const struct sample_input in = {&sp, NULL, 0, out, 0, 0, NULL};
        struct sample_result got[2];
        const int m = sample_verify(logits, W, 1, &in, scratch, got);
        first[got[0].token]++;
        if (m == 2) {
            kept++;
            second[got[1].token]++;
        }
    }
    double chi = 0, chi2 = 0;
    for (int t = 0; t < W; t++) {
        const double e1 = SEEDS * p[0][t], e2 = (double)kept * p[1][t];
        chi += (first[t] - e1) * (first[t] - e1) / e1;
        chi2 += (second[t] - e2) * (second[t] - e2) / e2;
    }
    cr_assert_lt(chi, 24.32, "first row: chi-square %.2f over 7 degrees of freedom", chi);
    cr_assert_lt(chi2, 24.32, "second row: chi-square %.2f over 7 degrees of freedom", chi2);
    const double want = SEEDS * p[0][proposal], se = sqrt(SEEDS * p[0][proposal] * (1 - p[0][proposal]));
    cr_assert(fabs((double)kept - want) < 4 * se, "kept %ld of %d, the target gives it %.4f", kept, SEEDS,
              p[0][proposal]);
}
