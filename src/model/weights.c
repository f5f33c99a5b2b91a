#include "model/weights.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

static void spec_add(struct weight_spec *s, int *n, struct weight *slot, enum weight_kind kind,
                     int ndim, int64_t rows, int64_t cols, const char *fmt, int layer)
{
    struct weight_spec *x = &s[(*n)++];
    snprintf(x->name, sizeof x->name, fmt, layer);
    x->ndim = ndim;
    x->rows = rows;
    x->cols = cols;
    x->kind = kind;
    x->slot = slot;
}

int weight_specs_build(const struct model_config *cfg, struct model_weights *w,
                       struct weight_spec **specs)
{
    const int64_t D = cfg->hidden_size, F = cfg->intermediate_size, V = cfg->vocab_size;
    const int64_t hd = cfg->head_dim, q_dim = (int64_t)cfg->n_heads * hd,
                  kv_dim = (int64_t)cfg->n_kv_heads * hd;
    struct weight_spec *s = xcalloc((size_t)cfg->n_layers * 13 + 3, sizeof *s);
    int n = 0;
    const enum weight_kind M = WEIGHT_KIND_MATRIX, N = WEIGHT_KIND_NORM;
    spec_add(s, &n, &w->embed, M, 2, V, D, "model.embed_tokens.weight", 0);
    for (int i = 0; i < cfg->n_layers; i++) {
        struct layer_weights *l = &w->layers[i];
        spec_add(s, &n, &l->attn_norm, N, 1, 1, D, "model.layers.%d.input_layernorm.weight", i);
        spec_add(s, &n, &l->wq, M, 2, q_dim, D, "model.layers.%d.self_attn.q_proj.weight", i);
        spec_add(s, &n, &l->wk, M, 2, kv_dim, D, "model.layers.%d.self_attn.k_proj.weight", i);
        spec_add(s, &n, &l->wv, M, 2, kv_dim, D, "model.layers.%d.self_attn.v_proj.weight", i);
        spec_add(s, &n, &l->wo, M, 2, D, q_dim, "model.layers.%d.self_attn.o_proj.weight", i);
        if (cfg->qk_norm) {
            spec_add(s, &n, &l->q_norm, N, 1, 1, hd, "model.layers.%d.self_attn.q_norm.weight", i);
            spec_add(s, &n, &l->k_norm, N, 1, 1, hd, "model.layers.%d.self_attn.k_norm.weight", i);
        }
        if (cfg->sandwich_norms) {
            spec_add(s, &n, &l->post_attn_norm, N, 1, 1, D,
                     "model.layers.%d.post_attention_layernorm.weight", i);
            spec_add(s, &n, &l->ffn_norm, N, 1, 1, D, "model.layers.%d.pre_feedforward_layernorm.weight", i);
            spec_add(s, &n, &l->post_ffn_norm, N, 1, 1, D,
                     "model.layers.%d.post_feedforward_layernorm.weight", i);
        } else {
            spec_add(s, &n, &l->ffn_norm, N, 1, 1, D, "model.layers.%d.post_attention_layernorm.weight", i);
        }
        spec_add(s, &n, &l->w_gate, M, 2, F, D, "model.layers.%d.mlp.gate_proj.weight", i);
        spec_add(s, &n, &l->w_up, M, 2, F, D, "model.layers.%d.mlp.up_proj.weight", i);
        spec_add(s, &n, &l->w_down, M, 2, D, F, "model.layers.%d.mlp.down_proj.weight", i);
    }
    spec_add(s, &n, &w->final_norm, N, 1, 1, D, "model.norm.weight", 0);
    if (!cfg->tie_embeddings)
        spec_add(s, &n, &w->lm_head, M, 2, V, D, "lm_head.weight", 0);
    *specs = s;
    return n;
}

int64_t weight_specs_count_params(const struct weight_spec *specs, int n)
{
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += specs[i].rows * specs[i].cols;
    return total;
}

int64_t model_config_count_params(const struct model_config *cfg)
{
    struct model_weights w = {0};
    w.layers = xcalloc((size_t)cfg->n_layers, sizeof *w.layers);
    struct weight_spec *specs;
    int n = weight_specs_build(cfg, &w, &specs);
    int64_t p = weight_specs_count_params(specs, n);
    free(specs);
    free(w.layers);
    return p;
}

static void shape_str(char *buf, size_t size, const int64_t *shape, int ndim)
{
    size_t off = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (off < size)
        snprintf(buf + off, size - off, "]");
}

static int check_tensor(const struct weight_spec *sp, const struct st_tensor *t, struct err *e)
{
    int64_t want[2] = {sp->ndim == 1 ? sp->cols : sp->rows, sp->cols};
    int ok = t->ndim == sp->ndim && t->shape[0] == want[0] && (sp->ndim == 1 || t->shape[1] == want[1]);
    if (!ok) {
        char got[128], exp[64];
        shape_str(got, sizeof got, t->shape, t->ndim);
        shape_str(exp, sizeof exp, want, sp->ndim);
        return err_set(e, "%s: tensor '%s' has shape %s, but config.json implies %s", t->file->path,
                       sp->name, got, exp);
    }
    if (!dtype_is_float(t->dtype))
        return err_set(e, "%s: tensor '%s' has dtype %s; weights must be BF16, F16 or F32",
                       t->file->path, sp->name, dtype_name(t->dtype));
    return 0;
}

const struct st_tensor *weight_spec_find(const struct weight_spec *spec, const struct checkpoint *ck,
                                         const struct model_config *cfg, struct err *e)
{
    const struct st_tensor *t = checkpoint_find(ck, spec->name);
    if (!t) {
        err_set(e, "%s: tensor '%s' is missing from the checkpoint (needed by %s)", ck->dir, spec->name,
                cfg->arch_name);
        return NULL;
    }
    return check_tensor(spec, t, e) ? NULL : t;
}

/* Which fused weight a spec belongs to on a fusing backend: its slot in
 * parts[layer][0..2] (q, k, v) or parts[layer][3..4] (gate, up), or -1. */
static int fused_part(const struct layer_weights *l, const struct weight *slot)
{
    const struct weight *order[5] = {&l->wq, &l->wk, &l->wv, &l->w_gate, &l->w_up};
    for (int i = 0; i < 5; i++)
        if (slot == order[i])
            return i;
    return -1;
}

static int upload_fused(struct backend *be, struct weight *dst, const struct st_tensor *const *t, int n,
                        struct err *e)
{
    const void *parts[3];
    enum dtype dtypes[3];
    int64_t rows[3];
    for (int i = 0; i < n; i++) {
        parts[i] = t[i]->data;
        dtypes[i] = t[i]->dtype;
        rows[i] = t[i]->ndim == 2 ? t[i]->shape[0] : 1;
    }
    return be->ops->weight_upload_concat(be, dst, parts, dtypes, rows, n, t[0]->shape[1], e);
}

int model_weights_load(struct model_weights *w, const struct model_config *cfg, const struct checkpoint *ck,
                       struct backend *be, struct err *e)
{
    memset(w, 0, sizeof *w);
    w->layers = xcalloc((size_t)cfg->n_layers, sizeof *w->layers);
    const int fuse = be->fuse_weights && be->ops->weight_upload_concat;
    const struct st_tensor *(*parts)[5] = xcalloc((size_t)cfg->n_layers, sizeof *parts);
    struct weight_spec *specs;
    int n = weight_specs_build(cfg, w, &specs);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const struct st_tensor *t = weight_spec_find(&specs[i], ck, cfg, e);
        if (!t) {
            rc = -1;
            break;
        }
        int layer = -1, part = -1;
        for (int L = 0; fuse && L < cfg->n_layers && part < 0; L++)
            if ((part = fused_part(&w->layers[L], specs[i].slot)) >= 0)
                layer = L;
        if (part >= 0) /* uploaded below, stacked with its siblings */
            parts[layer][part] = t;
        else
            rc = be->ops->weight_upload(be, specs[i].slot, t->data, t->dtype, specs[i].rows, specs[i].cols, e);
    }
    for (int L = 0; fuse && L < cfg->n_layers && !rc; L++)
        rc = upload_fused(be, &w->layers[L].wqkv, parts[L], 3, e) ||
             upload_fused(be, &w->layers[L].w_gate_up, parts[L] + 3, 2, e);
    if (!rc && cfg->tie_embeddings)
        w->lm_head = w->embed;
    if (!rc && ck->n_tensors > n + (cfg->tie_embeddings && checkpoint_find(ck, "lm_head.weight")))
        log_info("%s: %d tensors in the checkpoint are not used by %s", ck->dir, ck->n_tensors - n,
                 cfg->arch_name);
    free(parts);
    free(specs);
    if (rc)
        model_weights_free(w, cfg, be);
    return rc ? -1 : 0;
}

void model_weights_free(struct model_weights *w, const struct model_config *cfg, struct backend *be)
{
    if (!w->layers)
        return;
    struct weight_spec *specs;
    int n = weight_specs_build(cfg, w, &specs);
    for (int i = 0; i < n; i++)
        if (specs[i].slot->data)
            be->ops->weight_free(be, specs[i].slot);
    for (int L = 0; L < cfg->n_layers; L++) {
        if (w->layers[L].wqkv.data)
            be->ops->weight_free(be, &w->layers[L].wqkv);
        if (w->layers[L].w_gate_up.data)
            be->ops->weight_free(be, &w->layers[L].w_gate_up);
    }
    free(specs);
    free(w->layers);
    memset(w, 0, sizeof *w);
}
