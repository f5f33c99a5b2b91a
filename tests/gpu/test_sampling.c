/* The CUDA sampler ops against sample_token (the CPU sampler, fed the raw
 * history rather than the compact seen lists the device gets, so the lists
 * are checked too). Random logits of several vocabulary sizes, every
 * parameter alone and combined, greedy rows, planted and bf16-made ties.
 * Tokens must be equal; where they differ, the CPU's own draw values of the
 * two tokens must lie within float rounding of each other (counted, and at
 * most 1% of the rows may be such). Logprobs within 1e-4, top_logprobs ids
 * equal. Outputs are poisoned first; no device allocation happens in calls. */
#include <math.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/sample_seen.h"
#include "sampling/sampling.h"
#include "core/bf16.h"
#include "gpu_test.h"

long cuda_backend_device_allocs(const struct backend *be);

#define MAX_ROWS 64
#define MAX_V 262144
#define HIST 300

/* The sampler's buffers are sized once per process (as at start-up). */
static int ensure_init(struct gpu_ctx *ctx)
{
    static int done;
    struct err e = {{0}};
    if (!done && ctx->cuda->ops->sampler->init(ctx->cuda, MAX_ROWS, MAX_ROWS, MAX_V, &e)) {
        fprintf(stderr, "the sampler's init: %s\n", e.msg);
        return -1;
    }
    done = 1;
    return 0;
}

/* One draw through the sampler ops as a step runs them: stage, enqueue,
 * then the masks made ready while the draw is queued (2 ms later, so a
 * kernel that did not wait for them would read the last call's), finish. */
static int sample_rows(struct backend *be, const float *logits, int n, int vocab, const struct sample_row *rows,
                       struct sample_result *out, struct err *e)
{
    const struct sampler_ops *so = be->ops->sampler;
    if (so->stage(be, n, n, vocab, rows, e) || so->enqueue(be, logits, n, vocab, e))
        return -1;
    usleep(2000);
    return (so->masks_ready && so->masks_ready(be, e)) || so->finish(be, n, out, e) ? -1 : 0;
}

struct row_case {
    struct sampling_params p;
    struct logit_bias bias[8];
    int32_t prompt[HIST], output[HIST];
    int n_prompt, n_output;
    uint64_t step;
    const uint32_t *mask; /* a grammar's mask, or NULL */
};

/* The CPU's draw value z + noise of one token (sample_token's arithmetic). */
static float cpu_draw_value(const float *l, const struct row_case *c, int32_t t)
{
    const struct sampling_params *p = &c->p;
    float z = l[t];
    for (int i = 0; i < p->n_bias; i++)
        if (p->bias[i].token == t)
            z += p->bias[i].bias;
    int seen = 0, n_out = 0;
    for (int i = 0; i < c->n_prompt; i++)
        seen |= c->prompt[i] == t;
    for (int i = 0; i < c->n_output; i++)
        n_out += c->output[i] == t;
    if (p->repetition_penalty != 1.f && (seen || n_out))
        z = z > 0.f ? z / p->repetition_penalty : z * p->repetition_penalty;
    if ((p->presence_penalty != 0.f || p->frequency_penalty != 0.f) && n_out)
        z -= p->presence_penalty + p->frequency_penalty * (float)n_out;
    if (p->temperature == 0.f)
        return z;
    z /= p->temperature;
    uint32_t r[4];
    philox4x32(p->seed, c->step, (uint64_t)(uint32_t)t, r);
    float u = ((float)(r[0] >> 8) + 0.5f) * (1.0f / 16777216.0f);
    return z + -logf(-logf(u));
}

struct tally {
    int rows, near_ties;
};

/* Samples rows on both backends and compares; 0, or 1 with ctx->msg set. */
static int compare(struct gpu_ctx *ctx, const float *logits, int V, struct row_case *cases, int n, struct tally *tl,
                   const char *what)
{
    struct err e = {{0}};
    struct sample_row rows[MAX_ROWS];
    static struct sample_seen seen[MAX_ROWS][2 * HIST];
    static int32_t slot[MAX_V];
    static int slot_ready;
    if (!slot_ready)
        memset(slot, 0xff, sizeof slot), slot_ready = 1;
    for (int r = 0; r < n; r++) {
        struct row_case *c = &cases[r];
        int ns = sample_seen_build(&c->p, c->prompt, c->n_prompt, c->output, c->n_output, slot, seen[r], 2 * HIST);
        if (ns < 0)
            GPU_FAIL("%s: seen list overflow", what);
        rows[r] = (struct sample_row){&c->p, c->step, seen[r], ns, c->mask};
    }
    struct sample_result want[MAX_ROWS], got[MAX_ROWS];
    float *scratch = malloc(3 * (size_t)V * sizeof(float));
    for (int r = 0; r < n; r++)
        sample_token_masked(logits + (size_t)r * V, V, cases[r].mask, &cases[r].p, cases[r].prompt,
                            cases[r].n_prompt, cases[r].output, cases[r].n_output, cases[r].step, scratch,
                            &want[r]);
    free(scratch);
    memset(got, 0xa5, sizeof got); /* poison: NaN logprobs, odd ids */
    float *dl = gpu_upload(ctx, logits, (size_t)n * V * sizeof(float));
    long allocs = cuda_backend_device_allocs(ctx->cuda);
    if (sample_rows(ctx->cuda, dl, n, V, rows, got, &e))
        GPU_FAIL("%s: sample failed: %.400s", what, e.msg);
    if (cuda_backend_device_allocs(ctx->cuda) != allocs)
        GPU_FAIL("%s: sample allocated device memory", what);
    for (int r = 0; r < n; r++) {
        const float *l = logits + (size_t)r * V;
        const struct sample_result *w = &want[r], *g = &got[r];
        tl->rows++;
        if (g->token < 0 || g->token >= V)
            GPU_FAIL("%s row %d: token %d outside the vocabulary (CPU %d)", what, r, g->token, w->token);
        if (cases[r].mask && !(cases[r].mask[g->token >> 5] >> (g->token & 31) & 1))
            GPU_FAIL("%s row %d: token %d is outside the row's mask (CPU %d)", what, r, g->token, w->token);
        if (g->token != w->token) {
            float a = cpu_draw_value(l, &cases[r], w->token), b = cpu_draw_value(l, &cases[r], g->token);
            if (cases[r].p.temperature == 0.f || !(fabsf(a - b) <= 4e-6f * fmaxf(1.f, fabsf(a))))
                GPU_FAIL("%s row %d (T %g k %d p %g min_p %g): token %d, CPU %d (CPU draw values %.9g vs %.9g)",
                         what, r, cases[r].p.temperature, cases[r].p.top_k, cases[r].p.top_p, cases[r].p.min_p,
                         g->token, w->token, b, a);
            tl->near_ties++;
        }
        float lse = l[w->token] - w->logprob; /* the CPU's log-sum-exp */
        if (!(fabsf(g->logprob - (l[g->token] - lse)) <= 1e-4f))
            GPU_FAIL("%s row %d: logprob %.7g, CPU %.7g", what, r, g->logprob, l[g->token] - lse);
        for (int j = 0; j < 20; j++) {
            if (j >= cases[r].p.top_logprobs) {
                if (g->top_ids[j] != 0 || g->top_logprobs[j] != 0.f)
                    GPU_FAIL("%s row %d: top_logprobs[%d] beyond the %d asked is not zero", what, r, j,
                             cases[r].p.top_logprobs);
                continue;
            }
            if (w->top_ids[j] < 0 || g->top_ids[j] < 0) { /* the mask allowed fewer tokens than asked */
                if (g->top_ids[j] != w->top_ids[j] || g->top_logprobs[j] != -INFINITY)
                    GPU_FAIL("%s row %d: top id %d is %d (%g), CPU %d", what, r, j, g->top_ids[j],
                             g->top_logprobs[j], w->top_ids[j]);
                continue;
            }
            if (g->top_ids[j] != w->top_ids[j] && l[g->top_ids[j]] != l[w->top_ids[j]])
                GPU_FAIL("%s row %d: top id %d is %d, CPU %d", what, r, j, g->top_ids[j], w->top_ids[j]);
            if (!(fabsf(g->top_logprobs[j] - w->top_logprobs[j]) <= 1e-4f))
                GPU_FAIL("%s row %d: top logprob %d is %.7g, CPU %.7g", what, r, j, g->top_logprobs[j],
                         w->top_logprobs[j]);
        }
    }
    return 0;
}

static int near_ties_ok(struct gpu_ctx *ctx, const struct tally *tl)
{
    if (tl->near_ties * 100 > tl->rows)
        GPU_FAIL("%d of %d rows differ within rounding (more than 1%%)", tl->near_ties, tl->rows);
    if (tl->near_ties)
        snprintf(ctx->msg, sizeof ctx->msg, "%d of %d rows took the other of two near-tied tokens", tl->near_ties,
                 tl->rows);
    return 0;
}

/* Row r of a batch: configuration r % 16, random seed, step and history. */
static void make_case(struct gpu_ctx *ctx, struct row_case *c, int r, int V)
{
    memset(c, 0, sizeof *c);
    struct sampling_params *p = &c->p;
    *p = sampling_params_default();
    p->seed = rng_next(&ctx->rng);
    c->step = rng_next(&ctx->rng) % 5 == 0 ? rng_next(&ctx->rng) : rng_next(&ctx->rng) % 1000;
    p->top_logprobs = (int)(rng_next(&ctx->rng) % 21);
    c->n_prompt = 1 + (int)(rng_next(&ctx->rng) % HIST);
    c->n_output = (int)(rng_next(&ctx->rng) % HIST);
    int span = V < 400 ? V : 400; /* repeats, so counts exceed 1 */
    for (int i = 0; i < c->n_prompt; i++)
        c->prompt[i] = (int32_t)(rng_next(&ctx->rng) % (uint64_t)span) * (V / span);
    for (int i = 0; i < c->n_output; i++)
        c->output[i] = (int32_t)(rng_next(&ctx->rng) % (uint64_t)span) * (V / span);
    switch (r % 16) {
    case 0: break; /* greedy */
    case 1: p->temperature = 1.f; break;
    case 2: p->temperature = 0.7f, p->top_k = 50; break;
    case 3: p->temperature = 1.f, p->top_p = 0.9f; break;
    case 4: p->temperature = 1.3f, p->min_p = 0.05f; break;
    case 5: p->temperature = 1.f, p->top_k = 1; break;
    case 6: p->temperature = 0.8f, p->top_k = V + 5; break;
    case 7: p->temperature = 1.f, p->top_p = 0.5f, p->top_k = 100; break;
    case 8: p->repetition_penalty = 1.3f; break; /* greedy with a penalty */
    case 9: p->presence_penalty = 1.5f, p->frequency_penalty = 0.7f; break;
    case 10: p->temperature = 0.9f, p->repetition_penalty = 0.8f, p->presence_penalty = -0.5f,
             p->frequency_penalty = 0.3f, p->top_k = 200, p->top_p = 0.95f, p->min_p = 0.01f;
        break;
    case 11: p->temperature = 0.05f, p->top_p = 0.99f; break;
    case 12: p->temperature = 1.f, p->top_p = 0.2f; break;
    case 13: p->temperature = 2.f, p->min_p = 0.3f, p->top_k = 7; break;
    case 14: p->temperature = 1.f, p->top_p = 0.999f, p->repetition_penalty = 1.1f; break;
    case 15: p->temperature = 0.6f, p->top_k = 40, p->top_p = 0.8f, p->frequency_penalty = 2.f; break;
    }
    if (r % 3 == 0) { /* logit bias, with a token listed twice */
        int nb = 1 + (int)(rng_next(&ctx->rng) % 6);
        for (int i = 0; i < nb; i++)
            c->bias[i] = (struct logit_bias){(int32_t)(rng_next(&ctx->rng) % (uint64_t)V),
                                             (float)(rng_uniform(&ctx->rng) * 20 - 10)};
        c->bias[nb] = (struct logit_bias){c->bias[0].token, 3.5f};
        p->bias = c->bias;
        p->n_bias = nb + 1;
    }
}

/* Logits of n rows: N(0, std) in full float, or rounded to bf16 (many exact
 * ties) on odd rows, with a planted tie at the maximum on every fourth. */
static float *make_logits(struct gpu_ctx *ctx, int n, int V)
{
    float *l = malloc((size_t)n * V * sizeof(float));
    for (int r = 0; r < n; r++) {
        float *x = l + (size_t)r * V;
        float std = r % 5 == 0 ? 6.f : 2.f;
        for (int t = 0; t < V; t++) {
            x[t] = (float)(std * rng_normal(&ctx->rng));
            if (r % 2)
                x[t] = bf16_to_f32(f32_to_bf16(x[t]));
        }
        if (r % 4 == 0) {
            int a = (int)(rng_next(&ctx->rng) % (uint64_t)V), b = (int)(rng_next(&ctx->rng) % (uint64_t)V);
            x[a] = x[b] = 40.f;
        }
    }
    return l;
}

/* Logits shaped like a trained model's: a tail around -12, a middle group
 * around 0 of 0 to 6000 tokens (by row), a few dozen near 5 and one at 10,
 * so a top-k or top-p row's candidates (alive, z within 16, 12, 9 or 6 of
 * the best) are a few dozen to a few thousand: the sampler's candidate path
 * at full vocabulary sizes, with each span chosen, which make_logits's flat
 * rows mostly overflow. */
static float *make_peaked_logits(struct gpu_ctx *ctx, int n, int V)
{
    static const int middle[5] = {300, 1500, 6000, 60, 0};
    float *l = malloc((size_t)n * V * sizeof(float));
    for (int r = 0; r < n; r++) {
        float *x = l + (size_t)r * V;
        for (int t = 0; t < V; t++)
            x[t] = (float)(-12.0 + 2.0 * rng_normal(&ctx->rng));
        for (int i = 0; i < middle[r % 5]; i++)
            x[rng_next(&ctx->rng) % (uint64_t)V] = (float)(2.0 * rng_normal(&ctx->rng));
        for (int i = 0; i < 48; i++)
            x[rng_next(&ctx->rng) % (uint64_t)V] = (float)(5.0 + 2.0 * rng_normal(&ctx->rng));
        x[rng_next(&ctx->rng) % (uint64_t)V] = 10.f;
        if (r % 2)
            for (int t = 0; t < V; t++)
                x[t] = bf16_to_f32(f32_to_bf16(x[t]));
    }
    return l;
}

/* rows: every batch's (0: one row, then MAX_ROWS and 37 in turn) */
static int check_rows(struct gpu_ctx *ctx, int V, int batches, int rows, float *(*make)(struct gpu_ctx *, int, int))
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    struct tally tl = {0};
    static struct row_case cases[MAX_ROWS];
    for (int b = 0; b < batches; b++) {
        int n = rows ? rows : b == 0 ? 1 : (b % 2 ? MAX_ROWS : 37);
        float *l = make(ctx, n, V);
        for (int r = 0; r < n; r++)
            make_case(ctx, &cases[r], r + b, V);
        char what[64];
        snprintf(what, sizeof what, "V %d batch %d", V, b);
        int rc = compare(ctx, l, V, cases, n, &tl, what);
        free(l);
        if (rc)
            return rc;
    }
    return near_ties_ok(ctx, &tl);
}

static int check_logits(struct gpu_ctx *ctx, int V, int batches, float *(*make)(struct gpu_ctx *, int, int))
{
    return check_rows(ctx, V, batches, 0, make);
}

static int check_vocab(struct gpu_ctx *ctx, int V, int batches) { return check_logits(ctx, V, batches, make_logits); }

/* Rows under grammar masks (sample_token_masked, the mask kernel): dense
 * and sparse random masks, a single allowed token, and a mask that takes
 * whole spans of the row (only its last 300 tokens allowed), mixed with
 * unmasked rows, across every configuration. */
static int check_masked(struct gpu_ctx *ctx, int V, int batches)
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    struct tally tl = {0};
    static struct row_case cases[MAX_ROWS];
    const int words = (V + 31) / 32;
    uint32_t *masks = calloc((size_t)MAX_ROWS * words, sizeof(uint32_t));
    int rc = 0;
    for (int b = 0; b < batches && !rc; b++) {
        int n = b % 2 ? MAX_ROWS : 16;
        float *l = make_logits(ctx, n, V);
        for (int r = 0; r < n; r++) {
            make_case(ctx, &cases[r], r + b, V);
            uint32_t *m = masks + (size_t)r * words;
            memset(m, 0, (size_t)words * sizeof(uint32_t));
            switch (r % 5) {
            case 0: /* unmasked */
                continue;
            case 1:
                for (int t = 0; t < V; t++)
                    if (rng_next(&ctx->rng) % 2)
                        m[t >> 5] |= 1u << (t & 31);
                break;
            case 2:
                for (int k = 0; k < 5; k++) {
                    int t = (int)(rng_next(&ctx->rng) % (uint64_t)V);
                    m[t >> 5] |= 1u << (t & 31);
                }
                break;
            case 3: {
                int t = (int)(rng_next(&ctx->rng) % (uint64_t)V);
                m[t >> 5] |= 1u << (t & 31);
                break;
            }
            default:
                for (int t = V > 300 ? V - 300 : 0; t < V; t++)
                    m[t >> 5] |= 1u << (t & 31);
            }
            cases[r].mask = m;
        }
        char what[64];
        snprintf(what, sizeof what, "masked V %d batch %d", V, b);
        rc = compare(ctx, l, V, cases, n, &tl, what);
        free(l);
    }
    free(masks);
    return rc ? rc : near_ties_ok(ctx, &tl);
}

/* A masked draw whose masks are never made ready: the kernel stops
 * waiting after SAMPLE_MASK_WAIT_NS and finish says so; the next draw is
 * unaffected. */
GPU_TEST(sampling_masks_not_ready_is_an_error)
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    enum { V = 1000 };
    struct sampling_params p = {.temperature = 1.f, .top_p = 1.f, .repetition_penalty = 1.f, .seed = 7};
    uint32_t mask[(V + 31) / 32] = {0};
    mask[0] = 1u << 5; /* token 5 alone */
    struct sample_row row = {&p, 0, NULL, 0, mask};
    float *l = make_logits(ctx, 1, V);
    float *dl = gpu_upload(ctx, l, (size_t)V * sizeof(float));
    free(l);
    struct sample_result out;
    struct err e = {{0}};
    struct backend *be = ctx->cuda;
    if (be->ops->sampler->stage(be, 1, 1, V, &row, &e) || be->ops->sampler->enqueue(be, dl, 1, V, &e))
        GPU_FAIL("stage / enqueue: %s", e.msg);
    if (be->ops->sampler->finish(be, 1, &out, &e) == 0 || !strstr(e.msg, "not written"))
        GPU_FAIL("finish without masks_ready: want the timeout's error, got '%s'", e.msg);
    if (sample_rows(be, dl, 1, V, &row, &out, &e))
        GPU_FAIL("the next draw: %s", e.msg);
    if (out.token != 5)
        GPU_FAIL("the next draw: token %d, the mask allows only 5", out.token);
    return 0;
}

GPU_TEST(sampling_masked_1000) { return check_masked(ctx, 1000, 6); }
GPU_TEST(sampling_masked_128256) { return check_masked(ctx, 128256, 3); }
GPU_TEST(sampling_masked_262144) { return check_masked(ctx, 262144, 3); }

GPU_TEST(sampling_vocab_1000) { return check_vocab(ctx, 1000, 12); }
GPU_TEST(sampling_vocab_odd_1001) { return check_vocab(ctx, 1001, 6); }
GPU_TEST(sampling_vocab_odd_50257) { return check_vocab(ctx, 50257, 4); }
GPU_TEST(sampling_vocab_128256) { return check_vocab(ctx, 128256, 3); }
GPU_TEST(sampling_vocab_151936) { return check_vocab(ctx, 151936, 2); }
GPU_TEST(sampling_vocab_262144) { return check_vocab(ctx, 262144, 3); }
GPU_TEST(sampling_vocab_tiny_7) { return check_vocab(ctx, 7, 8); }
GPU_TEST(sampling_peaked_128256) { return check_logits(ctx, 128256, 3, make_peaked_logits); }
GPU_TEST(sampling_peaked_262144) { return check_logits(ctx, 262144, 2, make_peaked_logits); }
/* Calls of at most SAMPLE_DRAW_MAX_ROWS rows (16: each configuration once a
 * batch), where the statistics also make a top-p row's mass over z and the
 * draw of a row with a temperature alone: peaked rows (candidates), and flat
 * ones (the whole row after the candidates overflow). */
GPU_TEST(sampling_few_rows_peaked) { return check_rows(ctx, 262144, 3, 16, make_peaked_logits); }
GPU_TEST(sampling_few_rows_flat) { return check_rows(ctx, 128256, 2, 16, make_logits); }

/* A row's result must not depend on how many rows its call holds (batched =
 * alone): calls of up to 32 rows take a temperature row's draw and a top-p
 * row's mass from the statistics' spans, larger calls make them in the
 * row's own block. The first 16 of 48 peaked rows, sampled in both. */
GPU_TEST(sampling_same_in_any_call)
{
    enum { N = 48, FEW = 16, V = 262144 };
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    static struct row_case cases[N];
    struct sample_row rows[N];
    for (int r = 0; r < N; r++) {
        struct sampling_params *p = &cases[r].p;
        *p = sampling_params_default();
        p->seed = rng_next(&ctx->rng);
        cases[r].step = rng_next(&ctx->rng) % 1000;
        switch (r % 5) {
        case 0: p->temperature = 1.f, p->top_p = 0.9f; break;
        case 1: p->temperature = 0.7f, p->top_p = 0.95f, p->top_logprobs = 5; break;
        case 2: p->temperature = 1.f, p->top_k = 40, p->top_p = 0.9f; break;
        case 3: p->temperature = 0.8f; break;
        case 4: p->temperature = 1.2f, p->top_p = 0.5f, p->min_p = 0.02f; break;
        }
        rows[r] = (struct sample_row){p, cases[r].step, NULL, 0, NULL};
    }
    float *l = make_peaked_logits(ctx, N, V);
    float *dl = gpu_upload(ctx, l, (size_t)N * V * sizeof(float));
    free(l);
    struct err e = {{0}};
    struct sample_result all[N], few[FEW];
    memset(all, 0xa5, sizeof all);
    memset(few, 0x5a, sizeof few);
    if (sample_rows(ctx->cuda, dl, N, V, rows, all, &e) || sample_rows(ctx->cuda, dl, FEW, V, rows, few, &e))
        GPU_FAIL("sample failed: %.400s", e.msg);
    for (int r = 0; r < FEW; r++)
        if (memcmp(&all[r], &few[r], sizeof few[r]))
            GPU_FAIL("row %d (T %g k %d p %g): token %d logprob %.9g in a call of %d rows, %d %.9g in one of %d", r,
                     cases[r].p.temperature, cases[r].p.top_k, cases[r].p.top_p, all[r].token, all[r].logprob, N,
                     few[r].token, few[r].logprob, FEW);
    return 0;
}

/* Integer logits: whole plateaus of equal values, so the top-k and top-p
 * cuts and the greedy choice fall inside ties. */
GPU_TEST(sampling_ties_at_the_cuts)
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    const int V = 5000, n = MAX_ROWS;
    float *l = malloc((size_t)n * V * sizeof(float));
    static struct row_case cases[MAX_ROWS];
    for (int r = 0; r < n; r++) {
        for (int t = 0; t < V; t++)
            l[(size_t)r * V + t] = (float)(int)(rng_next(&ctx->rng) % 6) - (r % 3 == 0 ? 0.f : 3.f);
        make_case(ctx, &cases[r], r, V);
        cases[r].p.n_bias = 0;
        cases[r].n_output = 0;
        cases[r].p.repetition_penalty = 1.f, cases[r].p.presence_penalty = cases[r].p.frequency_penalty = 0;
        if (r % 2)
            cases[r].p.top_k = 1 + (int)(rng_next(&ctx->rng) % 3000);
        if (r % 4 == 1)
            cases[r].p.top_p = 0.01f + 0.98f * (float)rng_uniform(&ctx->rng);
    }
    struct tally tl = {0};
    int rc = compare(ctx, l, V, cases, n, &tl, "ties");
    free(l);
    return rc ? rc : near_ties_ok(ctx, &tl);
}

/* One configuration, many steps of one seed: the device's noise is the CPU's. */
GPU_TEST(sampling_many_steps_one_seed)
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    const int V = 32000;
    static struct row_case cases[MAX_ROWS];
    struct tally tl = {0};
    for (int b = 0; b < 4; b++) {
        float *l = make_logits(ctx, MAX_ROWS, V);
        for (int r = 0; r < MAX_ROWS; r++) {
            make_case(ctx, &cases[r], 1, V);
            cases[r].p.seed = 42;
            cases[r].step = (uint64_t)(b * MAX_ROWS + r);
        }
        int rc = compare(ctx, l, V, cases, MAX_ROWS, &tl, "steps");
        free(l);
        if (rc)
            return rc;
    }
    return near_ties_ok(ctx, &tl);
}

GPU_TEST(sampling_refuses_what_it_cannot_hold)
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    struct err e = {{0}};
    struct sampling_params p = sampling_params_default();
    p.repetition_penalty = 1.2f;
    static struct sample_seen seen[SAMPLE_MAX_SEEN + 1];
    for (int i = 0; i <= SAMPLE_MAX_SEEN; i++)
        seen[i] = (struct sample_seen){i, 1};
    struct sample_row row = {&p, 0, seen, SAMPLE_MAX_SEEN + 1, NULL};
    struct sample_result out;
    float *zeros = calloc(10000, sizeof(float));
    float *dl = gpu_upload(ctx, zeros, 10000 * sizeof(float));
    free(zeros);
    if (sample_rows(ctx->cuda, dl, 1, 10000, &row, &out, &e) == 0)
        GPU_FAIL("a row over SAMPLE_MAX_SEEN was accepted");
    struct sample_row rows[MAX_ROWS + 1];
    for (int i = 0; i <= MAX_ROWS; i++)
        rows[i] = (struct sample_row){&p, 0, seen, 0, NULL};
    struct sample_result outs[MAX_ROWS + 1];
    if (sample_rows(ctx->cuda, dl, MAX_ROWS + 1, 10, rows, outs, &e) == 0)
        GPU_FAIL("more rows than the sampler's init sized were accepted");
    return 0;
}

struct bench_arg {
    struct gpu_ctx *ctx;
    const float *dl;
    struct sample_row *rows;
    struct sample_result *out;
    int n, V;
};

static void bench_call(void *a)
{
    struct bench_arg *b = a;
    struct err e;
    CHECK(sample_rows(b->ctx->cuda, b->dl, b->n, b->V, b->rows, b->out, &e) == 0);
}

/* Milliseconds per call (upload, kernel, download) for greedy, tempered,
 * top-p 0.9, top-k 50 + top-p 0.9, and greedy rows with 5 and 20 top
 * log-probabilities, of MAX_ROWS rows of logits l
 * (V wide), at 1, 8, 16, 32 and 64 rows, appended to the bench's message. */
static void bench_rows(struct gpu_ctx *ctx, const float *l, int V, float temperature, const char *shape, char **m)
{
    float *dl = gpu_upload(ctx, l, (size_t)MAX_ROWS * V * sizeof(float));
    static const char *names[6] = {"greedy", "T", "p", "k+p", "greedy+top5", "greedy+top20"};
    static struct sampling_params ps[6];
    for (int i = 0; i < 6; i++) {
        ps[i] = sampling_params_default();
        ps[i].temperature = i && i < 4 ? temperature : 0.f;
        if (i == 2 || i == 3)
            ps[i].top_p = 0.9f;
        if (i == 3)
            ps[i].top_k = 50;
        if (i >= 4)
            ps[i].top_logprobs = i == 4 ? 5 : 20;
    }
    static struct sample_row rows[MAX_ROWS];
    static struct sample_result out[MAX_ROWS];
    for (int i = 0; i < 6; i++) {
        for (int r = 0; r < MAX_ROWS; r++)
            rows[r] = (struct sample_row){&ps[i], (uint64_t)r, NULL, 0, NULL};
        for (int n = 1; n <= MAX_ROWS; n = n == 1 ? 8 : 2 * n) {
            struct bench_arg a = {ctx, dl, rows, out, n, V};
            double ms = gpu_time_ms(ctx, bench_call, &a, 20);
            size_t left = sizeof ctx->msg - (size_t)(*m - ctx->msg);
            int w = snprintf(*m, left, "%s%s %s %d rows %.3f ms", *m == ctx->msg ? "" : "; ", shape, names[i], n, ms);
            *m += w > 0 && (size_t)w < left ? w : 0; /* a figure that does not fit is dropped whole */
        }
    }
}

/* Llama-3's vocabulary: flat rows (random weights' logits) and peaked ones
 * (shaped like a trained model's), temperature 0.8. */
GPU_TEST(bench_sampling_128256)
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    char *m = ctx->msg;
    float *(*make[2])(struct gpu_ctx *, int, int) = {make_logits, make_peaked_logits};
    for (int i = 0; i < 2; i++) {
        float *l = make[i](ctx, MAX_ROWS, 128256);
        bench_rows(ctx, l, 128256, 0.8f, i ? "peaked" : "flat", &m);
        free(l);
    }
    return 0;
}

/* A trained model's rows: INFER_BENCH_LOGITS names a file of float32 rows of
 * INFER_BENCH_VOCAB (default 262144, Gemma 3) logits, e.g. positions of
 * `infer logits` on a real checkpoint; its rows repeat to fill MAX_ROWS.
 * Temperature 1, the OpenAI API's default. */
GPU_TEST(bench_sampling_model_rows)
{
    const char *path = getenv("INFER_BENCH_LOGITS");
    if (!path) {
        snprintf(ctx->msg, sizeof ctx->msg, "skipped: INFER_BENCH_LOGITS names no file of logits");
        return 0;
    }
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    const char *vs = getenv("INFER_BENCH_VOCAB");
    const int V = vs ? atoi(vs) : 262144;
    if (V <= 0 || V > MAX_V)
        GPU_FAIL("INFER_BENCH_VOCAB %d is not in 1..%d", V, MAX_V);
    FILE *f = fopen(path, "rb");
    if (!f)
        GPU_FAIL("INFER_BENCH_LOGITS: cannot open %s", path);
    float *l = malloc((size_t)MAX_ROWS * V * sizeof(float));
    size_t got = fread(l, sizeof(float) * (size_t)V, MAX_ROWS, f);
    fclose(f);
    if (got == 0) {
        free(l);
        GPU_FAIL("INFER_BENCH_LOGITS: %s holds no whole row of %d float32 logits", path, V);
    }
    for (size_t r = got; r < MAX_ROWS; r++)
        memcpy(l + r * (size_t)V, l + (r % got) * (size_t)V, sizeof(float) * (size_t)V);
    char *m = ctx->msg;
    m += snprintf(m, sizeof ctx->msg, "%zu rows of %s", got, path);
    bench_rows(ctx, l, V, 1.f, "model", &m);
    free(l);
    return 0;
}

struct masked_bench {
    struct gpu_ctx *ctx;
    const float *dl;
    struct sample_row *rows;
    struct sample_result *out;
    int n;
};

/* A draw whose masks are ready before it is queued, so that the time is
 * the kernels' alone (a step's masks are written while its forward runs). */
static void masked_call(void *a)
{
    struct masked_bench *b = a;
    struct err e;
    const struct sampler_ops *so = b->ctx->cuda->ops->sampler;
    CHECK(so->stage(b->ctx->cuda, b->n, b->n, MAX_V, b->rows, &e) == 0 && so->masks_ready(b->ctx->cuda, &e) == 0 &&
          so->enqueue(b->ctx->cuda, b->dl, b->n, MAX_V, &e) == 0 && so->finish(b->ctx->cuda, b->n, b->out, &e) == 0);
}

/* Greedy rows of Gemma 3's vocabulary with and without a grammar's mask
 * (half the tokens allowed, at random), ms a call, 1 / 8 / 32 rows: what a
 * constrained decode step's draw costs beyond a plain one's. */
GPU_TEST(bench_sampling_masked_262144)
{
    if (ensure_init(ctx))
        GPU_FAIL("the sampler's init failed");
    float *l = make_logits(ctx, MAX_ROWS, MAX_V);
    float *dl = gpu_upload(ctx, l, (size_t)MAX_ROWS * MAX_V * sizeof(float));
    const int words = MAX_V / 32;
    uint32_t *masks = malloc((size_t)MAX_ROWS * words * sizeof(uint32_t));
    for (size_t i = 0; i < (size_t)MAX_ROWS * words; i++)
        masks[i] = (uint32_t)rng_next(&ctx->rng);
    struct sampling_params p = sampling_params_default();
    static struct sample_row rows[MAX_ROWS];
    static struct sample_result out[MAX_ROWS];
    char *m = ctx->msg;
    for (int masked = 0; masked < 2; masked++) {
        for (int r = 0; r < MAX_ROWS; r++)
            rows[r] = (struct sample_row){&p, (uint64_t)r, NULL, 0, masked ? masks + (size_t)r * words : NULL};
        for (int n = 1; n <= 32; n = n == 1 ? 8 : 4 * n) {
            struct masked_bench a = {ctx, dl, rows, out, n};
            const double ms = gpu_time_ms(ctx, masked_call, &a, 20);
            size_t left = sizeof ctx->msg - (size_t)(m - ctx->msg);
            int w = snprintf(m, left, "%s%s %d rows %.3f ms", m == ctx->msg ? "" : "; ", masked ? "masked" : "plain",
                             n, ms);
            m += w > 0 && (size_t)w < left ? w : 0;
        }
    }
    free(masks);
    free(l);
    return 0;
}
