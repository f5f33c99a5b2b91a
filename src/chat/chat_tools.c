/* chat_render (chat_tools.h): a request's conversation through its chat
 * template, with the built-in tool prompt for templates that know no
 * tools.
 *
 * The built-in prompt (documented in docs/server.md) follows the tagged
 * syntax Qwen3 and Hermes models are trained on, so calls parse the same
 * way whichever template the model has:
 * - the system turn gets the tools, after its own text:
 *     # Tools
 *     You may call one or more functions ... <tools>
 *     {"type": "function", "function": {...}}
 *     </tools> ... <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>
 * - an assistant turn's tool_calls become its text in that syntax;
 * - tool results become a user turn, each in <tool_response> tags
 *   (consecutive ones in one turn, so turns still alternate).
 * The history is rewritten so whether or not this request has tools: an
 * earlier turn's calls and results must render either way. */
#include "chat/chat_tools.h"

#include <stdlib.h>
#include <string.h>

#include "chat/chat_format.h"

static const char TOOLS_HEAD[] =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
    "function signatures within <tools></tools> XML tags:\n<tools>";
static const char TOOLS_TAIL[] =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call>";

struct text {
    char *s;
    size_t n;
};

static void add(struct text *t, const char *s, size_t n)
{
    t->s = xrealloc(t->s, t->n + n + 1);
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

static void add_str(struct text *t, const char *s) { add(t, s, strlen(s)); }

static void add_json(struct text *t, const json_t *v)
{
    char *js = json_dumps(v, JSON_ENCODE_ANY);
    if (js) {
        add_str(t, js);
        free(js);
    }
}

static const char *content_of(const json_t *m)
{
    const json_t *c = json_object_get(m, "content");
    return json_is_string(c) ? json_string_value(c) : "";
}

static const char *role_of(const json_t *m)
{
    const json_t *r = json_object_get(m, "role");
    return json_is_string(r) ? json_string_value(r) : "";
}

static json_t *message(const char *role, const char *content, size_t n)
{
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string(role));
    json_object_set_new(m, "content", json_stringn(content, n));
    return m;
}

/* An assistant turn whose calls are written into its text. */
static json_t *assistant_with_calls(const json_t *m)
{
    struct text t = {xstrdup(""), 0};
    add_str(&t, content_of(m));
    size_t i;
    const json_t *call;
    json_array_foreach(json_object_get(m, "tool_calls"), i, call)
    {
        const json_t *fn = json_object_get(call, "function");
        const json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        if (t.n)
            add_str(&t, "\n");
        add_str(&t, "<tool_call>\n{\"name\": ");
        if (json_is_string(name))
            add_json(&t, name);
        else
            add_str(&t, "\"\"");
        add_str(&t, ", \"arguments\": ");
        if (json_is_string(args))
            add_str(&t, json_string_value(args));
        else if (args)
            add_json(&t, args);
        else
            add_str(&t, "{}");
        add_str(&t, "}\n</tool_call>");
    }
    json_t *out = message("assistant", t.s, t.n);
    free(t.s);
    return out;
}

static void add_tools_prompt(struct text *t, const json_t *tools)
{
    add_str(t, TOOLS_HEAD);
    size_t i;
    const json_t *tool;
    json_array_foreach(tools, i, tool)
    {
        add_str(t, "\n");
        add_json(t, tool);
    }
    add_str(t, TOOLS_TAIL);
}

/* The conversation as a template without tools can render it (new reference). */
static json_t *builtin_messages(const json_t *messages, const json_t *tools)
{
    json_t *out = json_array();
    size_t i = 0, n = json_array_size(messages);
    if (tools) {
        struct text sys = {xstrdup(""), 0};
        const json_t *first = json_array_get(messages, 0);
        if (!strcmp(role_of(first), "system")) {
            add_str(&sys, content_of(first));
            add_str(&sys, "\n\n");
            i = 1;
        }
        add_tools_prompt(&sys, tools);
        json_array_append_new(out, message("system", sys.s, sys.n));
        free(sys.s);
    }
    while (i < n) {
        const json_t *m = json_array_get(messages, i);
        if (!strcmp(role_of(m), "tool")) {
            struct text t = {xstrdup(""), 0};
            for (; i < n && !strcmp(role_of(json_array_get(messages, i)), "tool"); i++) {
                if (t.n)
                    add_str(&t, "\n");
                add_str(&t, "<tool_response>\n");
                add_str(&t, content_of(json_array_get(messages, i)));
                add_str(&t, "\n</tool_response>");
            }
            json_array_append_new(out, message("user", t.s, t.n));
            free(t.s);
            continue;
        }
        const json_t *calls = json_object_get(m, "tool_calls");
        if (!strcmp(role_of(m), "assistant") && json_array_size(calls) > 0)
            json_array_append_new(out, assistant_with_calls(m));
        else
            json_array_append(out, (json_t *)m);
        i++;
    }
    return out;
}

int chat_render(const struct chat_template *ct, const json_t *messages, const json_t *tools,
                int add_generation_prompt, const json_t *extra_vars, char **out, struct err *e)
{
    if (tools && (json_is_null(tools) || json_array_size(tools) == 0))
        tools = NULL;
    const struct chat_format *f = chat_template_format(ct, tools != NULL);
    if (f->template_tools)
        return chat_template_render(ct, messages, tools, add_generation_prompt, extra_vars, out, e);
    json_t *conv = builtin_messages(messages, tools);
    int rc = chat_template_render(ct, conv, NULL, add_generation_prompt, extra_vars, out, e);
    json_decref(conv);
    return rc;
}
