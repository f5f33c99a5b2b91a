/* Chat templates of a model directory, rendered as transformers does.
 *
 * Where the template comes from (transformers' order): chat_template.jinja
 * beside the tokenizer, else tokenizer_config.json's "chat_template", a string
 * or a list of {"name", "template"} (a dict of named templates: "tool_use" is
 * picked when tools are given and it exists, else "default").
 * Variables: the named special tokens that are set (bos_token, eos_token,
 * unk_token, sep_token, pad_token, cls_token, mask_token, plus the names in
 * extra_special_tokens), then the caller's extra variables, then messages,
 * tools, documents and add_generation_prompt. */
#include "chat/chat_template.h"
#include "chat/chat_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "io/gguf.h"
#include "template/template.h"

#define MAX_TEMPLATES 16
#define MAX_CONFIG_BYTES (64u << 20)

struct chat_template {
    int n;
    char *names[MAX_TEMPLATES];
    struct tmpl *tmpls[MAX_TEMPLATES];
    struct chat_format formats[MAX_TEMPLATES];
    json_t *specials; /* object: token variable name -> string */
};

static const char *const special_names[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                            "pad_token", "cls_token", "mask_token"};

/* "tok" or {"content": "tok", ...} -> "tok"; anything else -> NULL */
static const char *token_text(const json_t *v)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_object(v) && json_is_string(json_object_get(v, "content")))
        return json_string_value(json_object_get(v, "content"));
    return NULL;
}

static int add_template(struct chat_template *ct, const char *name, const char *src, size_t len,
                        struct err *e)
{
    if (ct->n == MAX_TEMPLATES)
        return err_set(e, "too many named chat templates (at most %d)", MAX_TEMPLATES);
    struct tmpl *t = tmpl_compile(src, len, e);
    if (!t)
        return err_prefix(e, "chat template '%s'", name);
    chat_format_detect(src, len, &ct->formats[ct->n]);
    ct->names[ct->n] = xstrdup(name);
    ct->tmpls[ct->n++] = t;
    return 0;
}

void chat_template_free(struct chat_template *ct)
{
    if (!ct)
        return;
    for (int i = 0; i < ct->n; i++) {
        free(ct->names[i]);
        tmpl_free(ct->tmpls[i]);
    }
    json_decref(ct->specials);
    free(ct);
}

static int render_with(const struct chat_template *ct, const struct tmpl *t, const json_t *messages,
                       const json_t *tools, int add_generation_prompt, const json_t *extra_vars, char **out,
                       struct err *e);

/* Whether each template with reasoning markers opens the block in its
 * generation prompt: a render of one user turn, once at load. */
static void probe_reasoning(struct chat_template *ct)
{
    json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "Hi");
    for (int i = 0; i < ct->n; i++) {
        if (!ct->formats[i].think_open)
            continue;
        char *out = NULL;
        struct err e = {{0}};
        if (render_with(ct, ct->tmpls[i], msgs, NULL, 1, NULL, &out, &e) == 0)
            ct->formats[i].opens_reasoning = chat_format_prompt_in_reasoning(&ct->formats[i], out, strlen(out));
        free(out);
    }
    json_decref(msgs);
}

struct chat_template *chat_template_from_config(const json_t *config, const char *jinja_override,
                                                struct err *e)
{
    struct chat_template *ct = xcalloc(1, sizeof *ct);
    ct->specials = json_object();
    const json_t *tpl = config ? json_object_get(config, "chat_template") : NULL;
    int rc = 0;
    if (jinja_override) {
        rc = add_template(ct, "default", jinja_override, strlen(jinja_override), e);
    } else if (json_is_string(tpl)) {
        rc = add_template(ct, "default", json_string_value(tpl), json_string_length(tpl), e);
    } else if (json_is_array(tpl)) {
        size_t i;
        const json_t *item;
        json_array_foreach(tpl, i, item)
        {
            const json_t *name = json_object_get(item, "name"), *src = json_object_get(item, "template");
            if (!json_is_string(name) || !json_is_string(src)) {
                rc = err_set(e, "chat_template[%zu]: expected {\"name\": ..., \"template\": ...}", i);
                break;
            }
            if ((rc = add_template(ct, json_string_value(name), json_string_value(src),
                                   json_string_length(src), e)))
                break;
        }
    } else if (json_is_object(tpl)) {
        const char *name;
        json_t *src;
        json_object_foreach((json_t *)tpl, name, src)
        {
            if (!json_is_string(src)) {
                rc = err_set(e, "chat_template.%s: expected a string", name);
                break;
            }
            if ((rc = add_template(ct, name, json_string_value(src), json_string_length(src), e)))
                break;
        }
    }
    if (!rc && ct->n == 0)
        rc = err_set(e, "no chat template (tokenizer_config.json has no \"chat_template\" and there is no "
                        "chat_template.jinja)");
    if (rc) {
        chat_template_free(ct);
        return NULL;
    }
    for (size_t i = 0; config && i < sizeof special_names / sizeof special_names[0]; i++) {
        const char *tok = token_text(json_object_get(config, special_names[i]));
        if (tok)
            json_object_set_new(ct->specials, special_names[i], json_string(tok));
    }
    const json_t *extra = config ? json_object_get(config, "extra_special_tokens") : NULL;
    if (json_is_object(extra)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)extra, k, v)
        {
            const char *tok = token_text(v);
            if (tok)
                json_object_set_new(ct->specials, k, json_string(tok));
        }
    }
    probe_reasoning(ct);
    return ct;
}

static json_t *load_json(const char *path, struct err *e)
{
    char *data;
    size_t len;
    if (fs_read_file(path, MAX_CONFIG_BYTES, &data, &len, e))
        return NULL;
    json_error_t je;
    /* tokenizer configs hold integers beyond 64 bits (model_max_length 1e30) */
    json_t *j = json_loadb(data, len, JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES, &je);
    free(data);
    if (!j)
        err_set(e, "%s:%d: %s", path, je.line, je.text);
    else if (!json_is_object(j)) {
        err_set(e, "%s: expected a JSON object", path);
        json_decref(j);
        j = NULL;
    }
    return j;
}

struct chat_template *chat_template_load(const char *model_dir, struct err *e)
{
    if (gguf_is_path(model_dir)) {
        struct gguf_file *f = gguf_open(model_dir, e);
        struct chat_template *ct = f ? chat_template_from_gguf(f, e) : NULL;
        gguf_close(f);
        return ct;
    }
    char path[4096];
    json_t *config = NULL;
    char *jinja = NULL;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", model_dir);
    if (fs_exists(path) && !(config = load_json(path, e)))
        return NULL;
    snprintf(path, sizeof path, "%s/chat_template.jinja", model_dir);
    if (fs_exists(path)) {
        size_t len;
        if (fs_read_file(path, MAX_CONFIG_BYTES, &jinja, &len, e)) {
            json_decref(config);
            return NULL;
        }
    }
    /* legacy checkpoints keep their special tokens in special_tokens_map.json */
    snprintf(path, sizeof path, "%s/special_tokens_map.json", model_dir);
    if (config && fs_exists(path)) {
        struct err ignored;
        json_t *map = load_json(path, &ignored);
        for (size_t i = 0; map && i < sizeof special_names / sizeof special_names[0]; i++)
            if (!json_object_get(config, special_names[i]) && json_object_get(map, special_names[i]))
                json_object_set(config, special_names[i], json_object_get(map, special_names[i]));
        json_decref(map);
    }
    if (!config && !jinja) {
        err_set(e, "%s: no tokenizer_config.json or chat_template.jinja", model_dir);
        return NULL;
    }
    struct chat_template *ct = chat_template_from_config(config, jinja, e);
    if (!ct)
        err_prefix(e, "%s", model_dir);
    free(jinja);
    json_decref(config);
    return ct;
}

/* The index of the template for a render with or without tools, or -1. */
static int pick_index(const struct chat_template *ct, int has_tools)
{
    if (ct->n == 1 && !strcmp(ct->names[0], "default"))
        return 0;
    for (int pass = has_tools ? 0 : 1; pass < 2; pass++)
        for (int i = 0; i < ct->n; i++)
            if (!strcmp(ct->names[i], pass == 0 ? "tool_use" : "default"))
                return i;
    return ct->n == 1 ? 0 : -1;
}

static const struct tmpl *pick(const struct chat_template *ct, int has_tools, struct err *e)
{
    int i = pick_index(ct, has_tools);
    if (i >= 0)
        return ct->tmpls[i];
    err_set(e, "this model has several chat templates and none is named \"default\"");
    return NULL;
}

const struct chat_format *chat_template_format(const struct chat_template *ct, int has_tools)
{
    int i = pick_index(ct, has_tools);
    return &ct->formats[i >= 0 ? i : 0];
}

/* transformers' message preprocessing: drop null-valued keys, then alias the
 * reasoning fields ({"thinking": r, **message, "reasoning_content": r}). */
static json_t *normalize_message(const json_t *m)
{
    static const char *const reasoning_keys[] = {"reasoning_content", "thinking", "reasoning"};
    const json_t *r = NULL;
    for (int k = 0; k < 3 && !r; k++) {
        const json_t *v = json_object_get(m, reasoning_keys[k]);
        if (v && !json_is_null(v))
            r = v;
    }
    json_t *out = json_object();
    if (r) {
        const json_t *th = json_object_get(m, "thinking");
        json_object_set(out, "thinking", th && !json_is_null(th) ? (json_t *)th : (json_t *)r);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        if (json_is_null(v) || (r && !strcmp(k, "thinking")))
            continue;
        json_object_set(out, k, v);
    }
    if (r)
        json_object_set(out, "reasoning_content", (json_t *)r);
    return out;
}

int chat_template_render(const struct chat_template *ct, const json_t *messages, const json_t *tools,
                         int add_generation_prompt, const json_t *extra_vars, char **out, struct err *e)
{
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return err_set(e, "messages: expected a non-empty array of message objects");
    if (tools && json_is_null(tools))
        tools = NULL;
    if (tools && !json_is_array(tools))
        return err_set(e, "tools: expected an array of tool objects");
    size_t i;
    const json_t *item;
    json_array_foreach(tools, i, item) if (!json_is_object(item)) return err_set(
        e, "tools[%zu]: expected an object", i);
    if (extra_vars && !json_is_object(extra_vars))
        return err_set(e, "template variables: expected a JSON object");
    const json_t *docs = extra_vars ? json_object_get(extra_vars, "documents") : NULL;
    json_array_foreach(docs, i, item) if (!json_is_object(item)) return err_set(
        e, "documents[%zu]: expected an object", i);
    const struct tmpl *t = pick(ct, tools != NULL, e);
    if (!t)
        return -1;
    return render_with(ct, t, messages, tools, add_generation_prompt, extra_vars, out, e);
}

static int render_with(const struct chat_template *ct, const struct tmpl *t, const json_t *messages,
                       const json_t *tools, int add_generation_prompt, const json_t *extra_vars, char **out,
                       struct err *e)
{
    size_t i;
    const json_t *item;
    const json_t *docs = extra_vars ? json_object_get(extra_vars, "documents") : NULL;
    json_t *vars = json_deep_copy(ct->specials);
    if (extra_vars)
        json_object_update(vars, (json_t *)extra_vars);
    json_t *msgs = json_array();
    json_array_foreach(messages, i, item)
    {
        if (!json_is_object(item)) {
            json_decref(msgs);
            json_decref(vars);
            return err_set(e, "messages[%zu]: expected an object", i);
        }
        json_array_append_new(msgs, normalize_message(item));
    }
    json_object_set_new(vars, "messages", msgs);
    json_object_set(vars, "tools", tools ? (json_t *)tools : json_null());
    if (!docs)
        json_object_set_new(vars, "documents", json_null());
    json_object_set_new(vars, "add_generation_prompt", json_boolean(add_generation_prompt));
    int rc = tmpl_render(t, vars, out, NULL, e);
    json_decref(vars);
    return rc;
}
