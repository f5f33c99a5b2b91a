/* A reference recognizer for the grammar IR (src/grammar/ir.h), the oracle
 * the compiled automata are tested against: memoized recursion over the
 * expressions, computing the set of end positions each can reach. Slow
 * (quadratic and worse) and meant for short test strings only. */
#ifndef INFER_TESTS_GIR_MATCH_H
#define INFER_TESTS_GIR_MATCH_H

#include <stddef.h>

#include "grammar/ir.h"

/* Whether the root rule matches all of s[0..n). */
int gir_match(const struct gir *g, const char *s, size_t n);
/* Whether s[0..n) is a prefix of some string the root rule matches. */
int gir_match_prefix(const struct gir *g, const char *s, size_t n);
/* gir_match of a C string. */
int gir_match_str(const struct gir *g, const char *s);

#endif
