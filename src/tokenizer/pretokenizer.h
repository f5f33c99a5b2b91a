/* tokenizer.json pre-tokenizers: Split (regex or string, every behaviour,
 * invert), ByteLevel (optional prefix space, optional GPT-2 regex, then the
 * byte-to-character mapping), and Sequence. Each maps a list of text pieces
 * to a finer one; resolved (added-token) pieces pass through untouched. */
#ifndef INFER_TOKENIZER_PRETOKENIZER_H
#define INFER_TOKENIZER_PRETOKENIZER_H

#include <jansson.h>

#include "core/error.h"
#include "tokenizer/pieces.h"

struct pretokenizer;

struct pretokenizer *pretokenizer_parse(const json_t *j, struct err *e, int *failed);
void pretokenizer_free(struct pretokenizer *p);
/* Rewrites *in (the result replaces it; tmp is scratch space). */
void pretokenizer_apply(const struct pretokenizer *p, struct pieces *in, struct pieces *tmp);
/* Whether the chain maps bytes to GPT-2's byte-level alphabet. */
int pretokenizer_is_byte_level(const struct pretokenizer *p);

#endif
