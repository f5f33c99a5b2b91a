/* The one UTF-8 decoder, and the helpers around it: validation and lossy
 * conversion (one U+FFFD per maximal invalid subpart, as Rust's
 * String::from_utf8_lossy, which tokenizers relies on), stepping through
 * characters, Rust's char::is_whitespace and the word characters of
 * tokenizers' single_word matching. Python's view of characters (the
 * template's str methods) is template/ustr.c, on top of this decoder. */
#ifndef INFER_CORE_UTF8_H
#define INFER_CORE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid prefix of s (== len when all of it is valid). */
size_t utf8_valid_prefix(const char *s, size_t len);
/* Writes the lossy conversion of s into out (capacity >= 3 * len); returns its length. */
size_t utf8_lossy(char *out, const char *s, size_t len);
/* The character at s[*i] of s[0, n), *i moved past it. Valid UTF-8 gives
 * its code point; a stray continuation byte gives U+FFFD (one byte), a
 * sequence cut short by n what its bytes hold. */
uint32_t utf8_next(const char *s, size_t n, size_t *i);
/* Characters in s[0, n) (its bytes that are not continuation bytes). */
size_t utf8_count(const char *s, size_t n);
/* The byte offset of character index cp_index in s[0, n) (n past the end). */
size_t utf8_offset(const char *s, size_t n, size_t cp_index);
/* Start of the character that ends at s[end - 1] (valid UTF-8). */
size_t utf8_prev(const char *s, size_t end);
int utf8_is_whitespace(uint32_t cp);
int utf8_is_word_char(uint32_t cp);

#endif
