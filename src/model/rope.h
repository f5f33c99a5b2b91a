/* RoPE inverse frequencies for one rope_config, as transformers'
 * ROPE_INIT_FUNCTIONS compute them (default, linear, llama3). */
#ifndef INFER_MODEL_ROPE_H
#define INFER_MODEL_ROPE_H

#include "io/model_config.h"

/* Fills inv_freq[head_dim / 2]. */
void rope_inv_freq(const struct rope_config *r, int head_dim, float *inv_freq);

#endif
