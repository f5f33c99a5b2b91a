/* Paged causal attention, the reference for the CUDA kernels: every
 * (token, head) pair is one task; the token at position p of sequence s reads
 * keys p - window + 1 .. p (or 0 .. p) through s's block table. GQA maps
 * query head h to kv head h / (n_heads / n_kv_heads). Softmax in f32 with the
 * running maximum subtracted, as transformers' eager attention does. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

struct attn_ctx {
    float *out;
    const float *q;
    const struct fwd_meta *m;
    const struct attn_shape *s;
    const struct kv_layer *kv;
    int window;
    float scale, softcap;
    int max_kv;
};

static void attn_chunk(void *arg, long i0, long i1)
{
    struct attn_ctx *c = arg;
    const struct attn_shape *s = c->s;
    const int hd = s->head_dim, group = s->n_heads / s->n_kv_heads;
    const int64_t kv_row = (int64_t)s->n_kv_heads * hd;
    float *scores = xmalloc((size_t)c->max_kv * sizeof(float));
    float *acc = xmalloc((size_t)hd * sizeof(float));
    for (long i = i0; i < i1; i++) {
        int t = (int)(i / s->n_heads), h = (int)(i % s->n_heads), kvh = h / group;
        int seq = c->m->seq_of_token[t];
        int pos = c->m->positions[t];
        float *dst = c->out + ((int64_t)t * s->n_heads + h) * hd;
        if (c->m->kv_len[seq] == 0) { /* a padding row (graph buckets): nothing visible, zeros as on CUDA */
            memset(dst, 0, (size_t)hd * sizeof(float));
            continue;
        }
        CHECK(pos < c->m->kv_len[seq]);
        int lo = c->window > 0 && pos - c->window + 1 > 0 ? pos - c->window + 1 : 0;
        const int32_t *table = c->m->block_tables + (int64_t)seq * c->m->max_blocks_per_seq;
        const float *qh = c->q + ((int64_t)t * s->n_heads + h) * hd;
        float mx = -INFINITY;
        for (int j = lo; j <= pos; j++) {
            int64_t slot = (int64_t)table[j / s->block_size] * s->block_size + j % s->block_size;
            const float *kj = (const float *)c->kv->k + slot * kv_row + (int64_t)kvh * hd;
            float d = 0;
            for (int x = 0; x < hd; x++)
                d += qh[x] * kj[x];
            d *= c->scale;
            if (c->softcap > 0)
                d = tanhf(d / c->softcap) * c->softcap;
            scores[j - lo] = d;
            mx = d > mx ? d : mx;
        }
        float sum = 0;
        for (int j = lo; j <= pos; j++) {
            scores[j - lo] = expf(scores[j - lo] - mx);
            sum += scores[j - lo];
        }
        memset(acc, 0, (size_t)hd * sizeof(float));
        for (int j = lo; j <= pos; j++) {
            int64_t slot = (int64_t)table[j / s->block_size] * s->block_size + j % s->block_size;
            const float *vj = (const float *)c->kv->v + slot * kv_row + (int64_t)kvh * hd;
            float p = scores[j - lo] / sum;
            for (int x = 0; x < hd; x++)
                acc[x] += p * vj[x];
        }
        memcpy(dst, acc, (size_t)hd * sizeof(float));
    }
    free(scores);
    free(acc);
}

void cpu_attention(struct backend *be, void *out, const void *q, const struct fwd_meta *m,
                   const struct attn_shape *s, const struct kv_layer *kv, int window, float scale,
                   float softcap)
{
    int max_kv = 1;
    for (int i = 0; i < m->n_seqs; i++)
        max_kv = m->kv_len[i] > max_kv ? m->kv_len[i] : max_kv;
    struct attn_ctx c = {out, q, m, s, kv, window, scale, softcap, max_kv};
    threadpool_for(cpu_pool(be), (long)m->n_tokens * s->n_heads, 1, attn_chunk, &c);
}

/* The two ops in turn: the reference the CUDA backend's one kernel (decode
 * attention with RoPE and the cache write folded in) is held to. */
void cpu_attention_rope(struct backend *be, void *out, void *q_scratch, const struct qkv_rope *r,
                        const struct fwd_meta *m, const struct attn_shape *s, struct kv_layer *kv, int window,
                        float scale, float softcap)
{
    cpu_qk_rope_kv_write(be, q_scratch, r, m, s, kv);
    cpu_attention(be, out, q_scratch, m, s, kv, window, scale, softcap);
}
