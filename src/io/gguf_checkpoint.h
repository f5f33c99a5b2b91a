/* A GGUF file presented as a checkpoint (struct checkpoint): its tensors
 * dequantised at load time under their Hugging Face names and layouts, so
 * the weight loader treats it like safetensors (gguf_checkpoint.c says what
 * is converted). */
#ifndef INFER_IO_GGUF_CHECKPOINT_H
#define INFER_IO_GGUF_CHECKPOINT_H

#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io/model_config.h"

/* NULL with e naming the file and tensor when a tensor has no place in cfg's
 * architecture, more than 2 dims, or a type that cannot be dequantised. The
 * result does not refer to f: close f when done. */
struct checkpoint *checkpoint_open_gguf(const struct gguf_file *f, const struct model_config *cfg, struct err *e);

#endif
