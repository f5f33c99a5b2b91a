/* The tool-call front end of grammar_spec_build (GRAMMAR_TOOL_CALLS): the
 * calls a request allows, described as JSON (tool_calls.c), as a grammar. */
#ifndef INFER_GRAMMAR_TOOL_CALLS_H
#define INFER_GRAMMAR_TOOL_CALLS_H

#include <stddef.h>

#include "core/error.h"
#include "grammar/ir.h"
#include "grammar/json_schema.h"

/* Builds the calls' grammar into g (sets the root); the parameters'
 * schemas go through json_schema_to_gir with o. Returns 0, or -1 with e
 * naming the function or field. */
int tool_calls_to_gir(struct gir *g, const char *text, size_t len, const struct json_schema_opts *o,
                      struct json_schema_notes *notes, struct err *e);

#endif
