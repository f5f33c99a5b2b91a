/* The paged KV cache's storage: per layer, k and v arrays of
 * [n_blocks, block_size, n_kv_heads, head_dim] in the backend's memory,
 * allocated once. Which blocks are in use is the block pool's business
 * (src/kvcache); this only owns the memory. */
#ifndef INFER_MODEL_KV_STORE_H
#define INFER_MODEL_KV_STORE_H

#include "backend/ops.h"
#include "io/model_config.h"
#include "parallel/shard.h"

struct kv_store {
    struct kv_layer *layers; /* [n_layers] */
    int n_layers;
    int n_blocks;
    int block_size;
    size_t bytes; /* total, k and v of every layer */
};

/* The rank's KV heads (sh) of every layer of cfg. Returns 0, or -1 with e
 * set when the memory cannot be had. Free with kv_store_free. */
int kv_store_init(struct kv_store *kv, const struct model_config *cfg, const struct model_shard *sh,
                  struct backend *be, int n_blocks, int block_size, struct err *e);
void kv_store_free(struct kv_store *kv, struct backend *be);

/* Bytes one block takes across all layers (k and v) for the rank's KV heads. */
size_t kv_store_block_bytes(const struct model_config *cfg, const struct model_shard *sh, enum dtype kv_dtype,
                            int block_size);

#endif
