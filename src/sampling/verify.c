/* Speculative verification (sampling.h): plain decoding's draws, row by
 * row, while they agree with the proposals. */
#include "sampling/sampling.h"

int sample_verify(const float *logits, int vocab, int k, const struct sample_input *in, float *scratch,
                  struct sample_result *out)
{
    CHECK(k >= 0 && (!in->mask || k == 0));
    const int32_t *proposed = in->output + in->n_output;
    for (int i = 0;; i++) {
        const float *row = logits + (size_t)i * (size_t)vocab;
        if (in->mask)
            sample_token_masked(row, vocab, in->mask, in->params, in->prompt, in->n_prompt, in->output, in->n_output,
                                in->step, scratch, &out[i]);
        else
            sample_token(row, vocab, in->params, in->prompt, in->n_prompt, in->output, in->n_output + i, in->step + i,
                         scratch, &out[i]);
        if (i == k || out[i].token != proposed[i])
            return i + 1;
    }
}
