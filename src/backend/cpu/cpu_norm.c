/* RMSNorm as transformers computes it in fp32: x * rsqrt(mean(x^2) + eps),
 * then times w (Llama, Qwen3) or (1 + w) (Gemma). */
#include <math.h>

#include "backend/cpu/cpu_backend.h"

static void norm_row(float *out, const float *x, const float *w, int64_t d, float eps, int plus_one)
{
    double ss = 0;
    for (int64_t i = 0; i < d; i++)
        ss += (double)x[i] * x[i];
    float inv = 1.0f / sqrtf((float)(ss / (double)d) + eps);
    for (int64_t i = 0; i < d; i++)
        out[i] = x[i] * inv * (plus_one ? 1.0f + w[i] : w[i]);
}

/* Norm weights are small vectors: convert once per call. */
static float *weight_f32(const struct weight *w)
{
    int64_t n = w->rows * w->cols;
    float *f = xmalloc((size_t)n * sizeof(float));
    cpu_to_f32(f, w->data, w->dtype, 0, n);
    return f;
}

void cpu_rmsnorm(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows,
                 float eps, int plus_one)
{
    (void)be;
    int64_t d = w->cols;
    float *wf = weight_f32(w);
    for (int r = 0; r < n_rows; r++)
        norm_row((float *)out + r * d, (const float *)x + r * d, wf, d, eps, plus_one);
    free(wf);
}

void cpu_add_rmsnorm(struct backend *be, void *residual, const void *delta, void *out,
                     const struct weight *w, int n_rows, float eps, int plus_one)
{
    (void)be;
    int64_t d = w->cols;
    float *wf = weight_f32(w);
    for (int r = 0; r < n_rows; r++) {
        float *res = (float *)residual + r * d;
        const float *dl = (const float *)delta + r * d;
        for (int64_t i = 0; i < d; i++)
            res[i] += dl[i];
        norm_row((float *)out + r * d, res, wf, d, eps, plus_one);
    }
    free(wf);
}
