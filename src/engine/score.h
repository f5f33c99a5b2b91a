/* Scoring a known token sequence through the engine: the logits of every
 * position, the first tokens prefilled as a prompt (in chunks of the token
 * budget), the rest fed one per step as a forced continuation, so that
 * prefill and decode steps both run. What `infer logits` and the parity
 * tests use. */
#ifndef INFER_ENGINE_SCORE_H
#define INFER_ENGINE_SCORE_H

#include "engine/engine.h"

/* rows[n, vocab] = the f32 logits that ids[0..n) produce, position by
 * position: ids[0, prefill) as the prompt (1 <= prefill <= n), the rest
 * fed one per step. o's max_context must hold n + 1 tokens (the last
 * position's logits come with one more draw); o->return_logits is set
 * here. A fresh engine runs it and is gone on return. */
int engine_score(struct model *m, const struct engine_opts *o, const int32_t *ids, int n, int prefill,
                 float *rows, struct err *e);

#endif
