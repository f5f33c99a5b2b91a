/* UTF-8 helpers with Rust's semantics where tokenizers relies on them:
 * validation, lossy conversion (one U+FFFD per maximal invalid subpart),
 * char::is_whitespace, and the word characters of single_word matching. */
#ifndef INFER_TOKENIZER_UTF8_H
#define INFER_TOKENIZER_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid prefix of s (== len when all of it is valid). */
size_t utf8_valid_prefix(const char *s, size_t len);
/* Writes the lossy conversion of s into out (capacity >= 3 * len); returns its length. */
size_t utf8_lossy(char *out, const char *s, size_t len);
/* Decodes the character at s (valid UTF-8); sets *cp and returns its byte length. */
int utf8_decode(const char *s, uint32_t *cp);
/* Start of the character that ends at s[end - 1] (valid UTF-8). */
size_t utf8_prev(const char *s, size_t end);
int utf8_is_whitespace(uint32_t cp);
int utf8_is_word_char(uint32_t cp);

#endif
