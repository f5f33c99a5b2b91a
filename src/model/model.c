#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>

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

struct model *model_load(const char *dir, struct backend *be, struct err *e)
{
    struct model *m = xcalloc(1, sizeof *m);
    m->be = be;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (model_config_load(path, &m->cfg, e))
        goto fail;
    if (!(m->ck = checkpoint_open(dir, e)))
        goto fail;
    if (model_weights_load(&m->w, &m->cfg, m->ck, be, e))
        goto fail;
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
