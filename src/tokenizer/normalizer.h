/* tokenizer.json normalizers: NFC, NFD, NFKC, NFKD (utf8proc), Replace
 * (string or regex pattern), Prepend, and Sequence of these. */
#ifndef INFER_TOKENIZER_NORMALIZER_H
#define INFER_TOKENIZER_NORMALIZER_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

struct normalizer;

/* NULL json (no normalizer) gives NULL with no error; check e->msg[0] for
 * failure (an unsupported type is refused by name). */
struct normalizer *normalizer_parse(const json_t *j, struct err *e, int *failed);
void normalizer_free(struct normalizer *n);
/* Returns a malloc'ed normalized copy of s (NUL-terminated), length in *out_len. */
char *normalizer_apply(const struct normalizer *n, const char *s, size_t len, size_t *out_len);

#endif
