/* The tool fields of request_tools.h.
 *
 * Choices where OpenAI leaves room:
 * - function names follow OpenAI's rule, ^[a-zA-Z0-9_-]{1,64}$, and are
 *   unique: the grammar writes them literally, and a call must say which;
 * - tool_choice defaults to "auto" with tools, "none" without; naming a
 *   function that is not among the tools is refused;
 * - the parameters' schemas are enforced strictly only when every
 *   function says "strict": true; otherwise what cannot be enforced is
 *   ignored and reported in the response's "warnings". */
#include "engine/request_tools.h"
#include "engine/request_fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FIELDS[] = {"tools", "tool_choice", "parallel_tool_calls"};

int request_tools_field(const char *key)
{
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++)
        if (!strcmp(key, FIELDS[i]))
            return 1;
    return 0;
}

#define BAD(err, field, ...) request_field_error_set((err), (field), __VA_ARGS__)

static int good_name(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static const char *tool_name(const json_t *tool)
{
    return json_string_value(json_object_get(json_object_get(tool, "function"), "name"));
}

static int check_tool(const json_t *tools, size_t i, int *strict, struct request_field_error *err)
{
    const json_t *tool = json_array_get(tools, i);
    char field[96];
    snprintf(field, sizeof field, "tools[%zu]", i);
    const json_t *type = json_object_get(tool, "type"), *fn = json_object_get(tool, "function");
    if (!json_is_object(tool) || !json_is_string(type) || strcmp(json_string_value(type), "function") ||
        !json_is_object(fn))
        return BAD(err, field, "'%s' must be {\"type\": \"function\", \"function\": {\"name\": ...}}", field);
    const json_t *name = json_object_get(fn, "name"), *params = request_field_get(fn, "parameters"),
                 *desc = request_field_get(fn, "description"), *st = request_field_get(fn, "strict");
    snprintf(field, sizeof field, "tools[%zu].function.name", i);
    if (!json_is_string(name) || !good_name(json_string_value(name), json_string_length(name)))
        return BAD(err, field, "'%s' must be 1 to 64 letters, digits, '_' or '-'", field);
    for (size_t k = 0; k < i; k++)
        if (!strcmp(tool_name(json_array_get(tools, k)), json_string_value(name)))
            return BAD(err, field, "'%s': two tools are named '%s'", field, json_string_value(name));
    snprintf(field, sizeof field, "tools[%zu].function.parameters", i);
    if (params && !json_is_object(params))
        return BAD(err, field, "'%s' must be a JSON Schema object", field);
    snprintf(field, sizeof field, "tools[%zu].function.description", i);
    if (desc && !json_is_string(desc))
        return BAD(err, field, "'%s' must be a string", field);
    snprintf(field, sizeof field, "tools[%zu].function.strict", i);
    if (st && !json_is_boolean(st))
        return BAD(err, field, "'%s' must be true or false", field);
    *strict &= st && json_is_true(st);
    return 0;
}

static int parse_choice(const json_t *obj, struct request_tools *out, int have_tools, struct request_field_error *err)
{
    const json_t *tc = request_field_get(obj, "tool_choice");
    out->choice = have_tools ? TOOL_CHOICE_AUTO : TOOL_CHOICE_NONE;
    if (!tc)
        return 0;
    static const char *const words[] = {"none", "auto", "required"};
    if (json_is_string(tc)) {
        for (int k = 0; k < 3; k++)
            if (!strcmp(json_string_value(tc), words[k])) {
                out->choice = (enum request_tool_choice)k;
                if (!have_tools && k != TOOL_CHOICE_NONE)
                    return BAD(err, "tool_choice", "'tool_choice' is only allowed when 'tools' are given");
                return 0;
            }
    } else if (json_is_object(tc)) {
        const json_t *type = json_object_get(tc, "type"), *fn = json_object_get(tc, "function");
        const json_t *name = json_object_get(fn, "name");
        if (json_is_string(type) && !strcmp(json_string_value(type), "function") && json_is_string(name)) {
            if (!have_tools)
                return BAD(err, "tool_choice", "'tool_choice' is only allowed when 'tools' are given");
            const json_t *tools = request_field_get(obj, "tools");
            for (size_t i = 0; i < json_array_size(tools); i++)
                if (!strcmp(tool_name(json_array_get(tools, i)), json_string_value(name))) {
                    out->choice = TOOL_CHOICE_NAMED;
                    out->named = json_string_value(name);
                    return 0;
                }
            return BAD(err, "tool_choice.function.name", "'tool_choice' names '%.64s', which is not among 'tools'",
                       json_string_value(name));
        }
    }
    return BAD(err, "tool_choice",
               "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
               "{\"name\": ...}}");
}

int request_tools_parse(const json_t *obj, struct request_tools *out, struct request_field_error *err)
{
    memset(out, 0, sizeof *out);
    out->parallel = 1;
    const json_t *tools = request_field_get(obj, "tools");
    if (tools && !json_is_array(tools))
        return BAD(err, "tools", "'tools' must be an array of tool objects");
    int strict = 1;
    for (size_t i = 0; i < json_array_size(tools); i++)
        if (check_tool(tools, i, &strict, err))
            return -1;
    const int have = json_array_size(tools) > 0;
    if (parse_choice(obj, out, have, err) || request_field_bool(obj, "parallel_tool_calls", &out->parallel, err))
        return -1;
    out->strict = have && strict;
    out->tools = out->choice == TOOL_CHOICE_NONE ? NULL : tools;
    return 0;
}

char *request_tools_spec(const struct request_tools *t, const struct chat_format *f)
{
    if (!t->tools || t->choice == TOOL_CHOICE_NONE)
        return NULL;
    json_t *fns = json_array();
    size_t i;
    const json_t *tool;
    json_array_foreach(t->tools, i, tool)
    {
        const char *name = tool_name(tool);
        if (t->choice == TOOL_CHOICE_NAMED && strcmp(name, t->named))
            continue;
        json_t *fn = json_pack("{s:s}", "name", name);
        const json_t *params = request_field_get(json_object_get(tool, "function"), "parameters");
        if (params)
            json_object_set(fn, "parameters", (json_t *)params);
        json_array_append_new(fns, fn);
    }
    const int llama = f->calls == CHAT_CALLS_LLAMA3, chosen = t->choice != TOOL_CHOICE_AUTO;
    char trigger[64] = ""; /* the open marker without its line break: where a call starts */
    snprintf(trigger, sizeof trigger, "%s", llama ? "" : f->call_open);
    for (size_t n = strlen(trigger); n > 0 && (trigger[n - 1] == '\n' || trigger[n - 1] == ' ');)
        trigger[--n] = '\0';
    json_t *spec = json_pack("{s:o, s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:s}", "functions", fns, "open",
                             llama ? "" : f->call_open, "close", llama ? "" : f->call_close, "sep",
                             llama ? "; " : f->call_sep, "args_key", f->args_key, "min", chosen || llama ? 1 : 0,
                             "max", t->parallel ? 0 : 1, "text", chosen ? "none" : llama ? "instead" : "before",
                             "trigger", trigger);
    char *text = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    return text;
}
