#include "backend/quant/quant_matmul.h"

#include <math.h>

/* Rows of w per tile: 8 rows of a 2048-wide Q8_0 matrix are 17 KB. */
#define QMM_TILE_ROWS 8

struct qmm {
    const struct quant_kernels *k;
    float *out;
    const float *x;
    const struct weight *w;
    int n_rows;
    void *xq;
    size_t xq_row;
    float softcap;
};

static void quantize_rows(void *arg, long t0, long t1)
{
    const struct qmm *c = arg;
    for (long t = t0; t < t1; t++)
        quant_act_row(c->k, c->w->dtype, c->x + t * c->w->cols, c->w->cols, (char *)c->xq + (size_t)t * c->xq_row);
}

static void rows_chunk(void *arg, long n0, long n1)
{
    const struct qmm *c = arg;
    const int64_t K = c->w->cols, N = c->w->rows;
    const size_t w_row = dtype_row_bytes(c->w->dtype, K);
    float (*dot)(const void *, const void *, int64_t) = c->k->dot[c->w->dtype];
    for (long n = n0; n < n1; n += QMM_TILE_ROWS) {
        const long end = n + QMM_TILE_ROWS < n1 ? n + QMM_TILE_ROWS : n1;
        for (int t = 0; t < c->n_rows; t++) {
            const char *xt = (const char *)c->xq + (size_t)t * c->xq_row;
            float *ot = c->out + (int64_t)t * N;
            for (long r = n; r < end; r++) {
                float v = dot((const char *)c->w->data + (size_t)r * w_row, xt, K);
                ot[r] = c->softcap > 0 ? tanhf(v / c->softcap) * c->softcap : v;
            }
        }
    }
}

size_t quant_matmul_scratch(const struct weight *w, int n_rows)
{
    return (size_t)n_rows * quant_act_row_bytes(w->dtype, w->cols);
}

void quant_matmul(const struct quant_kernels *k, struct threadpool *pool, float *out, const float *x,
                  const struct weight *w, int n_rows, void *xq, float softcap)
{
    CHECK(quant_act_block(w->dtype) && k->dot[w->dtype] && w->cols % quant_act_block(w->dtype) == 0);
    if (n_rows <= 0 || w->rows <= 0)
        return;
    struct qmm c = {k, out, x, w, n_rows, xq, quant_act_row_bytes(w->dtype, w->cols), softcap};
    threadpool_for(pool, n_rows, 4, quantize_rows, &c);
    threadpool_for(pool, (long)w->rows, QMM_TILE_ROWS, rows_chunk, &c);
}
