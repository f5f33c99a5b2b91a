/* The x86 kernel sets' one source (quant.h), included by quant_avx2.c and
 * quant_avx512.c, each built for its instruction set: they differ in
 * dot_u8s8, the sum of four u8 x s8 products into each of 8 int32 lanes
 * (AVX2: maddubs then madd; AVX-512 VNNI: one vpdpbusd). Every integer sum
 * is the scalar set's, exactly (no product pair passes maddubs's int16
 * saturation: |w| <= 128 and |x| <= 127, or w <= 63); the blocks' f32 sums
 * run in 8 lanes, summed at the end. */
#include <immintrin.h>
#include <string.h>

#include "backend/quant/quant_sets.h"
#include "core/kquant.h"

#ifndef QUANT_SET
#error "define QUANT_SET (the set's function) and QUANT_SET_NAME before including quant_x86.h"
#endif

static inline __m256i dot_u8s8(__m256i a, __m256i b)
{
#ifdef QUANT_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1));
#endif
}

static inline float rd_f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int32_t hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

static inline float hmax_ps(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* 32 floats at x times id, rounded to nearest even, as int32 in 4 vectors. */
static inline void round_32(const float *x, float id, __m256i i[4])
{
    const __m256 m = _mm256_set1_ps(id);
    for (int k = 0; k < 4; k++)
        i[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), m));
}

/* The 4 vectors of round_32 as 32 int8 in element order. */
static inline void store_32(int8_t *q, const __m256i i[4])
{
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

static inline __m256 abs_max_8(__m256 m, const float *x)
{
    return _mm256_max_ps(m, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(x)));
}

static void quantize_32(const float *x, int64_t n, struct q8_32 *out)
{
    for (int64_t b = 0; b < n / QUANT_BLOCK_32; b++, x += QUANT_BLOCK_32) {
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++)
            m = abs_max_8(m, x + 8 * k);
        const float d = hmax_ps(m) / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        __m256i i[4];
        round_32(x, id, i);
        store_32(out[b].q, i);
        out[b].d = d;
        out[b].sum = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3])));
    }
}

static void quantize_256(const float *x, int64_t n, struct q8_256 *out)
{
    for (int64_t b = 0; b < n / QUANT_BLOCK_256; b++, x += QUANT_BLOCK_256) {
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < 32; k++)
            m = abs_max_8(m, x + 8 * k);
        const float d = hmax_ps(m) / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        for (int c = 0; c < 8; c++) {
            __m256i i[4];
            round_32(x + 32 * c, id, i);
            store_32(out[b].q + 32 * c, i);
            out[b].sums[2 * c] = (int16_t)hsum_epi32(_mm256_add_epi32(i[0], i[1]));
            out[b].sums[2 * c + 1] = (int16_t)hsum_epi32(_mm256_add_epi32(i[2], i[3]));
        }
        out[b].d = d;
    }
}

/* A 32-block's 16 bytes of nibbles as 32 bytes: element j (low nibbles)
 * first, then j + 16 (high). */
static inline __m256i nibbles_32(const uint8_t *qs)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), low = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low));
}

/* Bit j of qh as 0x10 in byte j (a Q5 block's fifth bits). */
static inline __m256i fifth_bits_32(const uint8_t *p)
{
    uint32_t qh;
    memcpy(&qh, p, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)qh), _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

static inline __m256i act_32(const struct q8_32 *a) { return _mm256_loadu_si256((const __m256i *)a->q); }

/* Q4_0 and Q5_0 (fifth bits at qh, or none): d dx (Σ q x - off Σ x). */
static float dot_offset_32(const uint8_t *b, int64_t nb, size_t bytes, int qs_at, int qh_at, int off,
                           const struct q8_32 *a)
{
    __m256 acc = _mm256_setzero_ps();
    float offset = 0;
    for (int64_t i = 0; i < nb; i++, b += bytes) {
        __m256i q = nibbles_32(b + qs_at);
        if (qh_at)
            q = _mm256_or_si256(q, fifth_bits_32(b + qh_at));
        const float dd = rd_f16(b) * a[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(dot_u8s8(q, act_32(&a[i]))), acc);
        offset += dd * (float)a[i].sum;
    }
    return hsum_ps(acc) - (float)off * offset;
}

/* Q4_1 and Q5_1: d dx Σ q x + m dx Σ x. */
static float dot_min_32(const uint8_t *b, int64_t nb, size_t bytes, int qs_at, int qh_at, const struct q8_32 *a)
{
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    for (int64_t i = 0; i < nb; i++, b += bytes) {
        __m256i q = nibbles_32(b + qs_at);
        if (qh_at)
            q = _mm256_or_si256(q, fifth_bits_32(b + qh_at));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(rd_f16(b) * a[i].d), _mm256_cvtepi32_ps(dot_u8s8(q, act_32(&a[i]))), acc);
        mins += rd_f16(b + 2) * a[i].d * (float)a[i].sum;
    }
    return hsum_ps(acc) + mins;
}

static float dot_q4_0(const void *w, const void *x, int64_t n) { return dot_offset_32(w, n / 32, 18, 2, 0, 8, x); }
static float dot_q5_0(const void *w, const void *x, int64_t n) { return dot_offset_32(w, n / 32, 22, 6, 2, 16, x); }
static float dot_q4_1(const void *w, const void *x, int64_t n) { return dot_min_32(w, n / 32, 20, 4, 0, x); }
static float dot_q5_1(const void *w, const void *x, int64_t n) { return dot_min_32(w, n / 32, 24, 8, 4, x); }

/* Q8_0: signed by signed, as |w| by x with w's signs. */
static float dot_q8_0(const void *w, const void *x, int64_t n)
{
    const uint8_t *b = w;
    const struct q8_32 *a = x;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++, b += 34) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(b + 2)), y = act_32(&a[i]);
        const __m256i s = dot_u8s8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(y, q));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(rd_f16(b) * a[i].d), _mm256_cvtepi32_ps(s), acc);
    }
    return hsum_ps(acc);
}

/* Q4_K (qh_at 0) and Q5_K: d dx Σ sc_i Σ q x - dmin dx Σ m_i Σ x. */
static float dot_k45(const uint8_t *b, int64_t nb, size_t bytes, int qs_at, int qh_at, const struct q8_256 *a)
{
    const __m256i low = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    for (int64_t i = 0; i < nb; i++, b += bytes) {
        int sc[8], m[8];
        kquant_scale_min(b + 4, sc, m);
        const __m256i qh = qh_at ? _mm256_loadu_si256((const __m256i *)(b + qh_at)) : _mm256_setzero_si256();
        __m256i isum = _mm256_setzero_si256();
        for (int g = 0; g < 4; g++) {
            const __m256i qs = _mm256_loadu_si256((const __m256i *)(b + qs_at + 32 * g));
            __m256i lo = _mm256_and_si256(qs, low), hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), low);
            if (qh_at) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
            }
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)(a[i].q + 64 * g));
            const __m256i x1 = _mm256_loadu_si256((const __m256i *)(a[i].q + 64 * g + 32));
            isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(dot_u8s8(lo, x0), _mm256_set1_epi32(sc[2 * g])));
            isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(dot_u8s8(hi, x1), _mm256_set1_epi32(sc[2 * g + 1])));
        }
        int32_t msum = 0;
        for (int s = 0; s < 8; s++)
            msum += m[s] * (a[i].sums[2 * s] + a[i].sums[2 * s + 1]);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(rd_f16(b) * a[i].d), _mm256_cvtepi32_ps(isum), acc);
        mins += rd_f16(b + 2) * a[i].d * (float)msum;
    }
    return hsum_ps(acc) - mins;
}

static float dot_q4_k(const void *w, const void *x, int64_t n) { return dot_k45(w, n / 256, 144, 16, 0, x); }
static float dot_q5_k(const void *w, const void *x, int64_t n) { return dot_k45(w, n / 256, 176, 48, 16, x); }

/* Q6_K: d dx Σ_g scale_g (Σ q x - 32 Σ x), 32 elements (two groups) at a time. */
static float dot_q6_k(const void *w, const void *x, int64_t n)
{
    const uint8_t *b = w;
    const struct q8_256 *a = x;
    const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(0x03);
    __m256 acc = _mm256_setzero_ps();
    float offset = 0;
    for (int64_t i = 0; i < n / 256; i++, b += 210) {
        const int8_t *scales = (const int8_t *)(b + 192);
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(b + 64 * h));
            const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(b + 64 * h + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h));
            const __m256i lo[4] = {_mm256_and_si256(ql0, low), _mm256_and_si256(ql1, low),
                                   _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low),
                                   _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low)};
            for (int c = 0; c < 4; c++) {
                const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), two), 4);
                const __m256i q = _mm256_or_si256(lo[c], hi);
                const __m256i y = _mm256_loadu_si256((const __m256i *)(a[i].q + 128 * h + 32 * c));
                const int g = 8 * h + 2 * c;
                const __m256i s = _mm256_setr_epi32(scales[g], scales[g], scales[g], scales[g], scales[g + 1],
                                                    scales[g + 1], scales[g + 1], scales[g + 1]);
                isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(dot_u8s8(q, y), s));
            }
        }
        int32_t off = 0;
        for (int g = 0; g < 16; g++)
            off += scales[g] * a[i].sums[g];
        const float dd = rd_f16(b + 208) * a[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(isum), acc);
        offset += dd * (float)off;
    }
    return hsum_ps(acc) - 32.0f * offset;
}

static const struct quant_kernels set = {
    .name = QUANT_SET_NAME,
    .quantize_32 = quantize_32,
    .quantize_256 = quantize_256,
    .dot = {[DTYPE_Q4_0] = dot_q4_0, [DTYPE_Q4_1] = dot_q4_1, [DTYPE_Q5_0] = dot_q5_0, [DTYPE_Q5_1] = dot_q5_1,
            [DTYPE_Q8_0] = dot_q8_0, [DTYPE_Q4_K] = dot_q4_k, [DTYPE_Q5_K] = dot_q5_k, [DTYPE_Q6_K] = dot_q6_k},
};

const struct quant_kernels *QUANT_SET(void) { return &set; }
