/* A loaded model: its configuration, the checkpoint it came from, its
 * weights in a backend's memory and the per-layer RoPE tables. */
#ifndef INFER_MODEL_MODEL_H
#define INFER_MODEL_MODEL_H

#include "backend/ops.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "parallel/shard.h"
#include "model/weights.h"

struct model {
    struct model_config cfg; /* the whole model's */
    struct model_shard sh;   /* this rank's share (the whole model on one rank) */
    struct checkpoint *ck; /* kept open: CPU weights point into its mapping */
    struct model_weights w;
    struct backend *be;        /* borrowed */
    float *inv_freq_global;    /* [head_dim / 2] in backend memory */
    float *inv_freq_local;     /* [head_dim / 2] in backend memory */
};

/* Loads a model onto be from dir: a Hugging Face checkpoint directory
 * (config.json + safetensors), or a .gguf file (configuration from its
 * metadata, weights dequantised). Returns NULL with e set (naming the file)
 * on failure. Free with model_free. */
struct model *model_load(const char *dir, struct backend *be, struct err *e);
/* The same, rank's share of the model split over size ranks (tensor
 * parallelism); the refusals name --tensor-parallel-size. */
struct model *model_load_shard(const char *dir, struct backend *be, int rank, int size, struct err *e);
/* The configuration and checkpoint model_load reads from path (either form);
 * -1 with e set. keep_blocks: a GGUF file's matrices stay in their blocks
 * (for a backend with block_weights; io/gguf_checkpoint.h). Close *ck with
 * checkpoint_close. */
int model_open_checkpoint(const char *path, struct model_config *cfg, int keep_blocks, struct checkpoint **ck,
                          struct err *e);
/* Only the configuration (config.json, or a GGUF file's metadata). */
int model_read_config(const char *path, struct model_config *cfg, struct err *e);
/* 1 when path names a GGUF file (by its .gguf suffix). */
int model_path_is_gguf(const char *path);
void model_free(struct model *m);

static inline const float *model_layer_inv_freq(const struct model *m, int layer)
{
    return m->cfg.layer_sliding[layer] ? m->inv_freq_local : m->inv_freq_global;
}

#endif
