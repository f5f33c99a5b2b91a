/* The template module: the subset of Jinja2 that Hugging Face chat templates
 * use, rendered byte for byte as transformers' apply_chat_template does
 * (jinja2 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop
 * controls, transformers' tojson / raise_exception / strftime_now). It turns
 * template text and JSON variables into text and knows nothing of models,
 * tokenizers or devices; src/tokenizer/chat_template.c finds a model's
 * template and calls it. The rest of the module is private (internal.h).
 *
 * A compiled template is immutable: several threads may render it at once. */
#ifndef INFER_TEMPLATE_TEMPLATE_H
#define INFER_TEMPLATE_TEMPLATE_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

struct tmpl;

/* Parses a template. Syntax errors, unknown filters and unknown tests fail
 * here with "template line N: ...". Returns NULL with e set; free with tmpl_free. */
struct tmpl *tmpl_compile(const char *src, size_t len, struct err *e);
void tmpl_free(struct tmpl *t);

/* Renders with the variables of a JSON object (object key order is kept, as
 * Python dicts keep insertion order). On success *out is malloc'ed and
 * NUL-terminated (caller frees), *out_len its length (may be NULL). On failure
 * returns -1 with e set: a template's raise_exception(msg) gives exactly msg,
 * other errors "template line N: ...". */
int tmpl_render(const struct tmpl *t, const json_t *vars, char **out, size_t *out_len, struct err *e);

#endif
