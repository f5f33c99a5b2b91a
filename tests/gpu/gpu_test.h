/* A small harness for the GPU tests (Criterion is not on the GPU machine).
 * Each test compares a CUDA op with its CPU twin through the op table, on
 * random inputs; tests register themselves with GPU_TEST and the runner
 * (gpu_tests.c) prints one line per test and "N passed, N failed" last.
 * Usage: gpu_tests [substring | --no-bench]: the tests whose name contains
 * the substring, or all but the benchmarks (named bench_*). */
#ifndef INFER_TESTS_GPU_TEST_H
#define INFER_TESTS_GPU_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/ops.h"
#include "core/rng.h"

struct gpu_ctx {
    struct backend *cpu;
    struct backend *cuda;
    struct rng rng;
    char msg[4096]; /* failure message set by the test (or a bench's figures) */
};

typedef int (*gpu_test_fn)(struct gpu_ctx *ctx);
void gpu_test_register(const char *name, gpu_test_fn fn);

#define GPU_TEST(name)                                                                                             \
    static int name(struct gpu_ctx *ctx);                                                                          \
    __attribute__((constructor)) static void register_##name(void) { gpu_test_register(#name, name); }             \
    static int name(struct gpu_ctx *ctx)

/* Fails the test (returns 1) with a formatted message. */
#define GPU_FAIL(...)                                                                                              \
    do {                                                                                                           \
        snprintf(ctx->msg, sizeof ctx->msg, __VA_ARGS__);                                                          \
        return 1;                                                                                                  \
    } while (0)

/* Host buffers of n values ~ N(0, std), rounded to bf16 so that both
 * backends see exactly the same inputs. Caller frees. */
float *gpu_rand_f32(struct gpu_ctx *ctx, size_t n, float std);
uint16_t *gpu_to_bf16(const float *x, size_t n);
/* Device copy of host bf16 values (in the CUDA workspace region). */
void *gpu_upload_bf16(struct gpu_ctx *ctx, const float *x, size_t n);
void *gpu_upload(struct gpu_ctx *ctx, const void *host, size_t bytes);
/* A device buffer of n bf16 values filled with NaN (poison), to catch unwritten outputs. */
void *gpu_poisoned_bf16(struct gpu_ctx *ctx, size_t n);
/* Downloads n bf16 values as f32 (synchronizes). */
float *gpu_download_bf16(struct gpu_ctx *ctx, const void *dev, size_t n);
void gpu_download(struct gpu_ctx *ctx, void *host, const void *dev, size_t bytes);
/* Weight views: host bf16 data for the CPU backend, device copy for CUDA. */
struct weight gpu_weight_cpu(const uint16_t *host_bf16, int64_t rows, int64_t cols);
struct weight gpu_weight_cuda(struct gpu_ctx *ctx, const uint16_t *host_bf16, int64_t rows, int64_t cols);
/* max |a - b| / max |b| (NaN anywhere gives infinity) */
double gpu_rel_err(const float *a, const float *b, size_t n);
/* Every pair of the visible GPUs (at most max) maps the other's memory:
 * *n of them; -1 with the reason in why when fewer than 2 are visible or a
 * pair cannot (the multi-GPU tests then pass, saying so). */
int gpu_peers_enable(int max, int *n, char *why, size_t why_size);
/* Milliseconds per call of fn(arg), median of reps after warm-up, timed with CUDA events. */
double gpu_time_ms(struct gpu_ctx *ctx, void (*fn)(void *), void *arg, int reps);

#endif
