/* The JSON Schema front end: a schema (Draft 2020-12, as OpenAI's
 * structured outputs use it, and beyond) becomes a grammar IR whose
 * language is JSON texts valid against the schema, so a model constrained
 * by it can only write such texts.
 *
 * The grammar is sound first: every text it accepts is valid against the
 * schema as Python's jsonschema (Draft 2020-12, every format checker)
 * judges it. Where a keyword cannot be enforced exactly it is refused
 * (strict) or ignored and reported (not strict), never approximated
 * loosely in silence. Where exactness costs too much the grammar accepts
 * fewer spellings of the same values, never more:
 *
 *   - objects list their properties in the order of "properties" (then
 *     the required names that "properties" lacks, then any additional
 *     properties, whose keys never repeat a listed name);
 *   - "integer" is written in plain integer form (no "1.0", no exponent);
 *   - a number with a bound (minimum, maximum, exclusive*) is written
 *     without an exponent, which keeps the bound exact on its decimal
 *     text; bounds are compared as the decimal the schema wrote (a real
 *     bound as its shortest round-trip form), so texts of more than 17
 *     significant digits within rounding of a real bound may be judged
 *     differently from a comparison of doubles;
 *   - const/enum values are matched in every string spelling (raw or
 *     escaped characters) and, for numbers, in plain and ".0" forms (1,
 *     1.0, 1.00 for the value 1; no exponent); object values in the order
 *     they were written;
 *   - a string's \u escapes never spell a lone surrogate;
 *   - formats accept their characters unescaped.
 *
 * Supported: type, enum, const, properties, required, additionalProperties,
 * items (schema, false, or the pre-2020 array form with additionalItems),
 * prefixItems, minItems, maxItems, minLength, maxLength, pattern (through
 * regex.h, searched as JSON Schema has it; with lengths, the product of the
 * two automata), format (date-time, date, time, duration, email, uuid,
 * ipv4, ipv6, hostname, uri), minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum (also draft 4's boolean form), whole multipleOf up to
 * 1000 (without bounds or with 0 as the bound), anyOf, oneOf (when the
 * alternatives provably exclude each other: disjoint types, enums, ranges
 * or lengths, or a property both require with exclusive schemas), allOf
 * (merged: types intersected, bounds tightened, properties and required
 * combined, each member's additionalProperties applied to the others'
 * names), $ref to "#..." pointers (percent and ~ escapes), anchors and the
 * root's $id, with recursion and with sibling keywords (merged); refs
 * resolve against the document root (a nested $id is an annotation).
 * $defs/definitions, nullable (OpenAPI), and
 * minProperties/maxProperties/uniqueItems when trivially satisfied.
 * Annotations are ignored, and so are unknown keywords (annotations too,
 * Draft 2020-12 section 4.3.1, so they change nothing), which are noted,
 * strict or not: a misspelt keyword shows.
 *
 * Refused when strict, else ignored and noted: patternProperties,
 * propertyNames, dependentRequired, dependentSchemas, dependencies,
 * unevaluated*, contains, not, if with then/else, $dynamicRef, other
 * multipleOf, unknown formats, pattern together with a format, lengths
 * together with a format unless always met, pattern or format together with
 * string enum/const values (not checked), two different patterns or formats
 * in one allOf, and oneOf that cannot be proved exclusive (then read as
 * anyOf).
 *
 * Always errors: malformed keywords, a schema that accepts nothing (false,
 * contradictions, a required property that cannot be written), an
 * unresolvable, remote or circular $ref, and a schema too large to
 * compile: bounds above JSON_SCHEMA_MAX_BOUND, nesting past 200 levels,
 * more than 256 schemas in one intersection, or too many merges in all. */
#ifndef INFER_GRAMMAR_JSON_SCHEMA_H
#define INFER_GRAMMAR_JSON_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"
#include "grammar/ir.h"

/* minItems/maxItems/minLength/maxLength above this are refused: the
 * repetition would be too large to compile, and no model output reaches it. */
enum { JSON_SCHEMA_MAX_BOUND = 1 << 24 };

struct json_schema_opts {
    int strict; /* 1: a keyword that cannot be enforced is an error; 0: it is ignored and reported in notes */
    int ws_max; /* JSON whitespace: < 0 compact (no whitespace at all: "," ":" only), else up to ws_max bytes
                 * of [ \t\n\r] wherever JSON allows whitespace (bounded, so a model cannot loop on blanks) */
    int ws_lines; /* with ws_max >= 0: whitespace only as a pretty-printer writes it, none before or after the
                   * value and each gap one space, or one line break and up to ws_max blanks of indentation:
                   * what models decode under (no runs of blank lines, and the text ends at its last brace) */
};

/* What strict = 0 ignored, so a server can tell the client its schema was
 * only partly enforced, and the unknown keywords (ignored either way):
 * "keyword at /json/pointer/path (why)" strings, each once, malloc'ed. */
struct json_schema_notes {
    char **ignored;
    int n_ignored;
};
void json_schema_notes_free(struct json_schema_notes *n);

/* Builds the grammar of JSON texts valid against schema into g (sets the
 * root; g may be fresh or already hold rules of its own). o NULL: strict
 * and compact; notes may be NULL. Returns 0, or -1 with e naming the
 * keyword and its JSON pointer path, e.g. "unsupported keyword
 * 'patternProperties' at /properties/a" or "'$ref' at /items:
 * '#/$defs/x' is not defined" (the root's path is "/"). */
int json_schema_to_gir(struct gir *g, const json_t *schema, const struct json_schema_opts *o,
                       struct json_schema_notes *notes, struct err *e);

/* Any JSON object (response_format json_object): the same as the schema
 * {"type": "object"}. */
int json_object_to_gir(struct gir *g, const struct json_schema_opts *o, struct err *e);

/* json_schema_to_gir of a schema given as JSON text; a syntax error is an
 * error naming its line:column. */
int json_schema_from_text(const char *text, size_t len, const struct json_schema_opts *o,
                          struct json_schema_notes *notes, struct gir *g, struct err *e);

#endif
