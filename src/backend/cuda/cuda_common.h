/* Shared by the CUDA backend's host files: error checking of every CUDA and
 * cuBLAS return code, and the backend's private state. */
#ifndef INFER_BACKEND_CUDA_COMMON_H
#define INFER_BACKEND_CUDA_COMMON_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/ops.h"

/* A region's device memory: normally one slab from one reserve call; a
 * later reserve of the same region (tests) adds a new slab. */
struct cuda_slab {
    char *base;
    size_t size, used;
    struct cuda_slab *older; /* previous slabs of the region, freed with the backend */
};

struct cuda_backend {
    int device;
    struct cuda_slab slabs[MEM_REGION_COUNT];
    long n_device_allocs; /* cudaMalloc calls so far (tests check it stops growing) */
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *lt_workspace; /* one cuBLASLt workspace for the stream */
    size_t lt_workspace_bytes;
    struct cudaDeviceProp prop;
    void *gemm;         /* cuda_gemm.c's plan cache */
    float *attn_scratch; /* CUDA_ATTN_SCRATCH_BYTES for split-KV decode partials (cuda_attention.c) */
    struct cuda_sampler *sampler; /* the sample op's buffers (cuda_sampling.c), sized by its init (sampler_ops.h) */
};

#define CUDA_ATTN_SCRATCH_BYTES ((size_t)16 << 20)
/* The scratch's last CUDA_ATTN_MERGE_COUNTERS words are the split merge's
 * counters (struct attn_merge, attention.h), zeroed at creation; the partials get
 * the floats before them. */
#define CUDA_ATTN_MERGE_COUNTERS 65536
#define CUDA_ATTN_PARTIAL_FLOATS ((CUDA_ATTN_SCRATCH_BYTES - CUDA_ATTN_MERGE_COUNTERS * sizeof(unsigned)) / sizeof(float))

/* Returns -1 with e set when a CUDA call failed. */
#define CUDA_TRY(call, e)                                                                     \
    do {                                                                                      \
        cudaError_t err_ = (call);                                                            \
        if (err_ != cudaSuccess)                                                              \
            return err_set((e), "%s failed at %s:%d: %s", #call, __FILE__, __LINE__,          \
                           cudaGetErrorString(err_));                                         \
    } while (0)

/* Aborts: for calls whose failure means a broken invariant (inside a step). */
#define CUDA_CHECK(call)                                                                      \
    do {                                                                                      \
        cudaError_t err_ = (call);                                                            \
        if (err_ != cudaSuccess) {                                                            \
            fprintf(stderr, "infer: fatal: %s failed at %s:%d: %s\n", #call, __FILE__,       \
                    __LINE__, cudaGetErrorString(err_));                                      \
            abort();                                                                          \
        }                                                                                     \
    } while (0)


#endif
