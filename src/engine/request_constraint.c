/* The constraint fields of request_constraint.h. */
#include "engine/request_constraint.h"

#include <stdlib.h>
#include <string.h>

#include "chat/chat_template.h"
#include "grammar/cache.h"

static const char *const FIELDS[] = {"response_format", "structured_outputs", "guided_json", "guided_regex",
                                     "guided_grammar",  "guided_choice",      "grammar",     "json_schema"};
enum { N_FIELDS = sizeof FIELDS / sizeof FIELDS[0] };

int request_constraint_field(const char *key)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (!strcmp(key, FIELDS[i]))
            return 1;
    return 0;
}

/* What a field asks for, before compiling: the spec's text is owned here. */
struct wanted {
    struct grammar_spec spec;
    char *text;
    char field[96]; /* where the constraint was written, for refusals */
};

#define BAD(err, field, ...) request_field_error_set((err), (field), __VA_ARGS__)

/* A schema given as an object (its text, order kept) or as a JSON string of one. */
static int take_schema(struct wanted *w, const json_t *v, const char *field, struct request_field_error *err)
{
    if (json_is_string(v)) {
        w->text = xstrdup(json_string_value(v));
    } else if (json_is_object(v) || json_is_boolean(v)) {
        w->text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!w->text)
            return BAD(err, field, "'%s' could not be serialized", field);
    } else {
        return BAD(err, field, "'%s' must be a JSON Schema (an object)", field);
    }
    w->spec.kind = GRAMMAR_JSON_SCHEMA;
    snprintf(w->field, sizeof w->field, "%s", field);
    return 0;
}

static int take_text(struct wanted *w, enum grammar_kind kind, const json_t *v, const char *field,
                     struct request_field_error *err)
{
    if (!json_is_string(v) || json_string_length(v) == 0)
        return BAD(err, field, "'%s' must be a non-empty string", field);
    w->text = xstrdup(json_string_value(v));
    w->spec.kind = kind;
    snprintf(w->field, sizeof w->field, "%s", field);
    return 0;
}

/* A list of strings as a regular expression of its escaped alternatives. */
static int take_choice(struct wanted *w, const json_t *v, const char *field, struct request_field_error *err)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return BAD(err, field, "'%s' must be a non-empty array of strings", field);
    size_t cap = 16, n = 0;
    char *re = xmalloc(cap);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *c = json_array_get(v, i);
        if (!json_is_string(c)) {
            free(re);
            return BAD(err, field, "'%s[%zu]' must be a string", field, i);
        }
        const char *s = json_string_value(c);
        size_t len = json_string_length(c);
        if (n + 2 * len + 8 > cap) {
            cap = 2 * (n + 2 * len + 8);
            re = xrealloc(re, cap);
        }
        re[n++] = i ? '|' : '(';
        for (size_t k = 0; k < len; k++) {
            if (strchr("\\^$.|?*+()[]{}/-", s[k]) && s[k])
                re[n++] = '\\';
            re[n++] = s[k];
        }
    }
    re[n++] = ')';
    re[n] = '\0';
    w->text = re;
    w->spec.kind = GRAMMAR_REGEX;
    snprintf(w->field, sizeof w->field, "%s", field);
    return 0;
}

static int take_strict(struct wanted *w, const json_t *obj, const char *field, struct request_field_error *err)
{
    const json_t *s = request_field_get(obj, "strict");
    if (s && !json_is_boolean(s))
        return BAD(err, field, "'%s' must be true or false", field);
    w->spec.strict = !(s && json_is_false(s));
    return 0;
}

static int response_format(struct wanted *w, const json_t *rf, struct request_field_error *err)
{
    const json_t *t = json_is_object(rf) ? json_object_get(rf, "type") : NULL;
    if (!json_is_string(t))
        return BAD(err, "response_format", "'response_format' must be an object with a string 'type'");
    const char *type = json_string_value(t);
    if (!strcmp(type, "text"))
        return 0;
    if (!strcmp(type, "json_object")) {
        const json_t *schema = request_field_get(rf, "schema"); /* llama.cpp's server's form */
        if (schema)
            return take_schema(w, schema, "response_format.schema", err);
        w->spec.kind = GRAMMAR_JSON_OBJECT;
        snprintf(w->field, sizeof w->field, "response_format");
        return 0;
    }
    if (!strcmp(type, "json_schema")) {
        const json_t *js = request_field_get(rf, "json_schema");
        if (!json_is_object(js))
            return BAD(err, "response_format.json_schema", "'response_format.json_schema' must be an object");
        const json_t *name = request_field_get(js, "name");
        if (name && !json_is_string(name))
            return BAD(err, "response_format.json_schema.name", "'response_format.json_schema.name' must be a string");
        const json_t *schema = request_field_get(js, "schema");
        if (!schema)
            return BAD(err, "response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
        return take_strict(w, js, "response_format.json_schema.strict", err) ||
               take_schema(w, schema, "response_format.json_schema.schema", err);
    }
    return BAD(err, "response_format.type",
               "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not \"%.40s\"", type);
}

/* vLLM's "structured_outputs": one of its members. */
static int structured_outputs(struct wanted *w, const json_t *so, struct request_field_error *err)
{
    if (!json_is_object(so))
        return BAD(err, "structured_outputs", "'structured_outputs' must be an object");
    const char *key, *given = NULL;
    const json_t *val;
    json_object_foreach((json_t *)so, key, val)
    {
        if (json_is_null(val))
            continue;
        char field[96];
        snprintf(field, sizeof field, "structured_outputs.%.60s", key);
        int is_constraint = !strcmp(key, "json") || !strcmp(key, "regex") || !strcmp(key, "choice") ||
                            !strcmp(key, "grammar") || !strcmp(key, "json_object");
        if (!is_constraint)
            return BAD(err, field, "'%s' is not supported (json, regex, choice, grammar and json_object are)",
                       field);
        if (given)
            return BAD(err, field, "give one of structured_outputs' constraints: '%s' and '%s' both given", given,
                       key);
        given = key;
        int rc;
        if (!strcmp(key, "json"))
            rc = take_schema(w, val, field, err);
        else if (!strcmp(key, "regex"))
            rc = take_text(w, GRAMMAR_REGEX, val, field, err);
        else if (!strcmp(key, "grammar"))
            rc = take_text(w, GRAMMAR_GBNF, val, field, err);
        else if (!strcmp(key, "choice"))
            rc = take_choice(w, val, field, err);
        else if (json_is_true(val)) {
            w->spec.kind = GRAMMAR_JSON_OBJECT;
            snprintf(w->field, sizeof w->field, "%s", field);
            rc = 0;
        } else {
            rc = json_is_false(val) ? 0 : BAD(err, field, "'%s' must be true or false", field);
        }
        if (rc)
            return -1;
    }
    return 0;
}

static int read_field(struct wanted *w, const char *key, const json_t *v, struct request_field_error *err)
{
    if (!strcmp(key, "response_format"))
        return response_format(w, v, err);
    if (!strcmp(key, "structured_outputs"))
        return structured_outputs(w, v, err);
    if (!strcmp(key, "guided_json") || !strcmp(key, "json_schema"))
        return take_schema(w, v, key, err);
    if (!strcmp(key, "guided_regex"))
        return take_text(w, GRAMMAR_REGEX, v, key, err);
    if (!strcmp(key, "guided_grammar") || !strcmp(key, "grammar"))
        return take_text(w, GRAMMAR_GBNF, v, key, err);
    return take_choice(w, v, key, err); /* guided_choice */
}

/* The chat format of a request with messages, or NULL. */
static const struct chat_format *format_of(const struct request_fields_opts *o, const json_t *obj,
                                           const struct request_fields *out)
{
    if (!o->template_inputs || !o->chat_template || !request_field_get(obj, "messages"))
        return NULL;
    struct err e = {{0}};
    const struct chat_template *ct = o->chat_template(o->chat_template_arg, &e);
    return ct ? chat_template_format(ct, out->tools.tools != NULL) : NULL;
}

/* The tools' constraint, when the tool choice needs one, in place of a
 * field's (the two cannot both hold the output). */
static int tools_constraint(struct wanted *w, const char *given, const char *text, int strict,
                            struct request_field_error *err)
{
    if (given) {
        free((char *)text);
        return BAD(err, given,
                   "'%s' cannot be combined with tool calls ('tools' with 'tool_choice' other than \"none\")",
                   given);
    }
    w->text = (char *)text;
    w->spec.kind = GRAMMAR_TOOL_CALLS;
    w->spec.strict = strict;
    /* arguments on one line, as the templates show them ({"city": "Paris"}): one blank at most per gap */
    w->spec.ws_max = 1;
    w->spec.ws_lines = 0;
    snprintf(w->field, sizeof w->field, "tools");
    return 0;
}

/* Reasoning first, free, where the format marks it and thinking is on. */
static void after_reasoning(struct grammar_spec *spec, const struct chat_format *f, const json_t *obj)
{
    const json_t *kwargs = request_field_get(obj, "chat_template_kwargs");
    const json_t *thinking = json_is_object(kwargs) ? json_object_get(kwargs, "enable_thinking") : NULL;
    if (!f || !f->think_open || json_is_false(thinking))
        return;
    spec->think_open = f->think_open;
    spec->think_close = f->think_close;
    spec->think_inside = f->opens_reasoning;
}

int request_constraint_parse(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                             struct request_field_error *err)
{
    struct wanted w = {.spec = {.strict = 1, .ws_max = GRAMMAR_WS_DEFAULT, .ws_lines = 1}};
    const char *given = NULL;
    for (int i = 0; i < N_FIELDS; i++) {
        const json_t *v = request_field_get(obj, FIELDS[i]);
        if (!v)
            continue;
        struct wanted one = {.spec = {.strict = 1, .ws_max = GRAMMAR_WS_DEFAULT, .ws_lines = 1}};
        if (read_field(&one, FIELDS[i], v, err)) {
            free(one.text);
            free(w.text);
            return -1;
        }
        if (one.spec.kind == GRAMMAR_NONE) /* "text" and friends: nothing asked */
            continue;
        if (given) {
            free(one.text);
            free(w.text);
            return BAD(err, FIELDS[i], "give one output constraint: '%s' and '%s' both given", given, FIELDS[i]);
        }
        given = FIELDS[i];
        w = one;
    }
    const struct chat_format *f = format_of(o, obj, out);
    /* "auto" without the grammar engine (no tokenizer): calls are still read back, unconstrained */
    const int need = out->tools.choice != TOOL_CHOICE_AUTO || o->grammars;
    const char *tools = f && need ? request_tools_spec(&out->tools, f) : NULL;
    if (tools) {
        if (given)
            free(w.text);
        if (tools_constraint(&w, given, tools, out->tools.strict, err))
            return -1;
        out->calls_held = 1;
    }
    if (w.spec.kind == GRAMMAR_NONE)
        return 0;
    if (!o->grammars) {
        free(w.text);
        return BAD(err, w.field, "'%s': structured outputs need the model's tokenizer", w.field);
    }
    after_reasoning(&w.spec, f, obj);
    w.spec.text = w.text;
    w.spec.len = w.text ? strlen(w.text) : 0;
    struct json_schema_notes notes = {0};
    struct err e = {{0}};
    struct grammar_ref *ref = grammar_cache_get(o->grammars, &w.spec, &notes, &e);
    free(w.text);
    if (!ref)
        return BAD(err, w.field, "'%s': %s", w.field, e.msg);
    out->grammar = ref;
    out->submit.grammar = ref;
    out->warnings = notes.ignored; /* taken over */
    out->n_warnings = notes.n_ignored;
    return 0;
}
