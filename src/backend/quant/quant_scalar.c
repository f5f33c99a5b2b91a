/* The scalar kernel set (quant.h): the twin every SIMD set is tested
 * against, and what runs on a CPU without AVX2. Weight blocks are read byte
 * by byte (a mapping's tensor data need not be aligned for a block's
 * fields); the layouts are io/gguf_quant.c's. */
#include <math.h>
#include <string.h>

#include "backend/quant/quant.h"
#include "core/bf16.h"
#include "core/kquant.h"

static float rd_f16(const uint8_t *p) { return f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int8_t quant_one(float v, float id) { return (int8_t)lrintf(v * id); }

static void quantize_32(const float *x, int64_t n, struct q8_32 *out)
{
    for (int64_t b = 0; b < n / QUANT_BLOCK_32; b++, x += QUANT_BLOCK_32) {
        float amax = 0;
        for (int i = 0; i < QUANT_BLOCK_32; i++)
            amax = fmaxf(amax, fabsf(x[i]));
        const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < QUANT_BLOCK_32; i++)
            sum += out[b].q[i] = quant_one(x[i], id);
        out[b].d = d;
        out[b].sum = sum;
    }
}

static void quantize_256(const float *x, int64_t n, struct q8_256 *out)
{
    for (int64_t b = 0; b < n / QUANT_BLOCK_256; b++, x += QUANT_BLOCK_256) {
        float amax = 0;
        for (int i = 0; i < QUANT_BLOCK_256; i++)
            amax = fmaxf(amax, fabsf(x[i]));
        const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        for (int g = 0; g < QUANT_BLOCK_256 / 16; g++) {
            int sum = 0;
            for (int i = 16 * g; i < 16 * g + 16; i++)
                sum += out[b].q[i] = quant_one(x[i], id);
            out[b].sums[g] = (int16_t)sum;
        }
        out[b].d = d;
    }
}

/* Σ nibble * q over a 32-block whose byte j holds element j (low nibble)
 * and j + 16 (high), the fifth bits (qh, or 0) above them. */
static int32_t dot_nibbles(const uint8_t *qs, uint32_t qh, const int8_t *q)
{
    int32_t s = 0;
    for (int j = 0; j < 16; j++) {
        s += ((qs[j] & 0x0F) | (int)((qh >> j) & 1) << 4) * q[j];
        s += ((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) * q[j + 16];
    }
    return s;
}

/* Q4_0 and Q5_0 (fifth bits at qh_at, or none): d dx (Σ q x - off Σ x). */
static float dot_offset_32(const uint8_t *b, int64_t nb, size_t bytes, int qs_at, int qh_at, int off,
                           const struct q8_32 *a)
{
    float acc = 0;
    for (int64_t i = 0; i < nb; i++, b += bytes)
        acc += rd_f16(b) * a[i].d *
               (float)(dot_nibbles(b + qs_at, qh_at ? rd_u32(b + qh_at) : 0, a[i].q) - off * a[i].sum);
    return acc;
}

/* Q4_1 and Q5_1: d dx Σ q x + m dx Σ x. */
static float dot_min_32(const uint8_t *b, int64_t nb, size_t bytes, int qs_at, int qh_at, const struct q8_32 *a)
{
    float acc = 0;
    for (int64_t i = 0; i < nb; i++, b += bytes)
        acc += rd_f16(b) * a[i].d * (float)dot_nibbles(b + qs_at, qh_at ? rd_u32(b + qh_at) : 0, a[i].q) +
               rd_f16(b + 2) * a[i].d * (float)a[i].sum;
    return acc;
}

static float dot_q4_0(const void *w, const void *x, int64_t n) { return dot_offset_32(w, n / 32, 18, 2, 0, 8, x); }
static float dot_q5_0(const void *w, const void *x, int64_t n) { return dot_offset_32(w, n / 32, 22, 6, 2, 16, x); }
static float dot_q4_1(const void *w, const void *x, int64_t n) { return dot_min_32(w, n / 32, 20, 4, 0, x); }
static float dot_q5_1(const void *w, const void *x, int64_t n) { return dot_min_32(w, n / 32, 24, 8, 4, x); }

static float dot_q8_0(const void *w, const void *x, int64_t n)
{
    const uint8_t *b = w;
    const struct q8_32 *a = x;
    float acc = 0;
    for (int64_t i = 0; i < n / 32; i++, b += 34) {
        int32_t s = 0;
        for (int j = 0; j < 32; j++)
            s += (int8_t)b[2 + j] * a[i].q[j];
        acc += rd_f16(b) * a[i].d * (float)s;
    }
    return acc;
}

/* Q4_K (qh NULL) and Q5_K: per super-block d * Σ sc_i (Σ q x) - dmin * Σ m_i (Σ x). */
static float dot_k45(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, const struct q8_256 *a)
{
    int sc[8], m[8];
    kquant_scale_min(b + 4, sc, m);
    int32_t isum = 0, msum = 0;
    for (int i = 0; i < 8; i++) {
        const uint8_t *q = qs + 32 * (i / 2);
        const int shift = 4 * (i % 2);
        int32_t s = 0;
        for (int l = 0; l < 32; l++)
            s += (((q[l] >> shift) & 0x0F) | (qh ? ((qh[l] >> i) & 1) << 4 : 0)) * a->q[32 * i + l];
        isum += sc[i] * s;
        msum += m[i] * (a->sums[2 * i] + a->sums[2 * i + 1]);
    }
    return rd_f16(b) * a->d * (float)isum - rd_f16(b + 2) * a->d * (float)msum;
}

static float dot_q4_k(const void *w, const void *x, int64_t n)
{
    const uint8_t *b = w;
    const struct q8_256 *a = x;
    float acc = 0;
    for (int64_t i = 0; i < n / 256; i++, b += 144)
        acc += dot_k45(b, NULL, b + 16, &a[i]);
    return acc;
}

static float dot_q5_k(const void *w, const void *x, int64_t n)
{
    const uint8_t *b = w;
    const struct q8_256 *a = x;
    float acc = 0;
    for (int64_t i = 0; i < n / 256; i++, b += 176)
        acc += dot_k45(b, b + 16, b + 48, &a[i]);
    return acc;
}

/* Q6_K: d * Σ_g scale_g (Σ q x - 32 Σ x) over the 16 groups of 16. */
static float dot_q6_k(const void *w, const void *x, int64_t n)
{
    const uint8_t *b = w;
    const struct q8_256 *a = x;
    float acc = 0;
    for (int64_t i = 0; i < n / 256; i++, b += 210) {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *scales = (const int8_t *)(b + 192);
        int32_t group[16] = {0};
        for (int half = 0; half < 2; half++)
            for (int r = 0; r < 128; r++) {
                const int e = 128 * half + r;
                const int lo = (ql[64 * half + r % 64] >> (4 * (r / 64))) & 0x0F;
                const int hi = (qh[32 * half + r % 32] >> (2 * (r / 32))) & 0x03;
                group[e / 16] += (lo | hi << 4) * a[i].q[e];
            }
        int32_t isum = 0;
        for (int g = 0; g < 16; g++)
            isum += scales[g] * (group[g] - 32 * a[i].sums[g]);
        acc += rd_f16(b + 208) * a[i].d * (float)isum;
    }
    return acc;
}

/* Float weights by f32 activations: 8 partial sums, as the reference
 * backend's dot (any n). */
static float widen(const void *w, int t, int64_t i)
{
    uint16_t h;
    if (t == DTYPE_F32) {
        float f;
        memcpy(&f, (const char *)w + 4 * i, 4);
        return f;
    }
    memcpy(&h, (const char *)w + 2 * i, 2);
    return t == DTYPE_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

static float dot_float(const void *w, int t, const float *x, int64_t n)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += widen(w, t, i + j) * x[i + j];
    float s = 0;
    for (; i < n; i++)
        s += widen(w, t, i) * x[i];
    return s + ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static float dot_f32(const void *w, const void *x, int64_t n) { return dot_float(w, DTYPE_F32, x, n); }
static float dot_f16(const void *w, const void *x, int64_t n) { return dot_float(w, DTYPE_F16, x, n); }
static float dot_bf16(const void *w, const void *x, int64_t n) { return dot_float(w, DTYPE_BF16, x, n); }

/* Tiles of the dots above, one output at a time. */
#define SCALAR_TILE(name, dot)                                                                                     \
    static void name(const void *w, size_t ws, int rows, const void *x, size_t xs, int cols, int64_t n, float *out, \
                     size_t os)                                                                                    \
    {                                                                                                              \
        for (int t = 0; t < cols; t++)                                                                             \
            for (int r = 0; r < rows; r++)                                                                         \
                out[(size_t)t * os + r] = dot((const char *)w + (size_t)r * ws, (const char *)x + (size_t)t * xs, n); \
    }
SCALAR_TILE(tile_q4_0, dot_q4_0)
SCALAR_TILE(tile_q4_1, dot_q4_1)
SCALAR_TILE(tile_q5_0, dot_q5_0)
SCALAR_TILE(tile_q5_1, dot_q5_1)
SCALAR_TILE(tile_q8_0, dot_q8_0)
SCALAR_TILE(tile_q4_k, dot_q4_k)
SCALAR_TILE(tile_q5_k, dot_q5_k)
SCALAR_TILE(tile_q6_k, dot_q6_k)
SCALAR_TILE(tile_f32, dot_f32)
SCALAR_TILE(tile_f16, dot_f16)
SCALAR_TILE(tile_bf16, dot_bf16)

static void axpy_f16(float *y, size_t ys, const float *a, int m, const uint16_t *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = f16_to_f32(x[i]);
        for (int h = 0; h < m; h++)
            y[(size_t)h * ys + (size_t)i] += a[h] * v;
    }
}

static void silu_mul(float *out, const float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

static void gelu_tanh_mul(float *out, const float *gate, const float *up, int64_t n)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++) {
        const float x = gate[i];
        out[i] = 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x))) * up[i];
    }
}

static const struct quant_kernels scalar = {
    .name = "scalar",
    .features = "none (portable C)",
    .quantize_32 = quantize_32,
    .quantize_256 = quantize_256,
    .tile = {[DTYPE_Q4_0] = tile_q4_0, [DTYPE_Q4_1] = tile_q4_1, [DTYPE_Q5_0] = tile_q5_0,
             [DTYPE_Q5_1] = tile_q5_1, [DTYPE_Q8_0] = tile_q8_0, [DTYPE_Q4_K] = tile_q4_k,
             [DTYPE_Q5_K] = tile_q5_k, [DTYPE_Q6_K] = tile_q6_k, [DTYPE_F32] = tile_f32,
             [DTYPE_F16] = tile_f16,   [DTYPE_BF16] = tile_bf16},
    .axpy_f16 = axpy_f16,
    .silu_mul = silu_mul,
    .gelu_tanh_mul = gelu_tanh_mul,
};

const struct quant_kernels *quant_kernels_scalar(void) { return &scalar; }
