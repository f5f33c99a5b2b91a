#include "model/weights.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

static void spec_add(struct weight_spec *s, int *n, struct weight *slot, enum weight_kind kind,
                     enum weight_split split, int ndim, int64_t rows, int64_t cols, const char *fmt, int layer)
{
    struct weight_spec *x = &s[(*n)++];
    snprintf(x->name, sizeof x->name, fmt, layer);
    x->ndim = ndim;
    x->rows = rows;
    x->cols = cols;
    x->kind = kind;
    x->split = split;
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
    const enum weight_split W = WEIGHT_SPLIT_NONE;
    spec_add(s, &n, &w->embed, M, WEIGHT_SPLIT_VOCAB_ROWS, 2, V, D, "model.embed_tokens.weight", 0);
    for (int i = 0; i < cfg->n_layers; i++) {
        struct layer_weights *l = &w->layers[i];
        spec_add(s, &n, &l->attn_norm, N, W, 1, 1, D, "model.layers.%d.input_layernorm.weight", i);
        spec_add(s, &n, &l->wq, M, WEIGHT_SPLIT_Q_ROWS, 2, q_dim, D, "model.layers.%d.self_attn.q_proj.weight", i);
        spec_add(s, &n, &l->wk, M, WEIGHT_SPLIT_KV_ROWS, 2, kv_dim, D, "model.layers.%d.self_attn.k_proj.weight", i);
        spec_add(s, &n, &l->wv, M, WEIGHT_SPLIT_KV_ROWS, 2, kv_dim, D, "model.layers.%d.self_attn.v_proj.weight", i);
        spec_add(s, &n, &l->wo, M, WEIGHT_SPLIT_Q_COLS, 2, D, q_dim, "model.layers.%d.self_attn.o_proj.weight", i);
        if (cfg->qk_norm) {
            spec_add(s, &n, &l->q_norm, N, W, 1, 1, hd, "model.layers.%d.self_attn.q_norm.weight", i);
            spec_add(s, &n, &l->k_norm, N, W, 1, 1, hd, "model.layers.%d.self_attn.k_norm.weight", i);
        }
        if (cfg->sandwich_norms) {
            spec_add(s, &n, &l->post_attn_norm, N, W, 1, 1, D, "model.layers.%d.post_attention_layernorm.weight",
                     i);
            spec_add(s, &n, &l->ffn_norm, N, W, 1, 1, D, "model.layers.%d.pre_feedforward_layernorm.weight", i);
            spec_add(s, &n, &l->post_ffn_norm, N, W, 1, 1, D, "model.layers.%d.post_feedforward_layernorm.weight",
                     i);
        } else {
            spec_add(s, &n, &l->ffn_norm, N, W, 1, 1, D, "model.layers.%d.post_attention_layernorm.weight", i);
        }
        spec_add(s, &n, &l->w_gate, M, WEIGHT_SPLIT_FFN_ROWS, 2, F, D, "model.layers.%d.mlp.gate_proj.weight", i);
        spec_add(s, &n, &l->w_up, M, WEIGHT_SPLIT_FFN_ROWS, 2, F, D, "model.layers.%d.mlp.up_proj.weight", i);
        spec_add(s, &n, &l->w_down, M, WEIGHT_SPLIT_FFN_COLS, 2, D, F, "model.layers.%d.mlp.down_proj.weight", i);
    }
    spec_add(s, &n, &w->final_norm, N, W, 1, 1, D, "model.norm.weight", 0);
    if (!cfg->tie_embeddings)
        spec_add(s, &n, &w->lm_head, M, WEIGHT_SPLIT_VOCAB_ROWS, 2, V, D, "lm_head.weight", 0);
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
    if (!dtype_is_float(t->dtype) && !(dtype_is_block(t->dtype) && sp->kind == WEIGHT_KIND_MATRIX))
        return err_set(e, "%s: tensor '%s' has dtype %s; weights must be BF16, F16 or F32 (or GGUF blocks)",
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

/* The rank's share of a stored tensor: rows are a pointer into it, columns
 * a copy made here (kept in w while the backend borrows host memory). */
struct host_part {
    const void *data;
    enum dtype dtype;
    int64_t rows, cols;
};

static int share_of(struct model_weights *w, const struct weight_spec *sp, const struct st_tensor *t,
                    const struct model_shard *sh, const struct model_config *cfg, struct host_part *out,
                    struct err *e)
{
    struct host_part p = {t->data, t->dtype, sp->rows, sp->cols};
    const struct weight_slice s = model_shard_slice(sh, cfg, sp->split);
    const size_t row = dtype_row_bytes(t->dtype, sp->cols);
    if (s.axis == 0) {
        p.data = (const char *)t->data + (size_t)s.lo * row;
        p.rows = s.n;
    } else if (s.axis == 1) {
        const int blk = dtype_block_elems(t->dtype);
        if (s.lo % blk || s.n % blk)
            return err_set(e, "%s: tensor '%s' (%s) cannot be split at column %lld: its blocks are %d columns wide",
                           t->file->path, sp->name, dtype_name(t->dtype), (long long)s.lo, blk);
        const size_t part = dtype_row_bytes(t->dtype, s.n), skip = dtype_row_bytes(t->dtype, s.lo);
        char *cols = xmalloc((size_t)sp->rows * part);
        for (int64_t r = 0; r < sp->rows; r++)
            memcpy(cols + (size_t)r * part, (const char *)t->data + (size_t)r * row + skip, part);
        w->owned = xrealloc(w->owned, (size_t)(w->n_owned + 1) * sizeof *w->owned);
        w->owned[w->n_owned++] = cols;
        p.data = cols;
        p.cols = s.n;
    }
    *out = p;
    return 0;
}

static int upload_fused(struct backend *be, struct weight *dst, const struct host_part *pt, int n, struct err *e)
{
    const void *parts[3];
    enum dtype dtypes[3];
    int64_t rows[3];
    for (int i = 0; i < n; i++) {
        parts[i] = pt[i].data;
        dtypes[i] = pt[i].dtype;
        rows[i] = pt[i].rows;
    }
    return be->ops->weight_upload_concat(be, dst, parts, dtypes, rows, n, pt[0].cols, e);
}

/* Host copies the backend has taken in already. */
static void drop_owned(struct model_weights *w)
{
    for (int i = 0; i < w->n_owned; i++)
        free(w->owned[i]);
    free(w->owned);
    w->owned = NULL;
    w->n_owned = 0;
}

int model_weights_load(struct model_weights *w, const struct model_config *cfg, const struct model_shard *sh,
                       const struct checkpoint *ck, struct backend *be, struct err *e)
{
    memset(w, 0, sizeof *w);
    w->layers = xcalloc((size_t)cfg->n_layers, sizeof *w->layers);
    const int fuse = be->fuse_weights && be->ops->weight_upload_concat;
    struct host_part(*parts)[5] = xcalloc((size_t)cfg->n_layers, sizeof *parts);
    struct weight_spec *specs;
    int n = weight_specs_build(cfg, w, &specs);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const struct st_tensor *t = weight_spec_find(&specs[i], ck, cfg, e);
        if (!t) {
            rc = -1;
            break;
        }
        struct host_part p;
        if (share_of(w, &specs[i], t, sh, cfg, &p, e)) {
            rc = -1;
            break;
        }
        int layer = -1, part = -1;
        for (int L = 0; fuse && L < cfg->n_layers && part < 0; L++)
            if ((part = fused_part(&w->layers[L], specs[i].slot)) >= 0)
                layer = L;
        if (part >= 0) /* uploaded below, stacked with its siblings */
            parts[layer][part] = p;
        else
            rc = be->ops->weight_upload(be, specs[i].slot, p.data, p.dtype, p.rows, p.cols, e);
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
    if (!be->weights_borrowed)
        drop_owned(w);
    if (rc)
        model_weights_free(w, cfg, be);
    return rc ? -1 : 0;
}

size_t model_weights_bytes(const struct model_config *cfg, const struct model_shard *sh, const struct backend *be)
{
    struct model_weights w = {0};
    w.layers = xcalloc((size_t)cfg->n_layers, sizeof *w.layers);
    struct weight_spec *specs;
    const int n = weight_specs_build(cfg, &w, &specs);
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        const struct weight_slice s = model_shard_slice(sh, cfg, specs[i].split);
        const int64_t elems = s.axis == 0 ? s.n * specs[i].cols : s.axis == 1 ? specs[i].rows * s.n
                                                                              : specs[i].rows * specs[i].cols;
        bytes += ((size_t)elems * dtype_size(be->act_dtype) + 255) & ~(size_t)255;
    }
    free(specs);
    free(w.layers);
    return bytes;
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
    drop_owned(w);
    memset(w, 0, sizeof *w);
}

static double matrix_bytes(const struct weight *w)
{
    return w->data ? (double)dtype_row_bytes(w->dtype, w->cols) * (double)w->rows : 0;
}

double model_weights_step_bytes(const struct model_weights *w, const struct model_config *cfg)
{
    double bytes = matrix_bytes(&w->lm_head);
    for (int L = 0; L < cfg->n_layers; L++) {
        const struct layer_weights *l = &w->layers[L];
        const struct weight *mats[] = {&l->wq, &l->wk, &l->wv, &l->wqkv, &l->wo, &l->w_gate, &l->w_up, &l->w_gate_up,
                                       &l->w_down};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
            bytes += matrix_bytes(mats[i]);
    }
    return bytes;
}

void model_weights_summary(const struct model_weights *w, const struct model_config *cfg, char *buf, size_t size)
{
    double by_type[DTYPE_COUNT] = {0}, total = 0;
    struct model_weights copy = *w;
    struct weight_spec *specs;
    const int n = weight_specs_build(cfg, &copy, &specs);
    for (int i = 0; i < n; i++)
        by_type[specs[i].slot->dtype] += matrix_bytes(specs[i].slot);
    for (int L = 0; L < cfg->n_layers; L++) {
        by_type[w->layers[L].wqkv.dtype] += matrix_bytes(&w->layers[L].wqkv);
        by_type[w->layers[L].w_gate_up.dtype] += matrix_bytes(&w->layers[L].w_gate_up);
    }
    free(specs);
    char types[400] = "";
    size_t at = 0;
    for (int t = 0; t < DTYPE_COUNT && at < sizeof types; t++)
        if (by_type[t] > 0) {
            at += (size_t)snprintf(types + at, sizeof types - at, "%s%s %.1f MB", at ? ", " : "",
                                   dtype_name((enum dtype)t), by_type[t] / 1e6);
            total += by_type[t];
        }
    snprintf(buf, size, "%.1f MB (%s)", total / 1e6, types);
}
