/* SentencePiece BPE as llama.cpp runs a GGUF "llama" vocabulary (its SPM
 * tokenizer): the characters of a text become symbols; the adjacent pair
 * whose concatenation is a token of the highest score merges first (the
 * leftmost among equal scores), until no adjacent pair forms a token; a
 * symbol that is not a token (a character outside the vocabulary) becomes
 * its byte tokens "<0xNN>" when the vocabulary has them all, else one unk
 * token (else nothing). No merge list: the scores are
 * the merge order. */
#ifndef INFER_TOKENIZER_SPM_H
#define INFER_TOKENIZER_SPM_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/bpe.h"

/* vocab: the token strings and byte tokens (its merge table is unused);
 * scores: [vocab->n_ids]. Appends the ids of text to *ids. */
void spm_encode(const struct bpe *vocab, const float *scores, const char *text, size_t len, int32_t **ids, int *n,
                int *cap);

#endif
