/* The fast backend's gated activation: the kernel set's vector exp and tanh,
 * the rows cut in pieces of GATE_PIECE over the pool (a decode row too). */
#include "backend/cpu_fast/fast_backend.h"

#define GATE_PIECE 512

struct gate_ctx {
    void (*fn)(float *out, const float *gate, const float *up, int64_t n);
    float *out;
    const float *gate, *up;
    int n_cols, in_stride, pieces;
};

static void gate_chunk(void *arg, long i0, long i1)
{
    const struct gate_ctx *c = arg;
    for (long i = i0; i < i1; i++) {
        const long r = i / c->pieces, at = (i % c->pieces) * GATE_PIECE;
        const long n = c->n_cols - at < GATE_PIECE ? c->n_cols - at : GATE_PIECE;
        c->fn(c->out + r * c->n_cols + at, c->gate + r * c->in_stride + at, c->up + r * c->in_stride + at, n);
    }
}

void fast_gated_act(struct backend *be, void *out, const void *gate, const void *up, int n_rows, int n_cols,
                    int in_stride, enum act_fn act)
{
    const struct quant_kernels *k = fast_of(be)->k;
    const int pieces = (n_cols + GATE_PIECE - 1) / GATE_PIECE;
    struct gate_ctx c = {act == ACT_FN_SILU ? k->silu_mul : k->gelu_tanh_mul, out, gate, up, n_cols, in_stride,
                         pieces};
    if (n_rows > 0 && pieces > 0)
        threadpool_for(fast_of(be)->base.pool, (long)n_rows * pieces, 1, gate_chunk, &c);
}
