/* The weights of one model and their Hugging Face names. One table of
 * weight specs (name, shape, kind) per configuration drives loading,
 * random initialisation (mkmodel) and parameter counting alike. */
#ifndef INFER_MODEL_WEIGHTS_H
#define INFER_MODEL_WEIGHTS_H

#include "backend/ops.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "parallel/shard.h"

struct layer_weights {
    struct weight attn_norm;      /* (D) input_layernorm */
    struct weight wq;             /* (n_heads*head_dim, D) */
    struct weight wk;             /* (n_kv_heads*head_dim, D) */
    struct weight wv;             /* (n_kv_heads*head_dim, D) */
    struct weight wo;             /* (D, n_heads*head_dim) */
    struct weight q_norm;         /* (head_dim) Qwen3, Gemma 3 */
    struct weight k_norm;         /* (head_dim) Qwen3, Gemma 3 */
    struct weight post_attn_norm; /* (D) Gemma 3: on the attention output */
    struct weight ffn_norm;       /* (D) before the MLP (Llama's post_attention_layernorm) */
    struct weight post_ffn_norm;  /* (D) Gemma 3: on the MLP output */
    struct weight w_gate;         /* (F, D) */
    struct weight w_up;           /* (F, D) */
    struct weight w_down;         /* (D, F) */
    /* Fused copies, on backends that fuse (then wq/wk/wv and w_gate/w_up stay empty): */
    struct weight wqkv;      /* ((n_heads + 2*n_kv_heads)*head_dim, D) rows of wq, wk, wv */
    struct weight w_gate_up; /* (2F, D) rows of w_gate, w_up */
};

/* Shapes are the rank's share when the model is split (model/shard.h):
 * heads, KV heads, MLP columns and vocabulary rows local. */
struct model_weights {
    struct weight embed;      /* (V, D) */
    struct weight final_norm; /* (D) */
    struct weight lm_head;    /* (V, D); the embedding itself when tied */
    struct layer_weights *layers; /* [n_layers] */
    void **owned; /* column slices made on the host, kept while a backend borrows them */
    int n_owned;
};

enum weight_kind {
    WEIGHT_KIND_MATRIX,    /* projections and embeddings: N(0, initializer_range) */
    WEIGHT_KIND_NORM,      /* RMSNorm scales: neutral value (1, or 0 for (1 + w)) */
};

struct weight_spec {
    char name[96];
    int ndim;     /* 1 or 2, as stored */
    int64_t rows; /* 1 for vectors */
    int64_t cols;
    enum weight_kind kind;
    enum weight_split split; /* how a rank's share is cut from it */
    struct weight *slot;     /* where it loads to, in the model_weights given */
};

/* Lists every stored tensor of cfg in a stable order. slots point into w
 * (whose layers array must already have cfg->n_layers entries). Returns the
 * count; *specs is malloc'ed, caller frees. */
int weight_specs_build(const struct model_config *cfg, struct model_weights *w,
                       struct weight_spec **specs);

/* Parameters as transformers counts them (tied embeddings once). */
int64_t weight_specs_count_params(const struct weight_spec *specs, int n);
/* The same straight from a configuration. */
int64_t model_config_count_params(const struct model_config *cfg);

/* The checkpoint tensor for spec, after checking its shape and dtype; NULL
 * with e naming the file and tensor when missing or wrong. */
const struct st_tensor *weight_spec_find(const struct weight_spec *spec, const struct checkpoint *ck,
                                         const struct model_config *cfg, struct err *e);

/* Finds, checks (shape, float dtype) and uploads every weight of cfg from ck
 * to be, or the rank's share of it (sh). Messages name the file and tensor.
 * On failure nothing stays uploaded. Free with model_weights_free. */
int model_weights_load(struct model_weights *w, const struct model_config *cfg, const struct model_shard *sh,
                       const struct checkpoint *ck, struct backend *be, struct err *e);
/* Bytes of the rank's share of the weights as the backend stores them
 * (its activation dtype), each tensor rounded up to 256 bytes. */
size_t model_weights_bytes(const struct model_config *cfg, const struct model_shard *sh, const struct backend *be);
void model_weights_free(struct model_weights *w, const struct model_config *cfg, struct backend *be);
/* Bytes of the loaded matrices a decode step reads, in the types the
 * backend holds them: every matrix but the embedding table (one row a
 * token), the LM head included (the table itself when tied). */
/* The loaded weights' bytes by the type the backend holds them in, as
 * "270.1 MB (Q8_0_R8 245.9 MB, Q4_K 13.3 MB, ...)" into buf. */
void model_weights_summary(const struct model_weights *w, const struct model_config *cfg, char *buf, size_t size);
double model_weights_step_bytes(const struct model_weights *w, const struct model_config *cfg);

#endif
