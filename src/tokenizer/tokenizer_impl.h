/* The tokenizer's parts, shared by its two loaders: tokenizer.json
 * (tokenizer.c) and GGUF metadata (tokenizer_gguf.c). */
#ifndef INFER_TOKENIZER_TOKENIZER_IMPL_H
#define INFER_TOKENIZER_TOKENIZER_IMPL_H

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pretokenizer.h"

struct tokenizer {
    struct bpe bpe; /* the vocabulary (both models) and the merges (BPE) */
    float *spm_scores; /* non-NULL: the model is SentencePiece by score (spm.h), not BPE */
    struct added_tokens added;
    struct normalizer *normalizer;
    struct pretokenizer *pre;
    struct decoder *decoder;
    struct post_processor post;
    int32_t size; /* max id + 1 */
};

/* Sets id's string (decoding uses it); -1 when id is out of range. */
int tokenizer_set_token(struct bpe *b, int32_t id, const char *s, size_t len);

#endif
