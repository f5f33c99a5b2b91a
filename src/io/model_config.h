/* config.json -> struct model_config for the supported architectures:
 * LlamaForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM (model_type
 * gemma3_text). Legacy (transformers 4) and current (rope_parameters) ways of
 * writing RoPE settings are both read. Anything we cannot run faithfully is
 * refused with a message naming the field. */
#ifndef INFER_IO_MODEL_CONFIG_H
#define INFER_IO_MODEL_CONFIG_H

#include <stdint.h>

#include "core/error.h"

#define MODEL_MAX_LAYERS 256
#define MODEL_MAX_EOS 8

enum model_arch { MODEL_ARCH_LLAMA, MODEL_ARCH_QWEN3, MODEL_ARCH_GEMMA3 };

/* FACTORS: each frequency divided by its own factor, as llama.cpp's
 * converter writes Llama 3's scaling into a GGUF (tensor rope_freqs.weight). */
enum rope_type { ROPE_TYPE_DEFAULT, ROPE_TYPE_LINEAR, ROPE_TYPE_LLAMA3, ROPE_TYPE_FACTORS };

#define ROPE_MAX_PAIRS 256 /* head_dim / 2 of a model with frequency factors */

enum model_act { MODEL_ACT_SILU, MODEL_ACT_GELU_TANH };

struct rope_config {
    enum rope_type type;
    double theta;
    double factor;                 /* linear, llama3 */
    double low_freq_factor;        /* llama3 */
    double high_freq_factor;       /* llama3 */
    double original_max_positions; /* llama3 */
    float freq_factors[ROPE_MAX_PAIRS]; /* factors: one per frequency (head_dim / 2) */
};

struct model_config {
    enum model_arch arch;
    char arch_name[64];  /* "LlamaForCausalLM", ... as in config.json */
    char model_type[32]; /* "llama", "qwen3", "gemma3_text" */
    int vocab_size;
    int hidden_size;
    int intermediate_size;
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim;
    int max_positions;
    double rms_norm_eps;
    enum model_act act;
    int tie_embeddings;
    int qk_norm;            /* per-head RMSNorm of q and k before RoPE (Qwen3, Gemma 3) */
    int norm_plus_one;      /* RMSNorm scales by (1 + w) (Gemma) instead of w */
    int sandwich_norms;     /* post-attention and pre/post feed-forward norms (Gemma 3) */
    double embed_scale;     /* multiply embeddings by this (Gemma: sqrt(hidden)), else 1 */
    double attn_scale;      /* softmax scale: head_dim^-0.5, or query_pre_attn_scalar^-0.5 */
    double attn_softcap;    /* 0 = none */
    double final_softcap;   /* 0 = none */
    int sliding_window;     /* tokens a sliding layer sees, itself included; 0 = none */
    uint8_t layer_sliding[MODEL_MAX_LAYERS]; /* 1 = this layer uses the sliding window */
    struct rope_config rope_global;          /* full-attention layers */
    struct rope_config rope_local;           /* sliding layers (Gemma 3) */
    int bos_id;                              /* -1 if unknown */
    int eos_ids[MODEL_MAX_EOS];
    int n_eos;
    double initializer_range;
};

/* Parses a config.json file. Returns 0, or -1 with e naming path and field. */
int model_config_load(const char *path, struct model_config *cfg, struct err *e);
/* Same from a JSON text already in memory (source names it in errors). */
int model_config_parse(const char *json, size_t len, const char *source, struct model_config *cfg,
                       struct err *e);

const char *model_arch_name(enum model_arch a);

#endif
