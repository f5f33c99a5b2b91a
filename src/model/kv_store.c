#include "model/kv_store.h"

#include <stdlib.h>
#include <string.h>

size_t kv_store_block_bytes(const struct model_config *cfg, const struct model_shard *sh, enum dtype kv_dtype,
                            int block_size)
{
    return 2 * (size_t)cfg->n_layers * (size_t)block_size * (size_t)sh->n_kv_heads * (size_t)cfg->head_dim *
           dtype_size(kv_dtype);
}

int kv_store_init(struct kv_store *kv, const struct model_config *cfg, const struct model_shard *sh,
                  struct backend *be, int n_blocks, int block_size, struct err *e)
{
    memset(kv, 0, sizeof *kv);
    CHECK(n_blocks > 0 && block_size > 0);
    kv->layers = xcalloc((size_t)cfg->n_layers, sizeof *kv->layers);
    kv->n_layers = cfg->n_layers;
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    size_t per = (size_t)n_blocks * (size_t)block_size * (size_t)sh->n_kv_heads * (size_t)cfg->head_dim *
                 dtype_size(be->kv_dtype);
    if (be->ops->reserve(be, MEM_REGION_KV, 2 * (size_t)cfg->n_layers * ((per + 255) & ~(size_t)255), e)) {
        free(kv->layers);
        kv->layers = NULL;
        return err_prefix(e, "KV cache of %d blocks", n_blocks);
    }
    for (int i = 0; i < cfg->n_layers; i++) {
        kv->layers[i].k = be->ops->alloc(be, MEM_REGION_KV, per, e);
        kv->layers[i].v = kv->layers[i].k ? be->ops->alloc(be, MEM_REGION_KV, per, e) : NULL;
        if (!kv->layers[i].v) {
            kv_store_free(kv, be);
            return err_prefix(e, "KV cache of %d blocks", n_blocks);
        }
    }
    kv->bytes = 2 * per * (size_t)cfg->n_layers;
    return 0;
}

void kv_store_free(struct kv_store *kv, struct backend *be)
{
    for (int i = 0; kv->layers && i < kv->n_layers; i++) {
        be->ops->free(be, kv->layers[i].k);
        be->ops->free(be, kv->layers[i].v);
    }
    free(kv->layers);
    memset(kv, 0, sizeof *kv);
}
