/* CUDA attention (decode and prefill/extend) against the CPU twin, and its
 * benchmarks. Each case builds a paged cache with a scrambled block table
 * (unused entries -1), fills every slot with random bf16 K/V (the CPU gets the
 * same values as f32), poisons the output with NaN and compares
 * max |gpu - cpu| / max |cpu| <= 2e-2. Names: attention_correct_* are the
 * correctness tests, bench_attention_* the timings (`gpu_tests attention`
 * runs both). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_ops.h"
#include "core/bf16.h"
#include "gpu_test.h"

/* attention_decode.cu / attention_prefill.cu: tuning variants for the benchmarks */
void attention_decode_set_variant(int v);
void attention_prefill_set_variant(int v);

#define ATTN_TOL 2e-2

/* One step's attention inputs on the host. */
struct attn_batch {
    int n_seqs, n_tokens, stride; /* stride: block-table row length */
    int32_t *positions, *seq_of_token, *query_start, *kv_len, *tables, *slots;
};

/* Device copies of a batch's metadata (fixed addresses, as meta_upload's). */
struct attn_meta_dev {
    int32_t *positions, *seq_of_token, *query_start, *kv_len, *tables, *slots;
};

struct attn_case {
    int n_heads, n_kv, hd, bs, window;
    float scale, softcap, q_std;
};

static void batch_free(struct attn_batch *b)
{
    free(b->positions), free(b->seq_of_token), free(b->query_start), free(b->kv_len), free(b->tables);
    free(b->slots);
}

static void shuffle(struct gpu_ctx *ctx, int32_t *p, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_next(&ctx->rng) % (uint64_t)(i + 1));
        int32_t t = p[i];
        p[i] = p[j], p[j] = t;
    }
}

static int blocks_for(int len, int bs) { return (len + bs - 1) / bs; }

/* Sequence s has q_len[s] query rows at positions kv_len[s] - q_len[s] ..
 * kv_len[s] - 1; its blocks are taken in scrambled order from n_blocks. A
 * q_len of 1 with kv_len 0 is a padding row (position 0, slot -1). */
static void batch_build(struct gpu_ctx *ctx, struct attn_batch *b, int n_seqs, const int *q_len,
                        const int *kv_len, int bs, int stride, int n_blocks)
{
    b->n_seqs = n_seqs;
    b->n_tokens = 0;
    for (int s = 0; s < n_seqs; s++)
        b->n_tokens += q_len[s];
    b->stride = stride;
    b->positions = xmalloc((size_t)b->n_tokens * 4 + 4);
    b->seq_of_token = xmalloc((size_t)b->n_tokens * 4 + 4);
    b->slots = xmalloc((size_t)b->n_tokens * 4 + 4);
    b->query_start = xmalloc((size_t)(n_seqs + 1) * 4);
    b->kv_len = xmalloc((size_t)n_seqs * 4 + 4);
    b->tables = xmalloc((size_t)n_seqs * stride * 4 + 4);
    int32_t *perm = xmalloc((size_t)n_blocks * 4 + 4);
    shuffle(ctx, perm, n_blocks);
    int t = 0, used = 0;
    for (int s = 0; s < n_seqs; s++) {
        b->query_start[s] = t;
        b->kv_len[s] = kv_len[s];
        int nb = blocks_for(kv_len[s], bs);
        CHECK(nb <= stride && used + nb <= n_blocks);
        for (int i = 0; i < stride; i++)
            b->tables[(size_t)s * stride + i] = i < nb ? perm[used + i] : -1;
        used += nb;
        for (int i = 0; i < q_len[s]; i++, t++) {
            int pos = kv_len[s] - q_len[s] + i;
            b->positions[t] = pos < 0 ? 0 : pos;
            b->seq_of_token[t] = s;
            b->slots[t] = kv_len[s] ? b->tables[(size_t)s * stride + pos / bs] * bs + pos % bs : -1;
        }
    }
    b->query_start[n_seqs] = t;
    free(perm);
}

static struct fwd_meta meta_host(const struct attn_batch *b)
{
    return (struct fwd_meta){.n_tokens = b->n_tokens,
                             .n_seqs = b->n_seqs,
                             .max_blocks_per_seq = b->stride,
                             .positions = b->positions,
                             .slot_mapping = b->slots,
                             .seq_of_token = b->seq_of_token,
                             .query_start = b->query_start,
                             .kv_len = b->kv_len,
                             .block_tables = b->tables};
}

static struct fwd_meta meta_device(struct gpu_ctx *ctx, const struct attn_batch *b, struct attn_meta_dev *d)
{
    d->positions = gpu_upload(ctx, b->positions, (size_t)b->n_tokens * 4 + 4);
    d->seq_of_token = gpu_upload(ctx, b->seq_of_token, (size_t)b->n_tokens * 4 + 4);
    d->slots = gpu_upload(ctx, b->slots, (size_t)b->n_tokens * 4 + 4);
    d->query_start = gpu_upload(ctx, b->query_start, (size_t)(b->n_seqs + 1) * 4);
    d->kv_len = gpu_upload(ctx, b->kv_len, (size_t)b->n_seqs * 4 + 4);
    d->tables = gpu_upload(ctx, b->tables, (size_t)b->n_seqs * b->stride * 4 + 4);
    return (struct fwd_meta){.n_tokens = b->n_tokens,
                             .n_seqs = b->n_seqs,
                             .max_blocks_per_seq = b->stride,
                             .positions = d->positions,
                             .slot_mapping = d->slots,
                             .seq_of_token = d->seq_of_token,
                             .query_start = d->query_start,
                             .kv_len = d->kv_len,
                             .block_tables = d->tables};
}

/* Overwrites the device metadata in place with b (same counts), on the
 * backend's stream, as a step's upload would. */
static void meta_rewrite(const struct attn_batch *b, const struct attn_meta_dev *d, cudaStream_t st)
{
    CHECK(cudaMemcpyAsync(d->positions, b->positions, (size_t)b->n_tokens * 4, cudaMemcpyHostToDevice, st) ==
          cudaSuccess);
    CHECK(cudaMemcpyAsync(d->seq_of_token, b->seq_of_token, (size_t)b->n_tokens * 4, cudaMemcpyHostToDevice,
                          st) == cudaSuccess);
    CHECK(cudaMemcpyAsync(d->query_start, b->query_start, (size_t)(b->n_seqs + 1) * 4, cudaMemcpyHostToDevice,
                          st) == cudaSuccess);
    CHECK(cudaMemcpyAsync(d->kv_len, b->kv_len, (size_t)b->n_seqs * 4, cudaMemcpyHostToDevice, st) ==
          cudaSuccess);
    CHECK(cudaMemcpyAsync(d->tables, b->tables, (size_t)b->n_seqs * b->stride * 4, cudaMemcpyHostToDevice,
                          st) == cudaSuccess);
    CHECK(cudaStreamSynchronize(st) == cudaSuccess);
}

/* A random cache of n_blocks blocks: f32 for the CPU, bf16 on the device. */
struct attn_cache {
    size_t n;
    float *k, *v;
    struct kv_layer cpu, gpu;
};

static void cache_make(struct gpu_ctx *ctx, struct attn_cache *c, int n_blocks, const struct attn_case *k)
{
    c->n = (size_t)n_blocks * k->bs * k->n_kv * k->hd;
    c->k = gpu_rand_f32(ctx, c->n, 1.0f);
    c->v = gpu_rand_f32(ctx, c->n, 1.0f);
    c->cpu = (struct kv_layer){c->k, c->v};
    c->gpu = (struct kv_layer){gpu_upload_bf16(ctx, c->k, c->n), gpu_upload_bf16(ctx, c->v, c->n)};
}

static void cache_free(struct attn_cache *c) { free(c->k), free(c->v); }

/* CPU reference of b's rows; rows of sequences with kv_len 0 (padding) are
 * left at 0, which is what the CUDA op writes for them. */
static float *reference(struct gpu_ctx *ctx, const struct attn_batch *b, const struct attn_case *k,
                        const struct attn_cache *c, const float *q)
{
    size_t row = (size_t)k->n_heads * k->hd, n = (size_t)b->n_tokens * row;
    float *ref = calloc(n + 1, sizeof(float));
    struct attn_shape s = {k->n_heads, k->n_kv, k->hd, k->bs};
    /* a compacted batch without padding rows for the CPU twin (it CHECKs pos < kv_len) */
    struct attn_batch cb = *b;
    int32_t *map = xmalloc((size_t)b->n_tokens * 4 + 4), *seq_map = xmalloc((size_t)b->n_seqs * 4 + 4);
    cb.positions = xmalloc((size_t)b->n_tokens * 4 + 4);
    cb.seq_of_token = xmalloc((size_t)b->n_tokens * 4 + 4);
    cb.query_start = xmalloc((size_t)(b->n_seqs + 1) * 4);
    cb.kv_len = xmalloc((size_t)b->n_seqs * 4 + 4);
    cb.tables = xmalloc((size_t)b->n_seqs * b->stride * 4 + 4);
    int ns = 0, nt = 0;
    for (int s2 = 0; s2 < b->n_seqs; s2++) {
        seq_map[s2] = -1;
        if (b->kv_len[s2] == 0)
            continue;
        seq_map[s2] = ns;
        cb.query_start[ns] = nt;
        cb.kv_len[ns] = b->kv_len[s2];
        memcpy(cb.tables + (size_t)ns * b->stride, b->tables + (size_t)s2 * b->stride, (size_t)b->stride * 4);
        for (int t = b->query_start[s2]; t < b->query_start[s2 + 1]; t++, nt++) {
            cb.positions[nt] = b->positions[t];
            cb.seq_of_token[nt] = ns;
            map[nt] = t;
        }
        ns++;
    }
    cb.query_start[ns] = nt;
    cb.n_seqs = ns, cb.n_tokens = nt;
    if (nt > 0) {
        float *qc = xmalloc((size_t)nt * row * sizeof(float)),
              *oc = xmalloc((size_t)nt * row * sizeof(float));
        for (int i = 0; i < nt; i++)
            memcpy(qc + i * row, q + map[i] * row, row * sizeof(float));
        struct fwd_meta mc = meta_host(&cb);
        ctx->cpu->ops->attention(ctx->cpu, oc, qc, &mc, &s, &c->cpu, k->window, k->scale, k->softcap);
        for (int i = 0; i < nt; i++)
            memcpy(ref + map[i] * row, oc + i * row, row * sizeof(float));
        free(qc), free(oc);
    }
    cb.slots = NULL;
    batch_free(&cb);
    free(map), free(seq_map);
    return ref;
}

static double compare(struct gpu_ctx *ctx, const void *dev_out, const float *ref, size_t n)
{
    float *got = gpu_download_bf16(ctx, dev_out, n);
    double err = gpu_rel_err(got, ref, n);
    free(got);
    return err;
}

/* Runs one batch through both backends; returns the rel err. */
static double run_case(struct gpu_ctx *ctx, const struct attn_case *k, int n_seqs, const int *q_len,
                       const int *kv_len, int slack)
{
    size_t mark = cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used;
    int need = 0, stride = 1;
    for (int s = 0; s < n_seqs; s++) {
        int nb = blocks_for(kv_len[s], k->bs);
        need += nb;
        stride = nb > stride ? nb : stride;
    }
    stride += slack;
    int n_blocks = need + 3;
    struct attn_batch b;
    batch_build(ctx, &b, n_seqs, q_len, kv_len, k->bs, stride, n_blocks);
    struct attn_cache c;
    cache_make(ctx, &c, n_blocks, k);
    size_t n = (size_t)b.n_tokens * k->n_heads * k->hd;
    float *q = gpu_rand_f32(ctx, n, k->q_std);
    float *ref = reference(ctx, &b, k, &c, q);
    struct attn_meta_dev d;
    struct fwd_meta mg = meta_device(ctx, &b, &d);
    struct attn_shape s = {k->n_heads, k->n_kv, k->hd, k->bs};
    void *out = gpu_poisoned_bf16(ctx, n), *qg = gpu_upload_bf16(ctx, q, n);
    CHECK(cudaDeviceSynchronize() == cudaSuccess); /* pageable uploads ran on the legacy stream */
    ctx->cuda->ops->attention(ctx->cuda, out, qg, &mg, &s, &c.gpu, k->window, k->scale, k->softcap);
    double err = compare(ctx, out, ref, n);
    free(q), free(ref);
    cache_free(&c);
    batch_free(&b);
    cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used = mark;
    return err;
}

static struct attn_case mk_case(int n_heads, int n_kv, int hd, int bs, int window, float softcap)
{
    return (struct attn_case){n_heads, n_kv, hd, bs, window, 1.0f / sqrtf((float)hd), softcap, 1.0f};
}

#define RUN(ctx, k, ns, ql, kl, slack, what, ...)                                                            \
    do {                                                                                                     \
        double err_ = run_case(ctx, k, ns, ql, kl, slack);                                                   \
        if (!(err_ <= ATTN_TOL))                                                                             \
            GPU_FAIL(what ": heads %d/%d hd %d bs %d window %d softcap %g: rel err %.3g", __VA_ARGS__,       \
                     (k)->n_heads, (k)->n_kv, (k)->hd, (k)->bs, (k)->window, (double)(k)->softcap, err_);    \
    } while (0)

static const int kv_lengths[7] = {1, 15, 16, 17, 100, 1000, 5000};
static const int ones[64] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* Batch 1 at every length (few splits to many), batches 3 and 8 mixed. */
GPU_TEST(attention_correct_decode_lengths)
{
    struct attn_case k = mk_case(6, 2, 128, 16, 0, 0.f);
    for (int i = 0; i < 7; i++)
        RUN(ctx, &k, 1, ones, &kv_lengths[i], 2, "batch 1 kv %d", kv_lengths[i]);
    int kl3[3] = {5000, 17, 1}, kl8[8] = {1, 15, 16, 17, 100, 1000, 5000, 333};
    RUN(ctx, &k, 3, ones, kl3, 0, "batch 3 kv %d..", kl3[0]);
    RUN(ctx, &k, 8, ones, kl8, 1, "batch 8 kv %d..", kl8[0]);
    return 0;
}

/* head_dim 64/128/256/24 x GQA 1/3/4 x batch 1/3/8. */
GPU_TEST(attention_correct_decode_gqa_head_dims)
{
    const int hds[4] = {64, 128, 256, 24}, groups[3] = {1, 3, 4}, batches[3] = {1, 3, 8};
    for (int h = 0; h < 4; h++)
        for (int g = 0; g < 3; g++)
            for (int bi = 0; bi < 3; bi++) {
                int kl[8];
                for (int i = 0; i < batches[bi]; i++)
                    kl[i] = kv_lengths[(h * 5 + g * 3 + bi + i * 2 + 4) % 7];
                struct attn_case k = mk_case(2 * groups[g], 2, hds[h], 16, 0, 0.f);
                RUN(ctx, &k, batches[bi], ones, kl, 0, "batch %d kv %d..", batches[bi], kl[0]);
            }
    return 0;
}

/* Windows with edges inside blocks, soft-cap, block sizes 1..64, odd head dims. */
GPU_TEST(attention_correct_decode_window_softcap_blocks)
{
    int kl[8] = {1, 15, 16, 17, 100, 1000, 5000, 530};
    const int windows[4] = {16, 512, 7, 1000};
    for (int w = 0; w < 4; w++) {
        struct attn_case k = mk_case(8, 2, 128, 16, windows[w], 0.f);
        RUN(ctx, &k, 8, ones, kl, 0, "window batch %d", 8);
        RUN(ctx, &k, 1, ones, &kl[6], 0, "window batch %d", 1);
    }
    struct attn_case sc = mk_case(8, 2, 64, 16, 0, 50.f);
    sc.scale = 1.0f; /* scores of +-30: the cap bends them */
    RUN(ctx, &sc, 8, ones, kl, 0, "softcap batch %d", 8);
    sc.softcap = 10.f, sc.window = 100;
    RUN(ctx, &sc, 8, ones, kl, 0, "softcap batch %d", 8);
    const int bss[5] = {1, 2, 4, 32, 64};
    for (int i = 0; i < 5; i++) {
        struct attn_case k = mk_case(4, 1, 64, bss[i], i == 2 ? 50 : 0, 0.f);
        RUN(ctx, &k, 8, ones, kl, 1, "block size batch %d", 8);
    }
    const int odd[4] = {16, 18, 32, 250};
    for (int i = 0; i < 4; i++) {
        struct attn_case k = mk_case(4, 2, odd[i], 16, 0, 0.f);
        RUN(ctx, &k, 8, ones, kl, 0, "odd head dim batch %d", 8);
    }
    return 0;
}

/* Model shapes (Llama, Qwen3, Gemma 3 with its window), groups of 8 and 32
 * (two row groups), batch 64 (one split), and padding rows (kv_len 0). */
GPU_TEST(attention_correct_decode_models_and_padding)
{
    int kl[8] = {1000, 5000, 17, 1, 2000, 100, 64, 65};
    struct attn_case llama = mk_case(24, 8, 128, 16, 0, 0.f), qwen = mk_case(32, 8, 128, 16, 0, 0.f);
    struct attn_case gemma = mk_case(4, 1, 256, 16, 512, 0.f), gemma_g = mk_case(4, 1, 256, 16, 0, 0.f);
    struct attn_case g32 = mk_case(32, 1, 64, 16, 0, 0.f), g8 = mk_case(16, 2, 128, 16, 0, 0.f);
    RUN(ctx, &llama, 8, ones, kl, 0, "%s", "llama");
    RUN(ctx, &qwen, 3, ones, kl, 0, "%s", "qwen3");
    RUN(ctx, &gemma, 8, ones, kl, 0, "%s", "gemma local");
    RUN(ctx, &gemma_g, 1, ones, &kl[1], 0, "%s", "gemma global");
    RUN(ctx, &g32, 8, ones, kl, 0, "%s", "group 32");
    RUN(ctx, &g8, 8, ones, kl, 0, "%s", "group 8");
    int kl64[64];
    for (int i = 0; i < 64; i++)
        kl64[i] = 1 + (int)(rng_next(&ctx->rng) % 1000);
    RUN(ctx, &llama, 64, ones, kl64, 0, "%s", "llama batch 64");
    int pad[6] = {300, 0, 17, 0, 0, 2500};
    RUN(ctx, &llama, 6, ones, pad, 0, "%s", "padding rows");
    return 0;
}

/* The split merge both ways: by the last split's CTA (forced, mode 2) and by
 * the combine kernel, each against the CPU; the in-kernel merge three times
 * over, so a counter not set back to 0 leaves the next launch's rows
 * unwritten (poisoned: NaN). Lengths from one split to many, two row groups,
 * padding rows, head sizes 24 to 256. */
GPU_TEST(attention_decode_merge_in_kernel_and_combine)
{
    struct attn_case llama = mk_case(24, 8, 128, 16, 0, 0.f), gemma = mk_case(4, 1, 256, 16, 512, 0.f);
    struct attn_case g32 = mk_case(32, 1, 64, 16, 0, 0.f), odd = mk_case(6, 2, 24, 16, 0, 0.f);
    int kl8[8] = {1000, 5000, 17, 1, 2000, 100, 64, 65}, pad[6] = {300, 0, 17, 0, 0, 2500};
    for (int mode = 0; mode < 4; mode++) {
        attention_decode_merge_mode(mode == 0 ? 0 : 2);
        for (int i = 0; i < 7; i++)
            RUN(ctx, &llama, 1, ones, &kv_lengths[i], 2, "merge mode %d, llama batch 1 kv %d", mode, kv_lengths[i]);
        RUN(ctx, &llama, 8, ones, kl8, 0, "merge mode %d, llama batch %d", mode, 8);
        RUN(ctx, &llama, 6, ones, pad, 0, "merge mode %d, padding rows, batch %d", mode, 6);
        RUN(ctx, &gemma, 8, ones, kl8, 0, "merge mode %d, gemma batch %d", mode, 8);
        RUN(ctx, &gemma, 1, ones, &kl8[1], 0, "merge mode %d, gemma batch %d", mode, 1);
        RUN(ctx, &g32, 3, ones, kl8, 0, "merge mode %d, two row groups, batch %d", mode, 3);
        RUN(ctx, &odd, 8, ones, kl8, 0, "merge mode %d, head size 24, batch %d", mode, 8);
    }
    attention_decode_merge_mode(-1);
    return 0;
}

/* attention_rope (the decode kernel doing RoPE, the per-head norms and the
 * cache write itself) against the RoPE kernel then the attention, from the
 * same fused q|k|v rows and caches: the output and both caches bit for bit.
 * Returns a message (static) on a difference, NULL when equal. */
static const char *rope_fused_case(struct gpu_ctx *ctx, int n_heads, int n_kv, int hd, int norm, int plus_one,
                                   int window, int n_seqs, const int *kv_len)
{
    size_t mark = cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used;
    const int bs = 16;
    int need = 0, stride = 1;
    for (int i = 0; i < n_seqs; i++) {
        int nb = blocks_for(kv_len[i], bs);
        need += nb;
        stride = nb > stride ? nb : stride;
    }
    struct attn_batch b;
    batch_build(ctx, &b, n_seqs, ones, kv_len, bs, stride, need + 2);
    struct attn_case k = mk_case(n_heads, n_kv, hd, bs, window, 0.f);
    struct attn_cache ca, cb;
    cache_make(ctx, &ca, need + 2, &k);
    cb = ca;
    const size_t cache_bytes = ca.n * 2;
    uint16_t *kb = gpu_to_bf16(ca.k, ca.n), *vb = gpu_to_bf16(ca.v, ca.n);
    cb.gpu.k = gpu_upload(ctx, kb, cache_bytes); /* the same bits as ca's */
    cb.gpu.v = gpu_upload(ctx, vb, cache_bytes);
    free(kb), free(vb);
    const int qd = n_heads * hd, kvd = n_kv * hd, row = qd + 2 * kvd;
    float *qkv = gpu_rand_f32(ctx, (size_t)b.n_tokens * row, 1.0f);
    const char *in = gpu_upload_bf16(ctx, qkv, (size_t)b.n_tokens * row);
    float *wq = gpu_rand_f32(ctx, (size_t)hd, 0.3f), *wk = gpu_rand_f32(ctx, (size_t)hd, 0.3f);
    for (int i = 0; i < hd && !plus_one; i++)
        wq[i] += 1.0f, wk[i] += 1.0f;
    uint16_t *wqb = gpu_to_bf16(wq, (size_t)hd), *wkb = gpu_to_bf16(wk, (size_t)hd);
    struct weight qn = gpu_weight_cuda(ctx, wqb, 1, hd), kn = gpu_weight_cuda(ctx, wkb, 1, hd);
    float *freq = xmalloc((size_t)hd / 2 * sizeof(float));
    for (int i = 0; i < hd / 2; i++)
        freq[i] = powf(10000.f, -2.f * (float)i / (float)hd);
    const float *inv_freq = gpu_upload(ctx, freq, (size_t)hd / 2 * sizeof(float));
    struct attn_meta_dev d;
    struct fwd_meta mg = meta_device(ctx, &b, &d);
    struct attn_shape sh = {n_heads, n_kv, hd, bs};
    const size_t n_out = (size_t)b.n_tokens * qd;
    void *out_a = gpu_poisoned_bf16(ctx, n_out), *out_b = gpu_poisoned_bf16(ctx, n_out);
    void *q_a = gpu_poisoned_bf16(ctx, n_out), *q_b = gpu_poisoned_bf16(ctx, n_out);
    CHECK(cudaDeviceSynchronize() == cudaSuccess); /* pageable uploads ran on the legacy stream */
    const struct qkv_rope r = {.q_in = in,
                               .k_in = in + (size_t)qd * 2,
                               .v_in = in + (size_t)(qd + kvd) * 2,
                               .q_stride = row,
                               .kv_stride = row,
                               .q_norm = norm ? &qn : NULL,
                               .k_norm = norm ? &kn : NULL,
                               .eps = 1e-6f,
                               .plus_one = plus_one,
                               .inv_freq = inv_freq};
    const struct backend_ops *ops = ctx->cuda->ops;
    ops->qk_rope_kv_write(ctx->cuda, q_a, &r, &mg, &sh, &ca.gpu);
    ops->attention(ctx->cuda, out_a, q_a, &mg, &sh, &ca.gpu, window, k.scale, 0.f);
    ops->attention_rope(ctx->cuda, out_b, q_b, &r, &mg, &sh, &cb.gpu, window, k.scale, 0.f);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    const char *why = NULL;
    uint16_t *ha = xmalloc(cache_bytes > n_out * 2 ? cache_bytes : n_out * 2);
    uint16_t *hb = xmalloc(cache_bytes > n_out * 2 ? cache_bytes : n_out * 2);
    gpu_download(ctx, ha, out_a, n_out * 2);
    gpu_download(ctx, hb, out_b, n_out * 2);
    if (memcmp(ha, hb, n_out * 2))
        why = "the attention output differs";
    for (int c = 0; c < 2 && !why; c++) {
        gpu_download(ctx, ha, c ? ca.gpu.v : ca.gpu.k, cache_bytes);
        gpu_download(ctx, hb, c ? cb.gpu.v : cb.gpu.k, cache_bytes);
        if (memcmp(ha, hb, cache_bytes))
            why = c ? "the v cache differs" : "the k cache differs";
    }
    free(ha), free(hb), free(qkv), free(wq), free(wk), free(wqb), free(wkb), free(freq);
    cache_free(&ca);
    batch_free(&b);
    cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used = mark;
    return why;
}

/* Model shapes (Llama; Qwen3 with q/k norms; Gemma 3's (1 + w) norms, window,
 * head size 256; a group of 20: two row groups, head size 64), batches 1, 3
 * and 8 at lengths from one key to several splits, and a padding row. */
GPU_TEST(attention_rope_in_decode_same_bits)
{
    static const struct {
        const char *name;
        int n_heads, n_kv, hd, norm, plus_one, window;
    } shapes[] = {{"llama", 24, 8, 128, 0, 0, 0},
                  {"qwen3", 32, 8, 128, 1, 0, 0},
                  {"gemma local", 4, 1, 256, 1, 1, 512},
                  {"gemma global", 4, 1, 256, 1, 1, 0},
                  {"group 20", 40, 2, 64, 1, 0, 0}};
    static const int lens[3][8] = {{5000}, {1, 17, 1000}, {1, 15, 16, 17, 100, 0, 5000, 333}};
    static const int batches[3] = {1, 3, 8};
    attention_decode_rope_mode(2); /* every batch through the kernel that does RoPE */
    if (!attention_decode_does_rope(128, 8) || !attention_decode_does_rope(256, 8) ||
        !attention_decode_does_rope(64, 8)) {
        attention_decode_rope_mode(-1);
        GPU_FAIL("the decode kernel does not do RoPE at 8 rows with the mode forced on");
    }
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int bi = 0; bi < 3; bi++) {
            const char *why =
                rope_fused_case(ctx, shapes[i].n_heads, shapes[i].n_kv, shapes[i].hd, shapes[i].norm,
                                shapes[i].plus_one, shapes[i].window, batches[bi], lens[bi]);
            if (why) {
                attention_decode_rope_mode(-1);
                GPU_FAIL("%s, batch %d: %s", shapes[i].name, batches[bi], why);
            }
        }
    attention_decode_rope_mode(-1);
    return 0;
}

/* Several sequences of mixed query lengths in one launch, with and without
 * cached prefixes, across head dims, groups, windows, soft-cap, block sizes. */
GPU_TEST(attention_correct_prefill_mixed)
{
    const int ql[8] = {1, 7, 64, 200, 7, 64, 200, 1};
    const int kl[8] = {1, 7, 64, 200, 50, 300, 1000, 33};
    const int hds[4] = {64, 128, 256, 24}, groups[3] = {1, 3, 4};
    for (int h = 0; h < 4; h++)
        for (int g = 0; g < 3; g++) {
            struct attn_case k = mk_case(2 * groups[g], 2, hds[h], 16, 0, 0.f);
            RUN(ctx, &k, 8, ql, kl, 1, "prefill group %d", groups[g]);
        }
    const int windows[3] = {16, 100, 5};
    for (int w = 0; w < 3; w++)
        for (int h = 0; h < 2; h++) {
            struct attn_case k = mk_case(8, 2, h ? 256 : 128, 16, windows[w], 0.f);
            RUN(ctx, &k, 8, ql, kl, 0, "prefill window %d", windows[w]);
        }
    struct attn_case sc = mk_case(4, 2, 128, 16, 0, 50.f);
    sc.scale = 1.0f;
    RUN(ctx, &sc, 8, ql, kl, 0, "%s", "prefill softcap");
    const int bss[3] = {1, 8, 64};
    for (int i = 0; i < 3; i++) {
        struct attn_case k = mk_case(6, 2, 128, bss[i], i == 1 ? 33 : 0, 0.f);
        RUN(ctx, &k, 8, ql, kl, 2, "prefill block size %d", bss[i]);
    }
    const int odd[3] = {16, 18, 40};
    for (int i = 0; i < 3; i++) {
        struct attn_case k = mk_case(4, 1, odd[i], 16, 0, 0.f);
        RUN(ctx, &k, 8, ql, kl, 0, "prefill odd head dim %d", odd[i]);
    }
    /* one long sequence (many tiles, heavy-first order) and a mixed step
     * with decode rows, a padding row and a chunk of a long prompt */
    struct attn_case llama = mk_case(24, 8, 128, 16, 0, 0.f), gemma = mk_case(4, 1, 256, 16, 512, 0.f);
    int q1 = 1500, k1 = 1500;
    RUN(ctx, &llama, 1, &q1, &k1, 0, "%s", "llama 1500");
    RUN(ctx, &gemma, 1, &q1, &k1, 0, "%s", "gemma 1500 window 512");
    int qm[5] = {1, 1, 1, 333, 2}, km[5] = {900, 0, 40, 2333, 2};
    RUN(ctx, &llama, 5, qm, km, 1, "%s", "mixed step");
    return 0;
}

/* Launch arguments are counts only: capture the op into a CUDA graph, rewrite
 * the metadata in place (new lengths, positions, query splits, tables) and
 * replay. */
static int graph_case(struct gpu_ctx *ctx, const struct attn_case *k, int n_seqs, const int *ql_a,
                      const int *kl_a, const int *ql_b, const int *kl_b, const char *what)
{
    size_t mark = cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used;
    int stride = 0, n_blocks = 0;
    for (int s = 0; s < n_seqs; s++) {
        int na = blocks_for(kl_a[s], k->bs), nb = blocks_for(kl_b[s], k->bs);
        stride = na > stride ? na : stride;
        stride = nb > stride ? nb : stride;
        n_blocks += na > nb ? na : nb;
    }
    struct attn_batch a, b;
    batch_build(ctx, &a, n_seqs, ql_a, kl_a, k->bs, stride, n_blocks);
    batch_build(ctx, &b, n_seqs, ql_b, kl_b, k->bs, stride, n_blocks);
    CHECK(a.n_tokens == b.n_tokens);
    struct attn_cache c;
    cache_make(ctx, &c, n_blocks, k);
    size_t n = (size_t)a.n_tokens * k->n_heads * k->hd;
    float *q = gpu_rand_f32(ctx, n, k->q_std);
    void *qg = gpu_upload_bf16(ctx, q, n), *out = gpu_poisoned_bf16(ctx, n);
    struct attn_meta_dev d;
    struct fwd_meta mg = meta_device(ctx, &a, &d);
    struct attn_shape s = {k->n_heads, k->n_kv, k->hd, k->bs};
    cudaStream_t st = cuda_stream(ctx->cuda);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    /* eager once first: the op's first call allocates its scratch */
    ctx->cuda->ops->attention(ctx->cuda, out, qg, &mg, &s, &c.gpu, k->window, k->scale, k->softcap);
    CHECK(cudaStreamSynchronize(st) == cudaSuccess);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    ctx->cuda->ops->attention(ctx->cuda, out, qg, &mg, &s, &c.gpu, k->window, k->scale, k->softcap);
    CHECK(cudaStreamEndCapture(st, &graph) == cudaSuccess);
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    double err[2];
    for (int pass = 0; pass < 2; pass++) {
        const struct attn_batch *x = pass ? &a : &b; /* b first: differs from the captured step */
        meta_rewrite(x, &d, st);
        CHECK(cudaMemsetAsync(out, 0xff, n * 2, st) == cudaSuccess); /* NaN */
        CHECK(cudaGraphLaunch(exec, st) == cudaSuccess);
        float *ref = reference(ctx, x, k, &c, q);
        err[pass] = compare(ctx, out, ref, n);
        free(ref);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    free(q);
    cache_free(&c);
    batch_free(&a);
    batch_free(&b);
    cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used = mark;
    if (!(err[0] <= ATTN_TOL && err[1] <= ATTN_TOL))
        GPU_FAIL("%s: replay rel err %.3g (new lengths), %.3g (captured lengths)", what, err[0], err[1]);
    return 0;
}

GPU_TEST(attention_correct_graph_replay)
{
    struct attn_case llama = mk_case(24, 8, 128, 16, 0, 0.f), gemma = mk_case(4, 1, 256, 16, 512, 0.f);
    int kd_a[4] = {100, 4000, 1, 17}, kd_b[4] = {3000, 5, 700, 0};
    if (graph_case(ctx, &llama, 4, ones, kd_a, ones, kd_b, "decode llama") ||
        graph_case(ctx, &gemma, 4, ones, kd_a, ones, kd_b, "decode gemma"))
        return 1;
    int qa[3] = {10, 54, 1}, ka[3] = {10, 300, 77}, qb[3] = {40, 1, 24}, kb[3] = {500, 2000, 24};
    return graph_case(ctx, &llama, 3, qa, ka, qb, kb, "prefill llama") ||
           graph_case(ctx, &gemma, 3, qa, ka, qb, kb, "prefill gemma");
}

/* ---- benchmarks ---- */

struct bench_arg {
    struct gpu_ctx *ctx;
    void *out, *q;
    struct fwd_meta m;
    struct attn_shape s;
    struct kv_layer *layers;
    int n_layers, window;
    float scale;
};

static void bench_run(void *p)
{
    struct bench_arg *b = p;
    for (int i = 0; i < b->n_layers; i++)
        b->ctx->cuda->ops->attention(b->ctx->cuda, b->out, b->q, &b->m, &b->s, &b->layers[i], b->window,
                                     b->scale, 0.f);
}

struct graph_arg {
    cudaGraphExec_t exec;
    cudaStream_t st;
};

static void graph_launch(void *p)
{
    struct graph_arg *g = p;
    CHECK(cudaGraphLaunch(g->exec, g->st) == cudaSuccess);
}

struct copy_arg {
    void *dst;
    const void *src;
    size_t n;
    cudaStream_t st;
};

static void copy_run(void *p)
{
    struct copy_arg *c = p;
    CHECK(cudaMemcpyAsync(c->dst, c->src, c->n, cudaMemcpyDeviceToDevice, c->st) == cudaSuccess);
}

/* Fills n bf16 values on the device with repeats of a random 32 MiB pattern. */
static void fill_random(struct gpu_ctx *ctx, void *dst, size_t n, const void *pattern, size_t pattern_n)
{
    for (size_t at = 0; at < n; at += pattern_n) {
        size_t c = n - at < pattern_n ? n - at : pattern_n;
        CHECK(cudaMemcpy((char *)dst + at * 2, pattern, c * 2, cudaMemcpyDeviceToDevice) == cudaSuccess);
    }
    (void)ctx;
}

static int uniq_layers(size_t layer_bytes, size_t region)
{
    size_t want = ((size_t)512 << 20) / layer_bytes + 1; /* > 512 MiB per sweep: well past the 50 MB L2 */
    size_t fit = region / layer_bytes;
    want = want < fit ? want : fit;
    return want < 1 ? 1 : (int)(want > 64 ? 64 : want);
}

/* Times the op as a captured graph of n_layers calls (how the engine runs a
 * decode step: no host launch cost), in ms per call. */
static double time_graph(struct gpu_ctx *ctx, struct bench_arg *arg, int reps)
{
    cudaStream_t st = cuda_stream(ctx->cuda);
    bench_run(arg); /* eager first (scratch, attributes) */
    CHECK(cudaStreamSynchronize(st) == cudaSuccess);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    bench_run(arg);
    CHECK(cudaStreamEndCapture(st, &graph) == cudaSuccess);
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    struct graph_arg ga = {exec, st};
    double ms = gpu_time_ms(ctx, graph_launch, &ga, reps) / arg->n_layers;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return ms;
}

GPU_TEST(bench_attention_decode)
{
    const size_t region = (size_t)4700 << 20;
    struct err e;
    CHECK(ctx->cuda->ops->reserve(ctx->cuda, MEM_REGION_KV, region, &e) == 0);
    char *kv_base = ctx->cuda->ops->alloc(ctx->cuda, MEM_REGION_KV, region, &e);
    CHECK(kv_base);
    size_t pn = (size_t)16 << 20;
    float *pat = gpu_rand_f32(ctx, pn, 1.0f);
    void *pat_dev = gpu_upload_bf16(ctx, pat, pn);
    free(pat);
    fill_random(ctx, kv_base, region / 2, pat_dev, pn);
    /* this card's copy bandwidth (bytes read + written), the ceiling */
    struct copy_arg cp = {kv_base + ((size_t)2 << 30), kv_base, (size_t)1 << 30, cuda_stream(ctx->cuda)};
    double copy_gbs = 2.0 * cp.n / (gpu_time_ms(ctx, copy_run, &cp, 10) * 1e-3) / 1e9;
    printf("  device-to-device copy: %.0f GB/s (read + write)\n", copy_gbs);
    fill_random(ctx, kv_base + ((size_t)2 << 30), (size_t)1 << 29, pat_dev, pn);
    struct {
        const char *name;
        int n_heads, n_kv, hd;
    } shapes[2] = {{"llama-3.2-3b", 24, 8, 128}, {"gemma-3-1b", 4, 1, 256}};
    const int batches[2] = {1, 32}, ctxs[3] = {1024, 8192, 32768}, bs = 16;
    const char *variants[3] = {"0", "1", "2"};
    printf("  %-13s %5s %6s %3s %6s %9s %9s %7s %7s %9s\n", "shape", "batch", "ctx", "var", "layers",
           "us/layer", "GB/s", "of3.02", "of copy", "eager us");
    for (int si = 0; si < 2; si++)
        for (int bi = 0; bi < 2; bi++)
            for (int ci = 0; ci < 3; ci++) {
                size_t mark = cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used;
                int B = batches[bi], L = ctxs[ci], H = shapes[si].n_heads, KV = shapes[si].n_kv,
                    D = shapes[si].hd;
                int nb = L / bs, n_blocks = B * nb;
                size_t half = (size_t)n_blocks * bs * KV * D * 2, layer_bytes = 2 * half;
                int n_layers = uniq_layers(layer_bytes, region);
                struct kv_layer layers[64];
                for (int i = 0; i < n_layers; i++)
                    layers[i] =
                        (struct kv_layer){kv_base + i * layer_bytes, kv_base + i * layer_bytes + half};
                int *kl = xmalloc((size_t)B * sizeof(int));
                for (int i = 0; i < B; i++)
                    kl[i] = L;
                struct attn_batch b;
                batch_build(ctx, &b, B, ones, kl, bs, nb, n_blocks);
                struct attn_meta_dev d;
                size_t qn = (size_t)B * H * D;
                float *q = gpu_rand_f32(ctx, qn, 1.0f);
                struct bench_arg arg = {ctx,
                                        gpu_poisoned_bf16(ctx, qn),
                                        gpu_upload_bf16(ctx, q, qn),
                                        meta_device(ctx, &b, &d),
                                        {H, KV, D, bs},
                                        layers,
                                        n_layers,
                                        0,
                                        1.0f / sqrtf((float)D)};
                CHECK(cudaDeviceSynchronize() == cudaSuccess);
                for (int v = 0; v < 3; v++) {
                    attention_decode_set_variant(atoi(variants[v]));
                    double ms = time_graph(ctx, &arg, 20);
                    double eager = v ? 0 : gpu_time_ms(ctx, bench_run, &arg, 10) / n_layers;
                    attention_decode_set_variant(0);
                    double gbs = (double)layer_bytes / (ms * 1e-3) / 1e9;
                    printf("  %-13s %5d %6d %3d %6d %9.2f %9.0f %6.0f%% %6.0f%% %9.2f\n", shapes[si].name, B,
                           L, v, n_layers, ms * 1e3, gbs, 100.0 * gbs / 3020.0, 100.0 * gbs / copy_gbs,
                           eager * 1e3);
                    fflush(stdout);
                    float *got = gpu_download_bf16(ctx, arg.out, qn);
                    for (size_t i = 0; i < qn; i++)
                        if (isnan(got[i]))
                            GPU_FAIL("NaN in the output of %s batch %d ctx %d", shapes[si].name, B, L);
                    free(got);
                }
                free(q), free(kl);
                batch_free(&b);
                cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used = mark;
            }
    return 0;
}

static void bench_prefill_one(struct gpu_ctx *ctx, const char *name, int H, int KV, int D, int S, int window,
                              const char *variant)
{
    size_t mark = cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used;
    const int bs = 16, nb = (S + bs - 1) / bs;
    struct attn_case k = mk_case(H, KV, D, bs, window, 0.f);
    struct attn_batch b;
    batch_build(ctx, &b, 1, &S, &S, bs, nb, nb);
    size_t cn = (size_t)nb * bs * KV * D, qn = (size_t)S * H * D;
    float *x = gpu_rand_f32(ctx, (cn > qn ? cn : qn) + 8, 1.0f);
    struct kv_layer layer = {gpu_upload_bf16(ctx, x, cn), gpu_upload_bf16(ctx, x + 7, cn)};
    struct attn_meta_dev d;
    struct bench_arg arg = {ctx,
                            gpu_poisoned_bf16(ctx, qn),
                            gpu_upload_bf16(ctx, x, qn),
                            meta_device(ctx, &b, &d),
                            {H, KV, D, bs},
                            &layer,
                            1,
                            window,
                            k.scale};
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    attention_prefill_set_variant(variant ? atoi(variant) : 0);
    double ms = gpu_time_ms(ctx, bench_run, &arg, 10);
    attention_prefill_set_variant(0);
    double pairs = 0; /* (query, key) pairs visible */
    for (int p = 0; p < S; p++)
        pairs += window > 0 && p + 1 > window ? window : p + 1;
    double flop = 4.0 * D * H * pairs;
    printf("  %-13s %6d %6d %7s %9.3f %8.1f\n", name, S, window, variant ? variant : "0", ms,
           flop / (ms * 1e-3) / 1e12);
    fflush(stdout);
    free(x);
    batch_free(&b);
    cuda_impl(ctx->cuda)->slabs[MEM_REGION_WORKSPACE].used = mark;
}

GPU_TEST(bench_attention_prefill)
{
    printf("  %-13s %6s %6s %7s %9s %8s\n", "shape", "tokens", "window", "variant", "ms", "TFLOP/s");
    const char *vs[4] = {"0", "1", "2", "3"};
    for (int i = 0; i < 4; i++) {
        bench_prefill_one(ctx, "llama-3.2-3b", 24, 8, 128, 2048, 0, vs[i]);
        bench_prefill_one(ctx, "llama-3.2-3b", 24, 8, 128, 8192, 0, vs[i]);
    }
    for (int i = 0; i < 3; i++) {
        bench_prefill_one(ctx, "gemma-3-1b", 4, 1, 256, 2048, 0, vs[i]);
        bench_prefill_one(ctx, "gemma-3-1b", 4, 1, 256, 8192, 0, vs[i]);
        bench_prefill_one(ctx, "gemma-3-1b", 4, 1, 256, 8192, 512, vs[i]);
    }
    bench_prefill_one(ctx, "qwen3-4b", 32, 8, 128, 2048, 0, NULL);
    bench_prefill_one(ctx, "qwen3-4b", 32, 8, 128, 8192, 0, NULL);
    return 0;
}
