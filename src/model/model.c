#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "io/gguf_checkpoint.h"
#include "io/gguf_config.h"
#include "model/rope.h"

static float *upload_inv_freq(struct backend *be, const struct rope_config *r, int head_dim,
                              struct err *e)
{
    size_t bytes = (size_t)(head_dim / 2) * sizeof(float);
    float *host = xmalloc(bytes);
    rope_inv_freq(r, head_dim, host);
    float *dev = be->ops->alloc(be, MEM_REGION_WEIGHTS, bytes, e);
    if (dev && be->ops->copy_to_device(be, dev, host, bytes, e)) {
        be->ops->free(be, dev);
        dev = NULL;
    }
    free(host);
    return dev;
}

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* The weights region: the rank's share of every tensor as the backend's
 * activation dtype (bf16 on CUDA) plus the two RoPE tables. */
static size_t weights_region_bytes(const struct model *m)
{
    return model_weights_bytes(&m->cfg, &m->sh, m->be) + 2 * align256((size_t)(m->cfg.head_dim / 2) * sizeof(float));
}

int model_path_is_gguf(const char *path)
{
    return gguf_is_path(path);
}

int model_read_config(const char *path, struct model_config *cfg, struct err *e)
{
    if (model_path_is_gguf(path)) {
        struct gguf_file *g = gguf_open(path, e);
        const int rc = g ? model_config_from_gguf(g, cfg, e) : -1;
        gguf_close(g);
        return rc;
    }
    char cfg_path[4096];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", path);
    return model_config_load(cfg_path, cfg, e);
}

int model_open_checkpoint(const char *path, struct model_config *cfg, int keep_blocks, struct checkpoint **ck,
                          struct err *e)
{
    *ck = NULL;
    if (model_path_is_gguf(path)) { /* one file: configuration and weights from it */
        struct gguf_file *g = gguf_open(path, e);
        if (!g)
            return -1;
        if (!model_config_from_gguf(g, cfg, e))
            *ck = checkpoint_open_gguf(g, cfg, keep_blocks, e);
        gguf_close(g);
        return *ck ? 0 : -1;
    }
    char cfg_path[4096];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", path);
    if (model_config_load(cfg_path, cfg, e))
        return -1;
    *ck = checkpoint_open(path, e);
    return *ck ? 0 : -1;
}

struct model *model_load(const char *dir, struct backend *be, struct err *e)
{
    return model_load_shard(dir, be, 0, 1, e);
}

struct model *model_load_shard(const char *dir, struct backend *be, int rank, int size, struct err *e)
{
    struct model *m = xcalloc(1, sizeof *m);
    m->be = be;
    if (model_open_checkpoint(dir, &m->cfg, be->block_weights, &m->ck, e) || model_shard_plan(&m->cfg, rank, size, &m->sh, e))
        goto fail;
    if (be->ops->reserve(be, MEM_REGION_WEIGHTS, weights_region_bytes(m), e))
        goto fail;
    if (model_weights_load(&m->w, &m->cfg, &m->sh, m->ck, be, e))
        goto fail;
    char weights[512];
    model_weights_summary(&m->w, &m->cfg, weights, sizeof weights);
    log_info("%s backend%s%s; weights %s", be->ops->name, be->detail[0] ? ": " : "", be->detail, weights);
    m->inv_freq_global = upload_inv_freq(be, &m->cfg.rope_global, m->cfg.head_dim, e);
    m->inv_freq_local = m->inv_freq_global ? upload_inv_freq(be, &m->cfg.rope_local, m->cfg.head_dim, e) : NULL;
    if (!m->inv_freq_local)
        goto fail;
    return m;
fail:
    model_free(m);
    return NULL;
}

void model_free(struct model *m)
{
    if (!m)
        return;
    if (m->be) {
        model_weights_free(&m->w, &m->cfg, m->be);
        m->be->ops->free(m->be, m->inv_freq_global);
        m->be->ops->free(m->be, m->inv_freq_local);
    }
    checkpoint_close(m->ck);
    free(m);
}
