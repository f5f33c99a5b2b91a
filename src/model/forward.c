/* One decoder-only transformer forward pass for Llama, Qwen3 and Gemma 3.
 *
 * The residual add is fused into the next RMSNorm (add_rmsnorm), so each
 * sub-block leaves its output in ws->o and the next norm folds it into the
 * residual stream ws->x. Gemma's sandwich norms normalise that output first. */
#include "model/forward.h"

#include <string.h>

struct ws_buf {
    void **slot;
    size_t elems_per_row;
    int logit_rows; /* sized by max_logits instead of max_tokens */
    size_t elem_size;
};

/* A split model's o and down products are partial sums. Where activations
 * are narrower than f32 and the backend can, they stay f32 until the sum
 * over the ranks, so they round once, as one device's product does
 * (bf16 partials summed then rounded again drift further from the fp32
 * reference as the ranks grow). */
static int partials_f32(const struct model *m)
{
    return m->sh.size > 1 && m->be->act_dtype != DTYPE_F32 && m->be->ops->matmul_f32 && m->be->ops->all_reduce_fold;
}

static int ws_layout(struct forward_ws *ws, const struct model *m, struct ws_buf *bufs)
{
    const struct model_config *c = &m->cfg;
    const struct model_shard *sh = &m->sh;
    size_t act = dtype_size(m->be->act_dtype);
    size_t D = (size_t)c->hidden_size, F = (size_t)sh->ffn;
    size_t qd = (size_t)sh->n_heads * c->head_dim, kvd = (size_t)sh->n_kv_heads * c->head_dim;
    size_t V = sh->rank == 0 ? (size_t)c->vocab_size : 0, Vs = sh->size > 1 ? (size_t)sh->vocab_n : 0;
    struct ws_buf list[] = {
        {&ws->x, D, 0, act},     {&ws->h, D, 0, act},     {&ws->q, qd, 0, act},
        {&ws->k, kvd, 0, act},   {&ws->v, kvd, 0, act},   {&ws->qkv, qd + 2 * kvd, 0, act},
        {&ws->attn, qd, 0, act}, {&ws->o, D, 0, act},     {&ws->gate, 2 * F, 0, act},
        {&ws->up, F, 0, act},    {&ws->act, F, 0, act},
        {&ws->sel, D, 1, act},   {(void **)&ws->logits, V, 1, sizeof(float)},
        {(void **)&ws->shard_logits, Vs, 1, sizeof(float)},
        {(void **)&ws->partial, D, 0, sizeof(float)}, /* left out (NULL) unless partials_f32 */
    };
    int n = 0;
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (list[i].slot != (void **)&ws->partial || partials_f32(m))
            bufs[n++] = list[i];
    return n;
}

int forward_ws_init(struct forward_ws *ws, const struct model *m, int max_tokens, int max_logits,
                    struct err *e)
{
    memset(ws, 0, sizeof *ws);
    CHECK(max_tokens > 0 && max_logits > 0);
    ws->max_tokens = max_tokens;
    ws->max_logits = max_logits;
    struct ws_buf bufs[16];
    int n = ws_layout(ws, m, bufs);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t rows = (size_t)(bufs[i].logit_rows ? max_logits : max_tokens);
        total += (rows * bufs[i].elems_per_row * bufs[i].elem_size + 255) & ~(size_t)255;
    }
    if (m->be->ops->reserve(m->be, MEM_REGION_WORKSPACE, total, e))
        return err_prefix(e, "activation workspace for %d tokens", max_tokens);
    for (int i = 0; i < n; i++) {
        size_t rows = (size_t)(bufs[i].logit_rows ? max_logits : max_tokens);
        *bufs[i].slot = m->be->ops->alloc(m->be, MEM_REGION_WORKSPACE, rows * bufs[i].elems_per_row * bufs[i].elem_size, e);
        if (!*bufs[i].slot) {
            forward_ws_free(ws, m);
            return err_prefix(e, "activation workspace for %d tokens", max_tokens);
        }
    }
    return 0;
}

void forward_ws_free(struct forward_ws *ws, const struct model *m)
{
    struct ws_buf bufs[16];
    int n = ws_layout(ws, m, bufs);
    for (int i = 0; i < n; i++)
        if (*bufs[i].slot)
            m->be->ops->free(m->be, *bufs[i].slot);
    memset(ws, 0, sizeof *ws);
}

/* Layer `layer`'s q, k, v rows (the fused projection's column ranges, or
 * three buffers) and what RoPE and the per-head norms take with them. */
static struct qkv_rope qkv_rope_of(const struct model *m, const struct forward_ws *ws, int layer)
{
    const struct model_config *c = &m->cfg;
    const struct layer_weights *l = &m->w.layers[layer];
    const int qd = m->sh.n_heads * c->head_dim, kvd = m->sh.n_kv_heads * c->head_dim;
    const size_t es = dtype_size(m->be->act_dtype);
    struct qkv_rope r = {
        .q_in = ws->q,
        .k_in = ws->k,
        .v_in = ws->v,
        .q_stride = qd,
        .kv_stride = kvd,
        .q_norm = c->qk_norm ? &l->q_norm : NULL,
        .k_norm = c->qk_norm ? &l->k_norm : NULL,
        .eps = (float)c->rms_norm_eps,
        .plus_one = c->norm_plus_one,
        .inv_freq = model_layer_inv_freq(m, layer),
    };
    if (l->wqkv.data) {
        r.q_in = ws->qkv;
        r.k_in = (const char *)ws->qkv + (size_t)qd * es;
        r.v_in = (const char *)ws->qkv + (size_t)(qd + kvd) * es;
        r.q_stride = r.kv_stride = qd + 2 * kvd;
    }
    return r;
}

/* Decode steps (one row per sequence) leave RoPE and the cache write to the
 * attention call where the backend does both in one (attention_rope). */
static int rope_in_attention(const struct model *m, const struct fwd_meta *meta)
{
    return m->be->ops->attention_rope && meta->n_tokens == meta->n_seqs;
}

/* Layer `layer`'s attention input: q, k, v projections of ws->h, then RoPE
 * (and q/k norms) with the new k/v written into the cache, unless the
 * attention call does that (rope_later: model_forward, whose attention call
 * follows with the same meta). A piece of a piecewise graph always does it:
 * it replays for steps of every kind. */
static void attention_in(const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                         const struct fwd_meta *meta, int layer, int rope_later)
{
    const struct model_config *c = &m->cfg;
    const struct backend_ops *ops = m->be->ops;
    struct backend *be = m->be;
    const struct layer_weights *l = &m->w.layers[layer];
    const int T = meta->n_tokens;
    struct attn_shape shape = {m->sh.n_heads, m->sh.n_kv_heads, c->head_dim, kv->block_size};

    if (l->wqkv.data) { /* one projection; q, k, v are column ranges of its rows */
        ops->matmul(be, ws->qkv, ws->h, &l->wqkv, T);
    } else {
        ops->matmul(be, ws->q, ws->h, &l->wq, T);
        ops->matmul(be, ws->k, ws->h, &l->wk, T);
        ops->matmul(be, ws->v, ws->h, &l->wv, T);
    }
    if (rope_later)
        return;
    const struct qkv_rope r = qkv_rope_of(m, ws, layer);
    ops->qk_rope_kv_write(be, ws->q, &r, meta, &shape, &kv->layers[layer]);
}

/* rope_here: attention_in left RoPE and the cache write to this call. */
static void attention_of(const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                         const struct fwd_meta *meta, int layer, int rope_here)
{
    const struct model_config *c = &m->cfg;
    struct attn_shape shape = {m->sh.n_heads, m->sh.n_kv_heads, c->head_dim, kv->block_size};
    int window = c->layer_sliding[layer] ? c->sliding_window : 0;
    if (rope_here) {
        const struct qkv_rope r = qkv_rope_of(m, ws, layer);
        m->be->ops->attention_rope(m->be, ws->attn, ws->q, &r, meta, &shape, &kv->layers[layer], window,
                                   (float)c->attn_scale, (float)c->attn_softcap);
        return;
    }
    m->be->ops->attention(m->be, ws->attn, ws->q, meta, &shape, &kv->layers[layer], window, (float)c->attn_scale,
                          (float)c->attn_softcap);
}

void forward_attention(const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                       const struct fwd_meta *meta, int layer)
{
    attention_of(m, ws, kv, meta, layer, 0);
}

/* On a split model each rank's product is a partial sum of the rows of x
 * (T rows of D): the all-reduce makes it the whole on every rank. */
static void sum_over_ranks(const struct model *m, void *x, int T)
{
    if (m->sh.size > 1)
        m->be->ops->all_reduce(m->be, x, (size_t)T * (size_t)m->cfg.hidden_size);
}

/* Folds a sub-block's output ws->o into the residual stream ws->x and norms
 * the result into ws->h with w; Gemma's sandwich norm (post, the
 * sub-block's own) first normalises ws->o, in the same kernel where the
 * backend has one. */
static void fold_and_norm(const struct model *m, struct forward_ws *ws, const struct weight *post,
                          const struct weight *w, int T)
{
    const struct model_config *c = &m->cfg;
    const struct backend_ops *ops = m->be->ops;
    const float eps = (float)c->rms_norm_eps;
    if (c->sandwich_norms && ops->add_normed_rmsnorm) {
        ops->add_normed_rmsnorm(m->be, ws->x, ws->o, post, ws->h, w, T, eps, c->norm_plus_one);
        return;
    }
    if (c->sandwich_norms)
        ops->rmsnorm(m->be, ws->o, ws->o, post, T, eps, c->norm_plus_one);
    ops->add_rmsnorm(m->be, ws->x, ws->o, ws->h, w, T, eps, c->norm_plus_one);
}

/* A row-parallel projection (o, down): into ws->partial where the model
 * keeps f32 partials, else ws->o. */
static void row_parallel(const struct model *m, struct forward_ws *ws, const void *x, const struct weight *w, int T)
{
    if (ws->partial)
        m->be->ops->matmul_f32(m->be, ws->partial, x, w, T);
    else
        m->be->ops->matmul(m->be, ws->o, x, w, T);
}

static void mlp_block(const struct model *m, struct forward_ws *ws, int layer, int T)
{
    const struct model_config *c = &m->cfg;
    const struct backend_ops *ops = m->be->ops;
    struct backend *be = m->be;
    const struct layer_weights *l = &m->w.layers[layer];

    const int F = m->sh.ffn;
    const enum act_fn act = c->act == MODEL_ACT_SILU ? ACT_FN_SILU : ACT_FN_GELU_TANH;
    if (l->w_gate_up.data) { /* one projection, rows gate then up, with the activation */
        ops->gated_matmul(be, ws->act, ws->gate, ws->h, &l->w_gate_up, T, act);
    } else {
        ops->matmul(be, ws->gate, ws->h, &l->w_gate, T);
        ops->matmul(be, ws->up, ws->h, &l->w_up, T);
        ops->gated_act(be, ws->act, ws->gate, ws->up, T, F, F, act);
    }
    row_parallel(m, ws, ws->act, &l->w_down, T);
}

/* fold_and_norm of a sub-block's output, summed over the ranks first when
 * the model is split (f32 partials: in the same kernel where the backend
 * can). */
static void reduce_and_fold(const struct model *m, struct forward_ws *ws, const struct weight *post,
                            const struct weight *w, int T)
{
    const struct model_config *c = &m->cfg;
    if (ws->partial) {
        m->be->ops->all_reduce_fold(m->be, ws->x, ws->partial, c->sandwich_norms ? post : NULL, ws->h, w, T,
                                    (float)c->rms_norm_eps, c->norm_plus_one);
        return;
    }
    sum_over_ranks(m, ws->o, T);
    fold_and_norm(m, ws, post, w, T);
}

static void piece_of(const struct model *m, struct forward_ws *ws, struct kv_store *kv, const struct fwd_meta *meta,
                     int piece, int rope_later)
{
    const struct model_config *c = &m->cfg;
    const struct backend_ops *ops = m->be->ops;
    struct backend *be = m->be;
    const int T = meta->n_tokens, L = c->n_layers;
    const float eps = (float)c->rms_norm_eps;
    CHECK(piece >= 0 && piece <= L);
    if (piece == 0) {
        ops->embed(be, ws->x, meta, &m->w.embed, m->sh.vocab_lo, (float)c->embed_scale);
        sum_over_ranks(m, ws->x, T); /* the one rank whose rows hold the token */
        ops->rmsnorm(be, ws->h, ws->x, &m->w.layers[0].attn_norm, T, eps, c->norm_plus_one);
    } else { /* finish layer piece - 1: o projection, MLP, each output folded into the residual */
        const struct layer_weights *l = &m->w.layers[piece - 1];
        row_parallel(m, ws, ws->attn, &l->wo, T);
        reduce_and_fold(m, ws, &l->post_attn_norm, &l->ffn_norm, T);
        mlp_block(m, ws, piece - 1, T);
        reduce_and_fold(m, ws, &l->post_ffn_norm, piece < L ? &m->w.layers[piece].attn_norm : &m->w.final_norm, T);
    }
    if (piece < L)
        attention_in(m, ws, kv, meta, piece, rope_later);
}

void forward_logits(const struct model *m, struct forward_ws *ws, const struct fwd_meta *meta)
{
    const struct model_config *c = &m->cfg;
    const struct backend_ops *ops = m->be->ops;
    if (meta->n_logits <= 0)
        return;
    ops->gather_rows(m->be, ws->sel, ws->h, meta, c->hidden_size);
    if (m->sh.size == 1) {
        ops->logits(m->be, ws->logits, ws->sel, &m->w.lm_head, meta->n_logits, (float)c->final_softcap);
        return;
    }
    /* each rank its vocabulary's columns; rank 0 gathers them side by side */
    ops->logits(m->be, ws->shard_logits, ws->sel, &m->w.lm_head, meta->n_logits, (float)c->final_softcap);
    ops->gather_logits(m->be, ws->logits, ws->shard_logits, meta->n_logits, m->sh.vocab_n, meta->logit_cols);
}

void forward_piece(const struct model *m, struct forward_ws *ws, struct kv_store *kv, const struct fwd_meta *meta,
                   int piece)
{
    piece_of(m, ws, kv, meta, piece, 0);
}

void model_forward(const struct model *m, struct forward_ws *ws, struct kv_store *kv, const struct fwd_meta *meta)
{
    CHECK(meta->n_tokens >= 1 && meta->n_tokens <= ws->max_tokens && meta->n_logits <= ws->max_logits);
    const int rope_later = rope_in_attention(m, meta);
    for (int i = 0; i <= m->cfg.n_layers; i++) {
        piece_of(m, ws, kv, meta, i, rope_later);
        if (i < m->cfg.n_layers)
            attention_of(m, ws, kv, meta, i, rope_later);
    }
    forward_logits(m, ws, meta);
}
