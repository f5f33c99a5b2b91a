/* A set of characters as JSON string content, for the front ends that
 * constrain what a JSON string decodes to (regex in JSON-string mode, the
 * JSON Schema strings): the IR expression of one character of the set in
 * every way it may be written between the quotes of a JSON string literal.
 * That is the character raw where JSON allows it (not '"', '\' or a
 * control character), its short escape (\" \\ \/ \b \f \n \r \t) where it
 * has one, and \uXXXX in either hex case, a character outside the BMP as
 * a surrogate pair. A \u escape never spells a lone surrogate, so each
 * escape decodes to exactly one character of the set. */
#ifndef INFER_GRAMMAR_JSON_CHARS_H
#define INFER_GRAMMAR_JSON_CHARS_H

#include "grammar/cpset.h"
#include "grammar/ir.h"

/* s normalized (cpset_norm). */
int json_chars(struct gir *g, const struct cpset *s);

#endif
