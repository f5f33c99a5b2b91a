/* The CPU sample op: sample_token per row, on the history rebuilt from the
 * row's compact list (sample_seen_expand), which the penalties read exactly
 * as they read the real one. It keeps the op's limits (SAMPLE_MAX_SEEN,
 * SAMPLE_MAX_BIAS) so that callers see one contract on every backend. */
#include <stdlib.h>

#include "backend/cpu/cpu_backend.h"

int cpu_sample_init(struct backend *be, int max_rows, int vocab, struct err *e)
{
    (void)be, (void)max_rows, (void)vocab, (void)e;
    return 0; /* buffers are allocated per call */
}

int cpu_sample(struct backend *be, const float *logits, int n_rows, int vocab, const struct sample_row *rows,
               struct sample_result *out, struct err *e)
{
    (void)be;
    for (int r = 0; r < n_rows; r++)
        if (rows[r].n_seen > SAMPLE_MAX_SEEN || rows[r].params->n_bias > SAMPLE_MAX_BIAS)
            return err_set(e, "sample: row %d has %d seen tokens and %d biases (at most %d and %d)", r,
                           rows[r].n_seen, rows[r].params->n_bias, SAMPLE_MAX_SEEN, SAMPLE_MAX_BIAS);
    float *scratch = xmalloc(2 * (size_t)vocab * sizeof(float));
    int32_t *prompt = NULL, *output = NULL;
    size_t cap_output = 0;
    for (int r = 0; r < n_rows; r++) {
        const struct sample_row *row = &rows[r];
        size_t n_out = 0;
        for (int i = 0; i < row->n_seen; i++)
            n_out += sample_seen_n_output(&row->seen[i]);
        if (n_out > cap_output || !output) {
            cap_output = n_out > 16 ? n_out : 16;
            output = xrealloc(output, cap_output * sizeof *output);
        }
        prompt = xrealloc(prompt, (size_t)(row->n_seen > 0 ? row->n_seen : 1) * sizeof *prompt);
        int np, no;
        sample_seen_expand(row->seen, row->n_seen, prompt, &np, output, &no);
        sample_token(logits + (size_t)r * vocab, vocab, row->params, prompt, np, output, no, row->step, scratch,
                     &out[r]);
    }
    free(prompt);
    free(output);
    free(scratch);
    return 0;
}
