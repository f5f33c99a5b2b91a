/* How a model's assistant turns carry tool calls and reasoning, read from
 * its chat template's source, and what a request does about templates that
 * know no tools.
 *
 * Two call syntaxes cover the target families:
 * - tagged (Qwen3, Hermes): each call a JSON object inside tags,
 *     <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
 *   calls separated by a newline;
 * - Llama 3.x: the answer is the JSON object {"name": "f", "parameters":
 *   {...}} (several separated by ";"), or a call after the special token
 *   <|python_tag|> (JSON, or the built-in tools' f.call(k="v") form).
 * A template that never mentions tools (Gemma 3; the plain Llama 3
 * template) gets the built-in tool prompt (chat_tools.c): the tools in the
 * system turn, and calls in the tagged syntax, so they parse the same way.
 * A template whose source holds <think> and </think> (Qwen3) marks
 * reasoning that way. */
#ifndef INFER_CHAT_CHAT_FORMAT_H
#define INFER_CHAT_CHAT_FORMAT_H

#include <stddef.h>

enum chat_call_syntax {
    CHAT_CALLS_TAGGED,
    CHAT_CALLS_LLAMA3,
};

struct chat_format {
    enum chat_call_syntax calls;
    int template_tools; /* the template renders "tools" itself; else the built-in prompt does */
    /* the tagged syntax's strings (the Llama 3 syntax's calls stand alone) */
    const char *call_open, *call_close, *call_sep;
    const char *args_key; /* "arguments" or "parameters" */
    /* reasoning markers, or NULL when the template has none */
    const char *think_open, *think_close;
    int opens_reasoning; /* its generation prompt ends inside an open block (found by a probe render) */
};

/* The special token that opens a Llama 3 call (the detokenizer drops
 * special tokens, so the server feeds it to the output parser by id). */
#define CHAT_PYTHON_TAG "<|python_tag|>"

/* The format of a template's source. */
void chat_format_detect(const char *src, size_t len, struct chat_format *out);

/* Whether a rendered prompt ends inside an open reasoning block (the
 * template opened <think> for the model), so its output starts as
 * reasoning. */
int chat_format_prompt_in_reasoning(const struct chat_format *f, const char *prompt, size_t len);

#endif
