/* Paged causal attention over the f16 cache, one pass with an online
 * softmax: each task is one token and one kv head, with every query head
 * of its group (GQA), so a key or value row is read once for all of them.
 * Keys go in chunks of ATTN_CHUNK from the first visible one: the scores
 * of a chunk through the kernel set's f16 tiles (4 keys by up to 4 heads a
 * call), the running maximum and sum updated once a chunk, then the values
 * weighted in. A token's chunks start at its own first visible key, so its
 * result does not depend on the other tokens of the step (prefill chunk or
 * decode step alike). The same maths as the reference (scores * scale,
 * optional tanh soft-cap, softmax with the maximum subtracted), in another
 * order. */
#include <math.h>
#include <string.h>

#include "backend/cpu_fast/fast_backend.h"

#define ATTN_CHUNK 64

struct attn_ctx {
    const struct quant_kernels *k;
    float *out;
    const float *q;
    const struct fwd_meta *m;
    const struct attn_shape *s;
    const struct kv_layer *kv;
    int window;
    float scale, softcap;
};

/* Scores of keys [j0, j1) of the sequence (block table) for heads [0, g) at q. */
static void chunk_scores(const struct attn_ctx *c, const int32_t *table, int kvh, int j0, int j1, const float *q,
                         int g, float *sc)
{
    const struct attn_shape *s = c->s;
    const int hd = s->head_dim;
    const size_t kv_row = (size_t)s->n_kv_heads * (size_t)hd * sizeof(uint16_t);
    const quant_tile_fn tile = c->k->tile[DTYPE_F16];
    for (int j = j0; j < j1;) {
        const int in_block = s->block_size - j % s->block_size;
        int rows = j1 - j < QUANT_TILE_ROWS ? j1 - j : QUANT_TILE_ROWS;
        rows = rows < in_block ? rows : in_block;
        const int64_t slot = (int64_t)table[j / s->block_size] * s->block_size + j % s->block_size;
        const char *k = (const char *)c->kv->k + (size_t)slot * kv_row + (size_t)kvh * (size_t)hd * sizeof(uint16_t);
        for (int h = 0; h < g; h += QUANT_TILE_COLS) {
            const int cols = g - h < QUANT_TILE_COLS ? g - h : QUANT_TILE_COLS;
            tile(k, kv_row, rows, q + (size_t)h * (size_t)hd, (size_t)hd * sizeof(float), cols, hd,
                 sc + (size_t)h * ATTN_CHUNK + (size_t)(j - j0), ATTN_CHUNK);
        }
        j += rows;
    }
}

static void attn_task(const struct attn_ctx *c, int t, int kvh, float *sc, float *acc, float *mx, float *sum)
{
    const struct attn_shape *s = c->s;
    const int hd = s->head_dim, g = s->n_heads / s->n_kv_heads;
    const int seq = c->m->seq_of_token[t], pos = c->m->positions[t];
    float *dst = c->out + ((size_t)t * (size_t)s->n_heads + (size_t)kvh * (size_t)g) * (size_t)hd;
    if (c->m->kv_len[seq] == 0) { /* a padding row (graph buckets): nothing visible, zeros as on CUDA */
        memset(dst, 0, (size_t)g * (size_t)hd * sizeof(float));
        return;
    }
    CHECK(pos < c->m->kv_len[seq]);
    const int lo = c->window > 0 && pos - c->window + 1 > 0 ? pos - c->window + 1 : 0;
    const int32_t *table = c->m->block_tables + (size_t)seq * (size_t)c->m->max_blocks_per_seq;
    const float *q = c->q + ((size_t)t * (size_t)s->n_heads + (size_t)kvh * (size_t)g) * (size_t)hd;
    const size_t kv_row = (size_t)s->n_kv_heads * (size_t)hd;
    memset(acc, 0, (size_t)g * (size_t)hd * sizeof(float));
    for (int h = 0; h < g; h++)
        mx[h] = -INFINITY, sum[h] = 0;
    for (int j0 = lo; j0 <= pos; j0 += ATTN_CHUNK) {
        const int j1 = pos + 1 - j0 < ATTN_CHUNK ? pos + 1 : j0 + ATTN_CHUNK, n = j1 - j0;
        chunk_scores(c, table, kvh, j0, j1, q, g, sc);
        for (int h = 0; h < g; h++) {
            float *p = sc + (size_t)h * ATTN_CHUNK, m = mx[h];
            for (int j = 0; j < n; j++) {
                float d = p[j] * c->scale;
                if (c->softcap > 0)
                    d = tanhf(d / c->softcap) * c->softcap;
                p[j] = d;
                m = d > m ? d : m;
            }
            const float corr = expf(mx[h] - m); /* 0 on the first chunk (mx = -inf) */
            float add = 0;
            for (int j = 0; j < n; j++)
                add += p[j] = expf(p[j] - m);
            sum[h] = sum[h] * corr + add;
            mx[h] = m;
            if (corr != 1.0f)
                for (int i = 0; i < hd; i++)
                    acc[(size_t)h * (size_t)hd + (size_t)i] *= corr;
        }
        for (int j = 0; j < n; j++) {
            const int pj = j0 + j;
            const int64_t slot = (int64_t)table[pj / s->block_size] * s->block_size + pj % s->block_size;
            const uint16_t *v = (const uint16_t *)c->kv->v + (size_t)slot * kv_row + (size_t)kvh * (size_t)hd;
            float a[64];
            for (int h = 0; h < g; h++)
                a[h] = sc[(size_t)h * ATTN_CHUNK + (size_t)j];
            c->k->axpy_f16(acc, (size_t)hd, a, g, v, hd);
        }
    }
    for (int h = 0; h < g; h++) {
        const float inv = 1.0f / sum[h];
        for (int i = 0; i < hd; i++)
            dst[(size_t)h * (size_t)hd + (size_t)i] = acc[(size_t)h * (size_t)hd + (size_t)i] * inv;
    }
}

static void attn_chunk(void *arg, long i0, long i1)
{
    const struct attn_ctx *c = arg;
    const int g = c->s->n_heads / c->s->n_kv_heads, hd = c->s->head_dim;
    float *sc = xmalloc((size_t)g * ATTN_CHUNK * sizeof(float)), *acc = xmalloc((size_t)g * (size_t)hd * sizeof(float));
    float *mx = xmalloc((size_t)g * sizeof(float)), *sum = xmalloc((size_t)g * sizeof(float));
    for (long i = i0; i < i1; i++)
        attn_task(c, (int)(i / c->s->n_kv_heads), (int)(i % c->s->n_kv_heads), sc, acc, mx, sum);
    free(sc), free(acc), free(mx), free(sum);
}

void fast_attention(struct backend *be, void *out, const void *q, const struct fwd_meta *m, const struct attn_shape *s,
                    const struct kv_layer *kv, int window, float scale, float softcap)
{
    CHECK(be->kv_dtype == DTYPE_F16 && s->n_heads / s->n_kv_heads <= 64);
    const struct attn_ctx c = {fast_of(be)->k, out, q, m, s, kv, window, scale, softcap};
    threadpool_for(fast_of(be)->base.pool, (long)m->n_tokens * s->n_kv_heads, 1, attn_chunk, (void *)&c);
}

void fast_attention_rope(struct backend *be, void *out, void *q_scratch, const struct qkv_rope *r,
                         const struct fwd_meta *m, const struct attn_shape *s, struct kv_layer *kv, int window,
                         float scale, float softcap)
{
    cpu_qk_rope_kv_write(be, q_scratch, r, m, s, kv);
    fast_attention(be, out, q_scratch, m, s, kv, window, scale, softcap);
}
