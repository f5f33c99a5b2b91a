/* The tool-call front end (spec.h, GRAMMAR_TOOL_CALLS): a description of
 * the calls a request allows, as JSON,
 *   {"functions": [{"name": "f", "parameters": {schema}}, ...],
 *    "open": "<tool_call>\n", "close": "\n</tool_call>", "sep": "\n",
 *    "args_key": "arguments", "min": 1, "max": 0,
 *    "text": "before" | "instead" | "none", "trigger": "<tool_call>"}
 * becomes the grammar of the output: min..max calls (max 0: any number),
 * each one of
 *   open {"name": "f", "<args_key>": <text valid against f's parameters>} close
 * separated by sep. "text" lets the model answer in prose instead: with
 * "before", any text without the trigger, then optionally the calls (the
 * tagged syntax: the constraint starts where the model opens a call); with
 * "instead", either the calls or text that does not open with "{" (the
 * Llama 3 syntax, whose call is the whole answer). A function without
 * parameters takes any JSON object. */
#include <string.h>

#include "grammar/tool_calls.h"

static const char *str_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

/* The grammar of one call to fn, or -1. */
static int one_call(struct gir *g, const json_t *fn, const char *args_key, const struct json_schema_opts *o,
                    struct json_schema_notes *notes, struct err *e, int index)
{
    const json_t *name = json_object_get(fn, "name"), *params = json_object_get(fn, "parameters");
    if (!json_is_string(name) || (params && !json_is_object(params) && !json_is_boolean(params)))
        return err_set(e, "functions[%d]: expected {\"name\": string, \"parameters\": schema}", index);
    json_t *any = params ? NULL : json_pack("{s:s}", "type", "object");
    int rc = json_schema_to_gir(g, params ? params : any, o, notes, e);
    json_decref(any);
    if (rc)
        return err_prefix(e, "function '%s'", json_string_value(name));
    /* json_schema_to_gir made its root rule the schema's: a rule to refer to */
    int args = gx_ref(g, g->root);
    int head = gx_seq3(g, gx_str(g, "{\"name\": \""), gx_str(g, json_string_value(name)), gx_str(g, "\", \""));
    int tail = gx_seq3(g, gx_str(g, args_key), gx_str(g, "\": "), args);
    return gx_seq3(g, head, tail, gx_str(g, "}"));
}

/* Bytes other than the blanks and "{": how prose that is not a call opens. */
static int not_json_start(struct gir *g)
{
    struct byteset s;
    memset(&s, 0xff, sizeof s);
    const char *no = " \t\r\n{";
    for (const char *c = no; *c; c++)
        s.w[(unsigned char)*c >> 5] &= ~(1u << ((unsigned char)*c & 31));
    return gx_bytes(g, &s);
}

static int any_bytes(struct gir *g) { return gx_star(g, gx_byte_range(g, 0, 255)); }

int tool_calls_to_gir(struct gir *g, const char *text, size_t len, const struct json_schema_opts *o,
                      struct json_schema_notes *notes, struct err *e)
{
    json_error_t je;
    json_t *spec = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    const json_t *fns = json_object_get(spec, "functions");
    int rc = -1;
    if (!json_is_object(spec) || !json_is_array(fns) || json_array_size(fns) == 0) {
        err_set(e, "tool calls: expected {\"functions\": [...], ...}");
        goto out;
    }
    const char *open = str_field(spec, "open"), *close = str_field(spec, "close"), *sep = str_field(spec, "sep"),
               *args_key = str_field(spec, "args_key"), *free_text = str_field(spec, "text"),
               *trigger = str_field(spec, "trigger");
    const int min = (int)json_integer_value(json_object_get(spec, "min")),
              max = (int)json_integer_value(json_object_get(spec, "max"));
    if (min < 0 || max < 0 || (max > 0 && max < min) || !*args_key) {
        err_set(e, "tool calls: bad min/max or args_key");
        goto out;
    }
    int call = gx_nothing(g);
    for (size_t i = 0; i < json_array_size(fns); i++) {
        int x = one_call(g, json_array_get(fns, i), args_key, o, notes, e, (int)i);
        if (x < 0 && !gir_failed(g))
            goto out;
        call = gx_alt2(g, call, x);
    }
    int call_rule = gir_rule_fresh(g, "tool_call");
    gir_define(g, call_rule, gx_seq3(g, gx_str(g, open), call, gx_str(g, close)));
    int one = gx_ref(g, call_rule), more = gx_seq2(g, gx_str(g, sep), gx_ref(g, call_rule));
    int calls = gx_seq2(g, one, gx_repeat(g, more, min > 0 ? min - 1 : 0, max > 0 ? max - 1 : -1));
    if (min == 0)
        calls = gx_opt(g, calls);
    int body = calls;
    if (!strcmp(free_text, "before")) {
        if (!*trigger) {
            err_set(e, "tool calls: \"text\": \"before\" needs a trigger");
            goto out;
        }
        body = gx_seq2(g, gx_without(g, trigger), calls);
    } else if (!strcmp(free_text, "instead")) {
        int blanks = gx_star(g, gx_bytes(g, &(struct byteset){{1u << '\t' | 1u << '\n' | 1u << '\r', 1u << 0}}));
        int prose = gx_seq2(g, blanks, gx_opt(g, gx_seq2(g, not_json_start(g), any_bytes(g))));
        body = gx_alt2(g, calls, prose);
    } else if (*free_text && strcmp(free_text, "none")) {
        err_set(e, "tool calls: \"text\" must be \"before\", \"instead\" or \"none\"");
        goto out;
    }
    int root = gir_rule_fresh(g, "root");
    gir_define(g, root, body);
    gir_set_root(g, root);
    if (gir_failed(g))
        err_set(e, "%s", g->error.msg);
    else
        rc = 0;
out:
    json_decref(spec);
    return rc;
}
