/* Bodies of POST /v1/chat/completions and /v1/completions → engine requests.
 *
 * Order of work: a stack-free scan refuses nesting deeper than 64 before
 * jansson's recursive parser sees the body; cheap field checks come next;
 * the template render and the tokenizer (the only costly steps) run last,
 * once, and the context-length check uses their token count.
 *
 * Choices where OpenAI and vLLM leave room (see also oai.h):
 * - null is "not given" for every optional field (vLLM's pydantic models
 *   treat it so; clients send it).
 * - Integer fields take integral reals (2.0), as pydantic's lax mode does;
 *   2.5, strings and booleans are refused.
 * - Sampling defaults are OpenAI's (temperature 1, every filter off), not
 *   the engine's greedy defaults.
 * - "top_k": -1 and 0 both mean off; "top_logprobs" (chat, even 0) needs
 *   "logprobs": true, as in vLLM.
 * - "developer" messages reach the template as "system" (templates know no
 *   "developer" role); text content parts are joined with "\n" as vLLM does;
 *   an assistant message may leave "content" out or null (tool calls), and
 *   its tool calls' "arguments" strings are parsed into objects for the
 *   template, as vLLM does.
 * - "chat_template_kwargs" (a vLLM extension) become template variables.
 * - Completions: "echo" with "logprobs" is refused (the engine does not
 *   report prompt log-probs), "suffix" other than "" is refused.
 * - Empty stop strings are refused (the engine would refuse them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

enum { MAX_DEPTH = 64, MAX_CHAT_TOP_LOGPROBS = 20, MAX_COMPLETION_LOGPROBS = 5 };

static const char *const ROLES[] = {"system", "user", "assistant", "tool", "developer"};

struct parse {
    const struct oai_context *ctx;
    enum oai_kind kind;
    const json_t *o;
    struct oai_completion_request *r;
    struct oai_error *err;
};

#define BAD(p, param, ...) oai_error_set((p)->err, 400, (param), __VA_ARGS__)

/* Whether the text nests arrays and objects deeper than max: a scan with
 * no stack, so that a hostile body never drives the recursive parser (or
 * json_decref, or the template) deep. Invalid JSON is left to the parser. */
static int too_deep(const char *s, size_t len, int max)
{
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max)
                return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

/* key's value, NULL when absent or null */
static const json_t *get(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v) ? v : NULL;
}

/* "got ..." for messages: numbers as given, anything else by its type */
static const char *describe(const json_t *v, char *buf, size_t n)
{
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
        return buf;
    case JSON_REAL:
        snprintf(buf, n, "%g", json_real_value(v));
        return buf;
    case JSON_STRING:
        return "a string";
    case JSON_ARRAY:
        return "an array";
    case JSON_OBJECT:
        return "an object";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* An integer in [lo, hi]; integral reals count (2.0), as pydantic's lax mode. */
static int as_int(const json_t *v, long long lo, long long hi, long long *dst)
{
    if (json_is_integer(v)) {
        long long x = (long long)json_integer_value(v);
        if (x < lo || x > hi)
            return 0;
        *dst = x;
        return 1;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (!(x >= -9.2e18 && x <= 9.2e18) || x != floor(x) || x < (double)lo || x > (double)hi)
            return 0;
        *dst = (long long)x;
        return *dst >= lo && *dst <= hi;
    }
    return 0;
}

static int get_int(struct parse *p, const char *key, long long lo, long long hi, long long *dst, int *given)
{
    const json_t *v = get(p->o, key);
    if (!v)
        return 0;
    char buf[48];
    if (!as_int(v, lo, hi, dst))
        return BAD(p, key, "'%s' must be an integer in [%lld, %lld], got %s", key, lo, hi,
                   describe(v, buf, sizeof buf));
    if (given)
        *given = 1;
    return 0;
}

/* A number in [lo, hi] (lo excluded when lo_open; hi = INFINITY: no upper bound). */
static int get_real(struct parse *p, const char *key, double lo, double hi, int lo_open, float *dst)
{
    const json_t *v = get(p->o, key);
    if (!v)
        return 0;
    double x = json_number_value(v);
    /* the range holds for the float the engine gets too (1e-50 is 0, 1e300 inf in a float) */
    const float f = (float)x;
    if (json_is_number(v) && isfinite(x) && isfinite(f) && (lo_open ? x > lo && f > lo : x >= lo) && x <= hi) {
        *dst = f;
        return 0;
    }
    char buf[48], range[64];
    if (isinf(hi))
        snprintf(range, sizeof range, "%s %g", lo_open ? ">" : ">=", lo);
    else
        snprintf(range, sizeof range, "in %c%g, %g]", lo_open ? '(' : '[', lo, hi);
    return BAD(p, key, "'%s' must be a number %s, got %s", key, range, describe(v, buf, sizeof buf));
}

static int get_bool(struct parse *p, const char *key, int *dst)
{
    const json_t *v = get(p->o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return BAD(p, key, "'%s' must be true or false", key);
    *dst = json_is_true(v);
    return 0;
}

/* ---- model, stop strings, logit bias ---- */

static int parse_model(struct parse *p)
{
    const json_t *m = get(p->o, "model");
    if (!m)
        return BAD(p, "model", "you must provide a model parameter");
    if (!json_is_string(m))
        return BAD(p, "model", "'model' must be a string");
    for (int i = 0; i < p->ctx->n_model_names; i++)
        if (!strcmp(json_string_value(m), p->ctx->model_names[i])) {
            p->r->model = xstrdup(json_string_value(m));
            return 0;
        }
    return oai_error_set(p->err, 404, "model", "The model '%.200s' does not exist.", json_string_value(m));
}

static int add_stop(struct parse *p, const json_t *s, const char *param)
{
    if (!json_is_string(s))
        return BAD(p, param, "'%s' must be a string", param);
    size_t n = json_string_length(s);
    if (n == 0)
        return BAD(p, param, "'%s': stop strings must not be empty", param);
    if (n > (size_t)p->ctx->max_stop_len)
        return BAD(p, param, "'%s': stop strings are at most %d bytes, got %zu", param, p->ctx->max_stop_len,
                   n);
    p->r->stop[p->r->submit.n_stop++] = xstrdup(json_string_value(s));
    return 0;
}

static int parse_stop(struct parse *p)
{
    const json_t *v = get(p->o, "stop");
    if (!v)
        return 0;
    if (!json_is_string(v) && !json_is_array(v))
        return BAD(p, "stop", "'stop' must be a string or an array of strings");
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (n == 0)
        return 0;
    if (n > (size_t)p->ctx->max_stop)
        return BAD(p, "stop", "'stop' holds at most %d strings, got %zu", p->ctx->max_stop, n);
    if (!p->ctx->tok)
        return BAD(p, "stop", "stop strings need the model's tokenizer");
    p->r->stop = xcalloc(n, sizeof(char *));
    if (json_is_string(v))
        return add_stop(p, v, "stop");
    for (size_t i = 0; i < n; i++) {
        char param[32];
        snprintf(param, sizeof param, "stop[%zu]", i);
        if (add_stop(p, json_array_get(v, i), param))
            return -1;
    }
    return 0;
}

/* A token id key: decimal digits, no sign, no leading zero, inside the vocabulary. */
static int bias_token(const char *key, int vocab, int32_t *id)
{
    size_t n = strlen(key);
    if (n == 0 || n > 10 || (key[0] == '0' && n > 1))
        return 0;
    long long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (key[i] < '0' || key[i] > '9')
            return 0;
        x = x * 10 + (key[i] - '0');
    }
    if (x >= vocab)
        return 0;
    *id = (int32_t)x;
    return 1;
}

static int parse_bias(struct parse *p)
{
    const json_t *v = get(p->o, "logit_bias");
    if (!v)
        return 0;
    if (!json_is_object(v))
        return BAD(p, "logit_bias", "'logit_bias' must be an object mapping token ids to numbers");
    p->r->bias = xcalloc(json_object_size(v) + 1, sizeof *p->r->bias);
    int n = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        int32_t id;
        if (!bias_token(key, p->ctx->vocab_size, &id))
            return BAD(p, "logit_bias", "'logit_bias': key '%.40s' is not a token id in [0, %d)", key,
                       p->ctx->vocab_size);
        double b = json_number_value(val);
        if (!json_is_number(val) || !(b >= -100 && b <= 100))
            return BAD(p, "logit_bias", "'logit_bias': the bias of token %d must be a number in [-100, 100]",
                       id);
        p->r->bias[n++] = (struct logit_bias){id, (float)b};
    }
    p->r->submit.sampling.bias = p->r->bias;
    p->r->submit.sampling.n_bias = n;
    return 0;
}

/* ---- prompts ---- */

/* Tokenizes text into r->prompt. */
static int encode(struct parse *p, const char *param, const char *text, size_t len, int add_special)
{
    struct token_ids t = {0};
    struct err e = {{0}};
    if (tokenizer_encode(p->ctx->tok, text, len, add_special, &t, &e)) {
        token_ids_free(&t);
        return BAD(p, param, "'%s': %s", param, e.msg);
    }
    p->r->prompt = t.ids;
    p->r->submit.n_prompt = t.n;
    return 0;
}

/* Joins a message's content (a string or text parts) into one string (new reference). */
static json_t *message_content(struct parse *p, const json_t *c, size_t i, int assistant)
{
    char param[64];
    snprintf(param, sizeof param, "messages[%zu].content", i);
    if (!c || json_is_null(c)) {
        if (assistant) /* tool calls only */
            return json_null();
        BAD(p, param, "'%s' is required", param);
        return NULL;
    }
    if (json_is_string(c))
        return json_incref((json_t *)c);
    if (!json_is_array(c)) {
        BAD(p, param, "'%s' must be a string or an array of text parts", param);
        return NULL;
    }
    size_t total = 0, j;
    const json_t *part;
    json_array_foreach(c, j, part)
    {
        const json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type) || strcmp(json_string_value(type), "text") ||
            !json_is_string(text)) {
            snprintf(param, sizeof param, "messages[%zu].content[%zu]", i, j);
            BAD(p, param,
                "'%s' must be a text part {\"type\": \"text\", \"text\": \"...\"} (only text is supported)",
                param);
            return NULL;
        }
        total += json_string_length(text) + 1;
    }
    char *s = xmalloc(total + 1);
    size_t k = 0;
    json_array_foreach(c, j, part)
    {
        const json_t *text = json_object_get(part, "text");
        if (j > 0)
            s[k++] = '\n';
        memcpy(s + k, json_string_value(text), json_string_length(text));
        k += json_string_length(text);
    }
    json_t *out = json_stringn(s, k);
    free(s);
    return out;
}

/* An assistant message's tool calls with their "arguments" strings parsed
 * into objects where they hold one (templates apply tojson to them). */
static json_t *tool_calls_for_template(const json_t *calls)
{
    json_t *out = json_array();
    size_t i;
    const json_t *call;
    json_array_foreach(calls, i, call)
    {
        const json_t *fn = json_object_get(call, "function");
        const json_t *args = json_object_get(fn, "arguments");
        json_t *parsed = NULL;
        if (json_is_string(args) && !too_deep(json_string_value(args), json_string_length(args), MAX_DEPTH))
            parsed =
                json_loadb(json_string_value(args), json_string_length(args), JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(parsed)) {
            json_decref(parsed);
            json_array_append(out, (json_t *)call);
            continue;
        }
        json_t *fn2 = json_copy((json_t *)fn), *call2 = json_copy((json_t *)call);
        json_object_set_new(fn2, "arguments", parsed);
        json_object_set_new(call2, "function", fn2);
        json_array_append_new(out, call2);
    }
    return out;
}

/* The messages as the template sees them (new reference), or NULL. */
static json_t *chat_messages(struct parse *p, const json_t *msgs)
{
    json_t *out = json_array();
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m)
    {
        char param[64];
        snprintf(param, sizeof param, "messages[%zu]", i);
        if (!json_is_object(m)) {
            BAD(p, param, "'%s' must be a message object", param);
            break;
        }
        const json_t *role = json_object_get(m, "role");
        int r = -1;
        for (int k = 0; json_is_string(role) && k < (int)(sizeof ROLES / sizeof ROLES[0]); k++)
            if (!strcmp(json_string_value(role), ROLES[k]))
                r = k;
        if (r < 0) {
            snprintf(param, sizeof param, "messages[%zu].role", i);
            BAD(p, param, "'%s' must be one of 'system', 'user', 'assistant', 'tool', 'developer'", param);
            break;
        }
        json_t *content =
            message_content(p, json_object_get(m, "content"), i, !strcmp(ROLES[r], "assistant"));
        if (!content)
            break;
        json_t *copy = json_copy((json_t *)m);
        json_object_set_new(copy, "content", content);
        if (!strcmp(ROLES[r], "developer"))
            json_object_set_new(copy, "role", json_string("system"));
        const json_t *calls = json_object_get(m, "tool_calls");
        if (json_is_array(calls))
            json_object_set_new(copy, "tool_calls", tool_calls_for_template(calls));
        json_array_append_new(out, copy);
    }
    if (i < json_array_size(msgs)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static int parse_messages(struct parse *p)
{
    const json_t *msgs = get(p->o, "messages"), *tools = get(p->o, "tools"),
                 *kwargs = get(p->o, "chat_template_kwargs");
    if (!msgs)
        return BAD(p, "messages", "'messages' is required");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return BAD(p, "messages", "'messages' must be a non-empty array of message objects");
    if (tools && !json_is_array(tools))
        return BAD(p, "tools", "'tools' must be an array of tool objects");
    for (size_t i = 0; i < json_array_size(tools); i++)
        if (!json_is_object(json_array_get(tools, i))) {
            char param[32];
            snprintf(param, sizeof param, "tools[%zu]", i);
            return BAD(p, param, "'%s' must be a tool object", param);
        }
    if (kwargs && !json_is_object(kwargs))
        return BAD(p, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
    if (!p->ctx->ct)
        return BAD(p, "messages", "the model has no chat template; use /v1/completions");
    if (!p->ctx->tok)
        return BAD(p, "messages", "the model has no tokenizer; use /v1/completions with token ids");
    json_t *conv = chat_messages(p, msgs);
    if (!conv)
        return -1;
    struct err e = {{0}};
    char *text = NULL;
    int rc = chat_template_render(p->ctx->ct, conv, tools, 1, kwargs, &text, &e);
    json_decref(conv);
    if (rc)
        return BAD(p, "messages", "the chat template failed: %s", e.msg);
    p->r->prompt_text = text;
    /* the template writes BOS and the turn markers itself */
    return encode(p, "messages", text, strlen(text), 0);
}

/* A prompt given as token ids. */
static int prompt_ids(struct parse *p, const json_t *a, const char *param)
{
    size_t n = json_array_size(a);
    p->r->prompt = xmalloc((n ? n : 1) * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) {
        long long id;
        if (!as_int(json_array_get(a, i), 0, p->ctx->vocab_size - 1, &id)) {
            char pi[48];
            snprintf(pi, sizeof pi, "%s[%zu]", param, i);
            return BAD(p, pi, "'%s' must be a token id in [0, %d)", pi, p->ctx->vocab_size);
        }
        p->r->prompt[i] = (int32_t)id;
    }
    p->r->submit.n_prompt = (int)n;
    if (p->ctx->tok) {
        char *text = NULL;
        size_t len;
        struct err e = {{0}};
        if (!tokenizer_decode(p->ctx->tok, p->r->prompt, (int)n, 0, &text, &len, &e))
            p->r->prompt_text = text;
    }
    return 0;
}

static int parse_prompt(struct parse *p)
{
    const json_t *v = get(p->o, "prompt");
    const char *param = "prompt";
    if (!v)
        return BAD(p, "prompt", "'prompt' is required");
    if (json_is_array(v) && json_array_size(v) >= 1 && !json_is_number(json_array_get(v, 0))) {
        /* a list of prompts: one is fine */
        if (json_array_size(v) > 1)
            return BAD(p, "prompt", "batched prompts are not supported; send one prompt per request");
        v = json_array_get(v, 0);
        param = "prompt[0]";
    }
    if (json_is_string(v)) {
        if (!p->ctx->tok)
            return BAD(p, param, "the model has no tokenizer; give the prompt as token ids");
        p->r->prompt_text = xstrdup(json_string_value(v));
        return encode(p, param, json_string_value(v), json_string_length(v), 1);
    }
    if (!json_is_array(v))
        return BAD(p, param, "'%s' must be a string or an array of token ids", param);
    return prompt_ids(p, v, param);
}

/* ---- the whole body ---- */

/* Refusals of fields whose meaning we would silently change. */
static int refuse_unsupported(struct parse *p)
{
    const json_t *rf = get(p->o, "response_format");
    if (rf) {
        const json_t *t = json_object_get(rf, "type");
        if (!json_is_object(rf) || !json_is_string(t) || strcmp(json_string_value(t), "text"))
            return BAD(p, "response_format",
                       "'response_format' other than {\"type\": \"text\"} is not supported");
    }
    if (p->kind == OAI_COMPLETION) {
        const json_t *s = get(p->o, "suffix");
        if (s && !(json_is_string(s) && json_string_length(s) == 0))
            return BAD(p, "suffix", "'suffix' is not supported");
        if (get(p->o, "tools"))
            return BAD(p, "tools", "'tools' is only supported on /v1/chat/completions");
    }
    return 0;
}

static int parse_logprobs(struct parse *p)
{
    struct oai_completion_request *r = p->r;
    long long top = 0;
    int have_top = 0;
    if (p->kind == OAI_CHAT) {
        if (get_bool(p, "logprobs", &r->logprobs) ||
            get_int(p, "top_logprobs", 0, MAX_CHAT_TOP_LOGPROBS, &top, &have_top))
            return -1;
        if (have_top && !r->logprobs)
            return BAD(p, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
    } else {
        if (get_int(p, "logprobs", 0, MAX_COMPLETION_LOGPROBS, &top, &r->logprobs))
            return -1;
        if (get_bool(p, "echo", &r->echo))
            return -1;
        if (r->echo && r->logprobs)
            return BAD(p, "echo", "'echo' together with 'logprobs' is not supported");
    }
    r->top_logprobs = (int)top;
    r->submit.sampling.top_logprobs = (int)top;
    return 0;
}

static int parse_stream(struct parse *p)
{
    if (get_bool(p, "stream", &p->r->stream))
        return -1;
    const json_t *so = get(p->o, "stream_options");
    if (!so)
        return 0;
    if (!json_is_object(so))
        return BAD(p, "stream_options", "'stream_options' must be an object");
    if (!p->r->stream)
        return BAD(p, "stream_options", "'stream_options' is only allowed when 'stream' is true");
    const json_t *iu = get(so, "include_usage");
    if (iu && !json_is_boolean(iu))
        return BAD(p, "stream_options.include_usage", "'stream_options.include_usage' must be true or false");
    p->r->include_usage = iu && json_is_true(iu);
    return 0;
}

static int parse_sampling(struct parse *p, uint64_t seed_if_absent)
{
    struct sampling_params *s = &p->r->submit.sampling;
    *s = sampling_params_default();
    s->temperature = 1.f; /* OpenAI's default */
    s->seed = seed_if_absent;
    long long top_k = 0, seed = 0;
    int have_seed = 0;
    if (get_real(p, "temperature", 0, 2, 0, &s->temperature) || get_real(p, "top_p", 0, 1, 1, &s->top_p) ||
        get_int(p, "top_k", -1, INT32_MAX, &top_k, NULL) || get_real(p, "min_p", 0, 1, 0, &s->min_p) ||
        get_real(p, "presence_penalty", -2, 2, 0, &s->presence_penalty) ||
        get_real(p, "frequency_penalty", -2, 2, 0, &s->frequency_penalty) ||
        get_real(p, "repetition_penalty", 0, INFINITY, 1, &s->repetition_penalty) ||
        get_int(p, "seed", INT64_MIN, INT64_MAX, &seed, &have_seed))
        return -1;
    s->top_k = top_k < 0 ? 0 : (int)top_k;
    if (have_seed)
        s->seed = (uint64_t)seed;
    return 0;
}

/* max_tokens from the body or what the context leaves; the context check. */
static int fit_context(struct parse *p, long long max_tokens, int given)
{
    const struct oai_context *c = p->ctx;
    const char *what = p->kind == OAI_CHAT ? "messages" : "prompt";
    long long n_prompt = p->r->submit.n_prompt;
    if (n_prompt == 0)
        return BAD(p, what, p->kind == OAI_CHAT ? "the messages encode to no tokens" : "the prompt is empty");
    if (given && n_prompt + max_tokens > c->max_context)
        return BAD(
            p, what,
            "This model's maximum context length is %d tokens. However, you requested %lld tokens "
            "(%lld in the %s, %lld in the completion). Please reduce the length of the %s or "
            "completion.",
            c->max_context, n_prompt + max_tokens, n_prompt, what, max_tokens, what);
    if (!given) {
        long long room = c->max_context - n_prompt;
        if (room < 1)
            return BAD(p, what,
                       "This model's maximum context length is %d tokens. However, your %s resulted in %lld "
                       "tokens. Please reduce the length of the %s.",
                       c->max_context, what, n_prompt, what);
        max_tokens = c->default_max_tokens > 0 && c->default_max_tokens < room ? c->default_max_tokens : room;
    }
    p->r->submit.max_tokens = (int)max_tokens;
    return 0;
}

static int parse_body(struct parse *p, uint64_t seed_if_absent)
{
    struct oai_completion_request *r = p->r;
    long long n = 1, max_tokens = 0, best_of = 0;
    int have_max = 0, have_best_of = 0;
    if (parse_model(p) || refuse_unsupported(p) || get_int(p, "n", 1, p->ctx->max_n, &n, NULL) ||
        get_int(p, "max_tokens", 1, INT32_MAX, &max_tokens, &have_max) ||
        get_int(p, "max_completion_tokens", 1, INT32_MAX, &max_tokens, &have_max) ||
        parse_sampling(p, seed_if_absent) || parse_logprobs(p) || parse_stream(p) ||
        get_bool(p, "ignore_eos", &r->submit.ignore_eos) || parse_stop(p) || parse_bias(p))
        return -1;
    r->submit.n = (int)n;
    if (p->kind == OAI_COMPLETION) {
        if (get_int(p, "best_of", 1, INT32_MAX, &best_of, &have_best_of))
            return -1;
        if (have_best_of && best_of != n)
            return BAD(p, "best_of", "'best_of' must equal 'n' (%lld); best-of sampling is not supported", n);
    }
    if (p->kind == OAI_CHAT ? parse_messages(p) : parse_prompt(p))
        return -1;
    for (int i = 0; i < r->submit.n_prompt; i++) /* a tokenizer larger than the model's vocabulary */
        if (r->prompt[i] < 0 || r->prompt[i] >= p->ctx->vocab_size)
            return BAD(p, p->kind == OAI_CHAT ? "messages" : "prompt",
                       "the prompt's token %d is outside the model's vocabulary [0, %d)", r->prompt[i],
                       p->ctx->vocab_size);
    if (fit_context(p, max_tokens, have_max))
        return -1;
    struct err e = {{0}};
    if (sampling_params_check(&r->submit.sampling, p->ctx->vocab_size, &e)) /* a backstop: checked above */
        return BAD(p, "", "%s", e.msg);
    return 0;
}

int oai_request_parse(const struct oai_context *ctx, enum oai_kind kind, const char *body, size_t len,
                      uint64_t seed_if_absent, struct oai_completion_request *out, struct oai_error *err)
{
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    out->kind = kind;
    struct parse p = {ctx, kind, NULL, out, err};
    int rc;
    json_t *o = NULL;
    if (too_deep(body, len, MAX_DEPTH)) {
        rc = BAD(&p, "", "the body nests arrays and objects deeper than %d levels", MAX_DEPTH);
    } else {
        json_error_t je;
        o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
        if (!o)
            rc = BAD(&p, "", "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                     je.column);
        else if (!json_is_object(o))
            rc = BAD(&p, "", "the body must be a JSON object");
        else {
            p.o = o;
            rc = parse_body(&p, seed_if_absent);
        }
    }
    json_decref(o);
    if (rc) {
        oai_request_free(out);
        return -1;
    }
    if (!out->prompt_text)
        out->prompt_text = xstrdup("");
    out->submit.prompt = out->prompt;
    out->submit.stop = out->stop;
    return 0;
}

void oai_request_free(struct oai_completion_request *r)
{
    for (int i = 0; i < r->submit.n_stop; i++)
        free(r->stop[i]);
    free(r->stop);
    free(r->prompt);
    free(r->bias);
    free(r->model);
    free(r->prompt_text);
    memset(r, 0, sizeof *r);
}
