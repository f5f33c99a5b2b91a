/* q/k per-head RMSNorm (Qwen3, Gemma 3), rotary embedding in transformers'
 * rotate-half layout (pairs i and i + head_dim/2), and the write of k and v
 * into the paged cache at each token's slot, in the cache's dtype (f32 on
 * the reference, f16 on the fast CPU backend: rounded to nearest even).
 * Inputs may be strided rows of a fused q|k|v projection. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "core/bf16.h"

/* n f32 values into the cache row at dst, of kv_dtype. */
static void kv_store(void *dst, const float *x, int64_t n, enum dtype kv_dtype)
{
    if (kv_dtype == DTYPE_F32) {
        memcpy(dst, x, (size_t)n * sizeof(float));
        return;
    }
    CHECK(kv_dtype == DTYPE_F16);
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++)
        h[i] = f32_to_f16(x[i]);
}

static void head_norm(float *x, const float *w, int d, float eps, int plus_one)
{
    double ss = 0;
    for (int i = 0; i < d; i++)
        ss += (double)x[i] * x[i];
    float inv = 1.0f / sqrtf((float)(ss / d) + eps);
    for (int i = 0; i < d; i++)
        x[i] = x[i] * inv * (plus_one ? 1.0f + w[i] : w[i]);
}

static void rope_head(float *x, const float *cosv, const float *sinv, int half)
{
    for (int i = 0; i < half; i++) {
        float a = x[i], b = x[i + half];
        x[i] = a * cosv[i] - b * sinv[i];
        x[i + half] = b * cosv[i] + a * sinv[i];
    }
}

struct rope_ctx {
    void *q_out;
    const struct qkv_rope *r;
    const struct fwd_meta *m;
    const struct attn_shape *s;
    struct kv_layer *kv;
    enum dtype kv_dtype;
};

/* Tokens [t0, t1): each token's rows are its own, so the pool splits them. */
static void rope_chunk(void *arg, long t0, long t1)
{
    const struct rope_ctx *c = arg;
    const struct qkv_rope *r = c->r;
    const struct fwd_meta *m = c->m;
    const struct attn_shape *s = c->s;
    const int hd = s->head_dim, half = hd / 2;
    const int64_t q_row = (int64_t)s->n_heads * hd, kv_row = (int64_t)s->n_kv_heads * hd;
    const size_t kv_es = dtype_size(c->kv_dtype);
    float *qn = NULL, *kn = NULL;
    if (r->q_norm) {
        qn = xmalloc((size_t)hd * sizeof(float));
        kn = xmalloc((size_t)hd * sizeof(float));
        cpu_to_f32(qn, r->q_norm->data, r->q_norm->dtype, 0, hd);
        cpu_to_f32(kn, r->k_norm->data, r->k_norm->dtype, 0, hd);
    }
    float *cosv = xmalloc((size_t)half * sizeof(float)), *sinv = xmalloc((size_t)half * sizeof(float));
    float *kt = xmalloc((size_t)kv_row * sizeof(float));
    for (long t = t0; t < t1; t++) {
        float pos = (float)m->positions[t];
        for (int i = 0; i < half; i++) {
            float ang = pos * r->inv_freq[i]; /* f32 product, as transformers computes it */
            cosv[i] = cosf(ang);
            sinv[i] = sinf(ang);
        }
        float *qt = (float *)c->q_out + t * q_row;
        memmove(qt, (const float *)r->q_in + (int64_t)t * r->q_stride, (size_t)q_row * sizeof(float));
        memcpy(kt, (const float *)r->k_in + (int64_t)t * r->kv_stride, (size_t)kv_row * sizeof(float));
        for (int h = 0; h < s->n_heads; h++) {
            if (qn)
                head_norm(qt + h * hd, qn, hd, r->eps, r->plus_one);
            rope_head(qt + h * hd, cosv, sinv, half);
        }
        for (int h = 0; h < s->n_kv_heads; h++) {
            if (kn)
                head_norm(kt + h * hd, kn, hd, r->eps, r->plus_one);
            rope_head(kt + h * hd, cosv, sinv, half);
        }
        int32_t slot = m->slot_mapping[t];
        if (slot < 0)
            continue;
        kv_store((char *)c->kv->k + (size_t)(slot * kv_row) * kv_es, kt, kv_row, c->kv_dtype);
        kv_store((char *)c->kv->v + (size_t)(slot * kv_row) * kv_es, (const float *)r->v_in + (int64_t)t * r->kv_stride,
                 kv_row, c->kv_dtype);
    }
    free(kt);
    free(cosv);
    free(sinv);
    free(qn);
    free(kn);
}

void cpu_qk_rope_kv_write(struct backend *be, void *q_out, const struct qkv_rope *r, const struct fwd_meta *m,
                          const struct attn_shape *s, struct kv_layer *kv)
{
    struct rope_ctx c = {q_out, r, m, s, kv, be->kv_dtype};
    if (m->n_tokens > 0)
        threadpool_for(cpu_pool(be), m->n_tokens, 4, rope_chunk, &c);
}
