/* q/k per-head RMSNorm (Qwen3, Gemma 3), rotary embedding in transformers'
 * rotate-half layout (pairs i and i + head_dim/2), and the write of k and v
 * into the paged cache at each token's slot. Inputs may be strided rows of a
 * fused q|k|v projection. */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"

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

void cpu_qk_rope_kv_write(struct backend *be, void *q_out, const struct qkv_rope *r, const struct fwd_meta *m,
                          const struct attn_shape *s, struct kv_layer *kv)
{
    (void)be;
    const void *q_in = r->q_in, *k_in = r->k_in, *v_in = r->v_in;
    const int q_stride = r->q_stride, kv_stride = r->kv_stride, plus_one = r->plus_one;
    const struct weight *q_norm = r->q_norm, *k_norm = r->k_norm;
    const float eps = r->eps, *inv_freq = r->inv_freq;
    const int hd = s->head_dim, half = hd / 2;
    const int64_t q_row = (int64_t)s->n_heads * hd, kv_row = (int64_t)s->n_kv_heads * hd;
    float *qn = NULL, *kn = NULL;
    if (q_norm) {
        qn = xmalloc((size_t)hd * sizeof(float));
        kn = xmalloc((size_t)hd * sizeof(float));
        cpu_to_f32(qn, q_norm->data, q_norm->dtype, 0, hd);
        cpu_to_f32(kn, k_norm->data, k_norm->dtype, 0, hd);
    }
    float *cosv = xmalloc((size_t)half * sizeof(float)), *sinv = xmalloc((size_t)half * sizeof(float));
    float *kt = xmalloc((size_t)kv_row * sizeof(float));
    for (int t = 0; t < m->n_tokens; t++) {
        float pos = (float)m->positions[t];
        for (int i = 0; i < half; i++) {
            float ang = pos * inv_freq[i]; /* f32 product, as transformers computes it */
            cosv[i] = cosf(ang);
            sinv[i] = sinf(ang);
        }
        float *qt = (float *)q_out + t * q_row;
        memmove(qt, (const float *)q_in + (int64_t)t * q_stride, (size_t)q_row * sizeof(float));
        memcpy(kt, (const float *)k_in + (int64_t)t * kv_stride, (size_t)kv_row * sizeof(float));
        for (int h = 0; h < s->n_heads; h++) {
            if (qn)
                head_norm(qt + h * hd, qn, hd, eps, plus_one);
            rope_head(qt + h * hd, cosv, sinv, half);
        }
        for (int h = 0; h < s->n_kv_heads; h++) {
            if (kn)
                head_norm(kt + h * hd, kn, hd, eps, plus_one);
            rope_head(kt + h * hd, cosv, sinv, half);
        }
        int32_t slot = m->slot_mapping[t];
        if (slot < 0)
            continue;
        memcpy((float *)kv->k + (int64_t)slot * kv_row, kt, (size_t)kv_row * sizeof(float));
        memcpy((float *)kv->v + (int64_t)slot * kv_row, (const float *)v_in + (int64_t)t * kv_stride,
               (size_t)kv_row * sizeof(float));
    }
    free(kt);
    free(cosv);
    free(sinv);
    free(qn);
    free(kn);
}
