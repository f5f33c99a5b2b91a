/* The fast CPU backend's attention (f16 cache, one pass, online softmax)
 * against the reference's (f32 cache, two passes) on the same values: the
 * cache's keys and values are f16 numbers, held as f16 by the one and as
 * their f32 values by the other, so what differs is the order of the f32
 * sums and the softmax's rescaling: within 2e-6 of the largest |v|.
 * Shapes: GQA groups of 1 to 8 heads, head dims 16 to 256, sequences of 1
 * to 300 keys over shuffled blocks of 8 and 16 (chunks of 64 crossed),
 * several sequences and tokens a step (a prefill chunk beside decode rows),
 * sliding windows, the tanh soft-cap, and a padding row. Also f32_to_f16
 * against every f16 value and the halfway cases. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "core/bf16.h"
#include "core/rng.h"

struct shape_case {
    int n_heads, n_kv_heads, head_dim, block_size, window;
    float softcap;
};

static float unit(struct rng *r) { return (float)(rng_uniform(r) * 2 - 1); }

static void check_case(const struct shape_case *sc, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed, 0, 0);
    struct err e = {{0}};
    struct backend *fast = backend_create(BACKEND_KIND_CPU, 2, &e), *ref = backend_create(BACKEND_KIND_CPU_REFERENCE, 2, &e);
    cr_assert(fast && ref, "%s", e.msg);
    cr_assert_eq(fast->kv_dtype, DTYPE_F16);
    const struct attn_shape s = {sc->n_heads, sc->n_kv_heads, sc->head_dim, sc->block_size};
    /* sequences: a decode row at 300 keys, a prefill chunk of 5 tokens at 70..74, a decode row at 1, a padding row */
    enum { S = 4 };
    const int kv_len[S] = {300, 75, 1, 0}, first[S] = {299, 70, 0, 0}, rows[S] = {1, 5, 1, 1};
    const int max_blocks = (300 + sc->block_size - 1) / sc->block_size;
    const int n_blocks = S * max_blocks;
    const int64_t kv_row = (int64_t)s.n_kv_heads * s.head_dim;
    uint16_t *k16 = calloc((size_t)(n_blocks * sc->block_size * kv_row), 2), *v16 = calloc((size_t)(n_blocks * sc->block_size * kv_row), 2);
    float *k32 = calloc((size_t)(n_blocks * sc->block_size * kv_row), 4), *v32 = calloc((size_t)(n_blocks * sc->block_size * kv_row), 4);
    for (int64_t i = 0; i < n_blocks * sc->block_size * kv_row; i++) {
        k16[i] = f32_to_f16(unit(&r) * 2), v16[i] = f32_to_f16(unit(&r));
        k32[i] = f16_to_f32(k16[i]), v32[i] = f16_to_f32(v16[i]);
    }
    /* each sequence's blocks: a shuffle of all of them, disjoint per sequence */
    int32_t *perm = malloc((size_t)n_blocks * sizeof *perm), *tables = malloc((size_t)n_blocks * sizeof *tables);
    for (int i = 0; i < n_blocks; i++)
        perm[i] = i;
    for (int i = n_blocks - 1; i > 0; i--) {
        const int j = (int)(rng_next(&r) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    memcpy(tables, perm, (size_t)n_blocks * sizeof *tables);
    int T = 0;
    for (int i = 0; i < S; i++)
        T += rows[i];
    int32_t positions[16], seq_of[16], qs[S + 1] = {0}, kvl[S];
    for (int i = 0, t = 0; i < S; i++) {
        for (int j = 0; j < rows[i]; j++, t++)
            positions[t] = first[i] + j, seq_of[t] = i;
        qs[i + 1] = qs[i] + rows[i];
        kvl[i] = kv_len[i];
    }
    const struct fwd_meta m = {.n_tokens = T, .n_seqs = S, .max_blocks_per_seq = max_blocks, .positions = positions,
                               .seq_of_token = seq_of, .query_start = qs, .kv_len = kvl, .block_tables = tables};
    const int64_t q_row = (int64_t)s.n_heads * s.head_dim;
    float *q = malloc((size_t)(T * q_row) * 4), *out_f = malloc((size_t)(T * q_row) * 4), *out_r = malloc((size_t)(T * q_row) * 4);
    for (int64_t i = 0; i < T * q_row; i++)
        q[i] = unit(&r);
    const struct kv_layer kv_f = {k16, v16}, kv_r = {k32, v32};
    const float scale = 1.0f / sqrtf((float)s.head_dim);
    fast->ops->attention(fast, out_f, q, &m, &s, &kv_f, sc->window, scale, sc->softcap);
    ref->ops->attention(ref, out_r, q, &m, &s, &kv_r, sc->window, scale, sc->softcap);
    for (int64_t i = 0; i < T * q_row; i++)
        cr_assert_leq(fabsf(out_f[i] - out_r[i]), 2e-6f, "heads %d/%d dim %d block %d window %d softcap %g: out[%lld] %.9g vs %.9g",
                      s.n_heads, s.n_kv_heads, s.head_dim, s.block_size, sc->window, sc->softcap, (long long)i, out_f[i],
                      out_r[i]);
    free(k16), free(v16), free(k32), free(v32), free(perm), free(tables), free(q), free(out_f), free(out_r);
    backend_free(fast);
    backend_free(ref);
}

Test(fast_attention, equals_the_reference_on_f16_values)
{
    static const struct shape_case cases[] = {
        {4, 1, 256, 16, 0, 0},   /* Gemma 3 270M */
        {4, 1, 256, 16, 128, 0}, /* its sliding layers (window shorter than a sequence) */
        {8, 8, 16, 8, 0, 0},     /* no GQA */
        {16, 8, 64, 16, 0, 0},   /* Qwen3-0.6B-like group of 2 */
        {32, 4, 32, 8, 0, 50.0f}, /* a group of 8 (two calls of 4 heads), soft-capped */
        {6, 2, 24, 8, 7, 0},     /* 3 heads a group, a window of 7 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i], 100 + i);
}

Test(fast_attention, f32_to_f16_rounds_to_nearest_even)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* NaN: stays NaN (below) */
        cr_assert_eq(f32_to_f16(f16_to_f32((uint16_t)h)), h, "f16 %04x does not round-trip", h);
        if ((h & 0x7fff) >= 0x7bff)
            continue; /* the largest finite and infinity: no next value */
        /* halfway to the next f16 of the same sign: to the even one */
        const float a = f16_to_f32((uint16_t)h), b = f16_to_f32((uint16_t)(h + 1)), mid = (a + b) / 2;
        if (mid == a || mid == b)
            continue;
        cr_assert_eq(f32_to_f16(mid), (h & 1) ? h + 1 : h, "halfway above f16 %04x", h);
    }
    cr_assert_eq(f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(f32_to_f16(1e-8f), 0);
    cr_assert_eq(f32_to_f16(-3e-8f), 0x8001);
    cr_assert_eq(f32_to_f16(NAN) & 0x7e00, 0x7e00);
}
