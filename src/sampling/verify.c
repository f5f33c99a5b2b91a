/* Speculative verification (sampling.h): plain decoding's draws of every
 * row, then the proposals they agree with. */
#include "sampling/sampling.h"

int sample_kept(const struct sample_result *draws, const int32_t *proposed, int k)
{
    int kept = 0;
    while (kept < k && draws[kept].token == proposed[kept])
        kept++;
    return kept;
}

int sample_verify(const float *logits, int vocab, int k, const struct sample_input *in, float *scratch,
                  struct sample_result *out)
{
    CHECK(k >= 0);
    const size_t words = (size_t)(vocab + 31) / 32;
    for (int i = 0; i <= k; i++) {
        const float *row = logits + (size_t)i * (size_t)vocab;
        if (in->mask)
            sample_token_masked(row, vocab, in->mask + (size_t)i * words, in->params, in->prompt, in->n_prompt,
                                in->output, in->n_output + i, in->step + i, scratch, &out[i]);
        else
            sample_token(row, vocab, in->params, in->prompt, in->n_prompt, in->output, in->n_output + i, in->step + i,
                         scratch, &out[i]);
    }
    return sample_kept(out, in->output + in->n_output, k) + 1;
}
