#include "sampling/sampling.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampling/philox.h"

struct sampling_params sampling_params_default(void)
{
    return (struct sampling_params){.temperature = 0.f, .top_k = 0, .top_p = 1.f, .min_p = 0.f,
                                    .repetition_penalty = 1.f, .logprobs = 1};
}

int sampling_params_plain_greedy(const struct sampling_params *p)
{
    return p->temperature == 0.f && p->n_bias == 0 && p->top_logprobs == 0 && p->repetition_penalty == 1.f &&
           p->presence_penalty == 0.f && p->frequency_penalty == 0.f;
}

int sampling_params_check(const struct sampling_params *p, int vocab_size, struct err *e)
{
    if (!(p->temperature >= 0.f) || !isfinite(p->temperature))
        return err_set(e, "temperature must be a finite number >= 0, got %g", p->temperature);
    if (p->top_k < 0)
        return err_set(e, "top_k must be >= 0 (0 = off), got %d", p->top_k);
    if (!(p->top_p > 0.f && p->top_p <= 1.f))
        return err_set(e, "top_p must be in (0, 1], got %g", p->top_p);
    if (!(p->min_p >= 0.f && p->min_p <= 1.f))
        return err_set(e, "min_p must be in [0, 1], got %g", p->min_p);
    if (!(p->repetition_penalty > 0.f) || !isfinite(p->repetition_penalty))
        return err_set(e, "repetition_penalty must be > 0, got %g", p->repetition_penalty);
    if (!(fabsf(p->presence_penalty) <= 2.f))
        return err_set(e, "presence_penalty must be in [-2, 2], got %g", p->presence_penalty);
    if (!(fabsf(p->frequency_penalty) <= 2.f))
        return err_set(e, "frequency_penalty must be in [-2, 2], got %g", p->frequency_penalty);
    if (p->top_logprobs < 0 || p->top_logprobs > 20)
        return err_set(e, "top_logprobs must be in [0, 20], got %d", p->top_logprobs);
    for (int i = 0; i < p->n_bias; i++) {
        if (p->bias[i].token < 0 || p->bias[i].token >= vocab_size)
            return err_set(e, "logit_bias: token %d is outside the vocabulary (0..%d)", p->bias[i].token,
                           vocab_size - 1);
        if (!(fabsf(p->bias[i].bias) <= 100.f))
            return err_set(e, "logit_bias: bias for token %d must be in [-100, 100], got %g", p->bias[i].token,
                           p->bias[i].bias);
    }
    return 0;
}

/* ---- Philox4x32-10 (sampling/philox.h, shared with the CUDA sampler) ---- */

void philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo, uint32_t out[4])
{
    philox4x32_10(key, counter_hi, counter_lo, out);
}

/* Gumbel noise for (seed, step, token): -log(-log(u)), u uniform in (0, 1). */
static float gumbel(uint64_t seed, uint64_t step, int32_t token)
{
    uint32_t r[4];
    philox4x32(seed, step, (uint64_t)(uint32_t)token, r);
    float u = ((float)(r[0] >> 8) + 0.5f) * (1.0f / 16777216.0f);
    return -logf(-logf(u));
}

/* ---- helpers ---- */

static int32_t argmax(const float *z, int n)
{
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (z[i] > z[best])
            best = i;
    return best;
}

/* qsort_r comparator: token ids by value, descending, lower id first on ties */
static int by_value_desc(const void *a, const void *b, void *keys)
{
    const float *z = keys;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (z[x] != z[y])
        return z[x] > z[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static void apply_penalties(float *z, float *mark, int vocab, const struct sampling_params *p, const int32_t *prompt,
                            int n_prompt, const int32_t *output, int n_output)
{
    if (p->repetition_penalty != 1.f) {
        memset(mark, 0, (size_t)vocab * sizeof(float));
        for (int i = 0; i < n_prompt; i++)
            mark[prompt[i]] = 1.f;
        for (int i = 0; i < n_output; i++)
            mark[output[i]] = 1.f;
        for (int t = 0; t < vocab; t++)
            if (mark[t] != 0.f)
                z[t] = z[t] > 0.f ? z[t] / p->repetition_penalty : z[t] * p->repetition_penalty;
    }
    if (p->presence_penalty != 0.f || p->frequency_penalty != 0.f) {
        memset(mark, 0, (size_t)vocab * sizeof(float));
        for (int i = 0; i < n_output; i++)
            mark[output[i]] += 1.f;
        for (int t = 0; t < vocab; t++)
            if (mark[t] > 0.f)
                z[t] -= p->presence_penalty + p->frequency_penalty * mark[t];
    }
}

static void fill_logprobs(const float *logits, int vocab, const struct sampling_params *p, struct sample_result *out)
{
    if (!p->logprobs && p->top_logprobs == 0) /* nobody reads them: the sum over the vocabulary is most of a greedy draw */
        return;
    float mx = logits[argmax(logits, vocab)];
    double sum = 0;
    for (int t = 0; t < vocab; t++)
        sum += exp((double)logits[t] - mx);
    float lse = mx + (float)log(sum);
    out->logprob = logits[out->token] - lse;
    int k = p->top_logprobs < vocab ? p->top_logprobs : vocab;
    for (int j = 0; j < k; j++) { /* k <= 20: selection by repeated scans */
        int32_t best = -1;
        for (int t = 0; t < vocab; t++) {
            int taken = 0;
            for (int i = 0; i < j && !taken; i++)
                taken = out->top_ids[i] == t;
            if (!taken && logits[t] > -INFINITY && (best < 0 || logits[t] > logits[best]))
                best = t;
        }
        /* fewer tokens than asked have a probability (a grammar's mask): the rest are -1 */
        out->top_ids[j] = best;
        out->top_logprobs[j] = best >= 0 ? logits[best] - lse : -INFINITY;
    }
}

void sample_token(const float *logits, int vocab, const struct sampling_params *p, const int32_t *prompt,
                  int n_prompt, const int32_t *output, int n_output, uint64_t step, float *scratch,
                  struct sample_result *out)
{
    sample_token_masked(logits, vocab, NULL, p, prompt, n_prompt, output, n_output, step, scratch, out);
}

void sample_token_masked(const float *logits, int vocab, const uint32_t *mask, const struct sampling_params *p,
                         const int32_t *prompt, int n_prompt, const int32_t *output, int n_output, uint64_t step,
                         float *scratch, struct sample_result *out)
{
    float *z = scratch, *aux = scratch + vocab;
    if (mask) { /* the model's logits restricted to the mask: what everything below reads as "the logits" */
        float *masked = scratch + 2 * (size_t)vocab;
        for (int t = 0; t < vocab; t++)
            masked[t] = mask[t >> 5] >> (t & 31) & 1 ? logits[t] : -INFINITY;
        logits = masked;
    }
    memset(out, 0, sizeof *out);
    if (p->temperature == 0.f && p->n_bias == 0 && p->repetition_penalty == 1.f && p->presence_penalty == 0.f &&
        p->frequency_penalty == 0.f) { /* nothing changes the logits: their best is the draw */
        out->token = argmax(logits, vocab);
        fill_logprobs(logits, vocab, p, out);
        return;
    }
    memcpy(z, logits, (size_t)vocab * sizeof(float));
    for (int i = 0; i < p->n_bias; i++)
        z[p->bias[i].token] += p->bias[i].bias;
    apply_penalties(z, aux, vocab, p, prompt, n_prompt, output, n_output);
    if (p->temperature == 0.f) {
        out->token = argmax(z, vocab);
        fill_logprobs(logits, vocab, p, out);
        return;
    }
    for (int t = 0; t < vocab; t++)
        z[t] /= p->temperature;
    /* probabilities (unnormalised) relative to the best token */
    float mx = z[argmax(z, vocab)];
    if (p->min_p > 0.f) /* p(t) >= min_p * p(max)  <=>  z[t] >= mx + log(min_p) */
        for (int t = 0; t < vocab; t++)
            if (z[t] < mx + logf(p->min_p))
                z[t] = -INFINITY;
    if (p->top_k > 0 || p->top_p < 1.f) {
        int32_t *order = (int32_t *)aux; /* vocab ints fit in vocab floats */
        int n = 0;
        for (int t = 0; t < vocab; t++)
            if (z[t] > -INFINITY)
                order[n++] = t;
        qsort_r(order, (size_t)n, sizeof *order, by_value_desc, z);
        int keep = n;
        if (p->top_k > 0 && p->top_k < keep)
            keep = p->top_k;
        if (p->top_p < 1.f) {
            double total = 0, cum = 0;
            for (int i = 0; i < keep; i++)
                total += exp((double)z[order[i]] - mx);
            int i = 0;
            while (i < keep) {
                cum += exp((double)z[order[i]] - mx);
                i++;
                if (cum >= p->top_p * total)
                    break;
            }
            keep = i;
        }
        for (int i = keep; i < n; i++)
            z[order[i]] = -INFINITY;
    }
    /* Gumbel-max: argmax of z + noise draws from softmax(z) */
    int32_t best = -1;
    float best_v = -INFINITY;
    for (int t = 0; t < vocab; t++) {
        if (z[t] == -INFINITY)
            continue;
        float v = z[t] + gumbel(p->seed, step, t);
        if (best < 0 || v > best_v) {
            best = t;
            best_v = v;
        }
    }
    out->token = best >= 0 ? best : argmax(logits, vocab);
    fill_logprobs(logits, vocab, p, out);
}
