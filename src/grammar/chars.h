/* Single characters as the grammar front ends read and write them: the
 * value of a hex digit (the \x \u \U escapes of regex and GBNF) and the
 * UTF-8 bytes of a code point (a literal's text, built a character at a
 * time). The names carry the module's prefix because the libraries linked
 * beside it export plain ones (jansson has a global utf8_encode). */
#ifndef INFER_GRAMMAR_CHARS_H
#define INFER_GRAMMAR_CHARS_H

#include <stddef.h>
#include <stdint.h>

/* c's value as a hex digit (either case), or -1 (also for c < 0: the end
 * of the text). */
int chars_hex_value(int c);
/* Writes the 1 to 4 bytes of cp (a scalar value) to out; returns how many. */
size_t chars_utf8(uint32_t cp, char *out);

#endif
