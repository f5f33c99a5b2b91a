/* The CUDA backend's device context and memory plan: device 0, one stream,
 * the cuBLASLt handle and its workspace, one slab per memory region (weights,
 * workspace, metadata, KV cache) carved by alloc, and the metadata buffers
 * a step is uploaded into with one host-to-device copy.
 * Activations and the KV cache are bf16. Nothing calls cudaMalloc after
 * start-up: n_device_allocs counts every call so tests can check it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemv.h"
#include "core/bf16.h"
#include "core/log.h"

struct backend *cuda_backend_create(int device, struct err *e);
long cuda_backend_device_allocs(const struct backend *be);

static struct cuda_backend *impl(struct backend *be) { return be->impl; }

long cuda_backend_device_allocs(const struct backend *be)
{
    return ((const struct cuda_backend *)be->impl)->n_device_allocs;
}

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
    void *base = device_malloc(impl(be), bytes, mem_region_name(region), e);
    if (!base)
        return -1;
    if (s->base) { /* keep the previous slab for release at destruction */
        struct cuda_slab *old = xmalloc(sizeof *old);
        *old = *s;
        s->older = old;
    }
    s->base = base;
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
    (void)be, (void)p; /* carved memory goes with its region */
}

static void cuda_release(struct backend *be, enum mem_region region)
{
    struct cuda_slab *s = &impl(be)->slabs[region], *old = s->older;
    if (s->base)
        cudaFree(s->base); /* waits for the device */
    while (old) {
        struct cuda_slab *next = old->older;
        cudaFree(old->base);
        free(old);
        old = next;
    }
    memset(s, 0, sizeof *s);
}

static void cuda_mem_info(struct backend *be, size_t *free_bytes, size_t *total_bytes)
{
    (void)be;
    CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

/* Weights land in the weights region as bf16; f32 and f16 checkpoints are
 * converted on the host first. */
/* Converts (if needed) and copies one host tensor to dev. */
static int upload_into(struct backend *be, struct weight *dst, void *dev, const void *host_data, enum dtype dtype,
                       int64_t rows, int64_t cols, struct err *e)
{
    (void)be;
    if (!dtype_is_float(dtype))
        return err_set(e, "cuda backend: weights must be BF16, F16 or F32, got %s", dtype_name(dtype));
    size_t n = (size_t)(rows * cols);
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

static int cuda_weight_upload(struct backend *be, struct weight *dst, const void *host_data, enum dtype dtype,
                              int64_t rows, int64_t cols, struct err *e)
{
    void *dev = cuda_alloc(be, MEM_REGION_WEIGHTS, (size_t)(rows * cols) * 2, e);
    return dev ? upload_into(be, dst, dev, host_data, dtype, rows, cols, e) : -1;
}

/* Rows of several host tensors stacked into one bf16 weight (fused q|k|v and
 * gate|up): one slab allocation, each part converted and copied in turn. */
static int cuda_weight_upload_concat(struct backend *be, struct weight *dst, const void *const *parts,
                                     const enum dtype *dtypes, const int64_t *rows, int n_parts, int64_t cols,
                                     struct err *e)
{
    int64_t total = 0;
    for (int i = 0; i < n_parts; i++)
        total += rows[i];
    char *dev = cuda_alloc(be, MEM_REGION_WEIGHTS, (size_t)(total * cols) * 2, e);
    if (!dev)
        return -1;
    for (int i = 0, at = 0; i < n_parts; at += (int)rows[i], i++) {
        struct weight part;
        /* reuse the single-tensor path on a view of the destination */
        if (upload_into(be, &part, dev + (size_t)at * (size_t)cols * 2, parts[i], dtypes[i], rows[i], cols, e))
            return -1;
    }
    *dst = (struct weight){dev, DTYPE_BF16, total, cols};
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

/* A metadata buffer: the device copy carved from the metadata region (one
 * region per buffer, reserved here), the staging pinned so that the upload
 * is one asynchronous copy a graph can hold. */
static int cuda_meta_init(struct backend *be, const struct meta_caps *caps, struct meta_buffer *mb, struct err *e)
{
    memset(mb, 0, sizeof *mb);
    meta_layout_init(&mb->layout, caps);
    const size_t bytes = mb->layout.n_ints * sizeof(int32_t);
    if (cuda_reserve(be, MEM_REGION_METADATA, bytes, e) ||
        !(mb->device = cuda_alloc(be, MEM_REGION_METADATA, bytes, e)))
        return -1;
    CUDA_TRY(cudaHostAlloc((void **)&mb->host, bytes, cudaHostAllocDefault), e);
    memset(mb->host, 0, bytes);
    return 0;
}

static void cuda_meta_free(struct backend *be, struct meta_buffer *mb)
{
    (void)be; /* the device copy goes with its region */
    if (mb->host)
        cudaFreeHost(mb->host);
    memset(mb, 0, sizeof *mb);
}

static int cuda_meta_upload(struct backend *be, const struct meta_buffer *mb, int n_tokens, int n_seqs,
                            int n_logits, struct fwd_meta *m, struct err *e)
{
    const struct meta_caps *c = &mb->layout.caps;
    if (n_tokens > c->max_tokens || n_seqs > c->max_seqs || n_logits > c->max_logits)
        return err_set(e, "step (%d tokens, %d sequences, %d logit rows) exceeds the metadata buffer (%d, %d, %d)",
                       n_tokens, n_seqs, n_logits, c->max_tokens, c->max_seqs, c->max_logits);
    CUDA_TRY(cudaMemcpyAsync(mb->device, mb->host, meta_layout_ints(&mb->layout, n_seqs) * sizeof(int32_t),
                             cudaMemcpyHostToDevice, impl(be)->stream),
             e);
    *m = meta_layout_point(&mb->layout, mb->device, n_tokens, n_seqs, n_logits);
    return 0;
}

struct cuda_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

static int cuda_graph_begin(struct backend *be, struct err *e)
{
    CUDA_TRY(cudaStreamBeginCapture(impl(be)->stream, cudaStreamCaptureModeThreadLocal), e);
    return 0;
}

static int cuda_graph_end(struct backend *be, void **out, struct err *e)
{
    struct cuda_graph *g = xcalloc(1, sizeof *g);
    cudaError_t rc = cudaStreamEndCapture(impl(be)->stream, &g->graph);
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (rc == cudaSuccess) /* the first replay then launches work already on the device */
        rc = cudaGraphUpload(g->exec, impl(be)->stream);
    if (rc != cudaSuccess) {
        if (g->graph)
            cudaGraphDestroy(g->graph);
        free(g);
        return err_set(e, "CUDA graph capture failed: %s", cudaGetErrorString(rc));
    }
    *out = g;
    return 0;
}

static int cuda_graph_replay(struct backend *be, void *graph, struct err *e)
{
    CUDA_TRY(cudaGraphLaunch(((struct cuda_graph *)graph)->exec, impl(be)->stream), e);
    return 0;
}

static void cuda_graph_free(struct backend *be, void *graph)
{
    (void)be;
    struct cuda_graph *g = graph;
    if (!g)
        return;
    cudaGraphExecDestroy(g->exec);
    cudaGraphDestroy(g->graph);
    free(g);
}

static const struct sampler_ops cuda_sampler_ops = {.init = cuda_op_sample_init,
                                                    .stage = cuda_op_sample_stage,
                                                    .enqueue = cuda_op_sample_enqueue,
                                                    .masks_ready = cuda_op_sample_masks_ready,
                                                    .finish = cuda_op_sample_finish,
                                                    .needs_logit_cols = cuda_sample_needs_logit_cols};

static const struct backend_ops cuda_ops = {
    .name = "cuda",
    .reserve = cuda_reserve,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .release = cuda_release,
    .mem_info = cuda_mem_info,
    .weight_upload = cuda_weight_upload,
    .weight_free = cuda_weight_free,
    .weight_upload_concat = cuda_weight_upload_concat,
    .copy_to_device = cuda_copy_to_device,
    .copy_to_host = cuda_copy_to_host,
    .synchronize = cuda_synchronize,
    .meta_init = cuda_meta_init,
    .meta_free = cuda_meta_free,
    .meta_upload = cuda_meta_upload,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .graph_replay = cuda_graph_replay,
    .graph_free = cuda_graph_free,
    .embed = cuda_op_embed,
    .rmsnorm = cuda_op_rmsnorm,
    .add_rmsnorm = cuda_op_add_rmsnorm,
    .add_normed_rmsnorm = cuda_op_add_normed_rmsnorm,
    .matmul = cuda_op_matmul,
    .matmul_f32 = cuda_op_matmul_f32,
    .qk_rope_kv_write = cuda_op_qk_rope_kv_write,
    .attention = cuda_op_attention,
    .attention_rope = cuda_op_attention_rope,
    .gated_act = cuda_op_gated_act,
    .gated_matmul = cuda_op_gated_matmul,
    .gather_rows = cuda_op_gather_rows,
    .all_reduce = cuda_op_all_reduce,
    .gather_logits = cuda_op_gather_logits,
    .all_reduce_fold = cuda_op_all_reduce_fold,
    .logits = cuda_op_logits,
    .sampler = &cuda_sampler_ops,
};

static void cuda_backend_free(struct backend *be)
{
    struct cuda_backend *cb = be->impl;
    if (cb->stream)
        cudaStreamSynchronize(cb->stream);
    cuda_gemm_release(be);
    cuda_sample_release(be);
    for (int r = 0; r < MEM_REGION_COUNT; r++)
        cuda_release(be, (enum mem_region)r);
    if (cb->lt_workspace)
        cudaFree(cb->lt_workspace);
    if (cb->attn_scratch)
        cudaFree(cb->attn_scratch);
    if (cb->lt)
        cublasLtDestroy(cb->lt);
    if (cb->stream)
        cudaStreamDestroy(cb->stream);
    free(cb);
    free(be);
}

/* How many CUDA devices are visible (tensor parallelism's ranks per machine). */
int cuda_backend_device_count(void);
int cuda_backend_device_count(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

/* Whether a CUDA device can be used (--device auto). */
int cuda_backend_available(void);
int cuda_backend_available(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct backend *cuda_backend_create(int device, struct err *e)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0) {
        err_set(e, "--device cuda: no CUDA device is available (%s)",
                rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        return NULL;
    }
    struct cuda_backend *cb = xcalloc(1, sizeof *cb);
    struct backend *be = xcalloc(1, sizeof *be);
    *be = (struct backend){.ops = &cuda_ops, .impl = cb, .act_dtype = DTYPE_BF16, .kv_dtype = DTYPE_BF16,
                           .fuse_weights = 1, .free_impl = cuda_backend_free};
    cb->lt_workspace_bytes = 32u << 20;
    cb->device = device;
    if (device < 0 || device >= n) {
        err_set(e, "--device cuda: GPU %d is not one of the %d visible", device, n);
        cuda_backend_free(be);
        return NULL;
    }
    if (cudaSetDevice(device) != cudaSuccess || cudaGetDeviceProperties(&cb->prop, device) != cudaSuccess ||
        cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cublasLtCreate(&cb->lt) != CUBLAS_STATUS_SUCCESS ||
        !(cb->lt_workspace = device_malloc(cb, cb->lt_workspace_bytes, "cuBLASLt workspace", e)) ||
        !(cb->attn_scratch = device_malloc(cb, CUDA_ATTN_SCRATCH_BYTES, "attention scratch", e)) ||
        cudaMemset(cb->attn_scratch + CUDA_ATTN_PARTIAL_FLOATS, 0, CUDA_ATTN_MERGE_COUNTERS * sizeof(unsigned)) !=
            cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
        err_set(e, "--device cuda: cannot initialise GPU %d (stream, cuBLASLt or workspace)", device);
        cuda_backend_free(be);
        return NULL;
    }
    log_info("cuda: GPU %d, %s, %d SMs, %.1f GiB", device, cb->prop.name, cb->prop.multiProcessorCount,
             (double)cb->prop.totalGlobalMem / (1 << 20) / 1024);
    return be;
}
