/* The logits' gather over CUDA IPC (backend/cuda/logits_gather.h) over every
 * visible GPU of this machine, one process (peer access stands in for IPC,
 * as in test_allreduce.c): rank 0's output must hold every rank's shard side
 * by side, bit for bit (a peer's word equal to AR_EMPTY arrives as -0.0),
 * where the call's word asks for the columns, and be left alone where not;
 * every peer's records (any bits, AR_EMPTY among them) must arrive bit for
 * bit beside rank 0's own, which stay as they were; and the landing must be
 * empty again after each call; a decode row of Llama's and Gemma's shard
 * widths, 64 rows, an odd row count, calls back to back, a peer that pushes
 * late (rank 0 polls). Skipped on fewer than 2 GPUs. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/allreduce.h"
#include "backend/cuda/logits_gather.h"
#include "gpu_test.h"

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* Host shards of every rank, [rows, cols] each, with words that look empty. */
static float **make_shards(struct gpu_ctx *ctx, int n, size_t max)
{
    float **h = calloc((size_t)n, sizeof *h);
    const uint32_t empty = AR_EMPTY;
    for (int d = 0; d < n; d++) {
        h[d] = gpu_rand_f32(ctx, max + 8, 4.f);
        for (size_t i = 0; i < max + 8; i++)
            if (i % 211 == (size_t)d)
                memcpy(&h[d][i], &empty, 4);
    }
    return h;
}

enum { RECS = 7, REC_WORDS = 4 }; /* records a row a rank; 32-bit words a record */

/* Host records of every rank, [64 rows, stride records] each: random words,
 * some AR_EMPTY, some all ones. */
static uint32_t **make_records(int n, int stride)
{
    uint32_t **h = calloc((size_t)n, sizeof *h);
    const size_t words = (size_t)64 * stride * REC_WORDS;
    for (int d = 0; d < n; d++) {
        h[d] = malloc(words * 4);
        for (size_t i = 0; i < words; i++)
            h[d][i] = i % 13 == 5 ? AR_EMPTY : i % 17 == 3 ? 0xffffffffu : (uint32_t)rand() * 2654435761u;
    }
    return h;
}

/* The first wrong word of out (rank 0's view: the columns where want, else
 * untouched 0xff bytes), of rank 0's records and of the landing, or 0. */
static int check_call(struct gpu_ctx *ctx, int n, float **shard, uint32_t **recs, int stride, int rep, int want,
                      int rows, int cols, const float *out, const uint32_t *got_recs, const uint32_t *landing,
                      size_t landing_words)
{
    for (int row = 0; row < rows; row++)
        for (int r = 0; r < n; r++)
            for (int j = 0; j < cols; j++) {
                uint32_t wanted = bits(shard[r][(size_t)rep + (size_t)row * cols + j]);
                if (r > 0 && wanted == AR_EMPTY)
                    wanted = 0x80000000u;
                if (!want)
                    wanted = 0xffffffffu;
                const uint32_t got = bits(out[((size_t)row * n + r) * cols + j]);
                if (got != wanted)
                    GPU_FAIL("%d GPUs, %d x %d (call %d, columns %s): row %d, rank %d's column %d is 0x%08x, want "
                             "0x%08x",
                             n, rows, cols, rep, want ? "wanted" : "not wanted", row, r, j, got, wanted);
            }
    for (int row = 0; row < rows; row++)
        for (int k = 0; k < stride * REC_WORDS; k++) {
            const size_t at = ((size_t)row * stride) * REC_WORDS + (size_t)k;
            const int from = k / (RECS * REC_WORDS); /* whose records sit there on rank 0 */
            const uint32_t wanted = from >= 1 && from < n ? recs[from][at] : recs[0][at];
            if (got_recs[at] != wanted)
                GPU_FAIL("%d GPUs, %d x %d (call %d): row %d, record word %d on rank 0 is 0x%08x, want 0x%08x "
                         "(rank %d's)",
                         n, rows, cols, rep, row, k, got_recs[at], wanted, from < n ? from : 0);
        }
    for (size_t i = 0; i < landing_words; i++)
        if (landing[i] != AR_EMPTY)
            GPU_FAIL("%d GPUs, %d x %d (call %d): landing word %zu is 0x%08x after the call, not empty", n,
                     rows, cols, rep, i, landing[i]);
    return 0;
}

/* Calls in pairs launched back to back (the second pair with a late peer):
 * a peer's second push must wait until rank 0 has placed the first. */
GPU_TEST(logits_gather_places_every_shard)
{
    static const int shapes[][2] = {{1, 64128}, {1, 65536}, {64, 64128}, {7, 1028}, {64, 32064}};
    const size_t max = 64 * 64128;
    int n = 0;
    if (gpu_peers_enable(AR_MAX_RANKS, &n, ctx->msg, sizeof ctx->msg))
        return 0;
    const int stride = n * RECS + 3;
    const size_t rec_bytes = (size_t)64 * stride * REC_WORDS * 4;
    float **shard = make_shards(ctx, n, max), *in[2][AR_MAX_RANKS], *out[2];
    uint32_t **recs = make_records(n, stride), *rec[2][AR_MAX_RANKS];
    int32_t *want[2][AR_MAX_RANKS];
    struct gather_sync *sync[AR_MAX_RANKS];
    cudaStream_t s[AR_MAX_RANKS];
    for (int d = 0; d < n; d++) {
        CHECK(cudaSetDevice(d) == cudaSuccess);
        for (int k = 0; k < 2; k++)
            CHECK(cudaMalloc((void **)&in[k][d], (max + 8) * 4) == cudaSuccess &&
                  cudaMalloc((void **)&rec[k][d], rec_bytes) == cudaSuccess &&
                  cudaMalloc((void **)&want[k][d], 4) == cudaSuccess);
        CHECK(cudaMalloc((void **)&sync[d], sizeof(struct gather_sync)) == cudaSuccess &&
              cudaMemset(sync[d], 0, sizeof(struct gather_sync)) == cudaSuccess);
        CHECK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking) == cudaSuccess);
    }
    CHECK(cudaSetDevice(0) == cudaSuccess);
    float *landing = NULL;
    for (int k = 0; k < 2; k++)
        CHECK(cudaMalloc((void **)&out[k], (size_t)n * max * 4) == cudaSuccess);
    CHECK(cudaMalloc((void **)&landing, GATHER_LANDING_BYTES) == cudaSuccess);
    CHECK(ar_fill_empty(landing, GATHER_LANDING_BYTES, 0) == cudaSuccess &&
          cudaDeviceSynchronize() == cudaSuccess);
    struct gather_group g[AR_MAX_RANKS];
    for (int d = 0; d < n; d++) {
        g[d] = (struct gather_group){.landing = landing, .rank = d, .size = n};
        memcpy(g[d].sync, sync, sizeof sync);
    }
    float *got = malloc((size_t)n * max * 4);
    uint32_t *got_recs = malloc(rec_bytes);
    uint32_t *left = malloc(GATHER_LANDING_BYTES);
    int calls = 0, failed = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0] && !failed; k++)
        for (int rep = 0; rep < 2 && !failed; rep++) {
            const int rows = shapes[k][0], cols = shapes[k][1];
            if (!gather_fits(n, rows, cols, RECS, GATHER_LANDING_BYTES))
                continue;
            const size_t per = (size_t)rows * cols;
            for (int d = 0; d < n; d++) /* call c of the pair takes the data shifted by 2 rep + c */
                for (int c = 0; c < 2; c++) {
                    const int32_t wants = (rep + c + (int)k) % 2 == 0; /* every shape both ways */
                    CHECK(cudaSetDevice(d) == cudaSuccess);
                    CHECK(cudaMemcpy(in[c][d], shard[d] + 2 * rep + c, per * 4, cudaMemcpyHostToDevice) ==
                              cudaSuccess &&
                          cudaMemcpy(rec[c][d], recs[d], rec_bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
                          cudaMemcpy(want[c][d], &wants, 4, cudaMemcpyHostToDevice) == cudaSuccess);
                    if (d == 0)
                        CHECK(cudaMemset(out[c], 0xff, (size_t)n * per * 4) == cudaSuccess);
                }
            for (int d = 0; d < n; d++) { /* rank 0 first: it polls while the peers' pushes come */
                CHECK(cudaSetDevice(d) == cudaSuccess);
                if (rep == 1 && d == n - 1)
                    usleep(20000); /* a late peer */
                for (int c = 0; c < 2; c++) {
                    const struct gather_records r = {rec[c][d], stride, RECS};
                    CHECK((d == 0 ? launch_gather_place(&g[0], out[c], in[c][0], r, want[c][0], rows, cols, s[0])
                                  : launch_gather_push(&g[d], in[c][d], r, want[c][d], rows, cols, s[d])) ==
                          cudaSuccess);
                }
            }
            for (int d = 0; d < n; d++)
                CHECK(cudaSetDevice(d) == cudaSuccess && cudaStreamSynchronize(s[d]) == cudaSuccess);
            CHECK(cudaSetDevice(0) == cudaSuccess);
            const size_t landing_words = (size_t)(n - 1) * rows * (cols + 2 * RECS * REC_WORDS);
            CHECK(cudaMemcpy(left, landing, landing_words * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
            for (int c = 0; c < 2 && !failed; c++, calls++) {
                CHECK(cudaMemcpy(got, out[c], (size_t)n * per * 4, cudaMemcpyDeviceToHost) == cudaSuccess &&
                      cudaMemcpy(got_recs, rec[c][0], rec_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
                failed = check_call(ctx, n, shard, recs, stride, 2 * rep + c, (rep + c + (int)k) % 2 == 0, rows,
                                    cols, got, got_recs, left, landing_words);
            }
        }
    if (!failed)
        snprintf(ctx->msg, sizeof ctx->msg,
                 "%d GPUs, %d calls in back-to-back pairs (half without the columns), rank 0 bit-equal to the "
                 "shards side by side and to the peers' records",
                 n, calls);
    for (int d = 0; d < n; d++) {
        cudaSetDevice(d);
        for (int k = 0; k < 2; k++)
            cudaFree(in[k][d]), cudaFree(rec[k][d]), cudaFree(want[k][d]);
        cudaFree(sync[d]);
        cudaStreamDestroy(s[d]);
        free(shard[d]);
        free(recs[d]);
    }
    cudaSetDevice(0);
    for (int k = 0; k < 2; k++)
        cudaFree(out[k]);
    cudaFree(landing);
    free(shard);
    free(recs);
    free(got);
    free(got_recs);
    free(left);
    return failed;
}
