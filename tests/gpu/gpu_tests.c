/* The GPU test runner: creates a CPU and a CUDA backend, runs every
 * registered test (or those whose names hold one of the arguments; bench_
 * tests left out under --no-bench) and prints a summary. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"
#include "core/bf16.h"
#include "gpu_test.h"

#define MAX_TESTS 256
static struct {
    const char *name;
    gpu_test_fn fn;
} tests[MAX_TESTS];
static int n_tests;

void gpu_test_register(const char *name, gpu_test_fn fn)
{
    CHECK(n_tests < MAX_TESTS);
    tests[n_tests].name = name;
    tests[n_tests++].fn = fn;
}

float *gpu_rand_f32(struct gpu_ctx *ctx, size_t n, float std)
{
    float *x = xmalloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++)
        x[i] = bf16_to_f32(f32_to_bf16((float)(std * rng_normal(&ctx->rng))));
    return x;
}

uint16_t *gpu_to_bf16(const float *x, size_t n)
{
    uint16_t *h = xmalloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        h[i] = f32_to_bf16(x[i]);
    return h;
}

void *gpu_upload(struct gpu_ctx *ctx, const void *host, size_t bytes)
{
    struct err e;
    void *d = ctx->cuda->ops->alloc(ctx->cuda, MEM_REGION_WORKSPACE, bytes, &e);
    CHECK(d);
    CHECK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    /* a pageable copy may return before the DMA lands, and the backend's
     * stream does not wait for the legacy stream */
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    return d;
}

void *gpu_upload_bf16(struct gpu_ctx *ctx, const float *x, size_t n)
{
    uint16_t *h = gpu_to_bf16(x, n);
    void *d = gpu_upload(ctx, h, n * 2);
    free(h);
    return d;
}

void *gpu_poisoned_bf16(struct gpu_ctx *ctx, size_t n)
{
    uint16_t *h = xmalloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        h[i] = 0x7fc1; /* NaN */
    void *d = gpu_upload(ctx, h, n * 2);
    free(h);
    return d;
}

void gpu_download(struct gpu_ctx *ctx, void *host, const void *dev, size_t bytes)
{
    struct err e;
    CHECK(ctx->cuda->ops->synchronize(ctx->cuda, &e) == 0);
    CHECK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
}

float *gpu_download_bf16(struct gpu_ctx *ctx, const void *dev, size_t n)
{
    uint16_t *h = xmalloc(n * 2 + 2);
    gpu_download(ctx, h, dev, n * 2);
    float *x = xmalloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++)
        x[i] = bf16_to_f32(h[i]);
    free(h);
    return x;
}

struct weight gpu_weight_cpu(const uint16_t *host_bf16, int64_t rows, int64_t cols)
{
    return (struct weight){host_bf16, DTYPE_BF16, rows, cols};
}

struct weight gpu_weight_cuda(struct gpu_ctx *ctx, const uint16_t *host_bf16, int64_t rows, int64_t cols)
{
    return (struct weight){gpu_upload(ctx, host_bf16, (size_t)(rows * cols) * 2), DTYPE_BF16, rows, cols};
}

double gpu_rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]))
            return INFINITY;
        double d = fabs((double)a[i] - b[i]);
        num = d > num ? d : num;
        den = fabs((double)b[i]) > den ? fabs((double)b[i]) : den;
    }
    return den > 0 ? num / den : num;
}

int gpu_peers_enable(int max, int *n, char *why, size_t why_size)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        snprintf(why, why_size, "skipped: %d GPU visible", count);
        return -1;
    }
    *n = count < max ? count : max;
    for (int d = 0; d < *n; d++) {
        CHECK(cudaSetDevice(d) == cudaSuccess);
        for (int q = 0; q < *n; q++) {
            int can = 0;
            if (q == d)
                continue;
            cudaDeviceCanAccessPeer(&can, d, q);
            if (!can) {
                snprintf(why, why_size, "skipped: GPU %d cannot reach GPU %d", d, q);
                return -1;
            }
            cudaError_t rc = cudaDeviceEnablePeerAccess(q, 0);
            CHECK(rc == cudaSuccess || rc == cudaErrorPeerAccessAlreadyEnabled);
            cudaGetLastError();
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gpu_time_ms(struct gpu_ctx *ctx, void (*fn)(void *), void *arg, int reps)
{
    cudaStream_t s = cuda_stream(ctx->cuda);
    cudaEvent_t *ev = xmalloc(2 * (size_t)reps * sizeof *ev);
    for (int i = 0; i < 2 * reps; i++)
        CHECK(cudaEventCreate(&ev[i]) == cudaSuccess);
    for (int i = 0; i < 3; i++) /* warm-up */
        fn(arg);
    for (int i = 0; i < reps; i++) {
        cudaEventRecord(ev[2 * i], s);
        fn(arg);
        cudaEventRecord(ev[2 * i + 1], s);
    }
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    double *t = xmalloc((size_t)reps * sizeof(double));
    for (int i = 0; i < reps; i++) {
        float ms;
        cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        t[i] = ms;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    double med = t[reps / 2];
    for (int i = 0; i < 2 * reps; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(t);
    return med;
}

/* Whether a test runs: its name holds one of the filters among argv[1..]
 * (all run when none is given), and it is not a bench_ one under --no-bench. */
static int selected(const char *name, int argc, char **argv)
{
    int filters = 0, hit = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--no-bench")) {
            if (!strncmp(name, "bench_", 6))
                return 0;
            continue;
        }
        filters++;
        hit |= strstr(name, argv[a]) != NULL;
    }
    return !filters || hit;
}

int main(int argc, char **argv)
{
    /* a filter no test's name holds is a typo, not an empty pass */
    for (int a = 1; a < argc; a++) {
        int any = !strcmp(argv[a], "--no-bench");
        for (int i = 0; i < n_tests && !any; i++)
            any = strstr(tests[i].name, argv[a]) != NULL;
        if (!any) {
            fprintf(stderr, "gpu_tests: no test's name holds '%s' (usage: gpu_tests [--no-bench] [NAME_PART ...])\n",
                    argv[a]);
            return 2;
        }
    }
    struct err e = {{0}};
    struct gpu_ctx ctx = {0};
    ctx.cpu = backend_create(BACKEND_KIND_CPU_REFERENCE, 0, &e);
    ctx.cuda = backend_create(BACKEND_KIND_CUDA, 0, &e);
    if (!ctx.cpu || !ctx.cuda) {
        fprintf(stderr, "gpu_tests: %s\n", e.msg);
        return 1;
    }
    /* scratch for test inputs and outputs */
    CHECK(ctx.cuda->ops->reserve(ctx.cuda, MEM_REGION_WORKSPACE, (size_t)4 << 30, &e) == 0);
    int passed = 0, failed = 0;
    for (int i = 0; i < n_tests; i++) {
        if (!selected(tests[i].name, argc, argv))
            continue;
        rng_seed(&ctx.rng, 1234, (uint64_t)i, 0);
        cuda_impl(ctx.cuda)->slabs[MEM_REGION_WORKSPACE].used = 0; /* each test starts with empty scratch */
        ctx.msg[0] = '\0';
        int rc = tests[i].fn(&ctx);
        cudaError_t cerr = cudaDeviceSynchronize();
        if (cerr != cudaSuccess) {
            snprintf(ctx.msg, sizeof ctx.msg, "CUDA error: %s", cudaGetErrorString(cerr));
            rc = 1;
        }
        printf("[%s] %s%s%s\n", rc ? "FAIL" : "PASS", tests[i].name, ctx.msg[0] ? ": " : "", ctx.msg);
        fflush(stdout);
        rc ? failed++ : passed++;
        if (cerr != cudaSuccess)
            break; /* the context is unusable after a kernel fault */
    }
    printf("gpu: %d passed, %d failed\n", passed, failed);
    backend_free(ctx.cuda);
    backend_free(ctx.cpu);
    return failed ? 1 : 0;
}
