/* A GGUF file presented as a checkpoint (struct checkpoint): its tensors
 * under their Hugging Face names and layouts, kept in their blocks or
 * dequantised at load time, so the weight loader treats it like
 * safetensors (gguf_checkpoint.c says what is converted). */
#ifndef INFER_IO_GGUF_CHECKPOINT_H
#define INFER_IO_GGUF_CHECKPOINT_H

#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io/model_config.h"

/* NULL with e naming the file and tensor when a tensor has no place in cfg's
 * architecture, more than 2 dims, or a type that cannot be dequantised.
 * keep_blocks: matrices stay in the file's types (core/dtype.h) where their
 * rows are whole blocks, in its mapping, which the checkpoint then takes
 * (gguf_take_map). Close f when done either way. */
struct checkpoint *checkpoint_open_gguf(struct gguf_file *f, const struct model_config *cfg, int keep_blocks,
                                        struct err *e);

#endif
