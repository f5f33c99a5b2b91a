/* Token sampling: the parameters a request gives, and sample_token, the host
 * sampler that every backend's sampler follows exactly (the CPU backend runs
 * it; the CUDA sampler, src/backend/cuda/sampling.cu, is its twin):
 * logit bias, repetition / presence / frequency penalties, temperature,
 * top-k, top-p, min-p, then a draw that depends only on (seed, step): the
 * Gumbel-max trick with counter-based Philox noise per token id, so the same
 * seed gives the same tokens whatever else shares the batch. Temperature 0
 * is greedy (lowest id wins ties). Log-probabilities are of the model's
 * distribution (log-softmax of the raw logits), as OpenAI-style APIs report. */
#ifndef INFER_SAMPLING_SAMPLING_H
#define INFER_SAMPLING_SAMPLING_H

#include <stdint.h>

#include "core/error.h"

struct logit_bias {
    int32_t token;
    float bias;
};

struct sampling_params {
    float temperature;        /* 0: greedy */
    int top_k;                /* 0: off */
    float top_p;              /* 1: off */
    float min_p;              /* 0: off */
    float repetition_penalty; /* 1: off; divides positive logits of seen tokens, multiplies negative ones */
    float presence_penalty;   /* 0: off; subtracted once from tokens the output contains */
    float frequency_penalty;  /* 0: off; subtracted per occurrence in the output */
    uint64_t seed;
    const struct logit_bias *bias;
    int n_bias;
    int top_logprobs; /* how many alternatives to report (0..20) */
    int logprobs;     /* the chosen token's log-probability is wanted (on by default; top_logprobs > 0 implies
                       * it); 0 lets a sampler skip the vocabulary-wide sum it costs */
};

/* Defaults: greedy, every filter off, the chosen token's log-probability reported. */
struct sampling_params sampling_params_default(void);
/* Refuses values an API must reject (NaN, negative temperature, top_p outside
 * (0, 1], ...), naming the field. */
int sampling_params_check(const struct sampling_params *p, int vocab_size, struct err *e);
/* Greedy with nothing read past the row's best logit: no bias, no penalty,
 * no log-probabilities (a sampler may draw it from a row's maximum alone). */
int sampling_params_plain_greedy(const struct sampling_params *p);

struct sample_result {
    int32_t token;
    float logprob;          /* of the chosen token */
    int32_t top_ids[20];    /* top_logprobs alternatives, most likely first; -1 past the tokens a mask allows */
    float top_logprobs[20];
};

/* Samples from logits[vocab] (not modified; scratch holds 2 * vocab floats).
 * prompt / output: the sequence so far, for the penalties (repetition looks
 * at both, presence and frequency at the output). step: the RNG counter —
 * the index of the token being drawn in the output, with the choice index
 * (n > 1) in the high 32 bits so that each choice has its own stream. */
void sample_token(const float *logits, int vocab, const struct sampling_params *p, const int32_t *prompt,
                  int n_prompt, const int32_t *output, int n_output, uint64_t step, float *scratch,
                  struct sample_result *out);

/* sample_token under a grammar's mask ([ceil(vocab / 32)] words, bit t of
 * word t / 32 set: token t allowed; NULL: no mask). A masked token is never
 * drawn and has no probability: every step above (penalties, filters, the
 * draw, the log-probabilities) reads the logits with the masked ones at
 * -inf, so the distribution is the model's restricted to the grammar and a
 * masked token never appears among top_logprobs. scratch holds 3 * vocab
 * floats when mask is given. */
void sample_token_masked(const float *logits, int vocab, const uint32_t *mask, const struct sampling_params *p,
                         const int32_t *prompt, int n_prompt, const int32_t *output, int n_output, uint64_t step,
                         float *scratch, struct sample_result *out);

/* What one draw reads besides the logits: the parameters, the sequence so
 * far (the penalties read it), the RNG counter (sample_token's step) and
 * the grammar's mask, if any. */
struct sample_input {
    const struct sampling_params *params;
    const int32_t *prompt;
    int n_prompt;
    const int32_t *output;
    int n_output;
    uint64_t step;
    const uint32_t *mask; /* sample_token_masked's; NULL: unconstrained; a verify entry's: one per row */
};

/* Speculative verification: logits holds k + 1 rows, row i the target's
 * after the known tokens and the first i of k proposed ones, which sit
 * right after the output (in->output[n_output + i]; the penalties read
 * them as output). Row i is drawn as plain decoding would draw the output's
 * token n_output + i (step + i, the same Philox noise), and the proposals
 * are kept while the draw equals them (sample_kept): returns m in [1, k +
 * 1], out[0, m) the draws that count (m - 1 proposals accepted, then the
 * target's own token; out holds k + 1). So a sequence's tokens are the same
 * with speculation as without, greedy or sampled, seeded or not: the
 * proposals only decide how many come in one step. This is what a verify
 * step of the engine does, the sampler drawing the rows and the scheduler
 * keeping them. A grammar's masks (in->mask) are k + 1, one after the
 * other: row i's the grammar's state after the first i proposals. scratch
 * as sample_token's. */
int sample_verify(const float *logits, int vocab, int k, const struct sample_input *in, float *scratch,
                  struct sample_result *out);

/* How many of k proposals a verify step keeps: the leading ones its draws
 * (draws[0, k)) equal. */
int sample_kept(const struct sample_result *draws, const int32_t *proposed, int k);

/* Philox4x32-10: four 32-bit random words for (key, counter). */
void philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo, uint32_t out[4]);

#endif
