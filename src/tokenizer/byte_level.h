/* GPT-2's byte-level alphabet: every byte maps to a printable code point
 * (printable Latin-1 bytes to themselves, the rest to U+0100 onwards), so
 * that BPE over "characters" covers all byte strings. */
#ifndef INFER_TOKENIZER_BYTE_LEVEL_H
#define INFER_TOKENIZER_BYTE_LEVEL_H

#include <stddef.h>
#include <stdint.h>

/* UTF-8 encoding of the code point byte b maps to (1 or 2 bytes, NUL-terminated). */
const char *byte_level_char(uint8_t b);
/* Appends the byte-level encoding of src to dst (capacity >= 2 * len). Returns bytes written. */
size_t byte_level_encode(char *dst, const char *src, size_t len);
/* The byte a code point stands for, or -1 when it is not in the alphabet. */
int byte_level_byte(uint32_t cp);

#endif
