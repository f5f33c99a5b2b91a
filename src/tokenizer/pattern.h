/* A tokenizer.json pattern: {"String": "..."} (literal) or {"Regex": "..."}
 * (PCRE2 with Unicode properties, JIT-compiled). find_all splits a text
 * into matches and the gaps between them, as tokenizers' Pattern does. */
#ifndef INFER_TOKENIZER_PATTERN_H
#define INFER_TOKENIZER_PATTERN_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

struct pattern;

struct pattern_span {
    size_t start, end;
    int is_match;
};

struct pattern *pattern_parse(const json_t *j, const char *where, struct err *e);
void pattern_free(struct pattern *p);

/* Covers s[0, len) with spans in order (gaps have is_match 0). Returns the
 * count; *spans is grown as needed (caller frees). */
int pattern_find_all(const struct pattern *p, const char *s, size_t len, struct pattern_span **spans,
                     int *cap);

#endif
