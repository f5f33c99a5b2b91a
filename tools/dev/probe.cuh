// What the standalone device probes (tools/dev/persistent_*.cu) share: the
// error check, random timing weights, and the decode shapes of the three
// target models with the command-line filter that picks among them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                                      \
    do {                                                                                                           \
        cudaError_t e_ = (x);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                    \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)

typedef __nv_bfloat16 bf16;

struct model_shape {
    const char *name;
    int d, qd, kvd, f, layers, vocab, hd;
};

enum { PROBE_MODELS = 3 };
static const model_shape probe_models[PROBE_MODELS] = {
    {"Llama-3.2-3B", 3072, 3072, 1024, 8192, 28, 128256, 128},
    {"Qwen3-4B", 2560, 4096, 1024, 9728, 36, 151936, 128},
    {"Gemma-3-1B", 1152, 1024, 256, 6912, 26, 262144, 256},
};

// The filter argument (a part of a model's name, or none: all); one that
// matches no model is refused by name rather than running nothing.
static const char *probe_filter(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only)
        return NULL;
    for (int i = 0; i < PROBE_MODELS; i++)
        if (strstr(probe_models[i].name, only))
            return only;
    fprintf(stderr, "model '%s' matches none of Llama-3.2-3B, Qwen3-4B, Gemma-3-1B\n", only);
    exit(2);
}

static bool probe_picked(const model_shape &m, const char *only) { return !only || strstr(m.name, only); }

// n bf16 values +-[2^-7, 2^-6) from a linear congruential sequence after s.
static void probe_pattern(uint16_t *pat, size_t n, uint32_t s)
{
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        pat[i] = (uint16_t)(0x3c00 | ((s >> 16) & 0x3ff) | ((s >> 31) << 15));
    }
}

// n device values: the pattern of pat_n values over and over (timing only).
static bf16 *probe_upload_repeated(const uint16_t *pat, size_t pat_n, size_t n)
{
    bf16 *d;
    CK(cudaMalloc(&d, n * 2));
    for (size_t i = 0; i < n; i += pat_n)
        CK(cudaMemcpy(d + i, pat, (n - i < pat_n ? n - i : pat_n) * 2, cudaMemcpyHostToDevice));
    return d;
}
