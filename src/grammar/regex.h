/* The regular-expression front end: a pattern becomes a grammar IR
 * expression matching exactly the strings the pattern matches in full.
 * It serves JSON Schema's "pattern" (ECMA-262 syntax) and vLLM-style
 * guided_regex requests (Python `re` syntax), so it accepts the common
 * subset of the two and refuses, with the construct and its byte offset,
 * what a finite automaton cannot express or what the two dialects read
 * differently:
 *
 *   accepted: literals (UTF-8: a multi-byte character is one character);
 *     `.` (any character but \n); \d \D \w \W (ASCII) and \s \S (the
 *     ECMA-262 white space and line terminators); \n \t \r \f \v \0 \cX
 *     \xHH \uHHHH (a surrogate pair \uD83D\uDE00 is one character)
 *     \u{H...} \UHHHHHHHH; escaped punctuation; classes [...] and [^...]
 *     with ranges, class escapes, \b as backspace and `-` literal at
 *     either end; groups (...), (?:...), (?<n>...), (?P<n>...);
 *     alternation; the quantifiers * + ? {n} {n,} {n,m} {,m} (as {0,m},
 *     Python's reading) and their lazy forms (the same language); `^` at
 *     the very start and `$` at the very end of the pattern or of one of
 *     its top-level alternatives; a `{` or `}` that starts no quantifier
 *     and a lone `]` stand for themselves.
 *   refused: backreferences (\1, \k<n>, (?P=n)), lookaround, \b \B,
 *     \A \Z, flag groups such as (?i), atomic groups, possessive
 *     quantifiers, \p{..} \P{..}, octal escapes, POSIX classes [[:a:]],
 *     an empty class [] or [^] (ECMA-262 and Python read it differently:
 *     write \] for a literal bracket), anchors anywhere else, bounds above
 *     GIR_MAX_REPEAT, nesting deeper than REGEX_MAX_DEPTH, and any
 *     syntax error (unbalanced parentheses, a range z-a, nothing to
 *     repeat, invalid UTF-8).
 *
 * `$` means the end of the string (ECMA-262; Python's `$` also matches
 * before a final newline, which only matters when searching). */
#ifndef INFER_GRAMMAR_REGEX_H
#define INFER_GRAMMAR_REGEX_H

#include <stddef.h>

#include "core/error.h"
#include "grammar/ir.h"

enum {
    /* The regex applies to the decoded characters of a JSON string and the
     * expression matches the way they are written between the quotes of a
     * JSON string literal: each character raw where JSON allows it or as
     * any of its escapes: \" \\ \/ \b \f \n \r \t, \uXXXX in either hex
     * case (a character outside the BMP as a surrogate pair); a raw '"',
     * '\' or control character never appears. */
    REGEX_JSON_STRING = 1,
    /* JSON Schema "pattern" semantics: the pattern is searched for, not
     * matched in full; a top-level alternative without ^ (or $) gets "any
     * characters" before (or after) it. */
    REGEX_SEARCH = 2,
};

enum { REGEX_MAX_DEPTH = 1000 }; /* group nesting */

/* An expression of g matching exactly the strings re[0..len) matches in
 * full (with REGEX_SEARCH: the strings containing a match, respecting the
 * anchors). Returns the expression, or -1 with e naming the construct and
 * its byte offset ("regex: backreference \1 at offset 4 is not
 * supported"). A pattern's error leaves g usable (only a failure of g
 * itself, such as its size limit, fails g), so a caller may go on without
 * the pattern. */
int regex_to_gx(struct gir *g, const char *re, size_t len, unsigned flags, struct err *e);

#endif
