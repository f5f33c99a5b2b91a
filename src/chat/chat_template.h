/* A model's chat template: loaded from its tokenizer_config.json (or
 * chat_template.jinja) and rendered the way transformers'
 * tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=...,
 * tokenize=False, **kwargs) does, including its preprocessing of messages
 * (keys whose value is null are dropped; reasoning_content / thinking /
 * reasoning are aliased) and the special-token variables (bos_token,
 * eos_token, ...). */
#ifndef INFER_CHAT_CHAT_TEMPLATE_H
#define INFER_CHAT_CHAT_TEMPLATE_H

#include <jansson.h>

#include "core/error.h"

struct chat_template;
struct gguf_file;

/* Loads and compiles the template(s) of a model directory, or of a .gguf
 * file. Returns NULL with e set (no template, unreadable config, template
 * syntax error). Free with chat_template_free. */
struct chat_template *chat_template_load(const char *model_dir, struct err *e);

/* The template(s) of an open GGUF file: tokenizer.chat_template[.<name>],
 * else the architecture's built-in turn format (chat_template_gguf.c). */
struct chat_template *chat_template_from_gguf(const struct gguf_file *f, struct err *e);

/* Same from an already parsed tokenizer_config.json object (borrowed);
 * jinja_override, when non-NULL, replaces its "chat_template" (the content of
 * a chat_template.jinja file). */
struct chat_template *chat_template_from_config(const json_t *config, const char *jinja_override,
                                                struct err *e);

void chat_template_free(struct chat_template *ct);

/* Renders a conversation. messages: a non-empty JSON array of message objects
 * (borrowed); tools: JSON array or NULL/null; extra_vars: JSON object of
 * additional template variables (enable_thinking, date_string, documents, ...)
 * or NULL. On success *out is malloc'ed and NUL-terminated (caller frees).
 * On failure returns -1 with e set (the raised message when the template
 * calls raise_exception). Thread-safe for concurrent renders. */
int chat_template_render(const struct chat_template *ct, const json_t *messages, const json_t *tools,
                         int add_generation_prompt, const json_t *extra_vars, char **out, struct err *e);

/* The call syntax and reasoning markers (chat_format.h) of the template a
 * render with or without tools uses. */
struct chat_format;
const struct chat_format *chat_template_format(const struct chat_template *ct, int has_tools);

#endif
