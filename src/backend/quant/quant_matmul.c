#include "backend/quant/quant_matmul.h"

#include <math.h>

#include "backend/quant/quant_repack.h"

/* Each tile of QUANT_TILE_ROWS rows of w (a few KB) stays in L1 while
 * every x row passes it, QUANT_TILE_COLS at a time. */
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

/* A tile's outputs (rows x cols at o, rows N apart) soft-capped where asked. */
static void soft_cap(float *o, int64_t N, int rows, int cols, float softcap)
{
    if (softcap > 0)
        for (int j = 0; j < cols; j++)
            for (int r = 0; r < rows; r++)
                o[(int64_t)j * N + r] = tanhf(o[(int64_t)j * N + r] / softcap) * softcap;
}

/* A packed matrix: groups [g0, g1) of QUANT_R8_ROWS rows. */
static void groups_chunk(void *arg, long g0, long g1)
{
    const struct qmm *c = arg;
    const int64_t K = c->w->cols, N = c->w->rows;
    const size_t group = (size_t)QUANT_R8_ROWS * dtype_row_bytes(c->w->dtype, K);
    const quant_tile_fn tile = c->k->tile[c->w->dtype];
    for (long g = g0; g < g1; g++) {
        const long n = g * QUANT_R8_ROWS;
        const int rows = (int)(N - n < QUANT_R8_ROWS ? N - n : QUANT_R8_ROWS);
        for (int t = 0; t < c->n_rows; t += QUANT_TILE_COLS) {
            const int cols = c->n_rows - t < QUANT_TILE_COLS ? c->n_rows - t : QUANT_TILE_COLS;
            float *o = c->out + (int64_t)t * N + n;
            tile((const char *)c->w->data + (size_t)g * group, 0, rows, (const char *)c->xq + (size_t)t * c->xq_row,
                 c->xq_row, cols, K, o, (size_t)N);
            soft_cap(o, N, rows, cols, c->softcap);
        }
    }
}

static void rows_chunk(void *arg, long n0, long n1)
{
    const struct qmm *c = arg;
    const int64_t K = c->w->cols, N = c->w->rows;
    const size_t w_row = dtype_row_bytes(c->w->dtype, K);
    const size_t x_row = c->xq ? c->xq_row : (size_t)K * sizeof(float);
    const char *x = c->xq ? (const char *)c->xq : (const char *)c->x;
    const quant_tile_fn tile = c->k->tile[c->w->dtype];
    for (long n = n0; n < n1; n += QUANT_TILE_ROWS) {
        const int rows = (int)(n1 - n < QUANT_TILE_ROWS ? n1 - n : QUANT_TILE_ROWS);
        for (int t = 0; t < c->n_rows; t += QUANT_TILE_COLS) {
            const int cols = c->n_rows - t < QUANT_TILE_COLS ? c->n_rows - t : QUANT_TILE_COLS;
            float *o = c->out + (int64_t)t * N + n;
            tile((const char *)c->w->data + (size_t)n * w_row, w_row, rows, x + (size_t)t * x_row, x_row, cols, K, o,
                 (size_t)N);
            soft_cap(o, N, rows, cols, c->softcap);
        }
    }
}

/* Float weights read x itself. */
size_t quant_matmul_scratch(const struct weight *w, int n_rows)
{
    return quant_act_block(w->dtype) == QUANT_ACT_F32 ? 0 : (size_t)n_rows * quant_act_row_bytes(w->dtype, w->cols);
}

void quant_matmul(const struct quant_kernels *k, struct threadpool *pool, float *out, const float *x,
                  const struct weight *w, int n_rows, void *xq, float softcap)
{
    CHECK(quant_act_block(w->dtype) && k->tile[w->dtype] && w->cols % quant_act_block(w->dtype) == 0);
    if (n_rows <= 0 || w->rows <= 0)
        return;
    const int quantized = quant_act_block(w->dtype) != QUANT_ACT_F32;
    struct qmm c = {k, out, x, w, n_rows, quantized ? xq : NULL, quant_act_row_bytes(w->dtype, w->cols), softcap};
    if (quantized)
        threadpool_for(pool, n_rows, 4, quantize_rows, &c);
    if (quant_is_packed(w->dtype))
        threadpool_for(pool, (long)((w->rows + QUANT_R8_ROWS - 1) / QUANT_R8_ROWS), 1, groups_chunk, &c);
    else
        threadpool_for(pool, (long)w->rows, QUANT_TILE_ROWS, rows_chunk, &c);
}
