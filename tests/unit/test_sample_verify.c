/* sampling/verify.c: speculative verification draws exactly what plain
 * decoding draws. Over random logit rows and parameters (greedy, and sampled
 * with temperature, top-k, top-p and the penalties, seeded), proposals that
 * follow plain decoding's tokens up to a random point and then differ:
 * sample_verify keeps exactly the agreeing prefix, and every result it gives
 * (token, log-probability, alternatives) is the one sample_token gives for
 * that output position with the same output before it. */
#include <criterion/criterion.h>
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

/* With a grammar's mask only row 0 is drawn (k must be 0): the masked draw. */
Test(sample_verify, masked_row)
{
    float logits[V], scratch[3 * V];
    for (int i = 0; i < V; i++)
        logits[i] = (float)i;
    uint32_t mask[V / 32] = {0x10u, 0}; /* only token 4 */
    struct sampling_params p = sampling_params_default();
    int32_t out[4] = {0};
    const struct sample_input in = {&p, NULL, 0, out, 0, 0, mask};
    struct sample_result got;
    cr_assert_eq(sample_verify(logits, V, 0, &in, scratch, &got), 1);
    cr_assert_eq(got.token, 4);
}
