/* The CUDA backend's device context and memory: device selection, one stream,
 * the cuBLASLt handle and its workspace, weight upload (converted to bf16),
 * copies and metadata upload. Activations and the KV cache are bf16.
 *
 * The compute ops (kernels, GEMMs through cuBLASLt) are the next issue's
 * work; until they exist, cuda_backend_create reports that plainly rather
 * than handing out a backend that cannot run a forward pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.h"
#include "core/bf16.h"
#include "core/log.h"

struct backend *cuda_backend_create(struct err *e);

static struct cuda_backend *impl(struct backend *be) { return be->impl; }

/* The only place the backend allocates device memory. */
static void *device_malloc(struct cuda_backend *cb, size_t bytes, const char *what, struct err *e)
{
    void *p = NULL;
    cudaError_t rc = cudaMalloc(&p, bytes ? bytes : 256);
    if (rc != cudaSuccess) {
        err_set(e, "cudaMalloc of %zu bytes for the %s failed: %s", bytes, what, cudaGetErrorString(rc));
        return NULL;
    }
    cb->n_device_allocs++;
    return p;
}

static int cuda_reserve(struct backend *be, enum mem_region region, size_t bytes, struct err *e)
{
    struct cuda_slab *s = &impl(be)->slabs[region];
    if (s->base)
        return err_set(e, "cuda backend: the %s region is already reserved", mem_region_name(region));
    if (!(s->base = device_malloc(impl(be), bytes, mem_region_name(region), e)))
        return -1;
    s->size = bytes;
    s->used = 0;
    log_info("cuda: %s region %.1f MiB", mem_region_name(region), (double)bytes / (1 << 20));
    return 0;
}

static void *cuda_alloc(struct backend *be, enum mem_region region, size_t bytes, struct err *e)
{
    struct cuda_slab *s = &impl(be)->slabs[region];
    size_t at = (s->used + 255) & ~(size_t)255;
    if (!s->base || at + bytes > s->size) {
        err_set(e, "cuda backend: the %s region (%zu of %zu bytes used) cannot hold %zu more bytes",
                mem_region_name(region), s->used, s->size, bytes);
        return NULL;
    }
    s->used = at + bytes;
    return s->base + at;
}

static void cuda_free(struct backend *be, void *p)
{
    (void)be, (void)p; /* carved memory is released with the backend */
}

static void cuda_mem_info(struct backend *be, size_t *free_bytes, size_t *total_bytes)
{
    (void)be;
    CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

/* Weights land in the weights region as bf16; f32 and f16 checkpoints are
 * converted on the host first. */
static int cuda_weight_upload(struct backend *be, struct weight *dst, const void *host_data,
                              enum dtype dtype, int64_t rows, int64_t cols, struct err *e)
{
    if (!dtype_is_float(dtype))
        return err_set(e, "cuda backend: weights must be BF16, F16 or F32, got %s", dtype_name(dtype));
    size_t n = (size_t)(rows * cols);
    void *dev = cuda_alloc(be, MEM_REGION_WEIGHTS, n * 2, e);
    if (!dev)
        return -1;
    const void *src = host_data;
    uint16_t *converted = NULL;
    if (dtype != DTYPE_BF16) {
        converted = xmalloc(n * 2);
        for (size_t i = 0; i < n; i++)
            converted[i] = f32_to_bf16(dtype == DTYPE_F32 ? ((const float *)host_data)[i]
                                                          : f16_to_f32(((const uint16_t *)host_data)[i]));
        src = converted;
    }
    cudaError_t rc = cudaMemcpy(dev, src, n * 2, cudaMemcpyHostToDevice);
    free(converted);
    CUDA_TRY(rc, e);
    *dst = (struct weight){dev, DTYPE_BF16, rows, cols};
    return 0;
}

static void cuda_weight_free(struct backend *be, struct weight *w)
{
    (void)be;
    memset(w, 0, sizeof *w);
}

static int cuda_copy_to_device(struct backend *be, void *dst, const void *src, size_t bytes, struct err *e)
{
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, impl(be)->stream), e);
    return 0;
}

static int cuda_copy_to_host(struct backend *be, void *dst, const void *src, size_t bytes, struct err *e)
{
    CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, impl(be)->stream), e);
    return 0;
}

static int cuda_synchronize(struct backend *be, struct err *e)
{
    CUDA_TRY(cudaStreamSynchronize(impl(be)->stream), e);
    return 0;
}

static const struct backend_ops cuda_ops = {
    .name = "cuda",
    .reserve = cuda_reserve,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .mem_info = cuda_mem_info,
    .weight_upload = cuda_weight_upload,
    .weight_free = cuda_weight_free,
    .copy_to_device = cuda_copy_to_device,
    .copy_to_host = cuda_copy_to_host,
    .synchronize = cuda_synchronize,
    /* batch_upload and the compute ops: next issue (CUDA backend, eager) */
};

static void cuda_backend_destroy(struct backend *be)
{
    struct cuda_backend *cb = be->impl;
    for (int r = 0; r < MEM_REGION_COUNT; r++)
        if (cb->slabs[r].base)
            cudaFree(cb->slabs[r].base);
    if (cb->lt_workspace)
        cudaFree(cb->lt_workspace);
    if (cb->lt)
        cublasLtDestroy(cb->lt);
    if (cb->stream)
        cudaStreamDestroy(cb->stream);
    free(cb);
    free(be);
}

/* Every op the forward pass calls must be present. */
static const char *missing_op(const struct backend_ops *o)
{
    const void *ops[] = {(void *)o->batch_upload, (void *)o->embed, (void *)o->rmsnorm,
                         (void *)o->add_rmsnorm, (void *)o->matmul, (void *)o->qk_rope_kv_write,
                         (void *)o->attention, (void *)o->gated_act, (void *)o->gather_rows,
                         (void *)o->logits, (void *)o->argmax};
    const char *names[] = {"batch_upload", "embed", "rmsnorm", "add_rmsnorm", "matmul",
                           "qk_rope_kv_write", "attention", "gated_act", "gather_rows", "logits",
                           "argmax"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!ops[i])
            return names[i];
    return NULL;
}

struct backend *cuda_backend_create(struct err *e)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0) {
        err_set(e, "--device cuda: no CUDA device is available (%s)",
                rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        return NULL;
    }
    const char *absent = missing_op(&cuda_ops);
    if (absent) {
        err_set(e, "--device cuda: the CUDA backend has no '%s' kernel yet; use --device cpu", absent);
        return NULL;
    }
    struct cuda_backend *cb = xcalloc(1, sizeof *cb);
    struct backend *be = xcalloc(1, sizeof *be);
    *be = (struct backend){&cuda_ops, cb, DTYPE_BF16, DTYPE_BF16, cuda_backend_destroy};
    cb->lt_workspace_bytes = 32u << 20;
    if (cudaSetDevice(0) != cudaSuccess || cudaGetDeviceProperties(&cb->prop, 0) != cudaSuccess ||
        cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cublasLtCreate(&cb->lt) != CUBLAS_STATUS_SUCCESS ||
        !(cb->lt_workspace = device_malloc(cb, cb->lt_workspace_bytes, "cuBLASLt workspace", e))) {
        err_set(e, "--device cuda: cannot initialise device 0 (stream, cuBLASLt or workspace)");
        cuda_backend_destroy(be);
        return NULL;
    }
    log_info("cuda: %s, %d SMs, %.1f GiB", cb->prop.name, cb->prop.multiProcessorCount,
             (double)cb->prop.totalGlobalMem / (1 << 30));
    return be;
}
