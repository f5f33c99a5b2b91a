#include "runner/sampler.h"

#include <stdlib.h>
#include <string.h>

int sampler_init(struct sampler *s, struct backend *be, int max_rows, int max_logit_rows, int vocab,
                 struct err *e)
{
    memset(s, 0, sizeof *s);
    if (be->ops->sampler->init(be, max_rows, max_logit_rows, vocab, e))
        return -1;
    if (max_rows == 0) /* a rank that does not draw */
        return 0;
    s->be = be;
    s->max_rows = max_rows;
    s->vocab = vocab;
    s->rows = xcalloc((size_t)max_rows, sizeof *s->rows);
    s->seen = xmalloc((size_t)max_rows * SAMPLE_MAX_SEEN * sizeof *s->seen);
    s->slot = xmalloc((size_t)vocab * sizeof *s->slot);
    memset(s->slot, 0xff, (size_t)vocab * sizeof *s->slot); /* all -1 */
    s->scratch = xmalloc(3 * (size_t)vocab * sizeof(float));
    return 0;
}

void sampler_free(struct sampler *s)
{
    free(s->rows);
    free(s->seen);
    free(s->slot);
    free(s->host_logits);
    free(s->scratch);
    memset(s, 0, sizeof *s);
}

/* Draw row d's grammar mask: a verify entry's rows have theirs one after
 * the other (the grammar's state after the first d proposals). */
static const uint32_t *row_mask(const struct sampler *s, const struct sample_input *in, int d)
{
    return in->mask ? in->mask + (size_t)d * (size_t)((s->vocab + 31) / 32) : NULL;
}

/* The backend's rows; 0 when some row does not fit the lists. */
static int fill_rows(struct sampler *s, const struct step_seq *seqs, int n)
{
    int row = 0;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < seqs[i].draw; d++) { /* a verify row: the output with the proposals before it */
            const struct sample_input *in = &seqs[i].sample;
            struct sample_seen *seen = s->seen + (size_t)row * SAMPLE_MAX_SEEN;
            int n_seen = sample_seen_build(in->params, in->prompt, in->n_prompt, in->output, in->n_output + d,
                                           s->slot, seen, SAMPLE_MAX_SEEN);
            if (n_seen < 0 || in->params->n_bias > SAMPLE_MAX_BIAS)
                return 0;
            s->rows[row++] = (struct sample_row){in->params, in->step + (uint64_t)d, seen, n_seen, row_mask(s, in, d)};
        }
    return 1;
}

int sampler_stage(struct sampler *s, const struct step_seq *seqs, int n, int pad_rows, struct err *e)
{
    if (!s->be) /* a rank that does not draw */
        return 0;
    int rows = 0;
    for (int i = 0; i < n; i++)
        rows += seqs[i].draw;
    if (rows > pad_rows || pad_rows > s->max_rows)
        return err_set(e, "step draws %d rows (padded to %d), the sampler holds %d", rows, pad_rows,
                       s->max_rows);
    s->seqs = seqs;
    s->n_seqs = n;
    s->n_rows = rows;
    s->on_backend = fill_rows(s, seqs, n);
    if (!s->on_backend)
        s->host_draws++;
    return s->be->ops->sampler->stage(s->be, s->on_backend ? rows : 0, pad_rows, s->vocab, s->rows, e);
}

int sampler_enqueue(struct sampler *s, const float *logits, int pad_rows, struct err *e)
{
    if (!s->be)
        return 0;
    return s->be->ops->sampler->enqueue(s->be, logits, pad_rows, s->vocab, e);
}

int sampler_masks_late(const struct sampler *s) { return s->be && s->be->ops->sampler->masks_ready != NULL; }

int sampler_masks_ready(struct sampler *s, struct err *e)
{
    if (!sampler_masks_late(s))
        return 0;
    return s->be->ops->sampler->masks_ready(s->be, e);
}

int sampler_collect(struct sampler *s, const float *logits, struct sample_result *out, struct err *e)
{
    struct backend *be = s->be;
    if (!be)
        return 0;
    if (s->on_backend || s->n_rows == 0)
        return be->ops->sampler->finish(be, s->on_backend ? s->n_rows : 0, out, e);
    const size_t bytes = (size_t)s->n_rows * s->vocab * sizeof(float);
    if (!s->host_logits)
        s->host_logits = xmalloc((size_t)s->max_rows * s->vocab * sizeof(float));
    if (be->ops->copy_to_host(be, s->host_logits, logits, bytes, e) || be->ops->sampler->finish(be, 0, out, e))
        return -1;
    for (int i = 0, row = 0; i < s->n_seqs; i++)
        for (int d = 0; d < s->seqs[i].draw; d++, row++) {
            const struct sample_input *in = &s->seqs[i].sample;
            sample_token_masked(s->host_logits + (size_t)row * s->vocab, s->vocab, row_mask(s, in, d), in->params,
                                in->prompt, in->n_prompt, in->output, in->n_output + d, in->step + (uint64_t)d,
                                s->scratch, &out[row]);
        }
    return 0;
}
