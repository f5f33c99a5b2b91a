/* The compact seen-token lists of the sample op (sample_seen_build and
 * _expand), the CPU backend's sampler ops, and the runner's sampler's choice between
 * the backend's op and the host: every path draws what sample_token draws
 * from the raw history. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "sampling/sample_seen.h"
#include "core/rng.h"
#include "runner/sampler.h"

#define V 300
#define HIST 200

static void random_params(struct rng *g, struct sampling_params *p, struct logit_bias *bias)
{
    *p = sampling_params_default();
    int kind = (int)(rng_next(g) % 4);
    p->temperature = kind == 0 ? 0.f : 0.5f + (float)rng_uniform(g);
    p->repetition_penalty = kind & 1 ? 0.7f + (float)rng_uniform(g) : 1.f;
    p->presence_penalty = kind & 2 ? (float)rng_uniform(g) * 2 - 1 : 0.f;
    p->frequency_penalty = kind & 2 ? (float)rng_uniform(g) : 0.f;
    p->top_k = (int)(rng_next(g) % 3) * 20;
    p->top_p = rng_next(g) % 2 ? 0.9f : 1.f;
    p->seed = rng_next(g);
    p->top_logprobs = (int)(rng_next(g) % 5);
    bias[0] = (struct logit_bias){(int32_t)(rng_next(g) % V), 5.f};
    bias[1] = (struct logit_bias){bias[0].token, -2.5f};
    p->bias = bias;
    p->n_bias = (int)(rng_next(g) % 3);
}

static void random_logits(struct rng *g, float *l)
{
    for (int t = 0; t < V; t++)
        l[t] = (float)(2 * rng_normal(g));
}

static void random_history(struct rng *g, int32_t *h, int n)
{
    for (int i = 0; i < n; i++)
        h[i] = (int32_t)(rng_next(g) % 60); /* few distinct ids: repeats */
}

Test(sample_seen, lists_are_what_the_penalties_read)
{
    struct rng g;
    rng_seed(&g, 7, 0, 0);
    int32_t slot[V], prompt[HIST], output[HIST], ep[2 * HIST], eo[HIST];
    memset(slot, 0xff, sizeof slot);
    float l[V], scratch[2 * V];
    struct sample_seen seen[2 * HIST];
    for (int it = 0; it < 500; it++) {
        struct sampling_params p;
        struct logit_bias bias[2];
        random_params(&g, &p, bias);
        random_logits(&g, l);
        int np = 1 + (int)(rng_next(&g) % HIST), no = (int)(rng_next(&g) % HIST);
        random_history(&g, prompt, np);
        random_history(&g, output, no);
        int n = sample_seen_build(&p, prompt, np, output, no, slot, seen, 2 * HIST);
        cr_assert_geq(n, 0);
        int nep, neo;
        sample_seen_expand(seen, n, ep, &nep, eo, &neo);
        cr_assert_leq(neo, no);
        struct sample_result a, b;
        uint64_t step = rng_next(&g) % 100;
        sample_token(l, V, &p, prompt, np, output, no, step, scratch, &a);
        sample_token(l, V, &p, ep, nep, eo, neo, step, scratch, &b);
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "iteration %d: token %d vs %d", it, a.token, b.token);
        for (int t = 0; t < V; t++)
            cr_assert_eq(slot[t], -1, "the scratch is left as given");
    }
}

Test(sample_seen, counts_and_prompt_flags)
{
    int32_t slot[V];
    memset(slot, 0xff, sizeof slot);
    const int32_t prompt[] = {5, 6, 5}, output[] = {6, 7, 7, 7};
    struct sample_seen s[8];
    struct sampling_params p = sampling_params_default();
    cr_assert_eq(sample_seen_build(&p, prompt, 3, output, 4, slot, s, 8), 0, "no penalty: nothing to list");
    p.frequency_penalty = 0.5f;
    cr_assert_eq(sample_seen_build(&p, prompt, 3, output, 4, slot, s, 8), 2, "the output only");
    cr_assert(s[0].token == 6 && sample_seen_n_output(&s[0]) == 1 && !sample_seen_in_prompt(&s[0]));
    cr_assert(s[1].token == 7 && sample_seen_n_output(&s[1]) == 3);
    p.repetition_penalty = 1.2f;
    cr_assert_eq(sample_seen_build(&p, prompt, 3, output, 4, slot, s, 8), 3);
    cr_assert(s[0].token == 5 && sample_seen_in_prompt(&s[0]) && sample_seen_n_output(&s[0]) == 0);
    cr_assert(s[1].token == 6 && sample_seen_in_prompt(&s[1]) && sample_seen_n_output(&s[1]) == 1);
    cr_assert(s[2].token == 7 && !sample_seen_in_prompt(&s[2]) && sample_seen_n_output(&s[2]) == 3);
    cr_assert_eq(sample_seen_build(&p, prompt, 3, output, 4, slot, s, 2), -1, "over the cap");
    for (int t = 0; t < V; t++)
        cr_assert_eq(slot[t], -1, "the scratch is left as given after a refusal too");
}

Test(sample_seen, cpu_sample_op_is_sample_token)
{
    struct err e = {{0}};
    struct backend *be = backend_create(BACKEND_KIND_CPU_REFERENCE, 1, &e);
    cr_assert(be, "%s", e.msg);
    cr_assert_eq(be->ops->sampler->init(be, 4, 4, V, &e), 0);
    struct rng g;
    rng_seed(&g, 8, 0, 0);
    int32_t slot[V], prompt[HIST], output[HIST];
    memset(slot, 0xff, sizeof slot);
    float l[4 * V], scratch[2 * V];
    struct sampling_params p[4];
    struct logit_bias bias[4][2];
    struct sample_seen seen[4][2 * HIST];
    struct sample_row rows[4];
    struct sample_result want[4], got[4];
    int np = 150, no = 90;
    random_history(&g, prompt, np);
    random_history(&g, output, no);
    for (int r = 0; r < 4; r++) {
        random_params(&g, &p[r], bias[r]);
        random_logits(&g, l + r * V);
        int n = sample_seen_build(&p[r], prompt, np, output, no, slot, seen[r], 2 * HIST);
        rows[r] = (struct sample_row){&p[r], (uint64_t)r, seen[r], n, NULL};
        sample_token(l + r * V, V, &p[r], prompt, np, output, no, (uint64_t)r, scratch, &want[r]);
    }
    cr_assert_eq(be->ops->sampler->stage(be, 4, 4, V, rows, &e), 0, "%s", e.msg);
    cr_assert_eq(be->ops->sampler->enqueue(be, l, 4, V, &e), 0, "%s", e.msg);
    cr_assert_eq(be->ops->sampler->finish(be, 4, got, &e), 0, "%s", e.msg);
    cr_assert_eq(memcmp(want, got, sizeof want), 0);
    rows[2].n_seen = SAMPLE_MAX_SEEN + 1;
    cr_assert_eq(be->ops->sampler->stage(be, 4, 4, V, rows, &e), -1, "the op's limit holds on the CPU too");
    cr_assert(strstr(e.msg, "row 2"), "%s", e.msg);
    backend_free(be);
}

/* A sequence whose prompt has more distinct tokens than the op's lists
 * hold is drawn on the host, with the same result. */
Test(sample_seen, sampler_falls_back_to_the_host)
{
    enum { BIGV = SAMPLE_MAX_SEEN + 100 };
    struct err e = {{0}};
    struct backend *be = backend_create(BACKEND_KIND_CPU_REFERENCE, 1, &e);
    cr_assert(be, "%s", e.msg);
    struct sampler smp;
    cr_assert_eq(sampler_init(&smp, be, 2, 2, BIGV, &e), 0, "%s", e.msg);
    static float l[2 * BIGV];
    static int32_t toks[2][SAMPLE_MAX_SEEN + 10];
    static float scratch[2 * BIGV];
    struct rng g;
    rng_seed(&g, 9, 0, 0);
    for (int i = 0; i < 2 * BIGV; i++)
        l[i] = (float)rng_normal(&g);
    struct sampling_params params[2];
    struct step_seq q[2];
    memset(q, 0, sizeof q);
    for (int r = 0; r < 2; r++) {
        int n = r ? SAMPLE_MAX_SEEN + 10 : 50; /* distinct tokens: row 1 does not fit */
        for (int i = 0; i < n; i++)
            toks[r][i] = i;
        params[r] = sampling_params_default();
        params[r].temperature = 1.f;
        params[r].repetition_penalty = 1.5f;
        params[r].seed = 77;
        q[r].draw = 1;
        q[r].sample = (struct sample_input){.params = &params[r], .prompt = toks[r], .n_prompt = n,
                                            .output = toks[r] + n, .step = (uint64_t)r << 32};
    }
    struct sample_result got[2], want;
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? 2 : 1; /* row 0 alone fits the op */
        cr_assert_eq(sampler_stage(&smp, q, n, n, &e), 0, "%s", e.msg);
        cr_assert_eq(sampler_enqueue(&smp, l, n, &e), 0, "%s", e.msg);
        cr_assert_eq(sampler_collect(&smp, l, got, &e), 0, "%s", e.msg);
        cr_assert_eq(smp.host_draws, pass);
        for (int r = 0; r < n; r++) {
            sample_token(l + (size_t)r * BIGV, BIGV, &params[r], toks[r], q[r].sample.n_prompt, NULL, 0,
                         (uint64_t)r << 32, scratch, &want);
            cr_assert_eq(memcmp(&want, &got[r], sizeof want), 0, "pass %d row %d", pass, r);
        }
    }
    sampler_free(&smp);
    backend_free(be);
}
