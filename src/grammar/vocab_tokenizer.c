/* A model's vocabulary for the grammar engine, from its tokenizer: every
 * id's bytes as the decoder writes them mid-text, its special tokens, and
 * ids past the tokenizer (a padded embedding) that never match. A tokenizer
 * may also hold more ids than the model has rows (Gemma 3's 262,145 for its
 * text models' 262,144): the vocabulary is the model's. */
#include <stdlib.h>

#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

struct grammar_vocab *grammar_vocab_from_tokenizer(const struct tokenizer *tok, int n_vocab, const int32_t *eos,
                                                   int n_eos)
{
    const int n_tok = tokenizer_vocab_size(tok); /* past n_vocab: ids the model cannot draw, left out */
    char **bytes = xmalloc((size_t)n_vocab * sizeof(char *));
    size_t *lens = xmalloc((size_t)n_vocab * sizeof(size_t));
    uint8_t *special = xcalloc((size_t)n_vocab, 1);
    for (int i = 0; i < n_vocab; i++) {
        if (i < n_tok) {
            tokenizer_token_bytes(tok, i, &bytes[i], &lens[i]);
            special[i] = (uint8_t)tokenizer_is_special(tok, i);
        } else {
            bytes[i] = NULL;
            lens[i] = 0;
        }
    }
    struct grammar_vocab *v = grammar_vocab_new(n_vocab, (const char *const *)bytes, lens, special, eos, n_eos);
    for (int i = 0; i < n_vocab; i++)
        free(bytes[i]);
    free(bytes), free(lens), free(special);
    return v;
}
