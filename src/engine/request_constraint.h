/* The output constraint of a request: one of the fields OpenAI, vLLM and
 * llama.cpp's server name it by, read into a grammar_spec and compiled
 * through the caller's cache (request_fields_opts.grammars):
 *   "response_format": {"type": "json_object"} | {"type": "json_schema",
 *       "json_schema": {"name", "schema", "strict"}} (OpenAI; llama.cpp's
 *       {"type": "json_object", "schema": {...}} too) | {"type": "text"};
 *   "structured_outputs": {"json" | "regex" | "choice" | "grammar" |
 *       "json_object"} (vLLM), and its older "guided_json",
 *       "guided_regex", "guided_grammar", "guided_choice";
 *   "grammar" (GBNF) and "json_schema" (llama.cpp's server).
 * At most one may be given. A schema keyword that cannot be enforced is a
 * refusal naming it and its path, unless "strict": false, where it is
 * ignored and listed in request_fields.warnings. */
#ifndef INFER_ENGINE_REQUEST_CONSTRAINT_H
#define INFER_ENGINE_REQUEST_CONSTRAINT_H

#include <jansson.h>

#include "engine/request_fields.h"

/* Whether key is one of the constraint fields (for refuse_unknown). */
int request_constraint_field(const char *key);

/* Reads obj's constraint into out->grammar (and out->submit.grammar);
 * nothing given: NULL. Returns 0, or -1 with err naming the field. */
int request_constraint_parse(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                             struct request_field_error *err);

#endif
