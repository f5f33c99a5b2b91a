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

/* Every entry point ends with vzeroupper: GCC leaves it out at -O1 (the
 * sanitizer build), and the SSE code after a kernel (libm's exp in the
 * sampler) then ran 5x slower on the dirty upper halves. */
#define END_AVX() _mm256_zeroupper()

/* The kernels are not instrumented by the sanitizers (as the reference's
 * dot, backend/cpu/cpu_matmul.c): their checks of the weight loads were
 * most of a sanitizer build's decode step, which the server tests run by
 * the thousand; the loads stay within the rows and blocks the callers
 * (instrumented) pass. Every helper they inline is left alone too: an
 * instrumented helper inlined into an uninstrumented kernel poisoned its
 * locals' stack and never unpoisoned it (a false stack-use-after-scope in
 * the next frame there, the sampler's). */
#define NO_SAN __attribute__((no_sanitize("address", "undefined")))

#ifndef QUANT_SET
#error "define QUANT_SET (the set's function) and QUANT_SET_NAME before including quant_x86.h"
#endif

static inline NO_SAN __m256i dot_u8s8(__m256i a, __m256i b)
{
#ifdef QUANT_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1));
#endif
}

static inline NO_SAN float rd_f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

static inline NO_SAN float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline NO_SAN int32_t hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

static inline NO_SAN float hmax_ps(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* 32 floats at x times id, rounded to nearest even, as int32 in 4 vectors. */
static inline NO_SAN void round_32(const float *x, float id, __m256i i[4])
{
    const __m256 m = _mm256_set1_ps(id);
    for (int k = 0; k < 4; k++)
        i[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), m));
}

/* The 4 vectors of round_32 as 32 int8 in element order. */
static inline NO_SAN void store_32(int8_t *q, const __m256i i[4])
{
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

static inline NO_SAN __m256 abs_max_8(__m256 m, const float *x)
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
    END_AVX();
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
    END_AVX();
}

/* A 32-block's 16 bytes of nibbles as 32 bytes: element j (low nibbles)
 * first, then j + 16 (high). */
static inline NO_SAN __m256i nibbles_32(const uint8_t *qs)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), low = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low), _mm_and_si128(b, low));
}

/* Bit j of qh as 0x10 in byte j (a Q5 block's fifth bits). */
static inline NO_SAN __m256i fifth_bits_32(const uint8_t *p)
{
    uint32_t qh;
    memcpy(&qh, p, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)qh), _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

/* The tiles (quant.h): up to QUANT_TILE_ROWS weight rows by QUANT_TILE_COLS
 * activation rows, each output with its own 8-lane accumulator and the
 * same instructions whatever the tile's shape, so an output's value does
 * not depend on the rows and columns computed beside it. Short tiles
 * repeat their last row or column and store only theirs. Every family
 * decodes a weight block once per row and uses it for each column. */
#define TR QUANT_TILE_ROWS
#define TC QUANT_TILE_COLS
#define INLINE static inline NO_SAN __attribute__((always_inline))
/* the rows and columns of a tile in registers: every such loop unrolled */
#define UNROLL _Pragma("GCC unroll 8")

INLINE const uint8_t *row_at(const void *w, size_t ws, int rows, int r)
{
    return (const uint8_t *)w + (size_t)(r < rows ? r : rows - 1) * ws;
}

INLINE const void *col_at(const void *x, size_t xs, int cols, int t)
{
    return (const char *)x + (size_t)(t < cols ? t : cols - 1) * xs;
}

INLINE void store_tile(__m256 acc[TR][TC], int C, int rows, int cols, float *out, size_t os)
{
    UNROLL
    for (int t = 0; t < C && t < cols; t++)
        for (int r = 0; r < rows; r++)
            out[(size_t)t * os + r] = hsum_ps(acc[r][t]);
}

/* A 32-block's 32 unsigned quants: nibbles (byte j: element j low, j + 16
 * high), with fifth bits at qh_at (or none). */
INLINE __m256i quants_32(const uint8_t *b, int qs_at, int qh_at)
{
    __m256i q = nibbles_32(b + qs_at);
    return qh_at ? _mm256_or_si256(q, fifth_bits_32(b + qh_at)) : q;
}

/* Q4_0, Q5_0 (off 8, 16): d dx (Σ q x - off Σ x), the offset taken from the
 * integer sum. Q4_1, Q5_1 (off 0): d dx Σ q x + m dx Σ x. Q8_0: |w| by x
 * with w's signs. */
enum fam32 { FAM_OFFSET, FAM_MIN, FAM_Q8 };

INLINE void tile_32(const void *w, size_t ws, int rows, const void *x, size_t xs, int cols, int64_t n, float *out,
                    size_t os, const int C, const enum fam32 fam, const size_t bytes, const int qs_at,
                    const int qh_at, const int off)
{
    __m256 acc[TR][TC];
    const uint8_t *wr[TR];
    const struct q8_32 *xc[TC];
    UNROLL
    for (int r = 0; r < TR; r++) {
        wr[r] = row_at(w, ws, rows, r);
        UNROLL
        for (int t = 0; t < C; t++)
            acc[r][t] = _mm256_setzero_ps();
    }
    UNROLL
    for (int t = 0; t < C; t++)
        xc[t] = col_at(x, xs, cols, t);
    for (int64_t i = 0; i < n / 32; i++) {
        __m256i y[TC], offv[TC];
        __m256 sumv[TC];
        UNROLL
        for (int t = 0; t < C; t++) {
            y[t] = _mm256_loadu_si256((const __m256i *)xc[t][i].q);
            if (fam == FAM_OFFSET)
                offv[t] = _mm256_setr_epi32(off * xc[t][i].sum, 0, 0, 0, 0, 0, 0, 0);
            if (fam == FAM_MIN)
                sumv[t] = _mm256_setr_ps((float)xc[t][i].sum, 0, 0, 0, 0, 0, 0, 0);
        }
        UNROLL
        for (int r = 0; r < TR; r++) {
            const uint8_t *b = wr[r] + (size_t)i * bytes;
            const float d = rd_f16(b);
            const __m256i q = fam == FAM_Q8 ? _mm256_loadu_si256((const __m256i *)(b + 2)) : quants_32(b, qs_at, qh_at);
            const __m256i aq = fam == FAM_Q8 ? _mm256_sign_epi8(q, q) : q;
            UNROLL
            for (int t = 0; t < C; t++) {
                __m256i s = dot_u8s8(aq, fam == FAM_Q8 ? _mm256_sign_epi8(y[t], q) : y[t]);
                if (fam == FAM_OFFSET)
                    s = _mm256_sub_epi32(s, offv[t]);
                acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(d * xc[t][i].d), _mm256_cvtepi32_ps(s), acc[r][t]);
                if (fam == FAM_MIN)
                    acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(rd_f16(b + 2) * xc[t][i].d), sumv[t], acc[r][t]);
            }
        }
    }
    store_tile(acc, C, rows, cols, out, os);
}

/* Σ over 16 groups of 16 of a[g] * sums[g], in 8 int32 lanes (a as 16 int16). */
INLINE __m256i group_sums(__m256i a16, const struct q8_256 *x)
{
    return _mm256_madd_epi16(a16, _mm256_loadu_si256((const __m256i *)x->sums));
}

/* u8 by s8 products summed in pairs (no saturation: the quants are below 64),
 * times a 16-bit scale, added to acc. */
INLINE __m256i scaled_dot(__m256i acc, __m256i q, __m256i y, __m256i scale16)
{
    const __m256i p = _mm256_maddubs_epi16(q, y);
#ifdef QUANT_VNNI
    return _mm256_dpwssd_epi32(acc, p, scale16);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, scale16));
#endif
}

/* kquant_scale_min's scales and mins as bytes, four at a time in 32-bit
 * words: A, B, C the packed bytes 0-3, 4-7, 8-11; sc 0-3 and m 0-3 are
 * A and B's low 6 bits, sc 4-7 and m 4-7 C's nibbles with A and B's top 2
 * bits above them. */
INLINE void scales_k45(const uint8_t *p, uint8_t sc[8], uint8_t m[8])
{
    uint32_t a, b, c, w[4];
    memcpy(&a, p, 4), memcpy(&b, p + 4, 4), memcpy(&c, p + 8, 4);
    w[0] = a & 0x3f3f3f3fu;
    w[1] = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
    w[2] = b & 0x3f3f3f3fu;
    w[3] = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
    memcpy(sc, w, 8), memcpy(m, w + 2, 8);
}

/* Q4_K (qh_at 0) and Q5_K: per super-block d dx Σ sc_s Σ q x - dmin dx Σ m_s Σ x. */
INLINE void tile_k45(const void *w, size_t ws, int rows, const void *x, size_t xs, int cols, int64_t n, float *out,
                     size_t os, const int C, const size_t bytes, const int qs_at, const int qh_at)
{
    const __m256i low = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    __m256 acc[TR][TC];
    const uint8_t *wr[TR];
    const struct q8_256 *xc[TC];
    UNROLL
    for (int r = 0; r < TR; r++) {
        wr[r] = row_at(w, ws, rows, r);
        UNROLL
        for (int t = 0; t < C; t++)
            acc[r][t] = _mm256_setzero_ps();
    }
    UNROLL
    for (int t = 0; t < C; t++)
        xc[t] = col_at(x, xs, cols, t);
    for (int64_t i = 0; i < n / 256; i++)
        UNROLL
        for (int r = 0; r < TR; r++) {
            const uint8_t *b = wr[r] + (size_t)i * bytes;
            uint8_t sc[8], mb[8];
            scales_k45(b + 4, sc, mb);
            const __m128i m8 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mb));
            const __m256i m16 = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
            const __m256i qh = qh_at ? _mm256_loadu_si256((const __m256i *)(b + qh_at)) : _mm256_setzero_si256();
            __m256i isum[TC];
            UNROLL
            for (int t = 0; t < C; t++)
                isum[t] = _mm256_setzero_si256();
            UNROLL
            for (int g = 0; g < 4; g++) {
                const __m256i qs = _mm256_loadu_si256((const __m256i *)(b + qs_at + 32 * g));
                __m256i lo = _mm256_and_si256(qs, low), hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), low);
                if (qh_at) {
                    lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
                    hi = _mm256_or_si256(hi,
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
                }
                const __m256i s0 = _mm256_set1_epi16((short)sc[2 * g]), s1 = _mm256_set1_epi16((short)sc[2 * g + 1]);
                UNROLL
                for (int t = 0; t < C; t++) {
                    const int8_t *q = xc[t][i].q + 64 * g;
                    isum[t] = scaled_dot(isum[t], lo, _mm256_loadu_si256((const __m256i *)q), s0);
                    isum[t] = scaled_dot(isum[t], hi, _mm256_loadu_si256((const __m256i *)(q + 32)), s1);
                }
            }
            const float d = rd_f16(b), dmin = rd_f16(b + 2);
            UNROLL
            for (int t = 0; t < C; t++) {
                acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(d * xc[t][i].d), _mm256_cvtepi32_ps(isum[t]), acc[r][t]);
                acc[r][t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * xc[t][i].d),
                                             _mm256_cvtepi32_ps(group_sums(m16, &xc[t][i])), acc[r][t]);
            }
        }
    store_tile(acc, C, rows, cols, out, os);
}

/* Q6_K: d dx Σ_g scale_g (Σ q x - 32 Σ x), 32 elements (two groups) at a time. */
INLINE void tile_q6_k(const void *w, size_t ws, int rows, const void *x, size_t xs, int cols, int64_t n, float *out,
                      size_t os, const int C)
{
    const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(0x03);
    __m256 acc[TR][TC];
    const uint8_t *wr[TR];
    const struct q8_256 *xc[TC];
    UNROLL
    for (int r = 0; r < TR; r++) {
        wr[r] = row_at(w, ws, rows, r);
        UNROLL
        for (int t = 0; t < C; t++)
            acc[r][t] = _mm256_setzero_ps();
    }
    UNROLL
    for (int t = 0; t < C; t++)
        xc[t] = col_at(x, xs, cols, t);
    for (int64_t i = 0; i < n / 256; i++)
        UNROLL
        for (int r = 0; r < TR; r++) {
            const uint8_t *b = wr[r] + (size_t)i * 210;
            const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 192)));
            __m256i isum[TC];
            UNROLL
            for (int t = 0; t < C; t++) /* the offset first: - 32 Σ_g scale_g Σ x */
                isum[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(group_sums(sc16, &xc[t][i]), 5));
            UNROLL
            for (int h = 0; h < 2; h++) {
                const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(b + 64 * h));
                const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(b + 64 * h + 32));
                const __m256i qh = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h));
                const __m256i lo[4] = {_mm256_and_si256(ql0, low), _mm256_and_si256(ql1, low),
                                       _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low),
                                       _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low)};
                UNROLL
                for (int c = 0; c < 4; c++) {
                    const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), two), 4);
                    const __m256i q = _mm256_or_si256(lo[c], hi);
                    const int g = 8 * h + 2 * c;
                    const int8_t *sc = (const int8_t *)(b + 192);
                    const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
                    UNROLL
                    for (int t = 0; t < C; t++)
                        isum[t] = scaled_dot(isum[t], q,
                                             _mm256_loadu_si256((const __m256i *)(xc[t][i].q + 128 * h + 32 * c)), s);
                }
            }
            const float d = rd_f16(b + 208);
            UNROLL
            for (int t = 0; t < C; t++)
                acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(d * xc[t][i].d), _mm256_cvtepi32_ps(isum[t]), acc[r][t]);
        }
    store_tile(acc, C, rows, cols, out, os);
}

/* Float weights by f32 activations: 8 weights widened at a time, the tail
 * (n % 8) in scalar after the lanes' sum. */
INLINE __m256 widen_8(const void *w, enum dtype t, int64_t i)
{
    if (t == DTYPE_F32)
        return _mm256_loadu_ps((const float *)w + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (t == DTYPE_F16)
        return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

INLINE float widen_1(const void *w, enum dtype t, int64_t i)
{
    float f;
    uint16_t h;
    if (t == DTYPE_F32) {
        memcpy(&f, (const float *)w + i, 4);
        return f;
    }
    memcpy(&h, (const uint16_t *)w + i, 2);
    if (t == DTYPE_F16)
        return _cvtsh_ss(h);
    const uint32_t u = (uint32_t)h << 16;
    memcpy(&f, &u, 4);
    return f;
}

INLINE void tile_float(const void *w, size_t ws, int rows, const void *x, size_t xs, int cols, int64_t n, float *out,
                       size_t os, const int C, const enum dtype type)
{
    __m256 acc[TR][TC];
    const uint8_t *wr[TR];
    const float *xc[TC];
    UNROLL
    for (int r = 0; r < TR; r++) {
        wr[r] = row_at(w, ws, rows, r);
        UNROLL
        for (int t = 0; t < C; t++)
            acc[r][t] = _mm256_setzero_ps();
    }
    UNROLL
    for (int t = 0; t < C; t++)
        xc[t] = col_at(x, xs, cols, t);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        UNROLL
        for (int r = 0; r < TR; r++) {
            const __m256 v = widen_8(wr[r], type, i);
            UNROLL
            for (int t = 0; t < C; t++)
                acc[r][t] = _mm256_fmadd_ps(v, _mm256_loadu_ps(xc[t] + i), acc[r][t]);
        }
    UNROLL
    for (int t = 0; t < C && t < cols; t++)
        for (int r = 0; r < rows; r++) {
            float s = hsum_ps(acc[r][t]);
            for (int64_t j = i; j < n; j++)
                s += widen_1(wr[r], type, j) * xc[t][j];
            out[(size_t)t * os + r] = s;
        }
}

/* The packed tiles (quant_repack.c): w is one group of 8 rows (rows <= 8 of
 * them stored), each row in its own lane of one 8-lane accumulator a column. */
INLINE void store_r8(__m256 acc[TC], int C, int rows, int cols, float *out, size_t os)
{
    for (int t = 0; t < C && t < cols; t++) {
        float v[8];
        _mm256_storeu_ps(v, acc[t]);
        for (int r = 0; r < rows; r++)
            out[(size_t)t * os + r] = v[r];
    }
}

/* How far ahead of its block a packed tile prefetches: a thread's rows are
 * one contiguous stream (1 to 16 KB tried; 8 best or tied, 3ecd138). */
#define PF_DIST 8192

/* acc + in each 32-bit lane the sum of its four u8 x s8 products (a's
 * bytes below 64 for the AVX2 set's maddubs) */
INLINE __m256i add_u8s8(__m256i acc, __m256i a, __m256i b)
{
#ifdef QUANT_VNNI
    return _mm256_dpbusd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, dot_u8s8(a, b));
#endif
}

/* acc + in each 32-bit lane the sum of its two int16 products */
INLINE __m256i add_s16(__m256i acc, __m256i a, __m256i b)
{
#ifdef QUANT_VNNI
    return _mm256_dpwssd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

#ifdef QUANT_VNNI
/* Q8_0 packed: per block and column, 8 dots of a chunk of all 8 rows
 * against the column's chunk broadcast (two sums, for two chains), the
 * +128 taken back (128 Σ x), then d_r dx times that into row r's lane.
 * VNNI only: the quants + 128 reach 255, past maddubs's pairs. */
INLINE void tile_r8(const void *w, int rows, const void *x, size_t xs, int cols, int64_t n, float *out, size_t os,
                    const int C)
{
    __m256 acc[TC];
    const struct q8_32 *xc[TC];
    UNROLL
    for (int t = 0; t < C; t++)
        acc[t] = _mm256_setzero_ps(), xc[t] = col_at(x, xs, cols, t);
    const uint8_t *b = w;
    for (int64_t i = 0; i < n / 32; i++, b += 272) {
        UNROLL
        for (int l = 0; l < 272; l += 64)
            _mm_prefetch((const char *)b + PF_DIST + l, _MM_HINT_T0);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
        __m256i q[8];
        UNROLL
        for (int c = 0; c < 8; c++)
            q[c] = _mm256_loadu_si256((const __m256i *)(b + 16 + 32 * c));
        UNROLL
        for (int t = 0; t < C; t++) {
            const struct q8_32 *a = &xc[t][i];
            int32_t xq[8];
            memcpy(xq, a->q, 32);
            __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
            UNROLL
            for (int c = 0; c < 8; c += 2) {
                s0 = _mm256_dpbusd_epi32(s0, q[c], _mm256_set1_epi32(xq[c]));
                s1 = _mm256_dpbusd_epi32(s1, q[c + 1], _mm256_set1_epi32(xq[c + 1]));
            }
            const __m256i s = _mm256_sub_epi32(_mm256_add_epi32(s0, s1), _mm256_set1_epi32(128 * a->sum));
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a->d)), _mm256_cvtepi32_ps(s), acc[t]);
        }
    }
    store_r8(acc, C, rows, cols, out, os);
}
#endif

/* Q4_K packed: per sub-block and column the 8 chunk dots of all 8 rows
 * (low and high nibbles, two chains) times the rows' scales, exact in
 * int32; the mins' Σ m_s Σ x two sub-blocks a product (int16 pairs); per
 * super-block d dx isum - dmin dx msum into each row's lane. */
INLINE void tile_q4_k_r8(const void *w, int rows, const void *x, size_t xs, int cols, int64_t n, float *out,
                         size_t os, const int C)
{
    const __m256i low = _mm256_set1_epi8(0x0F);
    __m256 acc[TC];
    const struct q8_256 *xc[TC];
    UNROLL
    for (int t = 0; t < C; t++)
        acc[t] = _mm256_setzero_ps(), xc[t] = col_at(x, xs, cols, t);
    const uint8_t *b = w;
    for (int64_t i = 0; i < n / 256; i++, b += 1184) {
        __m256i isum[TC], msum[TC];
        UNROLL
        for (int t = 0; t < C; t++)
            isum[t] = msum[t] = _mm256_setzero_si256();
        UNROLL
        for (int p = 0; p < 4; p++) {
            const __m256i m16 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b + 96 + 16 * p)));
            UNROLL
            for (int t = 0; t < C; t++) {
                const int16_t *g = xc[t][i].sums + 4 * p;
                const uint32_t pair = (uint16_t)(g[0] + g[1]) | (uint32_t)(uint16_t)(g[2] + g[3]) << 16;
                msum[t] = add_s16(msum[t], m16, _mm256_set1_epi32((int)pair));
            }
        }
        for (int s = 0; s < 8; s++) {
            const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(b + 32 + 8 * s)));
            const uint8_t *v = b + 160 + 128 * s;
            _mm_prefetch((const char *)v + PF_DIST, _MM_HINT_T0);
            _mm_prefetch((const char *)v + PF_DIST + 64, _MM_HINT_T0);
            __m256i lo[4], hi[4];
            UNROLL
            for (int j = 0; j < 4; j++) {
                const __m256i q = _mm256_loadu_si256((const __m256i *)(v + 32 * j));
                lo[j] = _mm256_and_si256(q, low), hi[j] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low);
            }
            UNROLL
            for (int t = 0; t < C; t++) {
                int32_t xq[8];
                memcpy(xq, xc[t][i].q + 32 * s, 32);
                __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
                UNROLL
                for (int j = 0; j < 4; j++) {
                    s0 = add_u8s8(s0, lo[j], _mm256_set1_epi32(xq[j]));
                    s1 = add_u8s8(s1, hi[j], _mm256_set1_epi32(xq[j + 4]));
                }
                isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(_mm256_add_epi32(s0, s1), sc));
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + 16)));
        UNROLL
        for (int t = 0; t < C; t++) {
            const __m256 dx = _mm256_set1_ps(xc[t][i].d);
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum[t]), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(msum[t]), acc[t]);
        }
    }
    store_r8(acc, C, rows, cols, out, os);
}

/* Q6_K packed: per group of 16 and column, the 4 chunk dots of all 8 rows
 * (the 6-bit quants from a nibble and the top bits' vector) from - 32 Σ x,
 * times the rows' scales, exact in int32; per super-block d dx isum. */
INLINE void tile_q6_k_r8(const void *w, int rows, const void *x, size_t xs, int cols, int64_t n, float *out,
                         size_t os, const int C)
{
    const __m256i low = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
    __m256 acc[TC];
    const struct q8_256 *xc[TC];
    UNROLL
    for (int t = 0; t < C; t++)
        acc[t] = _mm256_setzero_ps(), xc[t] = col_at(x, xs, cols, t);
    const uint8_t *b = w;
    for (int64_t i = 0; i < n / 256; i++, b += 1680) {
        __m256i isum[TC];
        UNROLL
        for (int t = 0; t < C; t++)
            isum[t] = _mm256_setzero_si256();
        for (int g = 0; g < 16; g++) {
            const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 16 + 8 * g)));
            const uint8_t *v = b + 144 + 96 * g;
            _mm_prefetch((const char *)v + PF_DIST, _MM_HINT_T0);
            _mm_prefetch((const char *)v + PF_DIST + 64, _MM_HINT_T0);
            const __m256i n0 = _mm256_loadu_si256((const __m256i *)v), n1 = _mm256_loadu_si256((const __m256i *)(v + 32));
            const __m256i h = _mm256_loadu_si256((const __m256i *)(v + 64));
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(n0, low), _mm256_and_si256(_mm256_slli_epi16(h, 4), top)),
                _mm256_or_si256(_mm256_and_si256(n1, low), _mm256_and_si256(_mm256_slli_epi16(h, 2), top)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n0, 4), low), _mm256_and_si256(h, top)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n1, 4), low),
                                _mm256_and_si256(_mm256_srli_epi16(h, 2), top)),
            };
            UNROLL
            for (int t = 0; t < C; t++) {
                int32_t xq[4];
                memcpy(xq, xc[t][i].q + 16 * g, 16);
                __m256i s0 = _mm256_set1_epi32(-32 * xc[t][i].sums[g]), s1 = _mm256_setzero_si256();
                s0 = add_u8s8(s0, q[0], _mm256_set1_epi32(xq[0]));
                s1 = add_u8s8(s1, q[1], _mm256_set1_epi32(xq[1]));
                s0 = add_u8s8(s0, q[2], _mm256_set1_epi32(xq[2]));
                s1 = add_u8s8(s1, q[3], _mm256_set1_epi32(xq[3]));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(_mm256_add_epi32(s0, s1), sc));
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
        UNROLL
        for (int t = 0; t < C; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(xc[t][i].d)), _mm256_cvtepi32_ps(isum[t]), acc[t]);
    }
    store_r8(acc, C, rows, cols, out, os);
}

/* One entry per packed type: the tile for cols 1..TC, each C a constant. */
#define R8_FN(name, kernel)                                                                                       \
    NO_SAN static void name(const void *w, size_t ws, int rows, const void *x, size_t xs, int cols, int64_t n,   \
                            float *out, size_t os)                                                                \
    {                                                                                                             \
        (void)ws;                                                                                                 \
        switch (cols) {                                                                                           \
        case 1: kernel(w, rows, x, xs, cols, n, out, os, 1); break;                                               \
        case 2: kernel(w, rows, x, xs, cols, n, out, os, 2); break;                                               \
        case 3: kernel(w, rows, x, xs, cols, n, out, os, 3); break;                                               \
        default: kernel(w, rows, x, xs, cols, n, out, os, 4); break;                                              \
        }                                                                                                         \
        END_AVX();                                                                                                \
    }

#ifdef QUANT_VNNI
R8_FN(tile_q8_0_r8, tile_r8)
#endif
R8_FN(tile_q4_k_r8_any, tile_q4_k_r8)
R8_FN(tile_q6_k_r8_any, tile_q6_k_r8)

/* One entry per type: the tile for cols 1..TC, each C a constant. */
#define TILE_FN(name, call)                                                                                         \
    NO_SAN static void name(const void *w, size_t ws, int rows, const void *x, size_t xs, int cols, int64_t n, float *out, \
                     size_t os)                                                                                     \
    {                                                                                                               \
        switch (cols) {                                                                                             \
        case 1: call(1); break;                                                                                     \
        case 2: call(2); break;                                                                                     \
        case 3: call(3); break;                                                                                     \
        default: call(4); break;                                                                                    \
        }                                                                                                           \
        END_AVX();                                                                                                  \
    }

#define ARGS w, ws, rows, x, xs, cols, n, out, os
#define Q4_0(C) tile_32(ARGS, C, FAM_OFFSET, 18, 2, 0, 8)
#define Q5_0(C) tile_32(ARGS, C, FAM_OFFSET, 22, 6, 2, 16)
#define Q4_1(C) tile_32(ARGS, C, FAM_MIN, 20, 4, 0, 0)
#define Q5_1(C) tile_32(ARGS, C, FAM_MIN, 24, 8, 4, 0)
#define Q8_0(C) tile_32(ARGS, C, FAM_Q8, 34, 2, 0, 0)
#define Q4_K(C) tile_k45(ARGS, C, 144, 16, 0)
#define Q5_K(C) tile_k45(ARGS, C, 176, 48, 16)
#define Q6_K(C) tile_q6_k(ARGS, C)
#define F32(C) tile_float(ARGS, C, DTYPE_F32)
#define F16(C) tile_float(ARGS, C, DTYPE_F16)
#define BF16(C) tile_float(ARGS, C, DTYPE_BF16)
TILE_FN(tile_q4_0, Q4_0)
TILE_FN(tile_q5_0, Q5_0)
TILE_FN(tile_q4_1, Q4_1)
TILE_FN(tile_q5_1, Q5_1)
TILE_FN(tile_q8_0, Q8_0)
TILE_FN(tile_q4_k, Q4_K)
TILE_FN(tile_q5_k, Q5_K)
TILE_FN(tile_q6_k_any, Q6_K)
TILE_FN(tile_f32, F32)
TILE_FN(tile_f16, F16)
TILE_FN(tile_bf16, BF16)

NO_SAN static void axpy_f16(float *y, size_t ys, const float *a, int m, const uint16_t *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
        for (int h = 0; h < m; h++) {
            float *yh = y + (size_t)h * ys + i;
            _mm256_storeu_ps(yh, _mm256_fmadd_ps(_mm256_set1_ps(a[h]), v, _mm256_loadu_ps(yh)));
        }
    }
    for (; i < n; i++)
        for (int h = 0; h < m; h++)
            y[(size_t)h * ys + (size_t)i] += a[h] * _cvtsh_ss(x[i]);
    END_AVX();
}

/* e^x for 8 lanes: 2^n e^r with n = round(x log2 e), r = x - n ln 2 (ln 2
 * in two parts), e^r by its degree-6 Taylor polynomial (|r| <= ln 2 / 2:
 * within 2 ulps); x clamped to where the result is finite and normal, so
 * e^-100 is 0 and e^100 is infinity as expf gives them (within its range). */
static inline NO_SAN __m256 exp_ps(__m256 x)
{
    const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-87.3365478515625f);
    const __m256 big = _mm256_cmp_ps(x, hi, _CMP_GT_OQ), small = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* 2^n in two steps: n reaches 128 at the top of the range */
    const __m256i e = _mm256_cvtps_epi32(n), e1 = _mm256_srai_epi32(e, 1);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e1, _mm256_set1_epi32(127)), 23));
    const __m256 s2 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, e1), _mm256_set1_epi32(127)), 23));
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), big);
    return _mm256_blendv_ps(y, _mm256_setzero_ps(), small);
}

static void silu_mul(float *out, const float *gate, const float *up, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g)));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, d), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) {
        float g[8] = {gate[i]}, u[8] = {up[i]}, o[8];
        silu_mul(o, g, u, 8);
        out[i] = o[0];
    }
    END_AVX();
}

/* tanh y = 1 - 2 / (e^2y + 1): exact at the ends (e^2y infinite or 0). */
static void gelu_tanh_mul(float *out, const float *gate, const float *up, int64_t n)
{
    const __m256 k = _mm256_set1_ps(0.7978845608028654f), c = _mm256_set1_ps(0.044715f), one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(gate + i);
        const __m256 y = _mm256_mul_ps(k, _mm256_fmadd_ps(_mm256_mul_ps(c, x), _mm256_mul_ps(x, x), x));
        const __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f),
                                                          _mm256_add_ps(exp_ps(_mm256_add_ps(y, y)), one)));
        const __m256 g = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(one, t));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(g, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) {
        float g[8] = {gate[i]}, u[8] = {up[i]}, o[8];
        gelu_tanh_mul(o, g, u, 8);
        out[i] = o[0];
    }
    END_AVX();
}

static const struct quant_kernels set = {
    .name = QUANT_SET_NAME,
    .features = QUANT_SET_FEATURES,
    .quantize_32 = quantize_32,
    .quantize_256 = quantize_256,
    .tile = {[DTYPE_Q4_0] = tile_q4_0, [DTYPE_Q4_1] = tile_q4_1, [DTYPE_Q5_0] = tile_q5_0,
             [DTYPE_Q5_1] = tile_q5_1, [DTYPE_Q8_0] = tile_q8_0, [DTYPE_Q4_K] = tile_q4_k,
             [DTYPE_Q5_K] = tile_q5_k, [DTYPE_Q6_K] = tile_q6_k_any, [DTYPE_F32] = tile_f32,
             [DTYPE_F16] = tile_f16,   [DTYPE_BF16] = tile_bf16,
             [DTYPE_Q4_K_R8] = tile_q4_k_r8_any, [DTYPE_Q6_K_R8] = tile_q6_k_r8_any,
#ifdef QUANT_VNNI
             [DTYPE_Q8_0_R8] = tile_q8_0_r8,
#endif
    },
    .axpy_f16 = axpy_f16,
    .silu_mul = silu_mul,
    .gelu_tanh_mul = gelu_tanh_mul,
};

const struct quant_kernels *QUANT_SET(void) { return &set; }
