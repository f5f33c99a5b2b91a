/* Shared by the CUDA backend's host files: error checking of every CUDA and
 * cuBLAS return code, and the backend's private state. */
#ifndef INFER_BACKEND_CUDA_COMMON_H
#define INFER_BACKEND_CUDA_COMMON_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "backend/ops.h"

/* One slab per memory-plan region, allocated once by reserve. */
struct cuda_slab {
    char *base;
    size_t size, used;
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
};

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
