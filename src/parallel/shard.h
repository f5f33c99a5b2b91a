/* A rank's share of a model split over ranks (tensor parallelism,
 * docs/dist.md): its attention heads, KV heads (replicated when there are
 * more ranks than KV heads), MLP columns and vocabulary rows, and which slice
 * of each stored weight that means. One rank of one is the whole model. */
#ifndef INFER_PARALLEL_SHARD_H
#define INFER_PARALLEL_SHARD_H

#include <stdint.h>

#include "core/error.h"
#include "io/model_config.h"

struct model_shard {
    int rank, size;
    int n_heads;    /* local attention heads: [rank * n_heads, ...) of the model's */
    int n_kv_heads; /* local KV heads */
    int kv_head0;   /* the first of the model's KV heads this rank holds */
    int ffn;        /* local MLP columns: [rank * ffn, ...) */
    int vocab_lo;   /* vocabulary rows [vocab_lo, vocab_lo + vocab_n) of the embedding and LM head */
    int vocab_n;
};

/* How a stored weight is split. */
enum weight_split {
    WEIGHT_SPLIT_NONE,      /* every rank holds it whole (norms) */
    WEIGHT_SPLIT_Q_ROWS,    /* q_proj: the rank's heads */
    WEIGHT_SPLIT_KV_ROWS,   /* k_proj, v_proj: the rank's KV heads */
    WEIGHT_SPLIT_FFN_ROWS,  /* gate_proj, up_proj: the rank's MLP columns */
    WEIGHT_SPLIT_Q_COLS,    /* o_proj: the inputs from the rank's heads */
    WEIGHT_SPLIT_FFN_COLS,  /* down_proj: the inputs from the rank's MLP columns */
    WEIGHT_SPLIT_VOCAB_ROWS /* embed_tokens, lm_head: the rank's vocabulary rows */
};

/* The share of rank of size. -1 with e naming --tensor-parallel-size when
 * the model does not split that way (heads, KV heads, MLP or vocabulary not
 * divisible). */
int model_shard_plan(const struct model_config *cfg, int rank, int size, struct model_shard *sh, struct err *e);

/* The slice of a weight stored as [rows, cols] that the rank holds: along
 * axis 0 (rows) or 1 (columns) from lo, n of them; axis -1: whole. */
struct weight_slice {
    int axis;
    int64_t lo, n;
};
struct weight_slice model_shard_slice(const struct model_shard *sh, const struct model_config *cfg,
                                      enum weight_split split);

#endif
