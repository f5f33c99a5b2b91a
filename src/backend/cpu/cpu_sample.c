/* The CPU sampler ops: sample_token per row, on the history rebuilt from
 * the row's compact list (sample_seen_expand), which the penalties read
 * exactly as they read the real one. The three parts of the protocol run
 * at once here (there are no graphs): stage remembers the rows, enqueue
 * draws, finish hands the draws over. It keeps the ops' limits
 * (SAMPLE_MAX_SEEN, SAMPLE_MAX_BIAS, the sized rows) so that callers see
 * one contract on every backend. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

#define MAX_SLOTS 8

/* One per pool thread (at most MAX_SLOTS): a row's draw needs vocabulary-sized scratch and its
 * rebuilt history. */
struct sample_slot {
    float *scratch;           /* [3 * vocab] */
    int32_t *prompt, *output; /* a row's rebuilt history */
    size_t cap_output;
};

struct cpu_sampler {
    int max_rows, vocab;
    const struct sample_row *rows; /* staged, the caller's until finish */
    int n_rows;
    struct sample_result *out; /* [max_rows] */
    struct sample_slot *slots; /* [n_slots] */
    int n_slots;
    const float *logits; /* enqueue's, while its rows are drawn */
};

int cpu_sample_init(struct backend *be, int max_rows, int max_logit_rows, int vocab, struct err *e)
{
    (void)max_logit_rows; /* the CPU gather leaves the sampler nothing: every row reads its logits */
    if (max_rows < 0 || vocab < 1)
        return err_set(e, "cpu backend: the sampler needs a vocabulary and rows >= 0, got %d and %d", vocab,
                       max_rows);
    cpu_sample_release(be);
    struct cpu_sampler *s = xcalloc(1, sizeof *s);
    s->max_rows = max_rows;
    s->vocab = vocab;
    s->out = xcalloc((size_t)(max_rows ? max_rows : 1), sizeof *s->out);
    s->n_slots = threadpool_size(cpu_pool(be)); /* 3 vocabularies of floats each: a few threads are enough */
    if (s->n_slots > MAX_SLOTS)
        s->n_slots = MAX_SLOTS;
    if (s->n_slots > max_rows)
        s->n_slots = max_rows > 0 ? max_rows : 1;
    s->slots = xcalloc((size_t)s->n_slots, sizeof *s->slots);
    for (int i = 0; i < s->n_slots; i++) {
        s->slots[i].scratch = xmalloc(3 * (size_t)vocab * sizeof(float));
        s->slots[i].prompt = xmalloc(SAMPLE_MAX_SEEN * sizeof *s->slots[i].prompt);
    }
    ((struct cpu_backend *)be->impl)->sampler = s;
    return 0;
}

void cpu_sample_release(struct backend *be)
{
    struct cpu_sampler *s = ((struct cpu_backend *)be->impl)->sampler;
    if (!s)
        return;
    for (int i = 0; i < s->n_slots; i++)
        free(s->slots[i].scratch), free(s->slots[i].prompt), free(s->slots[i].output);
    free(s->slots), free(s->out);
    free(s);
    ((struct cpu_backend *)be->impl)->sampler = NULL;
}

int cpu_sample_stage(struct backend *be, int n_rows, int pad_rows, int vocab, const struct sample_row *rows,
                     struct err *e)
{
    struct cpu_sampler *s = ((struct cpu_backend *)be->impl)->sampler;
    if (!s)
        return err_set(e, "cpu backend: sample before the sampler's init");
    if (n_rows > pad_rows || pad_rows > s->max_rows || vocab > s->vocab)
        return err_set(e, "sample: %d rows (padded to %d) of %d logits exceed the sampler's %d of %d", n_rows,
                       pad_rows, vocab, s->max_rows, s->vocab);
    for (int r = 0; r < n_rows; r++)
        if (rows[r].n_seen > SAMPLE_MAX_SEEN || rows[r].params->n_bias > SAMPLE_MAX_BIAS)
            return err_set(e, "sample: row %d has %d seen tokens and %d biases (at most %d and %d)", r,
                           rows[r].n_seen, rows[r].params->n_bias, SAMPLE_MAX_SEEN, SAMPLE_MAX_BIAS);
    s->rows = rows;
    s->n_rows = n_rows;
    return 0;
}

/* Slots [i0, i1): slot i draws rows i, i + n_slots, ... (a verify step's
 * rows, or a batch's, spread over the threads). */
static void draw_slots(void *ctx, long i0, long i1)
{
    struct cpu_sampler *s = ctx;
    for (long i = i0; i < i1; i++) {
        struct sample_slot *sl = &s->slots[i];
        for (int r = (int)i; r < s->n_rows; r += s->n_slots) {
            const struct sample_row *row = &s->rows[r];
            size_t n_out = 0;
            for (int j = 0; j < row->n_seen; j++)
                n_out += sample_seen_n_output(&row->seen[j]);
            if (n_out > sl->cap_output || !sl->output) {
                sl->cap_output = n_out > 16 ? n_out : 16;
                sl->output = xrealloc(sl->output, sl->cap_output * sizeof *sl->output);
            }
            int np, no;
            sample_seen_expand(row->seen, row->n_seen, sl->prompt, &np, sl->output, &no);
            sample_token_masked(s->logits + (size_t)r * s->vocab, s->vocab, row->mask, row->params, sl->prompt, np,
                                sl->output, no, row->step, sl->scratch, &s->out[r]);
        }
    }
}

/* Padding rows draw nothing here: their draws are ignored anyway. */
int cpu_sample_enqueue(struct backend *be, const float *logits, int pad_rows, int vocab, struct err *e)
{
    struct cpu_sampler *s = ((struct cpu_backend *)be->impl)->sampler;
    if (!s)
        return err_set(e, "cpu backend: sample before the sampler's init");
    if (pad_rows < s->n_rows || vocab != s->vocab)
        return err_set(e, "sample: %d rows of %d logits enqueued for %d staged rows of %d", pad_rows, vocab,
                       s->n_rows, s->vocab);
    s->logits = logits;
    const int n = s->n_rows < s->n_slots ? s->n_rows : s->n_slots;
    threadpool_for(cpu_pool(be), n, 1, draw_slots, s);
    return 0;
}

int cpu_sample_finish(struct backend *be, int n_rows, struct sample_result *out, struct err *e)
{
    struct cpu_sampler *s = ((struct cpu_backend *)be->impl)->sampler;
    if (!s)
        return err_set(e, "cpu backend: sample before the sampler's init");
    if (n_rows > s->n_rows)
        return err_set(e, "sample: %d draws asked of %d staged rows", n_rows, s->n_rows);
    memcpy(out, s->out, (size_t)n_rows * sizeof *out);
    s->rows = NULL;
    return 0;
}
