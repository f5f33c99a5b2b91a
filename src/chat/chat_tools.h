/* A request's conversation rendered with its tools: by the chat template
 * where it renders tools itself (Qwen3, Llama 3.x), else with the built-in
 * tool prompt (chat_tools.c) in the tagged call syntax, so tools are never
 * dropped in silence. */
#ifndef INFER_CHAT_CHAT_TOOLS_H
#define INFER_CHAT_CHAT_TOOLS_H

#include <jansson.h>

#include "chat/chat_template.h"

/* chat_template_render with the tools put where the model reads them.
 * tools: an array of OpenAI tool objects, or NULL / null / [] for none. */
int chat_render(const struct chat_template *ct, const json_t *messages, const json_t *tools,
                int add_generation_prompt, const json_t *extra_vars, char **out, struct err *e);

#endif
