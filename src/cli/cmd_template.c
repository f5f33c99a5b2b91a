/* infer template --model DIR --messages FILE [--no-generation-prompt]
 *
 * FILE is either one conversation (a JSON array of messages, or a JSON
 * object with "messages" written over several lines): the rendered prompt
 * is printed as is, with no newline added; or a batch, one JSON object per
 * line {"messages": [...], "tools": [...]?, "add_generation_prompt": bool?,
 * ...other template variables such as enable_thinking}: one line is printed
 * per case, the prompt as a JSON string or {"error": "..."} when rendering
 * fails (a template that raises). The whole file is parsed before anything
 * is printed, so a malformed line prints nothing and names file and line. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/fs.h"
#include "chat/chat_template.h"

#define MAX_INPUT_BYTES ((size_t)1 << 30)

/* The case's variables beyond messages/tools/add_generation_prompt. */
static json_t *extra_vars_of(const json_t *obj)
{
    json_t *extra = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (strcmp(k, "messages") && strcmp(k, "tools") && strcmp(k, "add_generation_prompt"))
            json_object_set(extra, k, v);
    }
    return extra;
}

static int render_case(const struct chat_template *ct, const json_t *obj, int default_agp, char **out,
                       struct err *e)
{
    const json_t *agp = json_object_get(obj, "add_generation_prompt");
    json_t *extra = extra_vars_of(obj);
    int rc = chat_template_render(ct, json_object_get(obj, "messages"), json_object_get(obj, "tools"),
                                  agp ? json_is_true(agp) : default_agp, extra, out, e);
    json_decref(extra);
    return rc;
}

static int check_case(const json_t *obj, const char *path, int line, struct err *e)
{
    if (!json_is_object(obj))
        return err_set(e, "%s:%d: expected a JSON object with \"messages\"", path, line);
    if (!json_is_array(json_object_get(obj, "messages")))
        return err_set(e, "%s:%d: \"messages\" must be an array", path, line);
    const json_t *agp = json_object_get(obj, "add_generation_prompt");
    if (agp && !json_is_boolean(agp))
        return err_set(e, "%s:%d: \"add_generation_prompt\" must be true or false", path, line);
    return 0;
}

static int print_json_line(json_t *j)
{
    char *s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(j);
    if (!s)
        return -1;
    printf("%s\n", s);
    free(s);
    return 0;
}

static int run_batch(const struct chat_template *ct, const char *path, char *data, size_t len,
                     int default_agp, struct err *e)
{
    /* parse every line first */
    json_t *cases = json_array();
    int line = 0;
    for (size_t pos = 0; pos < len;) {
        char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len;
        line++;
        size_t a = pos;
        while (a < end && (data[a] == ' ' || data[a] == '\t' || data[a] == '\r'))
            a++;
        if (a < end) {
            json_error_t je;
            json_t *obj = json_loadb(data + pos, end - pos, 0, &je);
            if (!obj) {
                json_decref(cases);
                return err_set(e, "%s:%d: invalid JSON: %s", path, line, je.text);
            }
            if (check_case(obj, path, line, e)) {
                json_decref(obj);
                json_decref(cases);
                return -1;
            }
            json_array_append_new(cases, obj);
        }
        pos = end + 1;
    }
    size_t i;
    json_t *obj;
    json_array_foreach(cases, i, obj)
    {
        char *out = NULL;
        struct err re = {{0}};
        json_t *res;
        if (render_case(ct, obj, default_agp, &out, &re)) {
            res = json_pack("{s:s}", "error", re.msg);
        } else {
            res = json_stringn(out, strlen(out));
            if (!res)
                res = json_pack("{s:s}", "error", "rendered text is not valid UTF-8");
        }
        free(out);
        if (!res || print_json_line(res)) {
            json_decref(cases);
            return err_set(e, "cannot encode the result of case %zu", i + 1);
        }
    }
    json_decref(cases);
    return 0;
}

static int multiline(const char *data, size_t len)
{
    size_t a = 0, z = len;
    while (a < z && strchr(" \t\r\n", data[a]))
        a++;
    while (z > a && strchr(" \t\r\n", data[z - 1]))
        z--;
    return memchr(data + a, '\n', z - a) != NULL;
}

int cmd_template(int argc, char **argv)
{
    const char *model = NULL, *messages = NULL;
    int no_gen = 0;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model, 1, 0, 0, "model or tokenizer directory", 0},
        {"messages", CLI_OPT_STRING, &messages, 1, 0, 0, "JSON messages file, or one case per line", 0},
        {"no-generation-prompt", CLI_OPT_FLAG, &no_gen, 0, 0, 0, "do not open an assistant turn", 0},
    };
    struct err e = {{0}};
    int rc = cli_parse(argc, argv, "template", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc)
        goto done;
    char *data = NULL;
    size_t len = 0;
    struct chat_template *ct = NULL;
    if (fs_read_file(messages, MAX_INPUT_BYTES, &data, &len, &e) || !(ct = chat_template_load(model, &e))) {
        rc = -1;
        free(data);
        goto done;
    }
    json_error_t je;
    json_t *whole = json_loadb(data, len, 0, &je);
    if (whole && (json_is_array(whole) ||
                  (json_is_object(whole) && json_object_get(whole, "messages") && multiline(data, len)))) {
        char *out = NULL;
        if (json_is_array(whole)) {
            rc = chat_template_render(ct, whole, NULL, !no_gen, NULL, &out, &e);
        } else if (!(rc = check_case(whole, messages, 1, &e))) {
            rc = render_case(ct, whole, !no_gen, &out, &e);
        }
        if (!rc)
            fwrite(out, 1, strlen(out), stdout);
        free(out);
    } else {
        rc = run_batch(ct, messages, data, len, !no_gen, &e);
    }
    json_decref(whole);
    chat_template_free(ct);
    free(data);
done:
    if (rc < 0) /* cli_parse's messages already name the command */
        fprintf(stderr, strncmp(e.msg, "infer ", 6) ? "infer template: %s\n" : "%s\n", e.msg);
    return rc < 0 ? 1 : 0;
}
