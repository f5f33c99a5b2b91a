/* The tokens a sequence has seen, compacted for a device sampler: one entry
 * per distinct token of prompt + output, with its count in the output and
 * whether the prompt holds it. That is all the penalties read (repetition:
 * seen anywhere; presence / frequency: the output count), so a sampler given
 * the list computes exactly what sample_token computes from the history.
 *
 * The list is capped (SAMPLE_MAX_SEEN distinct tokens), which is what lets a
 * backend size its buffers once at start-up; a longer history is refused by
 * sample_seen_build and the caller samples that row on the host instead. */
#ifndef INFER_SAMPLING_SAMPLE_SEEN_H
#define INFER_SAMPLING_SAMPLE_SEEN_H

#include <stdint.h>

#include "sampling/sampling.h"

enum {
    SAMPLE_MAX_SEEN = 4096, /* distinct tokens per row a backend must accept */
    SAMPLE_MAX_BIAS = 1024, /* logit_bias entries per row a backend must accept */
};

struct sample_seen {
    int32_t token;
    uint32_t count; /* (occurrences in the output << 1) | (1 if the prompt holds it) */
};

static inline uint32_t sample_seen_n_output(const struct sample_seen *s) { return s->count >> 1; }
static inline int sample_seen_in_prompt(const struct sample_seen *s) { return (int)(s->count & 1u); }

/* Which parts of the history p's penalties read: 0 none, 1 the output only
 * (presence / frequency), 2 prompt and output (repetition). */
int sample_seen_needs(const struct sampling_params *p);

/* Builds the list for p into out (capacity cap), first appearance first:
 * the prompt's tokens only when the repetition penalty reads them. slot is
 * [vocab] scratch that must hold -1 everywhere; it is left that way.
 * Returns the number of entries, or -1 when more than cap are needed. */
int sample_seen_build(const struct sampling_params *p, const int32_t *prompt, int n_prompt, const int32_t *output,
                      int n_output, int32_t *slot, struct sample_seen *out, int cap);

/* The inverse, for samplers that take a history (sample_token): a prompt
 * of the tokens the prompt holds and an output of each token repeated its
 * output count (order is lost, which the penalties ignore). prompt needs n
 * entries, output the sum of the output counts; the lengths are returned. */
void sample_seen_expand(const struct sample_seen *seen, int n, int32_t *prompt, int *n_prompt, int32_t *output,
                        int *n_output);

#endif
