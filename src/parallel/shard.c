#include "parallel/shard.h"

int model_shard_plan(const struct model_config *cfg, int rank, int size, struct model_shard *sh, struct err *e)
{
    const int H = cfg->n_heads, K = cfg->n_kv_heads, F = cfg->intermediate_size, V = cfg->vocab_size;
    if (size < 1 || rank < 0 || rank >= size)
        return err_set(e, "--tensor-parallel-size %d: rank %d is not one of its ranks", size, rank);
    if (H % size)
        return err_set(e, "--tensor-parallel-size %d does not divide the model's %d attention heads", size, H);
    if (size <= K ? K % size : size % K)
        return err_set(e, "--tensor-parallel-size %d and the model's %d KV heads: one must divide the other", size,
                       K);
    if (F % size)
        return err_set(e, "--tensor-parallel-size %d does not divide the model's MLP width %d", size, F);
    if (V % size)
        return err_set(e, "--tensor-parallel-size %d does not divide the model's vocabulary of %d", size, V);
    *sh = (struct model_shard){.rank = rank, .size = size, .n_heads = H / size, .ffn = F / size,
                               .vocab_n = V / size};
    sh->vocab_lo = rank * sh->vocab_n;
    if (size <= K) {
        sh->n_kv_heads = K / size;
        sh->kv_head0 = rank * sh->n_kv_heads;
    } else { /* more ranks than KV heads: each rank keeps the one its query heads read */
        sh->n_kv_heads = 1;
        sh->kv_head0 = rank * K / size;
    }
    return 0;
}

struct weight_slice model_shard_slice(const struct model_shard *sh, const struct model_config *cfg,
                                      enum weight_split split)
{
    const int64_t hd = cfg->head_dim;
    if (sh->size == 1)
        return (struct weight_slice){-1, 0, 0};
    switch (split) {
    case WEIGHT_SPLIT_Q_ROWS:
        return (struct weight_slice){0, (int64_t)sh->rank * sh->n_heads * hd, (int64_t)sh->n_heads * hd};
    case WEIGHT_SPLIT_KV_ROWS:
        return (struct weight_slice){0, (int64_t)sh->kv_head0 * hd, (int64_t)sh->n_kv_heads * hd};
    case WEIGHT_SPLIT_FFN_ROWS:
        return (struct weight_slice){0, (int64_t)sh->rank * sh->ffn, sh->ffn};
    case WEIGHT_SPLIT_Q_COLS:
        return (struct weight_slice){1, (int64_t)sh->rank * sh->n_heads * hd, (int64_t)sh->n_heads * hd};
    case WEIGHT_SPLIT_FFN_COLS:
        return (struct weight_slice){1, (int64_t)sh->rank * sh->ffn, sh->ffn};
    case WEIGHT_SPLIT_VOCAB_ROWS:
        return (struct weight_slice){0, sh->vocab_lo, sh->vocab_n};
    case WEIGHT_SPLIT_NONE:
        break;
    }
    return (struct weight_slice){-1, 0, 0};
}
