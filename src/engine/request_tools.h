/* A chat request's tool fields, as OpenAI defines them: "tools" (function
 * tools: {"type": "function", "function": {"name", "description",
 * "parameters", "strict"}}), "tool_choice" ("none", "auto", "required" or
 * {"type": "function", "function": {"name"}}) and "parallel_tool_calls";
 * and the constraint that holds the output to them, in the chat format's
 * call syntax (chat/chat_format.h), compiled by the grammar engine:
 *   required / named: one call or more (one with parallel_tool_calls
 *     false) to the functions allowed, their arguments valid against the
 *     parameters' schemas, nothing else;
 *   auto: prose, or calls held so once the model opens one;
 *   none: no tools rendered, no constraint, no calls read back.
 * The reasoning the format marks (Qwen3's <think>) comes first, free. */
#ifndef INFER_ENGINE_REQUEST_TOOLS_H
#define INFER_ENGINE_REQUEST_TOOLS_H

#include <jansson.h>

#include "chat/chat_format.h"

struct request_field_error;

enum request_tool_choice { TOOL_CHOICE_NONE, TOOL_CHOICE_AUTO, TOOL_CHOICE_REQUIRED, TOOL_CHOICE_NAMED };

/* The pointers are into the request object: valid while it is. */
struct request_tools {
    const json_t *tools; /* the array to render, or NULL (none given, or "none") */
    enum request_tool_choice choice;
    const char *named; /* TOOL_CHOICE_NAMED: the function (borrowed) */
    int parallel;      /* parallel_tool_calls (default true) */
    int strict;        /* every function says "strict": true */
};

/* Whether key is one of the tool fields (for refuse_unknown). */
int request_tools_field(const char *key);

/* Reads and checks obj's tool fields. Returns 0, or -1 with err naming
 * the field ("tools[1].function.name", "tool_choice", ...). */
int request_tools_parse(const json_t *obj, struct request_tools *out, struct request_field_error *err);

/* The constraint's text (GRAMMAR_TOOL_CALLS; malloc'ed), or NULL when the
 * choice needs none. */
char *request_tools_spec(const struct request_tools *t, const struct chat_format *f);

#endif
