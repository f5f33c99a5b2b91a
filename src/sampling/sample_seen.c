#include "sampling/sample_seen.h"

int sample_seen_needs(const struct sampling_params *p)
{
    if (p->repetition_penalty != 1.f)
        return 2;
    return p->presence_penalty != 0.f || p->frequency_penalty != 0.f;
}

/* Adds one occurrence of token; -1 when the list is full. */
static int add(int32_t token, int from_output, int32_t *slot, struct sample_seen *out, int *n, int cap)
{
    int32_t i = slot[token];
    if (i < 0) {
        if (*n == cap)
            return -1;
        i = slot[token] = (*n)++;
        out[i] = (struct sample_seen){token, 0};
    }
    out[i].count += from_output ? 2u : (out[i].count & 1u) ^ 1u; /* the prompt bit is set once */
    return 0;
}

int sample_seen_build(const struct sampling_params *p, const int32_t *prompt, int n_prompt, const int32_t *output,
                      int n_output, int32_t *slot, struct sample_seen *out, int cap)
{
    int needs = sample_seen_needs(p), n = 0, rc = 0;
    for (int i = 0; needs == 2 && i < n_prompt && rc == 0; i++)
        rc = add(prompt[i], 0, slot, out, &n, cap);
    for (int i = 0; needs && i < n_output && rc == 0; i++)
        rc = add(output[i], 1, slot, out, &n, cap);
    for (int i = 0; i < n; i++) /* leave the scratch as it was given */
        slot[out[i].token] = -1;
    return rc ? -1 : n;
}

void sample_seen_expand(const struct sample_seen *seen, int n, int32_t *prompt, int *n_prompt, int32_t *output,
                        int *n_output)
{
    int np = 0, no = 0;
    for (int i = 0; i < n; i++) {
        if (sample_seen_in_prompt(&seen[i]))
            prompt[np++] = seen[i].token;
        for (uint32_t c = 0; c < sample_seen_n_output(&seen[i]); c++)
            output[no++] = seen[i].token;
    }
    *n_prompt = np;
    *n_output = no;
}
