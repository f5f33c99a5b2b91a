/* Small per-row ops: embedding lookup, gated activations, row gather. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

static void float_row(const struct weight *table, int64_t row, float *out)
{
    cpu_to_f32(out, table->data, table->dtype, row * table->cols, table->cols);
}

void cpu_embed(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
               int64_t vocab_lo, float scale)
{
    (void)be;
    cpu_embed_rows(out, m, table, vocab_lo, scale, float_row);
}

void cpu_embed_rows(void *out, const struct fwd_meta *m, const struct weight *table, int64_t vocab_lo, float scale,
                    void (*read_row)(const struct weight *table, int64_t row, float *out))
{
    int64_t d = table->cols;
    for (int t = 0; t < m->n_tokens; t++) {
        const int64_t row = (int64_t)m->token_ids[t] - vocab_lo;
        float *o = (float *)out + t * d;
        if (row < 0 || row >= table->rows) { /* another rank's share of the vocabulary */
            memset(o, 0, (size_t)d * sizeof(float));
            continue;
        }
        read_row(table, row, o);
        if (scale != 1.0f)
            for (int64_t i = 0; i < d; i++)
                o[i] *= scale;
    }
}

static inline float gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

void cpu_gated_act(struct backend *be, void *out, const void *gate, const void *up, int n_rows,
                   int n_cols, int in_stride, enum act_fn act)
{
    (void)be;
    for (int r = 0; r < n_rows; r++) {
        const float *g = (const float *)gate + (int64_t)r * in_stride, *u = (const float *)up + (int64_t)r * in_stride;
        float *o = (float *)out + (int64_t)r * n_cols;
        for (int i = 0; i < n_cols; i++) {
            float a = act == ACT_FN_SILU ? g[i] / (1.0f + expf(-g[i])) : gelu_tanh(g[i]);
            o[i] = a * u[i];
        }
    }
}

void cpu_gather_rows(struct backend *be, void *out, const void *x, const struct fwd_meta *m,
                     int n_cols)
{
    (void)be;
    for (int i = 0; i < m->n_logits; i++)
        memmove((float *)out + (int64_t)i * n_cols,
                (const float *)x + (int64_t)m->logit_rows[i] * n_cols, (size_t)n_cols * sizeof(float));
}
