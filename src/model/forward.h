/* The forward pass, written once against the op table, and the activation
 * workspace it runs in (allocated once, sized for the largest step). On a
 * model split over ranks (model/shard.h) every rank runs it on its share:
 * heads and MLP columns local, an all-reduce after the o and down
 * projections and after the embedding, and the LM head's columns gathered
 * on rank 0. Buffer shapes below are the rank's. */
#ifndef INFER_MODEL_FORWARD_H
#define INFER_MODEL_FORWARD_H

#include "model/kv_store.h"
#include "model/model.h"

struct forward_ws {
    int max_tokens; /* rows the buffers hold */
    int max_logits; /* logit rows */
    void *x;        /* (max_tokens, D) residual stream */
    void *h;        /* (max_tokens, D) normed input of a sub-block */
    void *q;        /* (max_tokens, n_heads*head_dim) RoPE'd queries, attention's input */
    void *k;        /* (max_tokens, n_kv_heads*head_dim) unfused k projection */
    void *v;        /* (max_tokens, n_kv_heads*head_dim) unfused v projection */
    void *qkv;      /* (max_tokens, (n_heads + 2*n_kv_heads)*head_dim) fused q|k|v projection */
    void *attn;     /* (max_tokens, n_heads*head_dim) attention output */
    void *o;        /* (max_tokens, D) output of a sub-block (attention or MLP) */
    void *gate;     /* (max_tokens, 2F) gate projection, or fused gate|up rows */
    void *up;       /* (max_tokens, F) unfused up projection */
    void *act;      /* (max_tokens, F) act(gate) * up, the down projection's input */
    void *sel;      /* (max_logits, D) rows that need logits */
    float *logits;  /* (max_logits, V) on rank 0 (the only rank that draws), else empty */
    float *shard_logits; /* (max_logits, V / ranks) this rank's logit columns, when the model is split */
    float *partial; /* (max_tokens, D) f32 row-parallel products of a split model, where activations are
                       narrower (forward.c: partials_f32), else empty */
};

/* Allocates every buffer in be's memory. Free with forward_ws_free. */
int forward_ws_init(struct forward_ws *ws, const struct model *m, int max_tokens, int max_logits,
                    struct err *e);
void forward_ws_free(struct forward_ws *ws, const struct model *m);

/* Queues one step over the uploaded metadata (the backend's meta_upload
 * gave meta; its counts fit ws): writes the new tokens' k/v into kv and
 * leaves the logits of meta's logit rows in ws->logits, in backend memory. */
void model_forward(const struct model *m, struct forward_ws *ws, struct kv_store *kv, const struct fwd_meta *meta);

/* The same step in pieces, for graphs captured between attention calls
 * (`--cuda-graph-mode piecewise`): model_forward is pieces 0 .. n_layers
 * with forward_attention(i) after piece i (i < n_layers), then
 * forward_logits. Piece 0 embeds and
 * makes layer 0's attention input; piece i finishes layer i - 1 (o
 * projection, MLP) and makes layer i's attention input (the last piece ends
 * with the final norm). */
void forward_piece(const struct model *m, struct forward_ws *ws, struct kv_store *kv, const struct fwd_meta *meta,
                   int piece);
void forward_attention(const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                       const struct fwd_meta *meta, int layer);
/* The meta's logit rows (gathered from ws->h) to ws->logits. */
void forward_logits(const struct model *m, struct forward_ws *ws, const struct fwd_meta *meta);

#endif
