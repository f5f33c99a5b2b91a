/* Random-weight checkpoints (`infer mkmodel`): every tensor the config needs,
 * in bf16. Projections and embeddings ~ N(0, initializer_range); norm scales
 * at their neutral value (1, or 0 for Gemma's (1 + w)) plus N(0, 0.1) noise,
 * so that a mixed-up norm convention shows in parity tests. Values depend
 * only on (seed, tensor, position), not on the thread count. */
#ifndef INFER_MODEL_RANDOM_INIT_H
#define INFER_MODEL_RANDOM_INIT_H

#include <stdint.h>

#include "core/threadpool.h"
#include "io/model_config.h"

/* Writes out_path (a model.safetensors) atomically. */
int random_init_write(const struct model_config *cfg, const char *out_path, uint64_t seed,
                      struct threadpool *pool, struct err *e);

#endif
