/* The one-shot all-reduce (backend/cuda/allreduce.h) over every visible GPU
 * of this machine, one process: each GPU's buffer mapped by its peers
 * through peer access (the engine maps them through CUDA IPC, one process a
 * GPU; the kernel sees the same pointers either way). The result must be
 * the rank-order fp32 sum rounded once to bf16, bit for bit, on every
 * rank: odd sizes (a tail of n % 8), in place and not, consecutive calls
 * (the buffer halves alternate), ranks launched late (the others poll),
 * data that looks like an empty slot (AR_EMPTY, -0.0), bf16 and f32 calls
 * taking turns on one buffer. Timing inside CUDA graphs, one per GPU,
 * is bench_allreduce_in_graphs. Skipped (passes, says so) on fewer than 2
 * GPUs. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/allreduce.h"
#include "backend/cuda/kernels.h"
#include "gpu_test.h"

enum { HALF_BYTES = 4 << 20 }; /* a slot holds a batch-64 f32 sum (768 KiB for Llama) at 4 ranks */

struct peers {
    int n;
    struct ar_group g[AR_MAX_RANKS]; /* rank r's view */
    cudaStream_t s[AR_MAX_RANKS];
    void *in[AR_MAX_RANKS], *out[AR_MAX_RANKS];
};

/* 0, or -1 with the reason in why (fewer than 2 GPUs, no peer access). */
static int peers_open(struct peers *p, size_t max_elems, char *why, size_t why_size)
{
    memset(p, 0, sizeof *p);
    if (gpu_peers_enable(AR_MAX_RANKS, &p->n, why, why_size))
        return -1;
    char *buf[AR_MAX_RANKS];
    for (int d = 0; d < p->n; d++) {
        CHECK(cudaSetDevice(d) == cudaSuccess);
        const size_t bytes = ar_buffer_bytes(HALF_BYTES);
        CHECK(cudaMalloc((void **)&buf[d], bytes) == cudaSuccess && ar_buffer_init(buf[d], HALF_BYTES, 0) == cudaSuccess);
        CHECK(cudaMalloc(&p->in[d], max_elems * 2) == cudaSuccess && cudaMalloc(&p->out[d], max_elems * 2) ==
                                                                        cudaSuccess);
        CHECK(cudaStreamCreateWithFlags(&p->s[d], cudaStreamNonBlocking) == cudaSuccess);
    }
    for (int d = 0; d < p->n; d++) {
        p->g[d] = (struct ar_group){.rank = d, .size = p->n, .half_bytes = HALF_BYTES};
        memcpy(p->g[d].buf, buf, sizeof buf);
        CHECK(cudaSetDevice(d) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess);
    }
    return 0;
}

static void peers_close(struct peers *p)
{
    for (int d = 0; d < p->n; d++) {
        cudaSetDevice(d);
        cudaFree(p->g[d].buf[d]);
        cudaFree(p->in[d]);
        cudaFree(p->out[d]);
        cudaStreamDestroy(p->s[d]);
    }
    cudaSetDevice(0);
}

static uint16_t gpu_to_bf16_1(float x)
{
    uint16_t *h = gpu_to_bf16(&x, 1), v = h[0];
    free(h);
    return v;
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

GPU_TEST(allreduce_one_shot_equals_rank_order_sum)
{
    static const size_t sizes[] = {1, 7, 8, 3072, 3072 * 5 + 3, 2560 * 64, HALF_BYTES / 2};
    const size_t max_n = HALF_BYTES / 2;
    struct peers p;
    if (peers_open(&p, max_n, ctx->msg, sizeof ctx->msg))
        return 0;
    uint16_t *host[AR_MAX_RANKS], *got = malloc(max_n * 2), *want = malloc(max_n * 2);
    float *acc = malloc(max_n * sizeof(float));
    for (int d = 0; d < p.n; d++) {
        float *x = gpu_rand_f32(ctx, max_n + 2, 1.0f); /* call rep reads from element rep on */
        host[d] = gpu_to_bf16(x, max_n + 2);
        free(x);
        for (size_t i = 0; i < max_n + 2; i++) /* -0.0, an empty slot's value: on every rank, on one */
            if (i % 97 == 5 || (d == 0 && i % 89 == 3))
                host[d][i] = 0x8000;
    }
    uint16_t *first = malloc(max_n * 2); /* rank 0's result: every rank must give the same bits */
    int failed = 0, calls = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0] && !failed; si++)
        for (int rep = 0; rep < 3 && !failed; rep++, calls++) {
            const size_t n = sizes[si];
            const int in_place = rep == 1;
            /* rank-order sums on the host; the inputs shift with rep so consecutive calls differ */
            for (size_t i = 0; i < n; i++) {
                float a = 0;
                for (int d = 0; d < p.n; d++)
                    a += bf16_to_f32(host[d][i + (size_t)rep]);
                acc[i] = a;
            }
            uint16_t *w = gpu_to_bf16(acc, n);
            memcpy(want, w, n * 2);
            free(w);
            for (int d = 0; d < p.n; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess);
                CHECK(cudaMemcpy(p.in[d], host[d] + rep, n * 2, cudaMemcpyHostToDevice) == cudaSuccess);
                CHECK(cudaMemset(p.out[d], 0xff, n * 2) == cudaSuccess); /* NaN poison */
            }
            for (int d = 0; d < p.n; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess);
                if (rep == 2 && d == p.n - 1)
                    usleep(20000); /* the others poll for a late rank's data */
                void *out = in_place ? p.in[d] : p.out[d];
                CHECK(launch_ar_one_shot(&p.g[d], out, p.in[d], n, p.s[d]) == cudaSuccess);
            }
            for (int d = 0; d < p.n && !failed; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess && cudaStreamSynchronize(p.s[d]) == cudaSuccess);
                CHECK(cudaMemcpy(got, in_place ? p.in[d] : p.out[d], n * 2, cudaMemcpyDeviceToHost) ==
                      cudaSuccess);
                if (d == 0)
                    memcpy(first, got, n * 2);
                for (size_t i = 0; i < n; i++) /* a zero's sign may differ (allreduce.h) */
                    if ((got[i] != want[i] && ((got[i] | want[i]) & 0x7fff)) || got[i] != first[i]) {
                        snprintf(ctx->msg, sizeof ctx->msg,
                                 "%d GPUs, %zu elements (call %d%s): rank %d element %zu is %g (0x%04x), the "
                                 "rank-order sum %g, rank 0's 0x%04x",
                                 p.n, n, calls, in_place ? ", in place" : "", d, i, bf16_to_f32(got[i]), got[i],
                                 bf16_to_f32(want[i]), first[i]);
                        failed = 1;
                        break;
                    }
            }
        }
    if (!failed)
        snprintf(ctx->msg, sizeof ctx->msg, "%d GPUs, %d calls, every rank bit-equal to the rank-order sum", p.n,
                 calls);
    for (int d = 0; d < p.n; d++)
        free(host[d]);
    free(got);
    free(want);
    free(first);
    free(acc);
    peers_close(&p);
    return failed;
}

/* The f32 one-shot (a split model's partial products): the rank-order f32
 * sum, unrounded, bit for bit (a word equal to AR_EMPTY counted as -0.0);
 * tails of n % 4, in place and not, a message in more than one slot-sized
 * call, and bf16 calls between the f32 ones on the same buffers. */
GPU_TEST(allreduce_one_shot_f32_equals_rank_order_sum)
{
    const size_t max_n = HALF_BYTES / 4 * 3 / 2; /* past one rank's slot at 2 ranks too */
    static const size_t sizes[] = {1, 3, 4, 3072, 3072 * 5 + 3, HALF_BYTES / 4 * 3 / 2};
    struct peers p;
    if (peers_open(&p, max_n * 2, ctx->msg, sizeof ctx->msg)) /* in and out hold max_n * 2 bf16 = max_n f32 */
        return 0;
    float *host[AR_MAX_RANKS], *got = malloc(max_n * 4), *want = malloc(max_n * 4);
    for (int d = 0; d < p.n; d++) {
        float *jit = gpu_rand_f32(ctx, max_n, 1.f);
        host[d] = gpu_rand_f32(ctx, max_n, 1.f);
        for (size_t i = 0; i < max_n; i++)
            host[d][i] *= 1.0f + 1e-3f * jit[i];
        free(jit);
        const uint32_t empty = AR_EMPTY; /* data that looks like an empty slot: on every rank, on one */
        for (size_t i = 0; i < max_n; i++)
            if (i % 101 == 7 || (d == p.n - 1 && i % 103 == 2))
                memcpy(&host[d][i], &empty, 4);
    }
    enum { SMALL = 29 };
    void *small[AR_MAX_RANKS];
    uint16_t small_in[AR_MAX_RANKS][SMALL];
    for (int d = 0; d < p.n; d++) {
        CHECK(cudaSetDevice(d) == cudaSuccess && cudaMalloc(&small[d], SMALL * 2) == cudaSuccess);
        for (int i = 0; i < SMALL; i++)
            small_in[d][i] = gpu_to_bf16_1(0.25f * (float)(d + 1));
    }
    int failed = 0, calls = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0] && !failed; si++)
        for (int in_place = 0; in_place < 2 && !failed; in_place++, calls++) {
            const size_t n = sizes[si];
            for (size_t i = 0; i < n; i++) {
                float a = 0;
                for (int d = 0; d < p.n; d++) {
                    uint32_t u;
                    memcpy(&u, &host[d][i], 4);
                    a += u == AR_EMPTY ? -0.0f : host[d][i]; /* sent as -0.0 (allreduce.cu) */
                }
                want[i] = a;
            }
            for (int d = 0; d < p.n; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess);
                CHECK(cudaMemcpy(p.in[d], host[d], n * 4, cudaMemcpyHostToDevice) == cudaSuccess);
                CHECK(cudaMemset(p.out[d], 0xff, n * 4) == cudaSuccess);
                CHECK(cudaDeviceSynchronize() == cudaSuccess);
            }
            for (int d = 0; d < p.n; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess);
                CHECK(launch_ar_one_shot_f32(&p.g[d], in_place ? p.in[d] : p.out[d], p.in[d], n, p.s[d]) ==
                      cudaSuccess);
                /* a bf16 call between: 29 elements (a tail of 5) of (rank + 1) / 4 */
                CHECK(cudaMemcpyAsync(small[d], small_in[d], sizeof small_in[d], cudaMemcpyHostToDevice, p.s[d]) ==
                      cudaSuccess);
                CHECK(launch_ar_one_shot(&p.g[d], small[d], small[d], SMALL, p.s[d]) == cudaSuccess);
            }
            const uint16_t small_want = gpu_to_bf16_1(0.25f * (float)(p.n * (p.n + 1) / 2));
            for (int d = 0; d < p.n && !failed; d++) {
                uint16_t back[SMALL];
                CHECK(cudaSetDevice(d) == cudaSuccess && cudaStreamSynchronize(p.s[d]) == cudaSuccess);
                CHECK(cudaMemcpy(back, small[d], sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
                for (int i = 0; i < SMALL && !failed; i++)
                    if (back[i] != small_want) {
                        snprintf(ctx->msg, sizeof ctx->msg,
                                 "%d GPUs: the bf16 call after %zu f32 elements: rank %d element %d is %g, want %g",
                                 p.n, n, d, i, bf16_to_f32(back[i]), bf16_to_f32(small_want));
                        failed = 1;
                    }
            }
            for (int d = 0; d < p.n && !failed; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess && cudaStreamSynchronize(p.s[d]) == cudaSuccess);
                CHECK(cudaMemcpy(got, in_place ? p.in[d] : p.out[d], n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
                for (size_t i = 0; i < n; i++)
                    if (memcmp(&got[i], &want[i], 4)) {
                        snprintf(ctx->msg, sizeof ctx->msg,
                                 "%d GPUs, %zu f32 elements%s: rank %d element %zu is %.9g, the rank-order sum %.9g",
                                 p.n, n, in_place ? " in place" : "", d, i, got[i], want[i]);
                        failed = 1;
                        break;
                    }
            }
        }
    if (!failed)
        snprintf(ctx->msg, sizeof ctx->msg,
                 "%d GPUs, %d calls, every rank bit-equal to the rank-order f32 sum, a bf16 call after each right",
                 p.n, calls);
    for (int d = 0; d < p.n; d++) {
        cudaSetDevice(d);
        cudaFree(small[d]);
        free(host[d]);
    }
    free(got), free(want);
    peers_close(&p);
    return failed;
}

/* The two-shot form: the one-shot's bits (the rank-order f32 sum, a word
 * equal to AR_EMPTY counted as -0.0) for f32 and bf16, in place and not,
 * the fewest vectors it takes (N * N), a vector count N does not divide, a
 * message in two calls, one whose remainder is too short for a call of its
 * own; a one-shot call after each on the same buffers. */
GPU_TEST(allreduce_two_shot_equals_rank_order_sum)
{
    struct peers p;
    const size_t max_n = 600000; /* f32: past one call's N slices of a slot at 2 ranks */
    if (peers_open(&p, max_n * 2, ctx->msg, sizeof ctx->msg))
        return 0;
    const size_t N = (size_t)p.n;
    /* f32 elements; a call takes 131072 vectors at most (4 MiB halves at any N), so the fifth size
     * leaves 3 over, fewer than N * N: the last two calls share them out */
    const size_t sizes[] = {4 * N * N, 3072 * 64, 3072 * 64 + 4 * 7, max_n, 131072 * 4 + 4 * 3};
    /* bf16 calls take twice the elements (the same bytes) */
    float *host[AR_MAX_RANKS], *got = malloc(max_n * 4), *want = malloc(2 * max_n * 4);
    for (int d = 0; d < p.n; d++) {
        host[d] = gpu_rand_f32(ctx, 2 * max_n, 1.f);
        const uint32_t empty = AR_EMPTY;
        for (size_t i = 0; i < max_n; i++)
            if (i % 211 == 9 || (d == 0 && i % 199 == 4))
                memcpy(&host[d][i], &empty, 4);
    }
    int failed = 0, calls = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0] && !failed; si++)
        for (int form = 0; form < 4 && !failed; form++, calls++) { /* f32 / bf16, in place or not */
            const int bf = form >= 2, in_place = form & 1;
            const size_t n = bf ? 2 * sizes[si] : sizes[si], es = bf ? 2 : 4; /* the same bytes */
            if (!ar_two_shot_fits(&p.g[0], n, es)) {
                snprintf(ctx->msg, sizeof ctx->msg, "%zu elements of %zu bytes do not fit the two-shot", n, es);
                failed = 1;
                break;
            }
            uint16_t *hb[AR_MAX_RANKS] = {0};
            for (size_t i = 0; i < n; i++) {
                float a = 0;
                for (int d = 0; d < p.n; d++) {
                    float x;
                    uint32_t u;
                    if (bf) {
                        if (i == 0)
                            hb[d] = gpu_to_bf16(host[d], n);
                        x = bf16_to_f32(hb[d][i]);
                    } else {
                        memcpy(&u, &host[d][i], 4);
                        x = u == AR_EMPTY ? -0.0f : host[d][i];
                    }
                    a += x;
                }
                want[i] = a;
            }
            uint16_t *want_bf = bf ? gpu_to_bf16(want, n) : NULL;
            for (int d = 0; d < p.n; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess);
                CHECK(cudaMemcpy(p.in[d], bf ? (void *)hb[d] : (void *)host[d], n * es, cudaMemcpyHostToDevice) ==
                      cudaSuccess);
                CHECK(cudaMemset(p.out[d], 0xff, n * es) == cudaSuccess);
                CHECK(cudaDeviceSynchronize() == cudaSuccess);
            }
            for (int d = 0; d < p.n; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess);
                void *out = in_place ? p.in[d] : p.out[d];
                CHECK((bf ? launch_ar_two_shot(&p.g[d], out, p.in[d], n, p.s[d])
                          : launch_ar_two_shot_f32(&p.g[d], out, p.in[d], n, p.s[d])) == cudaSuccess);
            }
            for (int d = 0; d < p.n && !failed; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess && cudaStreamSynchronize(p.s[d]) == cudaSuccess);
                CHECK(cudaMemcpy(got, in_place ? p.in[d] : p.out[d], n * es, cudaMemcpyDeviceToHost) == cudaSuccess);
                for (size_t i = 0; i < n; i++) {
                    const int bad = bf ? (((uint16_t *)got)[i] != want_bf[i] &&
                                          ((((uint16_t *)got)[i] | want_bf[i]) & 0x7fff))
                                       : memcmp(&got[i], &want[i], 4) != 0;
                    if (bad) {
                        snprintf(ctx->msg, sizeof ctx->msg,
                                 "%d GPUs, %zu %s elements%s: rank %d element %zu differs from the rank-order sum",
                                 p.n, n, bf ? "bf16" : "f32", in_place ? " in place" : "", d, i);
                        failed = 1;
                        break;
                    }
                }
            }
            /* a one-shot call after it on the same buffers */
            for (int d = 0; d < p.n && !failed; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess);
                CHECK(cudaMemcpy(p.in[d], host[d], 3072 * 4, cudaMemcpyHostToDevice) == cudaSuccess);
                CHECK(launch_ar_one_shot_f32(&p.g[d], p.out[d], p.in[d], 3072, p.s[d]) == cudaSuccess);
            }
            for (int d = 0; d < p.n && !failed; d++) {
                CHECK(cudaSetDevice(d) == cudaSuccess && cudaStreamSynchronize(p.s[d]) == cudaSuccess);
                CHECK(cudaMemcpy(got, p.out[d], 3072 * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
                for (size_t i = 0; i < 3072 && !failed; i++) {
                    float a = 0;
                    for (int q = 0; q < p.n; q++) {
                        uint32_t u;
                        memcpy(&u, &host[q][i], 4);
                        a += u == AR_EMPTY ? -0.0f : host[q][i];
                    }
                    if (memcmp(&got[i], &a, 4)) {
                        snprintf(ctx->msg, sizeof ctx->msg,
                                 "%d GPUs: the one-shot after a two-shot of %zu elements: rank %d element %zu wrong",
                                 p.n, n, d, i);
                        failed = 1;
                    }
                }
            }
            for (int d = 0; d < p.n; d++)
                free(hb[d]);
            free(want_bf);
        }
    if (!failed)
        snprintf(ctx->msg, sizeof ctx->msg,
                 "%d GPUs, %d calls (f32 and bf16, %zu to %zu vectors), every rank bit-equal to the rank-order sum",
                 p.n, calls, 4 * N * N / 4, max_n / 4);
    for (int d = 0; d < p.n; d++)
        free(host[d]);
    free(got), free(want);
    peers_close(&p);
    return failed;
}

GPU_TEST(allreduce_sum_parts_equals_rank_order_sum)
{
    const int N = 3;
    const size_t n = 3072 * 4 + 5;
    float *x = gpu_rand_f32(ctx, n * N, 1.0f);
    uint16_t *parts = gpu_to_bf16(x, n * N), *got = malloc(n * 2);
    float *acc = calloc(n, sizeof(float));
    for (int r = 0; r < N; r++)
        for (size_t i = 0; i < n; i++)
            acc[i] += bf16_to_f32(parts[(size_t)r * n + i]);
    uint16_t *want = gpu_to_bf16(acc, n);
    void *dp = gpu_upload(ctx, parts, n * N * 2), *out = gpu_poisoned_bf16(ctx, n);
    CHECK(launch_ar_sum_parts(out, dp, N, n, 0) == cudaSuccess);
    gpu_download(ctx, got, out, n * 2);
    int bad = memcmp(got, want, n * 2) != 0;
    if (bad)
        snprintf(ctx->msg, sizeof ctx->msg, "the sum of %d parts of %zu differs from the rank-order sum", N, n);
    /* f32 parts (x itself): the unrounded rank-order sum */
    float *got32 = calloc(n, sizeof(float)), *acc32 = calloc(n, sizeof(float));
    for (int r = 0; r < N; r++)
        for (size_t i = 0; i < n; i++)
            acc32[i] += x[(size_t)r * n + i] * 1.001f;
    for (size_t i = 0; i < n * N; i++)
        x[i] *= 1.001f;
    void *dp32 = gpu_upload(ctx, x, n * N * 4), *out32 = gpu_upload(ctx, got32, n * 4);
    CHECK(launch_ar_sum_parts_f32(out32, dp32, N, n, 0) == cudaSuccess);
    gpu_download(ctx, got32, out32, n * 4);
    if (!bad && memcmp(got32, acc32, n * 4)) {
        snprintf(ctx->msg, sizeof ctx->msg, "the sum of %d f32 parts of %zu differs from the rank-order sum", N, n);
        bad = 1;
    }
    free(got32), free(acc32);
    free(x);
    free(parts);
    free(got);
    free(acc);
    free(want);
    return bad;
}

struct ar_bench {
    struct peers *p;
    size_t n;
};

/* One all-reduce on every GPU; device 0's stream is what gpu_time_ms times. */
static void ar_bench_call(void *arg)
{
    struct ar_bench *b = arg;
    for (int d = b->p->n - 1; d >= 0; d--) { /* device 0 last: its events bracket the others' launches */
        cudaSetDevice(d);
        cudaError_t rc = launch_ar_one_shot(&b->p->g[d], b->p->in[d], b->p->in[d], b->n, b->p->s[d]);
        if (rc != cudaSuccess) {
            fprintf(stderr, "infer: fatal: the one-shot all-reduce on GPU %d failed: %s\n", d, cudaGetErrorString(rc));
            abort();
        }
    }
}

GPU_TEST(bench_allreduce_one_shot)
{
    static const size_t sizes[] = {3072, 2560 * 8, 3072 * 64, 2560 * 128, HALF_BYTES / 2};
    struct peers p;
    if (peers_open(&p, HALF_BYTES / 2, ctx->msg, sizeof ctx->msg))
        return 0;
    printf("one-shot all-reduce over %d GPUs, eager launches, us per call (median):\n", p.n);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct ar_bench b = {&p, sizes[i]};
        /* the best of 5 rounds of 100 calls, timed on device 0's stream */
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            for (int d = 0; d < p.n; d++) {
                cudaSetDevice(d);
                cudaDeviceSynchronize();
            }
            cudaEvent_t a, z;
            cudaSetDevice(0);
            cudaEventCreate(&a);
            cudaEventCreate(&z);
            cudaEventRecord(a, p.s[0]);
            for (int k = 0; k < 100; k++)
                ar_bench_call(&b);
            cudaSetDevice(0);
            cudaEventRecord(z, p.s[0]);
            cudaEventSynchronize(z);
            float ms = 0;
            cudaEventElapsedTime(&ms, a, z);
            best = ms * 10 < best ? ms * 10 : best;
            cudaEventDestroy(a);
            cudaEventDestroy(z);
        }
        printf("  %8zu bf16 (%7.1f KiB): %7.2f us\n", sizes[i], sizes[i] * 2 / 1024.0, best);
    }
    for (int d = 0; d < p.n; d++) {
        cudaSetDevice(d);
        cudaDeviceSynchronize();
    }
    peers_close(&p);
    return 0;
}

/* n values of host bf16 from N(mean, std). */
static uint16_t *rand_bf16(struct gpu_ctx *ctx, size_t n, float mean, float std)
{
    float *x = gpu_rand_f32(ctx, n, std);
    for (size_t i = 0; i < n; i++)
        x[i] += mean;
    uint16_t *h = gpu_to_bf16(x, n);
    free(x);
    return h;
}

static void *dev_copy(const void *host, size_t bytes)
{
    void *p = NULL;
    CHECK(cudaMalloc(&p, bytes) == cudaSuccess && cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    return p;
}

/* K calls of what in one graph per GPU, the graphs launched together: us per
 * call on GPU 0, the best of 5. what: 0 one-shot of n bf16 elements (3: two-shot),
 * 2 add_rmsnorm alone (no communication, for scale). */
static double time_in_graphs(struct peers *p, int what, size_t n, void **bufs, void **res, void **out, void **w)
{
    enum { K = 50 };
    cudaGraphExec_t exec[AR_MAX_RANKS];
    for (int g = 0; g < p->n; g++) {
        cudaGraph_t graph;
        CHECK(cudaSetDevice(g) == cudaSuccess);
        CHECK(cudaStreamBeginCapture(p->s[g], cudaStreamCaptureModeThreadLocal) == cudaSuccess);
        for (int k = 0; k < K; k++)
            CHECK((what == 3   ? launch_ar_two_shot(&p->g[g], bufs[g], bufs[g], n, p->s[g])
                   : what == 0 ? launch_ar_one_shot(&p->g[g], bufs[g], bufs[g], n, p->s[g])
                               : launch_add_rmsnorm(res[g], bufs[g], out[g], w[g], 1, (int)n, 1e-6f, 0, p->s[g])) ==
                  cudaSuccess);
        CHECK(cudaStreamEndCapture(p->s[g], &graph) == cudaSuccess);
        CHECK(cudaGraphInstantiate(&exec[g], graph, 0) == cudaSuccess);
        cudaGraphDestroy(graph);
    }
    double best = 1e30;
    for (int rep = 0; rep < 6; rep++) {
        for (int g = 0; g < p->n; g++) {
            cudaSetDevice(g);
            CHECK(cudaDeviceSynchronize() == cudaSuccess);
        }
        cudaEvent_t a, z;
        cudaSetDevice(0);
        cudaEventCreate(&a);
        cudaEventCreate(&z);
        for (int g = p->n - 1; g >= 0; g--) {
            cudaSetDevice(g);
            if (g == 0)
                cudaEventRecord(a, p->s[0]);
            CHECK(cudaGraphLaunch(exec[g], p->s[g]) == cudaSuccess);
        }
        cudaSetDevice(0);
        cudaEventRecord(z, p->s[0]);
        cudaEventSynchronize(z);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, z);
        if (rep > 0 && ms * 1000 / K < best) /* rep 0 warms up */
            best = ms * 1000 / K;
        cudaEventDestroy(a);
        cudaEventDestroy(z);
    }
    for (int g = 0; g < p->n; g++) {
        cudaSetDevice(g);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        cudaGraphExecDestroy(exec[g]);
    }
    return best;
}

GPU_TEST(bench_allreduce_in_graphs)
{
    static const size_t sizes[] = {1152, 2560, 3072, 3072 * 8, 3072 * 64, 3072 * 128};
    const size_t max_n = 3072 * 128;
    struct peers p;
    if (peers_open(&p, max_n, ctx->msg, sizeof ctx->msg))
        return 0;
    void *res[AR_MAX_RANKS], *out[AR_MAX_RANKS], *w[AR_MAX_RANKS];
    uint16_t *h = rand_bf16(ctx, max_n, 0.f, 1.f);
    for (int g = 0; g < p.n; g++) {
        cudaSetDevice(g);
        CHECK(cudaMemcpy(p.in[g], h, max_n * 2, cudaMemcpyHostToDevice) == cudaSuccess);
        res[g] = dev_copy(h, max_n * 2);
        out[g] = dev_copy(h, max_n * 2);
        w[g] = dev_copy(h, max_n * 2);
    }
    printf("all-reduce over %d GPUs inside CUDA graphs (50 calls a graph, one graph per GPU), us per call:\n", p.n);
    printf("  %8s %10s %10s %12s %10s\n", "elements", "KiB bf16", "one-shot", "norm alone", "two-shot");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const size_t n = sizes[i];
        double one = time_in_graphs(&p, 0, n, p.in, res, out, w);
        if (n <= 8192) {
            double norm = time_in_graphs(&p, 2, n, p.in, res, out, w);
            printf("  %8zu %10.1f %10.2f %12.2f %10s\n", n, n * 2 / 1024.0, one, norm, "-");
        } else {
            double two = time_in_graphs(&p, 3, n, p.in, res, out, w);
            printf("  %8zu %10.1f %10.2f %12s %10.2f\n", n, n * 2 / 1024.0, one, "-", two);
        }
    }
    for (int g = 0; g < p.n; g++) {
        cudaSetDevice(g);
        cudaFree(res[g]), cudaFree(out[g]), cudaFree(w[g]);
    }
    free(h);
    peers_close(&p);
    return 0;
}
