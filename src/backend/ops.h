/* The op table: everything the model's forward pass asks of a backend.
 *
 * The forward pass (src/model/forward.c) is written once against these ops;
 * the CPU reference backend (src/backend/cpu) is the fp32 oracle, the fast
 * CPU backend (src/backend/cpu_fast) and the CUDA backend (src/backend/cuda)
 * the fast paths. Buffers are opaque `void *` in the
 * backend's memory: activations are `act_dtype` elements (f32 on the CPU),
 * the KV cache holds `kv_dtype` elements, logits are always f32.
 *
 * Per-step values (token ids, positions, slot mapping, block tables, ...)
 * reach kernels through struct fwd_meta, which points into the backend's
 * fixed metadata buffers: kernels read them from memory rather than taking
 * them as launch arguments, which is what lets a step be captured once as a
 * CUDA graph and replayed with new values. */
#ifndef INFER_BACKEND_OPS_H
#define INFER_BACKEND_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/comm.h"
#include "backend/sampler_ops.h"
#include "core/dtype.h"
#include "core/error.h"

/* A weight matrix [rows, cols], row-major (a vector has rows = 1), in the
 * backend's memory, in any dtype the backend accepts: a float dtype, or
 * (where be->block_weights) a block type, each row whole blocks. */
struct weight {
    const void *data;
    enum dtype dtype;
    int64_t rows;
    int64_t cols;
};

/* A step's metadata as kernels read it: the counts, and pointers into the
 * backend's metadata buffer. Tokens of one sequence are contiguous;
 * sequence s owns rows [query_start[s], query_start[s+1]). */
struct fwd_meta {
    int n_tokens, n_seqs, n_logits, max_blocks_per_seq;
    const int32_t *token_ids;    /* [n_tokens] */
    const int32_t *positions;    /* [n_tokens] position of each token in its sequence */
    const int32_t *slot_mapping; /* [n_tokens] KV slot (block * block_size + offset), -1 = no write */
    const int32_t *seq_of_token; /* [n_tokens] which sequence each row belongs to */
    const int32_t *query_start;  /* [n_seqs + 1] */
    const int32_t *kv_len;       /* [n_seqs] tokens in the cache after this step's writes */
    const int32_t *logit_rows;   /* [n_logits] rows whose logits are computed */
    const int32_t *logit_cols;   /* [1] a split model: 0 when rank 0 needs no logit columns of the
                                    other ranks (no row returns its logits, and the sampler draws
                                    every row from what the gather leaves it); else 1 */
    const int32_t *block_tables; /* [n_seqs, max_blocks_per_seq] */
};

/* Capacities of a metadata buffer. */
struct meta_caps {
    int max_tokens;
    int max_seqs;
    int max_blocks_per_seq;
    int max_logits;
};

/* Where each field of a step's metadata sits in a metadata buffer, in int32
 * elements: the same in the host staging that the step builder writes and
 * in the device copy that kernels read. Per-token arrays first, then the
 * per-sequence ones and the logit rows, and the block tables last, so that a
 * step of S sequences lives in one prefix of the buffer and uploads with
 * one copy of meta_layout_ints(S) elements. */
struct meta_layout {
    struct meta_caps caps;
    size_t token_ids, positions, slot_mapping, seq_of_token; /* [max_tokens] each */
    size_t query_start;                                      /* [max_seqs + 1] */
    size_t kv_len;                                           /* [max_seqs] */
    size_t logit_rows;                                       /* [max_logits] */
    size_t logit_cols;                                       /* [1] */
    size_t block_tables;                                     /* [max_seqs, max_blocks_per_seq] */
    size_t n_ints;                                           /* the whole buffer */
};

void meta_layout_init(struct meta_layout *l, const struct meta_caps *caps);
/* Elements from the start of the buffer that a step of n_seqs sequences uses. */
size_t meta_layout_ints(const struct meta_layout *l, int n_seqs);
/* The fwd_meta of a step of these counts over the buffer at base. */
struct fwd_meta meta_layout_point(const struct meta_layout *l, const int32_t *base, int n_tokens, int n_seqs,
                                  int n_logits);

/* A metadata buffer: host staging (pinned on CUDA) and the device copy
 * kernels read (the staging itself on the CPU). */
struct meta_buffer {
    struct meta_layout layout;
    int32_t *host;
    int32_t *device;
};

/* One layer's paged KV cache: k and v are [n_blocks, block_size, n_kv_heads,
 * head_dim] of kv_dtype. */
struct kv_layer {
    void *k;
    void *v;
};

struct attn_shape {
    int n_heads;
    int n_kv_heads;
    int head_dim;
    int block_size;
};

/* What qk_rope_kv_write and attention_rope take besides the metadata, the
 * shape and the cache: the q|k|v rows and the per-head norms and
 * frequencies (see qk_rope_kv_write). */
struct qkv_rope {
    const void *q_in, *k_in, *v_in;
    int q_stride, kv_stride;
    const struct weight *q_norm, *k_norm; /* both NULL: no per-head norm */
    float eps;
    int plus_one;
    const float *inv_freq;
};

enum act_fn { ACT_FN_SILU, ACT_FN_GELU_TANH };

/* The parts of the memory plan (docs/architecture.md, section 3). */
enum mem_region {
    MEM_REGION_WEIGHTS,   /* weights and constant tables (RoPE frequencies) */
    MEM_REGION_WORKSPACE, /* activations, sized for the largest step */
    MEM_REGION_METADATA,  /* a step's token ids, positions, block tables, ... */
    MEM_REGION_KV,        /* the paged KV cache */
    MEM_REGION_COUNT
};

const char *mem_region_name(enum mem_region r);

struct backend;

struct backend_ops {
    const char *name;

    /* Memory plan. A backend that places memory in slabs (CUDA) allocates a
     * region's slab once in reserve and carves every alloc of that region
     * out of it, so nothing is allocated after start-up; the CPU backend
     * allocates per call and ignores reserve. alloc is for start-up only;
     * NULL + e (naming the region) when the region or the device is full.
     * free releases per-call allocations; carved memory goes with its region. */
    int (*reserve)(struct backend *be, enum mem_region region, size_t bytes, struct err *e);
    void *(*alloc)(struct backend *be, enum mem_region region, size_t bytes, struct err *e);
    void (*free)(struct backend *be, void *p);
    /* Gives a region's slabs back (CUDA; nothing on the CPU): everything
     * carved from it must be dead, so a backend serves one runner at a time
     * (bench and tests create several in turn). */
    void (*release)(struct backend *be, enum mem_region region);
    /* Device memory free and total (CPU: 0, 0). */
    void (*mem_info)(struct backend *be, size_t *free_bytes, size_t *total_bytes);
    /* Makes a host tensor usable as a weight: the CPU backend may keep host
     * pointers (mmap), the CUDA backend copies to the device. */
    int (*weight_upload)(struct backend *be, struct weight *dst, const void *host_data,
                         enum dtype dtype, int64_t rows, int64_t cols, struct err *e);
    void (*weight_free)(struct backend *be, struct weight *w);
    /* One weight from the rows of several host tensors of equal cols, stacked
     * in order (fused projections); NULL where the backend does not fuse. */
    int (*weight_upload_concat)(struct backend *be, struct weight *dst, const void *const *parts,
                                const enum dtype *dtypes, const int64_t *rows, int n_parts, int64_t cols,
                                struct err *e);
    int (*copy_to_device)(struct backend *be, void *dst, const void *src, size_t bytes, struct err *e);
    int (*copy_to_host)(struct backend *be, void *dst, const void *src, size_t bytes, struct err *e);
    int (*synchronize)(struct backend *be, struct err *e);

    /* Step metadata. meta_init sizes a buffer for caps at start-up (CUDA:
     * pinned staging and a device copy in the metadata region, which it
     * reserves itself); meta_free releases it. meta_upload queues the copy
     * of the staging's first meta_layout_ints(n_seqs) elements to the device
     * (one copy, of a size fixed by n_seqs, so a captured graph can hold it)
     * and gives the step's fwd_meta. */
    int (*meta_init)(struct backend *be, const struct meta_caps *caps, struct meta_buffer *mb, struct err *e);
    void (*meta_free)(struct backend *be, struct meta_buffer *mb);
    int (*meta_upload)(struct backend *be, const struct meta_buffer *mb, int n_tokens, int n_seqs, int n_logits,
                       struct fwd_meta *m, struct err *e);

    /* CUDA graphs (NULL where unsupported): the ops queued between
     * graph_begin and graph_end become a graph that graph_replay launches
     * with one call. */
    int (*graph_begin)(struct backend *be, struct err *e);
    int (*graph_end)(struct backend *be, void **graph, struct err *e);
    int (*graph_replay)(struct backend *be, void *graph, struct err *e);
    void (*graph_free)(struct backend *be, void *graph);

    /* out[t] = table[ids[t] - vocab_lo] * scale, or zeros where the id is
     * not one of the table's rows (a rank's share of the vocabulary) */
    void (*embed)(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
                  int64_t vocab_lo, float scale);
    /* out[t] = x[t] / rms(x[t]) * (w or 1 + w); out may equal x */
    void (*rmsnorm)(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows,
                    float eps, int plus_one);
    /* residual[t] += delta[t]; out[t] = rmsnorm(residual[t]) */
    void (*add_rmsnorm)(struct backend *be, void *residual, const void *delta, void *out,
                        const struct weight *w, int n_rows, float eps, int plus_one);
    /* Gemma's sandwich norm and the next norm in one: residual[t] +=
     * rmsnorm(delta[t]; w_delta); out[t] = rmsnorm(residual[t]; w); exactly
     * rmsnorm into a buffer then add_rmsnorm (delta itself may be left as
     * it was). NULL: the caller runs those two. */
    void (*add_normed_rmsnorm)(struct backend *be, void *residual, const void *delta, const struct weight *w_delta,
                               void *out, const struct weight *w, int n_rows, float eps, int plus_one);
    /* out[n_rows, w.rows] = x[n_rows, w.cols] . w^T */
    void (*matmul)(struct backend *be, void *out, const void *x, const struct weight *w, int n_rows);
    /* Per-head RMSNorm of q and k (when r->q_norm != NULL), RoPE on both at
     * each token's position (r->inv_freq: [head_dim/2] f32 in backend
     * memory); q goes to q_out ([n_tokens, n_heads*head_dim], may equal
     * r->q_in), k and v to the cache at slot_mapping (rows with -1 skipped).
     * Inputs are rows of r->q_stride / r->kv_stride elements (a fused q|k|v
     * projection gives one row per token holding all three). */
    void (*qk_rope_kv_write)(struct backend *be, void *q_out, const struct qkv_rope *r, const struct fwd_meta *m,
                             const struct attn_shape *s, struct kv_layer *kv);
    /* Causal attention of each token over its sequence's cached keys:
     * positions max(0, pos - window + 1) .. pos (window 0 = unlimited),
     * scores * scale, optional tanh soft-cap, softmax, weighted sum of v. */
    void (*attention)(struct backend *be, void *out, const void *q, const struct fwd_meta *m,
                      const struct attn_shape *s, const struct kv_layer *kv, int window, float scale,
                      float softcap);
    /* qk_rope_kv_write (q into q_scratch) then attention, the same results:
     * for steps of one row per sequence (decode), where a backend can do both
     * in one kernel. NULL: the model calls the two. */
    void (*attention_rope)(struct backend *be, void *out, void *q_scratch, const struct qkv_rope *r,
                           const struct fwd_meta *m, const struct attn_shape *s, struct kv_layer *kv, int window,
                           float scale, float softcap);
    /* out[n_rows, F] = act(x . Wg^T) * (x . Wu^T) where w_gate_up is [2F, K]
     * with the F gate rows first, then the F up rows (a fused gate|up
     * projection); the same numerics as matmul into scratch [n_rows, 2F]
     * followed by gated_act (in_stride 2F), which is what a backend does
     * where it does not fuse the two into one kernel. */
    void (*gated_matmul)(struct backend *be, void *out, void *scratch, const void *x,
                         const struct weight *w_gate_up, int n_rows, enum act_fn act);
    /* out[r] = act(gate[r]) * up[r]: out is [n_rows, n_cols]; gate and up are
     * rows of in_stride elements (a fused gate|up projection gives both in one
     * row); out may equal gate when in_stride == n_cols. */
    void (*gated_act)(struct backend *be, void *out, const void *gate, const void *up, int n_rows,
                      int n_cols, int in_stride, enum act_fn act);
    /* out[i] = x[logit_rows[i]] for the batch's logit rows, [n_logits, n_cols] */
    void (*gather_rows)(struct backend *be, void *out, const void *x, const struct fwd_meta *m,
                        int n_cols);
    /* Tensor parallelism (be->comm set; backend/comm.h): buf[n] (act dtype)
     * := its sum over the ranks; rank 0's out[rows, cols * ranks] := every
     * rank's in[rows, cols] (f32 logits) side by side. gather_logits may
     * also leave what the backend's sampler draws from in the sampler's own
     * buffers (sampler_ops.init sized them), and may then skip the columns
     * when *logit_cols (the step's metadata) is 0. */
    void (*all_reduce)(struct backend *be, void *buf, size_t n);
    void (*gather_logits)(struct backend *be, float *out, const float *in, int rows, int cols,
                          const int32_t *logit_cols);
    /* Optional, both or neither, for backends whose activations are
     * narrower than f32: a split model's row-parallel products (o, down)
     * are partial sums, kept in f32 so that they round once, after the sum
     * over the ranks, as one device's product does.
     * matmul_f32: f32 out[n_rows, w.rows] = x . w^T, not rounded.
     * all_reduce_fold: partial[n_rows, w.cols] := its sum over the ranks,
     * rounded to the activation dtype, then folded as add_rmsnorm (or, with
     * w_delta, add_normed_rmsnorm) folds a delta; partial is scratch after.
     * (The CUDA backend sums, then folds with a norm kernel: a fold inside
     * the all-reduce lost at decode sizes, docs/dist.md.) */
    void (*matmul_f32)(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows);
    void (*all_reduce_fold)(struct backend *be, void *residual, float *partial, const struct weight *w_delta,
                            void *out, const struct weight *w, int n_rows, float eps, int plus_one);
    /* f32 logits[n_rows, w.rows] = x . w^T, then tanh soft-cap if softcap > 0 */
    void (*logits)(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows,
                   float softcap);

    /* The sampler (sampler_ops.h). */
    const struct sampler_ops *sampler;
};

/* CPU: the fast CPU backend; CPU_REFERENCE: the fp32 oracle. */
enum backend_kind { BACKEND_KIND_CPU, BACKEND_KIND_CPU_REFERENCE, BACKEND_KIND_CUDA };

struct backend {
    const struct backend_ops *ops;
    void *impl;
    enum dtype act_dtype;
    enum dtype kv_dtype;
    int fuse_weights; /* load q|k|v and gate|up as single weights (weight_upload_concat) */
    /* Every row's result is independent of the rest of the step and of
     * whether it is computed in a prefill chunk or a decode step (set by
     * --batch-invariant; the CPU backend always is; CUDA pays with slower
     * prefill and long-context decode). */
    int batch_invariant;
    int weights_borrowed; /* weight_upload keeps the host pointer (the CPU backend): it must outlive the weight */
    int block_weights;    /* weight_upload takes GGUF block types (core/dtype.h) as they are */
    struct comm *comm;    /* the rank's group when the model is split (src/parallel), else NULL */
    char detail[192];     /* what the start-up line says of it beside its name (threads, kernels), or "" */
    void (*free_impl)(struct backend *be); /* the backend's own part of backend_free */
    /* how backend_create_on made it (another of the same: a draft model's) */
    enum backend_kind kind;
    int n_threads, device;
};


static inline int backend_kind_is_cpu(enum backend_kind k)
{
    return k == BACKEND_KIND_CPU || k == BACKEND_KIND_CPU_REFERENCE;
}

/* Creates a backend; n_threads is for the CPU backends (<= 0: all cores).
 * Returns NULL with e set when the kind is unavailable (no CUDA build, no GPU).
 * Free with backend_free. */
struct backend *backend_create(enum backend_kind kind, int n_threads, struct err *e);
/* The same on GPU number device (CUDA; the CPU backend ignores it): each
 * rank of a split model takes its own. */
struct backend *backend_create_on(enum backend_kind kind, int n_threads, int device, struct err *e);
void backend_free(struct backend *be);
/* "cpu", "cpu-reference", "cuda" or "auto" (cuda where a GPU is, else cpu). */
int backend_kind_parse(const char *name, enum backend_kind *kind, struct err *e);
const char *backend_kind_name(enum backend_kind kind);

#endif
