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

struct norm_ctx {
    float *out, *residual;
    const float *x, *delta, *w;
    int64_t d;
    float eps;
    int plus_one;
};

/* Rows [r0, r1): residual += delta first where there is one. */
static void norm_chunk(void *arg, long r0, long r1)
{
    const struct norm_ctx *c = arg;
    for (long r = r0; r < r1; r++) {
        const float *x = c->x + r * c->d;
        if (c->residual) {
            float *res = c->residual + r * c->d;
            const float *dl = c->delta + r * c->d;
            for (int64_t i = 0; i < c->d; i++)
                res[i] += dl[i];
            x = res;
        }
        norm_row(c->out + r * c->d, x, c->w, c->d, c->eps, c->plus_one);
    }
}

static void norm_rows(struct backend *be, struct norm_ctx *c, int n_rows)
{
    if (n_rows > 0)
        threadpool_for(cpu_pool(be), n_rows, 16, norm_chunk, c);
    free((void *)c->w);
}

void cpu_rmsnorm(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows,
                 float eps, int plus_one)
{
    struct norm_ctx c = {out, NULL, x, NULL, weight_f32(w), w->cols, eps, plus_one};
    norm_rows(be, &c, n_rows);
}

void cpu_add_rmsnorm(struct backend *be, void *residual, const void *delta, void *out,
                     const struct weight *w, int n_rows, float eps, int plus_one)
{
    struct norm_ctx c = {out, residual, residual, delta, weight_f32(w), w->cols, eps, plus_one};
    norm_rows(be, &c, n_rows);
}
