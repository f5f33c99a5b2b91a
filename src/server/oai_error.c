/* OpenAI's error object: {"error": {"message", "type", "param", "code"}},
 * with the type that goes with the HTTP status. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"
#include "core/utf8.h"

/* how oai_request.c starts its context-length messages (OpenAI's words) */
#define OAI_CONTEXT_MSG "This model's maximum context length is "

static const char *type_of(int status)
{
    switch (status) {
    case 401:
        return "authentication_error";
    case 404:
        return "not_found_error";
    case 429:
        return "rate_limit_error";
    default:
        return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

int oai_error_set(struct oai_error *err, int status, const char *param, const char *fmt, ...)
{
    err->status = status;
    err->type = type_of(status);
    snprintf(err->param, sizeof err->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* A JSON string of s, valid UTF-8 whatever s holds (a message cut at its
 * buffer's end can split a character; user text is quoted in messages). */
static json_t *text(const char *s)
{
    size_t n = strlen(s);
    char *buf = xmalloc(3 * n + 1);
    size_t m = utf8_lossy(buf, s, n);
    json_t *j = json_stringn(buf, m);
    free(buf);
    return j;
}

/* OpenAI's codes for the two errors clients look for by code. */
static json_t *json_code(const struct oai_error *err)
{
    if (err->status == 404 && !strcmp(err->param, "model"))
        return json_string("model_not_found");
    if (err->status == 400 && !strncmp(err->message, OAI_CONTEXT_MSG, strlen(OAI_CONTEXT_MSG)))
        return json_string("context_length_exceeded");
    return json_null();
}

json_t *oai_error_json(const struct oai_error *err)
{
    json_t *e = json_object();
    json_object_set_new(e, "message", text(err->message));
    json_object_set_new(e, "type", json_string(err->type ? err->type : type_of(err->status)));
    json_object_set_new(e, "param", err->param[0] ? text(err->param) : json_null());
    json_object_set_new(e, "code", json_code(err));
    json_t *o = json_object();
    json_object_set_new(o, "error", e);
    return o;
}
