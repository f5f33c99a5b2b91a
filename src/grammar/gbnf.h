/* The GBNF front end: llama.cpp's grammar format (its grammars/README.md)
 * parsed into the grammar IR, so a grammar written for llama.cpp works
 * unchanged. The format as llama.cpp's parser reads it:
 *
 *   rules `name ::= alternatives`, names of [a-zA-Z0-9_-] (llama.cpp's
 *   parser takes no '_', its README does: taken); `|`; sequences; `( )`;
 *   literals "..." and classes [...] / [^...] of code points with the
 *   escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH (the hex escapes
 *   are code points, so "\xC3" is U+00C3, not a byte); `.` any character;
 *   postfix * + ? {m} {m,} {m,n} (and {,n}, an extension), which apply to
 *   the whole preceding item (a whole literal) and may be stacked
 *   (x{2}{3} is (x{2}){3}); `#` comments to the end of the line.
 *
 *   A newline ends a rule except inside parentheses, right after `|` and
 *   right after `::=`; a line starting with `|` is therefore an error, as
 *   in llama.cpp. A rule defined twice takes its last definition (llama.cpp
 *   overwrites). A rule used but never defined is an error naming it and
 *   the line of its first use; so is a grammar without a `root` rule.
 *
 * Differences, all errors where llama.cpp accepts something odd: token
 * references <[id]>, <text>, !<...> ("token references are not
 * supported"); an empty class [] or [^] (llama.cpp silently matches the
 * empty string); a range z-a (llama.cpp matches nothing); a bound above
 * GIR_MAX_REPEAT (llama.cpp turns a maximum above 2000 into "no maximum"
 * and refuses a minimum above 2000); lone surrogates and code points past
 * U+10FFFF; invalid UTF-8 or a NUL byte in the text; parentheses (or
 * stacked quantifiers) nested deeper than GBNF_MAX_DEPTH. */
#ifndef INFER_GRAMMAR_GBNF_H
#define INFER_GRAMMAR_GBNF_H

#include <stddef.h>

#include "core/error.h"
#include "grammar/ir.h"

enum { GBNF_MAX_DEPTH = 1000 };

/* Parses the GBNF grammar text[0..len) into g (a fresh IR, or one whose
 * rule names do not clash) and makes its rule "root" g's root. Returns 0,
 * or -1 with e naming line:column and the problem ("gbnf: line 3, column
 * 7: undefined rule 'valu'"); g may then hold part of the grammar. */
int gbnf_to_gir(struct gir *g, const char *text, size_t len, struct err *e);

#endif
