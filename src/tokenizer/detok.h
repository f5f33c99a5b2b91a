/* Incremental detokenization for streaming: after each token, hands out the
 * text that is now certain, never half a UTF-8 character, such that the
 * pieces joined equal a one-shot tokenizer_decode of all the ids.
 *
 * It decodes a short window of ids starting at the last clean cut (a token
 * boundary where everything before decoded to complete characters) and
 * holds back trailing U+FFFD, which may be the first bytes of a character
 * whose remaining bytes are still to come. */
#ifndef INFER_TOKENIZER_DETOK_H
#define INFER_TOKENIZER_DETOK_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

struct detok {
    const struct tokenizer *tok;
    int skip_special;
    int32_t *window; /* ids since the last clean cut */
    int n, cap;
    size_t emitted; /* bytes of the window's text already handed out */
};

void detok_init(struct detok *d, const struct tokenizer *tok, int skip_special);
void detok_free(struct detok *d);
/* Adds one id; *piece (malloc'ed, may be empty) is the new text. */
int detok_push(struct detok *d, int32_t id, char **piece, size_t *len, struct err *e);
/* Whatever was held back (at the end of a stream). */
int detok_flush(struct detok *d, char **piece, size_t *len, struct err *e);

#endif
