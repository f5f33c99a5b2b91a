/* tokenizer.json decoders: ByteLevel, Replace, ByteFallback, Fuse, Strip
 * and Sequence, each a step from a list of token strings to a list of
 * strings, joined at the end, as tokenizers' decode_chain does. */
#ifndef INFER_TOKENIZER_DECODER_H
#define INFER_TOKENIZER_DECODER_H

#include <jansson.h>

#include "core/error.h"
#include "tokenizer/pieces.h"

struct decoder;

struct decoder *decoder_parse(const json_t *j, struct err *e, int *failed);
void decoder_free(struct decoder *d);
/* Runs the chain over tokens (rewritten in place; tmp is scratch). */
void decoder_apply(const struct decoder *d, struct pieces *tokens, struct pieces *tmp);
/* The same for the bytes a token adds in the middle of a text: invalid
 * UTF-8 kept as it is (a byte token's one byte) and Strip skipped (it cuts
 * only the ends of a whole text). */
void decoder_apply_raw(const struct decoder *d, struct pieces *tokens, struct pieces *tmp);

#endif
