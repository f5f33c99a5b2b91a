/* CPU backend: memory, weights and metadata. Host memory is the backend's
 * memory, so uploads are copies (or, for weights, borrowed pointers into the
 * checkpoint's read-only mapping) and kernels run synchronously. */
#include "backend/cpu/cpu_backend.h"

#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"

void cpu_to_f32(float *dst, const void *src, enum dtype dtype, int64_t i0, int64_t n)
{
    switch (dtype) {
    case DTYPE_F32:
        memcpy(dst, (const float *)src + i0, (size_t)n * sizeof(float));
        break;
    case DTYPE_BF16: {
        const uint16_t *s = (const uint16_t *)src + i0;
        for (int64_t i = 0; i < n; i++)
            dst[i] = bf16_to_f32(s[i]);
        break;
    }
    case DTYPE_F16: {
        const uint16_t *s = (const uint16_t *)src + i0;
        for (int64_t i = 0; i < n; i++)
            dst[i] = f16_to_f32(s[i]);
        break;
    }
    default:
        CHECK(!"cpu_to_f32: not a float dtype");
    }
}

static int cpu_reserve(struct backend *be, enum mem_region region, size_t bytes, struct err *e)
{
    (void)be, (void)region, (void)bytes, (void)e;
    return 0;
}

static void *cpu_alloc(struct backend *be, enum mem_region region, size_t bytes, struct err *e)
{
    (void)be;
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, rounded ? rounded : 64)) {
        err_set(e, "cpu backend: cannot allocate %zu bytes for the %s", bytes, mem_region_name(region));
        return NULL;
    }
    return p;
}

static void cpu_release(struct backend *be, enum mem_region region)
{
    (void)be, (void)region; /* allocations are freed one by one */
}

static void cpu_mem_info(struct backend *be, size_t *free_bytes, size_t *total_bytes)
{
    (void)be;
    *free_bytes = *total_bytes = 0;
}

static void cpu_free(struct backend *be, void *p)
{
    (void)be;
    free(p);
}

/* Weights stay where the checkpoint reader put them (an mmap the caller keeps
 * open); only their description is recorded. */
static int cpu_weight_upload(struct backend *be, struct weight *dst, const void *host_data,
                             enum dtype dtype, int64_t rows, int64_t cols, struct err *e)
{
    (void)be;
    if (!dtype_is_float(dtype))
        return err_set(e, "cpu backend: weights must be BF16, F16 or F32, got %s", dtype_name(dtype));
    dst->data = host_data;
    dst->dtype = dtype;
    dst->rows = rows;
    dst->cols = cols;
    return 0;
}

/* Stacked weights (only when fuse_weights is set, which the tests do to run
 * the fused forward path on the reference backend): the parts' rows
 * converted to f32, which leaves every product unchanged. */
static int cpu_weight_upload_concat(struct backend *be, struct weight *dst, const void *const *parts,
                                    const enum dtype *dtypes, const int64_t *rows, int n_parts, int64_t cols,
                                    struct err *e)
{
    int64_t total = 0;
    for (int i = 0; i < n_parts; i++) {
        if (!dtype_is_float(dtypes[i]))
            return err_set(e, "cpu backend: weights must be BF16, F16 or F32, got %s", dtype_name(dtypes[i]));
        total += rows[i];
    }
    float *buf = xmalloc((size_t)(total * cols) * sizeof(float));
    for (int i = 0, at = 0; i < n_parts; at += (int)rows[i], i++)
        cpu_to_f32(buf + (int64_t)at * cols, parts[i], dtypes[i], 0, rows[i] * cols);
    cpu_backend_own(be->impl, buf);
    *dst = (struct weight){buf, DTYPE_F32, total, cols};
    return 0;
}

static void cpu_weight_free(struct backend *be, struct weight *w)
{
    (void)be;
    memset(w, 0, sizeof *w);
}

static int cpu_copy(struct backend *be, void *dst, const void *src, size_t bytes, struct err *e)
{
    (void)be;
    (void)e;
    memcpy(dst, src, bytes);
    return 0;
}

/* The staging is the buffer kernels read: an upload copies nothing. */
static int cpu_meta_init(struct backend *be, const struct meta_caps *caps, struct meta_buffer *mb, struct err *e)
{
    (void)be, (void)e;
    meta_layout_init(&mb->layout, caps);
    mb->host = mb->device = xcalloc(mb->layout.n_ints, sizeof(int32_t));
    return 0;
}

static void cpu_meta_free(struct backend *be, struct meta_buffer *mb)
{
    (void)be;
    free(mb->host);
    memset(mb, 0, sizeof *mb);
}

static int cpu_meta_upload(struct backend *be, const struct meta_buffer *mb, int n_tokens, int n_seqs, int n_logits,
                           struct fwd_meta *m, struct err *e)
{
    (void)be, (void)e;
    *m = meta_layout_point(&mb->layout, mb->device, n_tokens, n_seqs, n_logits);
    return 0;
}

static void cpu_all_reduce(struct backend *be, void *buf, size_t n)
{
    be->comm->ops->all_reduce(be->comm, buf, n, DTYPE_F32, NULL);
}

/* The columns always (the CPU sampler reads them): no statistics. */
static void cpu_gather_logits(struct backend *be, float *out, const float *in, int rows, int cols,
                              const int32_t *logit_cols)
{
    (void)logit_cols;
    be->comm->ops->gather_cols(be->comm, out, in, rows, cols, NULL);
}

static int cpu_synchronize(struct backend *be, struct err *e)
{
    (void)be;
    (void)e;
    return 0;
}

/* No rule: the CPU gather always brings every column (needs_logit_cols NULL). */
static const struct sampler_ops cpu_sampler_ops = {
    .init = cpu_sample_init, .stage = cpu_sample_stage, .enqueue = cpu_sample_enqueue, .finish = cpu_sample_finish};

static const struct backend_ops cpu_ops = {
    .name = "cpu-reference",
    .reserve = cpu_reserve,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .release = cpu_release,
    .mem_info = cpu_mem_info,
    .weight_upload = cpu_weight_upload,
    .weight_free = cpu_weight_free,
    .weight_upload_concat = cpu_weight_upload_concat,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .synchronize = cpu_synchronize,
    .meta_init = cpu_meta_init,
    .meta_free = cpu_meta_free,
    .meta_upload = cpu_meta_upload,
    .embed = cpu_embed,
    .rmsnorm = cpu_rmsnorm,
    .add_rmsnorm = cpu_add_rmsnorm,
    .matmul = cpu_matmul,
    .qk_rope_kv_write = cpu_qk_rope_kv_write,
    .attention = cpu_attention,
    .attention_rope = cpu_attention_rope,
    .gated_act = cpu_gated_act,
    .gated_matmul = cpu_gated_matmul,
    .gather_rows = cpu_gather_rows,
    .all_reduce = cpu_all_reduce,
    .gather_logits = cpu_gather_logits,
    .logits = cpu_logits,
    .sampler = &cpu_sampler_ops,
};

const struct backend_ops *cpu_reference_ops(void) { return &cpu_ops; }

void cpu_backend_own(struct cpu_backend *cb, void *p)
{
    cb->owned = xrealloc(cb->owned, (size_t)(cb->n_owned + 1) * sizeof *cb->owned);
    cb->owned[cb->n_owned++] = p;
}

void cpu_backend_destroy(struct backend *be)
{
    struct cpu_backend *cb = be->impl;
    threadpool_free(cb->pool);
    cpu_sample_release(be);
    for (int i = 0; i < cb->n_owned; i++)
        free(cb->owned[i]);
    free(cb->owned);
    free(cb);
    free(be);
}

struct backend *cpu_backend_create(int n_threads, struct err *e)
{
    (void)e;
    struct cpu_backend *cb = xcalloc(1, sizeof *cb);
    cb->pool = threadpool_create(n_threads);
    return cpu_backend_wrap(cb, &cpu_ops);
}

struct backend *cpu_backend_wrap(struct cpu_backend *cb, const struct backend_ops *ops)
{
    struct backend *be = xcalloc(1, sizeof *be);
    be->ops = ops;
    be->impl = cb;
    be->act_dtype = DTYPE_F32;
    be->kv_dtype = DTYPE_F32;
    be->fuse_weights = 0; /* weights stay in the checkpoint's mapping */
    be->weights_borrowed = 1;
    be->free_impl = cpu_backend_destroy;
    return be;
}
