#include "engine/step_sample.h"

#include <stdlib.h>
#include <string.h>

int step_sampler_init(struct step_sampler *ss, struct backend *be, int max_rows, int vocab, struct err *e)
{
    memset(ss, 0, sizeof *ss);
    ss->max_rows = max_rows;
    ss->vocab = vocab;
    if (be->ops->sample) {
        if (be->ops->sample_init && be->ops->sample_init(be, max_rows, vocab, e))
            return -1;
        ss->on_backend = 1;
        ss->rows = xcalloc((size_t)max_rows, sizeof *ss->rows);
        ss->seen = xmalloc((size_t)max_rows * SAMPLE_MAX_SEEN * sizeof *ss->seen);
        ss->slot = xmalloc((size_t)vocab * sizeof *ss->slot);
        memset(ss->slot, 0xff, (size_t)vocab * sizeof *ss->slot); /* all -1 */
    }
    ss->scratch = xmalloc(2 * (size_t)vocab * sizeof(float));
    return 0;
}

void step_sampler_free(struct step_sampler *ss)
{
    free(ss->rows);
    free(ss->seen);
    free(ss->slot);
    free(ss->host_logits);
    free(ss->scratch);
    memset(ss, 0, sizeof *ss);
}

/* The RNG counter of r's next token: its output index, with the choice
 * index in the high word so that each choice has its own stream. */
static uint64_t rng_step(const struct request *r)
{
    return (uint64_t)(uint32_t)r->choice << 32 | (uint32_t)r->n_out;
}

/* The backend's rows; 0 when some row does not fit the op's lists. */
static int fill_rows(struct step_sampler *ss, struct request *const *req, const struct step_seq *q, int n)
{
    int row = 0;
    for (int i = 0; i < n; i++) {
        if (!q[i].want_logits)
            continue;
        const struct request *r = req[i];
        struct sample_seen *seen = ss->seen + (size_t)row * SAMPLE_MAX_SEEN;
        int n_seen = sample_seen_build(&r->sampling, r->tokens, r->n_prompt, r->out, r->n_out, ss->slot, seen,
                                       SAMPLE_MAX_SEEN);
        if (n_seen < 0 || r->sampling.n_bias > SAMPLE_MAX_BIAS)
            return 0;
        ss->rows[row++] = (struct sample_row){&r->sampling, rng_step(r), seen, n_seen};
    }
    return 1;
}

int step_sample_prepare(struct step_sampler *ss, struct request *const *req, const struct step_seq *q, int n,
                        struct err *e)
{
    int rows = 0;
    for (int i = 0; i < n; i++)
        rows += q[i].want_logits != 0;
    ss->n_rows = rows;
    ss->backend_rows = 0;
    if (rows > ss->max_rows)
        return err_set(e, "step has %d logits rows, the sampler holds %d", rows, ss->max_rows);
    if (rows && ss->on_backend && fill_rows(ss, req, q, n))
        ss->backend_rows = rows;
    return 0;
}

int step_sample_draw(struct step_sampler *ss, struct backend *be, const float *logits, struct request *const *req,
                     const struct step_seq *q, int n, struct sample_result *out, struct err *e)
{
    const int rows = ss->n_rows;
    if (rows == 0)
        return 0;
    if (ss->backend_rows)
        return be->ops->sample(be, logits, rows, ss->vocab, ss->rows, out, e) ? -1 : rows;
    if (ss->on_backend)
        ss->host_draws++;
    size_t bytes = (size_t)rows * ss->vocab * sizeof(float);
    if (!ss->host_logits)
        ss->host_logits = xmalloc((size_t)ss->max_rows * ss->vocab * sizeof(float));
    if (be->ops->copy_to_host(be, ss->host_logits, logits, bytes, e) || be->ops->synchronize(be, e))
        return -1;
    for (int i = 0, row = 0; i < n; i++) {
        if (!q[i].want_logits)
            continue;
        const struct request *r = req[i];
        sample_token(ss->host_logits + (size_t)row * ss->vocab, ss->vocab, &r->sampling, r->tokens, r->n_prompt,
                     r->out, r->n_out, rng_step(r), ss->scratch, &out[row]);
        row++;
    }
    return rows;
}

int step_sample(struct step_sampler *ss, struct backend *be, const float *logits, struct request *const *req,
                const struct step_seq *q, int n, struct sample_result *out, struct err *e)
{
    if (step_sample_prepare(ss, req, q, n, e))
        return -1;
    return step_sample_draw(ss, be, logits, req, q, n, out, e);
}
