/* The sampler of a split model (tensor parallelism) draws from each row's
 * span statistics as its ranks leave them (launch_logit_stats over each
 * rank's columns, then launch_sample with have_stats): every result must be
 * bit for bit what the sampler gives when it finds the statistics itself
 * over the gathered row (shards = ranks), for plain greedy rows and for
 * every other kind (temperature, top-k/p, bias, top log-probs), and within
 * float rounding of one rank's sampler (shards = 1: other spans, another
 * order of the sums); the token of a greedy row the same. The two
 * gathered-row samplers draw a plainly tempered row with the statistics
 * (draws), the ranks' with sample_kernel: the same token. 2, 4 and 8
 * shards of Llama's and Gemma's vocabularies, 1, 32 (the most drawn with the
 * statistics) and 64 rows, and of 2^20 logits (one row), where the shards
 * take fewer spans each. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/sampling.h"
#include "gpu_test.h"

static struct sample_row_dev row_of(int r)
{
    struct sample_row_dev p = {.top_p = 1.f, .repetition = 1.f, .seed = 7 + (uint64_t)r, .step = (uint64_t)r};
    switch (r % 5) {
    case 1:
        p.temperature = 0.8f;
        break;
    case 2:
        p.temperature = 1.f, p.top_k = 40, p.top_p = 0.9f;
        break;
    case 3:
        p.top_logprobs = 5;
        break;
    default:
        break; /* plain greedy */
    }
    return p;
}

static int same_result(const struct sample_result *a, const struct sample_result *b)
{
    return a->token == b->token && !memcmp(&a->logprob, &b->logprob, 4) &&
           !memcmp(a->top_ids, b->top_ids, sizeof a->top_ids) &&
           !memcmp(a->top_logprobs, b->top_logprobs, sizeof a->top_logprobs);
}

/* The results of a draw over logits[rows, vocab]: have_stats (each shard's
 * statistics made first, as the ranks do; sample_kernel draws every row), or
 * the sampler's own (with draws: a plainly tempered row drawn with them). */
static int draw(const float *logits, float *z, struct sample_stats *stats, struct sample_draw *draws, int per_rank,
                int shards, int rows, int vocab, const struct sample_row_dev *dev_rows, struct sample_result *dev_out,
                struct sample_result *out)
{
    const int cols = vocab / shards, splits = SAMPLE_STATS_SHARD_SPLITS(cols, shards);
    CHECK(cudaMemset(stats, 0xff, (size_t)rows * SAMPLE_STATS_MAX_SPLITS * sizeof *stats) == cudaSuccess);
    for (int r = 0; per_rank && r < shards; r++) /* rank r over its own columns, into its spans */
        if (launch_logit_stats(logits + (size_t)r * cols, (size_t)vocab, rows, cols, 1, shards, r * cols,
                               stats + r * splits, 0) != cudaSuccess)
            return -1;
    if (launch_sample(logits, z, stats, per_rank, shards, draws, rows, vocab, dev_rows, NULL, NULL, NULL, NULL, NULL, dev_out, 0) !=
            cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
        return -1;
    return cudaMemcpy(out, dev_out, (size_t)rows * sizeof *out, cudaMemcpyDeviceToHost) == cudaSuccess ? 0
                                                                                                       : -1;
}

GPU_TEST(sample_from_rank_statistics)
{
    /* 2^20 logits over 8 shards: more spans than the statistics hold, so fewer a shard */
    static const int vocabs[] = {128256, 262144, 1 << 20}, shard_counts[] = {2, 4, 8}, row_counts[] = {1, 32, 64};
    const int max_rows = 64, max_v = 262144;
    float *h = gpu_rand_f32(ctx, (size_t)max_rows * max_v, 3.f), *logits, *z;
    for (size_t i = 0; i + 1 < (size_t)max_rows * max_v; i += 4099)
        h[i] = h[i + 1]; /* ties, some across a shard's edge */
    struct sample_stats *stats;
    struct sample_draw *draws;
    struct sample_row_dev rows_h[64], *rows_d;
    struct sample_result *out_d, *a = malloc(64 * sizeof *a), *b = malloc(64 * sizeof *b),
                                 *one = malloc(64 * sizeof *one);
    for (int r = 0; r < max_rows; r++)
        rows_h[r] = row_of(r);
    CHECK(cudaMalloc((void **)&logits, (size_t)max_rows * max_v * 4) == cudaSuccess &&
          cudaMalloc((void **)&z, (size_t)max_rows * max_v * 4) == cudaSuccess &&
          cudaMalloc((void **)&stats, (size_t)max_rows * SAMPLE_STATS_MAX_SPLITS * sizeof *stats) ==
              cudaSuccess &&
          cudaMalloc((void **)&draws, (size_t)max_rows * SAMPLE_STATS_MAX_SPLITS * sizeof *draws) ==
              cudaSuccess &&
          cudaMalloc((void **)&rows_d, sizeof rows_h) == cudaSuccess &&
          cudaMalloc((void **)&out_d, 64 * sizeof *out_d) == cudaSuccess);
    CHECK(cudaMemcpy(logits, h, (size_t)max_rows * max_v * 4, cudaMemcpyHostToDevice) == cudaSuccess &&
          cudaMemcpy(rows_d, rows_h, sizeof rows_h, cudaMemcpyHostToDevice) == cudaSuccess);
    int failed = 0, cases = 0;
    for (size_t v = 0; v < 3 && !failed; v++)
        for (size_t k = 0; k < 3 && !failed; k++)
            for (size_t n = 0; n < 3 && !failed; n++) {
                const int V = vocabs[v], N = shard_counts[k], R = row_counts[n];
                if ((size_t)R * V > (size_t)max_rows * max_v)
                    continue; /* the buffers hold 64 rows of 2^18 */
                /* the logits' rows are max_v apart in h: pack them to V */
                for (int r = 1; r < R; r++)
                    CHECK(cudaMemcpy(logits + (size_t)r * V, h + (size_t)r * max_v, (size_t)V * 4,
                                     cudaMemcpyHostToDevice) == cudaSuccess);
                if (draw(logits, z, stats, NULL, 1, N, R, V, rows_d, out_d, a) ||
                    draw(logits, z, stats, draws, 0, N, R, V, rows_d, out_d, b) ||
                    draw(logits, z, stats, draws, 0, 1, R, V, rows_d, out_d, one))
                    GPU_FAIL("vocabulary %d, %d shards, %d rows: a launch failed", V, N, R);
                for (int r = 0; r < R && !failed; r++) {
                    if (!same_result(&a[r], &b[r]))
                        GPU_FAIL("vocabulary %d, %d shards, row %d of %d (kind %d): from the ranks' "
                                 "statistics token "
                                 "%d logprob %.9g, from the gathered row token %d logprob %.9g",
                                 V, N, r, R, r % 5, a[r].token, a[r].logprob, b[r].token, b[r].logprob);
                    if (a[r].token != one[r].token || fabsf(a[r].logprob - one[r].logprob) > 1e-5f)
                        GPU_FAIL(
                            "vocabulary %d, %d shards, row %d of %d (kind %d): token %d logprob %.9g, one "
                            "rank's sampler token %d logprob %.9g",
                            V, N, r, R, r % 5, a[r].token, a[r].logprob, one[r].token, one[r].logprob);
                }
                cases++;
            }
    if (!failed)
        snprintf(ctx->msg, sizeof ctx->msg,
                 "%d cases (3 vocabularies x 2, 4, 8 shards x 1, 64 rows, 5 kinds of row): bit-equal to the "
                 "gathered row's statistics, within 1e-5 of one rank's",
                 cases);
    cudaFree(logits), cudaFree(z), cudaFree(stats), cudaFree(draws), cudaFree(rows_d), cudaFree(out_d);
    free(h), free(a), free(b), free(one);
    return failed;
}
