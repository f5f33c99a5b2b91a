/* A small, fast JSON scanner for the big parts of tokenizer.json (a 262k
 * vocabulary and half a million merges take a general DOM parser over a
 * second). It reads in place: skip a value, read a string (unescaped into a
 * caller buffer), read an integer. Errors carry the byte offset. */
#ifndef INFER_TOKENIZER_JSON_SCAN_H
#define INFER_TOKENIZER_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>

struct json_scan {
    const char *s;
    size_t len;
    size_t pos;
    const char *error; /* first error, NULL if none */
    size_t error_pos;
};

void json_scan_ws(struct json_scan *j);
/* Consumes c (after whitespace); returns 1 if it was there. */
int json_scan_char(struct json_scan *j, char c);
/* Reads a string into *buf (grown as needed, NUL-terminated); returns its
 * length, or -1 on error. */
long json_scan_string(struct json_scan *j, char **buf, size_t *cap);
int json_scan_int(struct json_scan *j, int64_t *out);
/* Skips any value; returns 0, or -1 on error. */
int json_scan_skip(struct json_scan *j);
int json_scan_fail(struct json_scan *j, const char *msg);

#endif
