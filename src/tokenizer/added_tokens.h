/* Added tokens (specials like <|eot_id|> and extras like <tool_call>):
 * found in the input before the model sees it, leftmost-longest, honouring
 * each token's lstrip / rstrip / single_word flags. Tokens with
 * normalized=false are matched in the raw text, the others in the
 * normalized text, as tokenizers' AddedVocabulary does. */
#ifndef INFER_TOKENIZER_ADDED_TOKENS_H
#define INFER_TOKENIZER_ADDED_TOKENS_H

#include <stdint.h>

#include "tokenizer/pieces.h"

struct added_token {
    char *content;
    size_t len;
    int32_t id;
    int special, lstrip, rstrip, single_word, normalized;
};

struct trie;

struct added_tokens {
    struct added_token *v;
    int n;
    struct trie *raw;        /* normalized == 0 */
    struct trie *normalized; /* normalized == 1 */
    int32_t *index_of_id;    /* [max_id + 1] index into v, or -1 */
    int32_t max_id;
};

/* Builds the tries once every token has been appended to v. */
void added_tokens_build(struct added_tokens *a);
void added_tokens_free(struct added_tokens *a);
/* Splits text s into pieces: matched tokens (id set) and the text between.
 * which: 0 = raw tokens, 1 = normalized tokens. */
void added_tokens_split(const struct added_tokens *a, int which, const char *s, size_t len, struct pieces *out);
/* The token with this id, or NULL. */
const struct added_token *added_tokens_by_id(const struct added_tokens *a, int32_t id);

#endif
