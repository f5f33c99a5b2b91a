/* What a request asks its output to match, as text (a JSON schema, a
 * regular expression, a GBNF grammar, "any JSON object", or tool calls), and its
 * compilation through the right front end into the IR. The one place that
 * knows the front ends, so the server, the CLI and the engine's cache of
 * compiled grammars all read a constraint the same way. */
#ifndef INFER_GRAMMAR_SPEC_H
#define INFER_GRAMMAR_SPEC_H

#include <stddef.h>

#include "core/error.h"
#include "grammar/ir.h"
#include "grammar/json_schema.h"

enum grammar_kind {
    GRAMMAR_NONE = 0,
    GRAMMAR_JSON_SCHEMA, /* text: the schema as JSON */
    GRAMMAR_JSON_OBJECT, /* any JSON object; no text */
    GRAMMAR_REGEX,       /* text: a pattern matched in full */
    GRAMMAR_GBNF,        /* text: llama.cpp's grammar format, rule "root" */
    GRAMMAR_TOOL_CALLS,  /* text: the calls allowed, as JSON (tool_calls.c) */
};

enum { GRAMMAR_WS_DEFAULT = 16 }; /* blanks allowed in a row where JSON allows them */

struct grammar_spec {
    enum grammar_kind kind;
    const char *text; /* borrowed */
    size_t len;
    int strict; /* JSON schema: a keyword it cannot enforce is an error (else ignored and noted) */
    int ws_max; /* JSON: < 0 compact (no blanks), else at most this many in a row */
    int ws_lines; /* JSON: blanks only as a pretty-printer writes them (json_schema_opts.ws_lines) */
    /* A reasoning block the output may open with, before what the
     * constraint holds: think_open, any text without think_close,
     * think_close, up to 4 blanks (Qwen3's <think>...</think>). NULL: none.
     * Borrowed; both or neither. think_inside: the output starts inside
     * the block (the prompt opened it), which it must close. */
    const char *think_open, *think_close;
    int think_inside;
};

const char *grammar_kind_name(enum grammar_kind k);

/* Builds spec's grammar into g (fresh). Returns 0, or -1 with e naming the
 * problem (for a schema: the keyword and its JSON path). notes receives
 * what strict = 0 ignored (may be NULL). */
int grammar_spec_build(const struct grammar_spec *spec, struct gir *g, struct json_schema_notes *notes,
                       struct err *e);

#endif
