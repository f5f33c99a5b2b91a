/* chat_format_detect: a template's call syntax and reasoning markers, from
 * the strings its source writes. Templates of one family write the same
 * markers, so a substring is enough, and a template that matches none
 * gets the built-in tool prompt rather than silently dropped tools. */
#include "chat/chat_format.h"

#include <string.h>

static int has(const char *src, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (src[i] == needle[0] && !memcmp(src + i, needle, n))
            return 1;
    return 0;
}

void chat_format_detect(const char *src, size_t len, struct chat_format *out)
{
    static const struct chat_format tagged = {.calls = CHAT_CALLS_TAGGED,
                                              .call_open = "<tool_call>\n",
                                              .call_close = "\n</tool_call>",
                                              .call_sep = "\n",
                                              .args_key = "arguments"};
    *out = tagged;
    const int tools = has(src, len, "tools");
    if (tools && !has(src, len, "<tool_call>") &&
        (has(src, len, "<|python_tag|>") || has(src, len, "\"parameters\"") || has(src, len, "ipython"))) {
        out->calls = CHAT_CALLS_LLAMA3;
        out->args_key = "parameters";
    }
    out->template_tools = tools;
    if (has(src, len, "<think>") && has(src, len, "</think>")) {
        out->think_open = "<think>";
        out->think_close = "</think>";
    }
}

int chat_format_prompt_in_reasoning(const struct chat_format *f, const char *prompt, size_t len)
{
    if (!f->think_open)
        return 0;
    while (len > 0 && (prompt[len - 1] == '\n' || prompt[len - 1] == ' '))
        len--;
    size_t n = strlen(f->think_open);
    return len >= n && !memcmp(prompt + len - n, f->think_open, n);
}
