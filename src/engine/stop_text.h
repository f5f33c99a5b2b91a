/* One output's text as it streams: tokens go through the incremental
 * detokenizer, and stop strings are matched on the text itself, so a stop
 * string split across tokens (or inside one) is found. Text that could be
 * the start of a stop string is held back until the next token settles it;
 * when one matches, the text ends just before it.
 *
 * Without a tokenizer there is no text (and no stop strings). */
#ifndef INFER_ENGINE_STOP_TEXT_H
#define INFER_ENGINE_STOP_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/detok.h"

struct stop_text {
    const struct tokenizer *tok; /* borrowed; NULL: no text */
    struct detok detok;
    char *const *stops; /* borrowed */
    int n_stops;
    char *text; /* the decoded output so far, NUL-terminated */
    size_t len, cap;
    size_t sent;  /* bytes handed out; after a stop, the final length */
    int stopped;
};

/* Skips special tokens in the text (as OpenAI-style APIs do). stops: n_stops
 * non-empty strings, borrowed. Free with stop_text_free. */
void stop_text_init(struct stop_text *st, const struct tokenizer *tok, char *const *stops, int n_stops);
void stop_text_free(struct stop_text *st);

/* Adds one token. *delta / *delta_len: text now safe to hand out (points
 * into st, valid until the next call). Returns 1 when a stop string matched
 * (the text is final), 0 to go on, -1 with e set when decoding failed. */
int stop_text_push(struct stop_text *st, int32_t id, const char **delta, size_t *delta_len, struct err *e);

/* The stream ended for another reason (eos, length): whatever was held back,
 * unless a stop string matches in it after all (then returns 1). */
int stop_text_finish(struct stop_text *st, const char **delta, size_t *delta_len, struct err *e);

/* The final text (or the text so far) and its length. */
static inline const char *stop_text_final(const struct stop_text *st, size_t *len)
{
    *len = st->stopped ? st->sent : st->len;
    return st->text ? st->text : "";
}

#endif
