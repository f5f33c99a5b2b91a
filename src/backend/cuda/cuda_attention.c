/* The attention op on CUDA: picks the decode kernel (one query token per
 * sequence) or the prefill/extend kernel (anything else) and owns the
 * decode's split scratch.
 *
 * Split count (in launch_attention_decode). A decode CTA handles one (token,
 * kv head, split); splits = one wave of CTA slots (SMs x resident CTAs) over
 * tokens x kv heads, capped by ATTN_DECODE_MAX_SPLITS, by the longest range a
 * token can see here (block-table capacity x block size, or the window) over
 * one 64-key chunk, and by the scratch. It depends on counts and the table
 * capacity, never on this step's lengths, so a captured graph stays valid;
 * the kernels cut each token's actual range into parts on the device.
 *
 * Scratch. The split partials need n_tokens * n_heads * splits * (head_dim
 * + 2) floats; the backend allocates CUDA_ATTN_SCRATCH_BYTES for them at
 * creation (cuda_backend.c), and the split count is clamped so that the
 * partials always fit: nothing is allocated here. The scratch's tail holds
 * the counters with which the last split of each (token, kv head) merges
 * (cuda_common.h), so a decode step needs no combine kernel. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_ops.h"

static struct attn_args args_of(struct backend *be, void *out, const void *q, const struct fwd_meta *m,
                                const struct attn_shape *s, const struct kv_layer *kv, int window, float scale,
                                float softcap)
{
    CHECK(s->head_dim >= 2 && s->head_dim <= 256 && s->head_dim % 2 == 0);
    CHECK(s->n_kv_heads > 0 && s->n_heads % s->n_kv_heads == 0);
    CHECK(s->block_size > 0 && (s->block_size & (s->block_size - 1)) == 0);
    CHECK(window >= 0 && m->n_tokens >= 0);
    int bs_log2 = 0;
    while ((1 << bs_log2) < s->block_size)
        bs_log2++;
    return (struct attn_args){
        .out = out,
        .q = q,
        .k_cache = kv->k,
        .v_cache = kv->v,
        .positions = m->positions,
        .seq_of_token = m->seq_of_token,
        .query_start = m->query_start,
        .kv_len = m->kv_len,
        .block_tables = m->block_tables,
        .n_tokens = m->n_tokens,
        .n_seqs = m->n_seqs,
        .max_blocks_per_seq = m->max_blocks_per_seq,
        .n_heads = s->n_heads,
        .n_kv_heads = s->n_kv_heads,
        .head_dim = s->head_dim,
        .block_size_log2 = bs_log2,
        .window = window,
        .scale = scale,
        .softcap = softcap,
        .sm_count = cuda_impl(be)->prop.multiProcessorCount,
    };
}

/* The counters at the scratch's end (cuda_common.h). */
static struct attn_merge merge_of(struct backend *be)
{
    return (struct attn_merge){(unsigned *)(cuda_impl(be)->attn_scratch + CUDA_ATTN_PARTIAL_FLOATS),
                               CUDA_ATTN_MERGE_COUNTERS};
}

/* The most keys a token can see: the block-table capacity, or the window. */
static long max_range_of(const struct fwd_meta *m, const struct attn_shape *s, int window)
{
    long max_range = (long)m->max_blocks_per_seq * s->block_size;
    return window > 0 && window < max_range ? window : max_range;
}

void cuda_op_attention(struct backend *be, void *out, const void *q, const struct fwd_meta *m,
                       const struct attn_shape *s, const struct kv_layer *kv, int window, float scale,
                       float softcap)
{
    const struct attn_args a = args_of(be, out, q, m, s, kv, window, scale, softcap);
    float *scratch = cuda_impl(be)->attn_scratch;
    if (m->n_tokens == 0)
        return;
    /* The decode kernel is right for any batch (each row finds its own
     * sequence); it is the fast one when every sequence has one row. In
     * batch-invariant mode it takes every row, unsplit (no scratch: one CTA
     * per row and head group sums the keys in one fixed order). */
    if (be->batch_invariant) {
        CHECK(m->n_tokens <= 65535); /* grid.z */
        CUDA_CHECK(launch_attention_decode(&a, 1, NULL, 0, NULL, NULL, cuda_stream(be)));
    } else if (m->n_tokens == m->n_seqs) {
        CHECK(m->n_tokens <= 65535); /* grid.z */
        const struct attn_merge merge = merge_of(be);
        CUDA_CHECK(launch_attention_decode(&a, max_range_of(m, s, window), scratch, CUDA_ATTN_PARTIAL_FLOATS,
                                           &merge, NULL, cuda_stream(be)));
    } else {
        CHECK((m->n_tokens + 63) / 64 + m->n_seqs <= 65535); /* grid.y */
        CUDA_CHECK(launch_attention_prefill(&a, cuda_stream(be)));
    }
}

/* One kernel where it can (every sequence one row, the split decode kernel,
 * head sizes 64 / 128 / 256): the decode kernel rotates q and the token's k
 * itself and writes k and v to the cache; else the RoPE kernel, then the
 * attention as cuda_op_attention picks it. */
void cuda_op_attention_rope(struct backend *be, void *out, void *q_scratch, const struct qkv_rope *r,
                            const struct fwd_meta *m, const struct attn_shape *s, struct kv_layer *kv, int window,
                            float scale, float softcap)
{
    if (be->batch_invariant || m->n_tokens != m->n_seqs || m->n_tokens == 0 ||
        !attention_decode_does_rope(s->head_dim, m->n_tokens)) {
        cuda_op_qk_rope_kv_write(be, q_scratch, r, m, s, kv);
        cuda_op_attention(be, out, q_scratch, m, s, kv, window, scale, softcap);
        return;
    }
    CHECK(m->n_tokens <= 65535); /* grid.z */
    const struct attn_args a = args_of(be, out, NULL, m, s, kv, window, scale, softcap);
    const struct attn_rope rope = {
        .q_in = r->q_in,
        .k_in = r->k_in,
        .v_in = r->v_in,
        .q_stride = r->q_stride,
        .kv_stride = r->kv_stride,
        .q_norm = r->q_norm ? r->q_norm->data : NULL,
        .k_norm = r->k_norm ? r->k_norm->data : NULL,
        .eps = r->eps,
        .plus_one = r->plus_one,
        .inv_freq = r->inv_freq,
        .slot_mapping = m->slot_mapping,
        .k_cache = kv->k,
        .v_cache = kv->v,
    };
    const struct attn_merge merge = merge_of(be);
    CUDA_CHECK(launch_attention_decode_rope(&a, &rope, max_range_of(m, s, window), cuda_impl(be)->attn_scratch,
                                            CUDA_ATTN_PARTIAL_FLOATS, &merge, cuda_stream(be)));
}
