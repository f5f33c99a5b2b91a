/* The op table: everything the model's forward pass asks of a backend.
 *
 * The forward pass (src/model/forward.c) is written once against these ops;
 * the CPU backend (src/backend/cpu) is the fp32 reference and the CUDA backend
 * (src/backend/cuda) the fast path. Buffers are opaque `void *` in the
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

#include "backend/sample_seen.h"
#include "backend/sampling.h"
#include "core/dtype.h"
#include "core/error.h"

/* A weight matrix [rows, cols], row-major (a vector has rows = 1), in the
 * backend's memory, in any float dtype the backend accepts. */
struct weight {
    const void *data;
    enum dtype dtype;
    int64_t rows;
    int64_t cols;
};

/* One step's flat batch, in host memory (the step builder's output).
 * Tokens of one sequence are contiguous; sequence s owns rows
 * [query_start[s], query_start[s+1]). */
struct fwd_batch {
    int n_tokens;
    int n_seqs;
    int n_logits;            /* rows that need logits */
    int max_blocks_per_seq;  /* row stride of block_tables */
    const int32_t *token_ids;    /* [n_tokens] */
    const int32_t *positions;    /* [n_tokens] position of each token in its sequence */
    const int32_t *slot_mapping; /* [n_tokens] KV slot (block * block_size + offset), -1 = no write */
    const int32_t *seq_of_token; /* [n_tokens] which sequence each row belongs to */
    const int32_t *query_start;  /* [n_seqs + 1] */
    const int32_t *kv_len;       /* [n_seqs] tokens in the cache after this step's writes */
    const int32_t *block_tables; /* [n_seqs, max_blocks_per_seq] */
    const int32_t *logit_rows;   /* [n_logits] rows whose logits are computed, ascending */
    int skip_argmax;             /* the caller samples the logits itself: no argmax (~30 us a step) */
};

/* The same fields, pointing into backend memory (what kernels read). */
struct fwd_meta {
    int n_tokens, n_seqs, n_logits, max_blocks_per_seq;
    const int32_t *token_ids, *positions, *slot_mapping, *seq_of_token, *query_start, *kv_len,
        *block_tables, *logit_rows;
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

enum act_fn { ACT_FN_SILU, ACT_FN_GELU_TANH };

/* The parts of the memory plan (ARCHITECTURE.md section 3). */
enum mem_region {
    MEM_REGION_WEIGHTS,   /* weights and constant tables (RoPE frequencies) */
    MEM_REGION_WORKSPACE, /* activations, sized for the largest step */
    MEM_REGION_METADATA,  /* a step's token ids, positions, block tables, ... */
    MEM_REGION_KV,        /* the paged KV cache */
    MEM_REGION_COUNT
};

const char *mem_region_name(enum mem_region r);

/* Capacities of the fixed metadata buffers a backend keeps for batch_upload. */
struct meta_caps {
    int max_tokens;
    int max_seqs;
    int max_blocks_per_seq;
    int max_logits;
};

/* One logits row's sampling inputs for the sample op (host memory). */
struct sample_row {
    const struct sampling_params *params; /* its logit_bias list included */
    uint64_t step;                        /* the RNG counter, as sample_token's step */
    const struct sample_seen *seen;       /* [n_seen] the sequence's history (sample_seen_build) */
    int n_seen;
};

struct backend;

struct backend_ops {
    const char *name;

    /* Memory plan. A backend that places memory in slabs (CUDA) allocates a
     * region's slab once in reserve and carves every alloc of that region
     * out of it, so nothing is allocated after start-up; the CPU backend
     * allocates per call and ignores reserve. alloc is for start-up only;
     * NULL + e (naming the region) when the region or the device is full.
     * free releases per-call allocations; carved memory goes with the backend. */
    int (*reserve)(struct backend *be, enum mem_region region, size_t bytes, struct err *e);
    void *(*alloc)(struct backend *be, enum mem_region region, size_t bytes, struct err *e);
    void (*free)(struct backend *be, void *p);
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
    /* Sizes the fixed metadata buffers (start-up; CUDA carves them from the
     * metadata region, which it reserves itself). */
    int (*meta_init)(struct backend *be, const struct meta_caps *caps, struct err *e);
    /* Copies a step's metadata into the backend's fixed buffers (one
     * host-to-device copy on CUDA); fails when it exceeds the capacities. */
    int (*batch_upload)(struct backend *be, const struct fwd_batch *b, struct fwd_meta *m, struct err *e);
    /* Only the host half of batch_upload: the step's metadata into the
     * staging its copy reads, so a replayed graph (which holds that copy)
     * runs on this step (NULL where there are no graphs). */
    int (*batch_stage)(struct backend *be, const struct fwd_batch *b, struct err *e);
    int (*synchronize)(struct backend *be, struct err *e);

    /* CUDA graphs (NULL where unsupported): the ops queued between
     * graph_begin and graph_end become a graph that graph_replay launches
     * with one call. Start-up and measurement only in this issue. */
    int (*graph_begin)(struct backend *be, struct err *e);
    int (*graph_end)(struct backend *be, void **graph, struct err *e);
    int (*graph_replay)(struct backend *be, void *graph, struct err *e);
    void (*graph_free)(struct backend *be, void *graph);

    /* out[t] = table[ids[t]] * scale */
    void (*embed)(struct backend *be, void *out, const struct fwd_meta *m, const struct weight *table,
                  float scale);
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
    /* Per-head RMSNorm of q and k (when q_norm != NULL), RoPE on both at each
     * token's position (inv_freq: [head_dim/2] f32 in backend memory); q goes
     * to q_out ([n_tokens, n_heads*head_dim], may equal q_in), k and v to the
     * cache at slot_mapping (rows with -1 skipped). Inputs are rows of
     * q_stride / kv_stride elements (a fused q|k|v projection gives one row
     * per token holding all three). */
    void (*qk_rope_kv_write)(struct backend *be, void *q_out, const void *q_in, const void *k_in,
                             const void *v_in, int q_stride, int kv_stride, const struct fwd_meta *m,
                             const struct attn_shape *s, const struct weight *q_norm,
                             const struct weight *k_norm, float eps, int plus_one, const float *inv_freq,
                             struct kv_layer *kv);
    /* Causal attention of each token over its sequence's cached keys:
     * positions max(0, pos - window + 1) .. pos (window 0 = unlimited),
     * scores * scale, optional tanh soft-cap, softmax, weighted sum of v. */
    void (*attention)(struct backend *be, void *out, const void *q, const struct fwd_meta *m,
                      const struct attn_shape *s, const struct kv_layer *kv, int window, float scale,
                      float softcap);
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
    /* f32 logits[n_rows, w.rows] = x . w^T, then tanh soft-cap if softcap > 0 */
    void (*logits)(struct backend *be, float *out, const void *x, const struct weight *w, int n_rows,
                   float softcap);
    /* out[r] = argmax over logits[r] (lowest index wins ties) */
    void (*argmax)(struct backend *be, int32_t *out, const float *logits, int n_rows, int n_cols);

    /* Sampling on the backend (NULL where it has none: the caller downloads
     * the logits and runs sample_token). sample_init sizes the fixed buffers
     * once, at start-up (max_rows rows of vocab logits; before the KV cache
     * takes the rest of the memory). sample draws one token per row of
     * logits[n_rows, vocab] (f32, backend memory, left unchanged) with
     * sample_token's semantics and writes out[n_rows] (host memory); it
     * returns when out is written. -1 with e set when the call exceeds what
     * sample_init sized, or a row has more than SAMPLE_MAX_SEEN seen tokens
     * or SAMPLE_MAX_BIAS biases (the caller then samples on the host). */
    int (*sample_init)(struct backend *be, int max_rows, int vocab, struct err *e);
    int (*sample)(struct backend *be, const float *logits, int n_rows, int vocab, const struct sample_row *rows,
                  struct sample_result *out, struct err *e);
    /* sample in three parts, so that a captured graph can hold the draw
     * (NULL where the backend has no graphs): sample_stage takes the rows
     * (padded up to pad_rows with greedy rows whose draws are ignored) and
     * queues whatever varies in size; sample_enqueue queues the draw of
     * pad_rows rows and the download of their results, touching only fixed
     * addresses (capturable); sample_finish waits and writes out[n_rows]. */
    int (*sample_stage)(struct backend *be, int n_rows, int pad_rows, int vocab, const struct sample_row *rows,
                        struct err *e);
    int (*sample_enqueue)(struct backend *be, const float *logits, int pad_rows, int vocab, struct err *e);
    int (*sample_finish)(struct backend *be, int n_rows, struct sample_result *out, struct err *e);
};

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
    void (*destroy)(struct backend *be); /* called by backend_free */
};

enum backend_kind { BACKEND_KIND_CPU, BACKEND_KIND_CUDA };

/* Creates a backend; n_threads is for the CPU backend (<= 0: all cores).
 * Returns NULL with e set when the kind is unavailable (no CUDA build, no GPU).
 * Free with backend_free. */
struct backend *backend_create(enum backend_kind kind, int n_threads, struct err *e);
void backend_free(struct backend *be);
int backend_kind_parse(const char *name, enum backend_kind *kind, struct err *e);

#endif
