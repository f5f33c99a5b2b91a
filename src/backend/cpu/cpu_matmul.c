/* x[T, K] (f32) . W[N, K]^T -> out[T, N] (f32), W in bf16/f16/f32.
 * Threads split N; each converts a tile of W rows to f32 once and reuses it
 * for every token, so conversion costs O(N K) regardless of T. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

#define MM_TILE_ROWS 8

struct mm_ctx {
    float *out;
    const float *x;
    const struct weight *w;
    int n_rows; /* T */
    float softcap;
};

/* Not instrumented by the sanitizers: their checks of these loads were three quarters of a
 * sanitizer build's decode step (the tiny Gemma's 262k-row LM head, batch 8: 408 ms with them,
 * 96 ms without), which the server tests run by the thousand. The loads stay inside the tile the
 * caller wrote (instrumented) and its x rows. */
__attribute__((no_sanitize("address", "undefined")))
static float dot_f32(const float *a, const float *b, int64_t n)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[i + j] * b[i + j];
    float s = 0;
    for (; i < n; i++)
        s += a[i] * b[i];
    return s + ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void mm_chunk(void *arg, long n0, long n1)
{
    struct mm_ctx *c = arg;
    const int64_t K = c->w->cols, N = c->w->rows;
    float *tile = xmalloc((size_t)MM_TILE_ROWS * (size_t)K * sizeof(float));
    for (long n = n0; n < n1; n += MM_TILE_ROWS) {
        int rows = (int)(n1 - n < MM_TILE_ROWS ? n1 - n : MM_TILE_ROWS);
        cpu_to_f32(tile, c->w->data, c->w->dtype, n * K, rows * K);
        for (int t = 0; t < c->n_rows; t++) {
            const float *xt = c->x + (int64_t)t * K;
            float *ot = c->out + (int64_t)t * N + n;
            for (int r = 0; r < rows; r++) {
                float v = dot_f32(xt, tile + (int64_t)r * K, K);
                if (c->softcap > 0)
                    v = tanhf(v / c->softcap) * c->softcap;
                ot[r] = v;
            }
        }
    }
    free(tile);
}

static void matmul_run(struct backend *be, float *out, const float *x, const struct weight *w,
                       int n_rows, float softcap)
{
    struct mm_ctx c = {out, x, w, n_rows, softcap};
    threadpool_for(cpu_pool(be), (long)w->rows, MM_TILE_ROWS * 4, mm_chunk, &c);
}

void cpu_matmul(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows)
{
    matmul_run(be, out, x, w, n_rows, 0);
}

void cpu_logits(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows,
                float softcap)
{
    matmul_run(be, out, x, w, n_rows, softcap);
}

/* The fused gate|up projection into scratch [n_rows, 2F], then the gated
 * activation of its two halves (f32 throughout, like the unfused ops). */
void cpu_gated_matmul(struct backend *be, void *out, void *scratch, const void *x, const struct weight *w,
                      int n_rows, enum act_fn act)
{
    CHECK(w->rows % 2 == 0);
    if (n_rows <= 0 || w->rows <= 0)
        return;
    const int64_t F = w->rows / 2;
    float *proj = scratch;
    matmul_run(be, proj, x, w, n_rows, 0);
    cpu_gated_act(be, out, proj, proj + F, n_rows, (int)F, (int)(2 * F), act);
}
