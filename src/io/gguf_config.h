/* A GGUF file's metadata -> struct model_config, for the architectures the
 * engine runs: general.architecture llama, qwen3 or gemma3. Anything we
 * cannot run faithfully (RoPE scaling, value length unlike key length) is
 * refused with a message naming the key. */
#ifndef INFER_IO_GGUF_CONFIG_H
#define INFER_IO_GGUF_CONFIG_H

#include "io/gguf.h"
#include "io/model_config.h"

int model_config_from_gguf(const struct gguf_file *f, struct model_config *cfg, struct err *e);

#endif
