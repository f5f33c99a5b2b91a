/* Request fields (request_fields.h): a JSON object's generation fields to an
 * engine request, by the OpenAI server's rules.
 *
 * Order of work: cheap field checks first; the template render and the
 * tokenizer (the only costly steps) run last, once, and the context-length
 * check uses their token count.
 *
 * Choices where OpenAI and vLLM leave room:
 * - null is "not given" for every optional field (vLLM's pydantic models
 *   treat it so; clients send it).
 * - Integer fields take integral reals (2.0), as pydantic's lax mode does;
 *   2.5, strings and booleans are refused.
 * - "top_k": -1 and 0 both mean off; "top_logprobs" (even 0) needs
 *   "logprobs": true, as in vLLM.
 * - "developer" messages reach the template as "system" (templates know no
 *   "developer" role); text content parts are joined with "\n" as vLLM does;
 *   an assistant message may leave "content" out or null (tool calls), and
 *   its tool calls' "arguments" strings are parsed into objects for the
 *   template, as vLLM does.
 * - "chat_template_kwargs" (a vLLM extension) become template variables.
 * - Empty stop strings are refused (the engine would refuse them). */
#include "engine/request_fields.h"
#include "chat/chat_tools.h"
#include "engine/request_constraint.h"
#include "grammar/cache.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ROLES[] = {"system", "user", "assistant", "tool", "developer"};

/* The fields every caller gets read (the prompt's, the log-probs' and the
 * template's are read as the options say). */
static const char *const FIELDS[] = {"n", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
                                     "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty",
                                     "stop", "logit_bias", "ignore_eos", "speculative"};

/* The prompt's fields, in the order messages list them. */
static const struct {
    unsigned forms;
    const char *key;
} PROMPT_FIELDS[] = {{REQUEST_PROMPT_TEXT | REQUEST_PROMPT_OPENAI, "prompt"},
                     {REQUEST_PROMPT_IDS, "prompt_ids"},
                     {REQUEST_MESSAGES, "messages"}};
enum { N_PROMPT_FIELDS = sizeof PROMPT_FIELDS / sizeof PROMPT_FIELDS[0] };

struct parse {
    const struct request_fields_opts *o;
    const json_t *obj;
    struct request_fields *r;
    struct request_field_error *err;
};

int request_field_error_set(struct request_field_error *err, const char *field, const char *fmt, ...)
{
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

#define BAD(p, field, ...) request_field_error_set((p)->err, (field), __VA_ARGS__)

int request_fields_too_deep(const char *s, size_t len, int max_depth)
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
            if (++depth > max_depth)
                return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

const json_t *request_field_get(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
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

int request_field_int(const json_t *obj, const char *key, long long lo, long long hi, long long *dst,
                      int *given, struct request_field_error *err)
{
    const json_t *v = request_field_get(obj, key);
    if (!v)
        return 0;
    char buf[48];
    if (!as_int(v, lo, hi, dst))
        return request_field_error_set(err, key, "'%s' must be an integer in [%lld, %lld], got %s", key, lo,
                                       hi, describe(v, buf, sizeof buf));
    if (given)
        *given = 1;
    return 0;
}

int request_field_bool(const json_t *obj, const char *key, int *dst, struct request_field_error *err)
{
    const json_t *v = request_field_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return request_field_error_set(err, key, "'%s' must be true or false", key);
    *dst = json_is_true(v);
    return 0;
}

static int get_int(struct parse *p, const char *key, long long lo, long long hi, long long *dst, int *given)
{
    return request_field_int(p->obj, key, lo, hi, dst, given, p->err);
}

/* A number in [lo, hi] (lo excluded when lo_open; hi = INFINITY: no upper bound). */
static int get_real(struct parse *p, const char *key, double lo, double hi, int lo_open, float *dst)
{
    const json_t *v = request_field_get(p->obj, key);
    if (!v)
        return 0;
    double x = json_number_value(v);
    /* the range holds for the float the engine gets too (1e-50 is 0, 1e300 inf in a float) */
    const float f = (float)x;
    if (json_is_number(v) && isfinite(x) && isfinite(f) && (lo_open ? x > lo && f > lo : x >= lo) &&
        x <= hi) {
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

/* ---- unknown fields, sampling, log-probs ---- */

static int known(const struct request_fields_opts *o, const char *key)
{
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++)
        if (!strcmp(key, FIELDS[i]))
            return 1;
    for (int i = 0; i < N_PROMPT_FIELDS; i++)
        if ((o->prompt_forms & PROMPT_FIELDS[i].forms) && !strcmp(key, PROMPT_FIELDS[i].key))
            return 1;
    if (o->chat_logprobs && (!strcmp(key, "logprobs") || !strcmp(key, "top_logprobs")))
        return 1;
    if (request_constraint_field(key))
        return 1;
    return o->template_inputs && (request_tools_field(key) || !strcmp(key, "chat_template_kwargs"));
}

static int refuse_unknown(struct parse *p)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)p->obj, key, val)
    {
        if (!known(p->o, key))
            return BAD(p, key, "unknown field \"%s\"", key);
    }
    return 0;
}

static int parse_sampling(struct parse *p)
{
    struct sampling_params *s = &p->r->submit.sampling;
    long long top_k = s->top_k, seed = 0;
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

static int parse_logprobs(struct parse *p)
{
    long long top = 0;
    int have_top = 0;
    if (request_field_bool(p->obj, "logprobs", &p->r->logprobs, p->err) ||
        get_int(p, "top_logprobs", 0, p->o->max_top_logprobs, &top, &have_top))
        return -1;
    if (have_top && !p->r->logprobs)
        return BAD(p, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
    p->r->submit.sampling.top_logprobs = (int)top;
    p->r->submit.sampling.logprobs = p->r->logprobs;
    return 0;
}

static int begin(struct parse *p)
{
    const struct request_fields_opts *o = p->o;
    struct request_fields *r = p->r;
    r->submit.sampling = o->sampling;
    r->submit.sampling.bias = NULL;
    r->submit.sampling.n_bias = 0;
    r->submit.sampling.top_logprobs = 0;
    r->submit.sampling.logprobs = 0;
    r->submit.ignore_eos = o->ignore_eos;
    r->call_token = -1;
    long long n = 1, max_tokens = o->max_tokens;
    if ((o->refuse_unknown && refuse_unknown(p)) || get_int(p, "n", 1, o->max_n, &n, NULL) ||
        get_int(p, "max_tokens", 1, INT32_MAX, &max_tokens, &r->max_tokens_given) ||
        get_int(p, "max_completion_tokens", 1, INT32_MAX, &max_tokens, &r->max_tokens_given) ||
        parse_sampling(p) || (o->chat_logprobs && parse_logprobs(p)))
        return -1;
    r->submit.n = (int)n;
    r->submit.max_tokens = (int)max_tokens;
    return 0;
}

/* ---- stop strings, logit bias ---- */

static int add_stop(struct parse *p, const json_t *s, const char *field)
{
    if (!json_is_string(s))
        return BAD(p, field, "'%s' must be a string", field);
    size_t n = json_string_length(s);
    if (n == 0)
        return BAD(p, field, "'%s': stop strings must not be empty", field);
    if (n > (size_t)p->o->max_stop_len)
        return BAD(p, field, "'%s': stop strings are at most %d bytes, got %zu", field, p->o->max_stop_len,
                   n);
    p->r->stop[p->r->submit.n_stop++] = xstrdup(json_string_value(s));
    return 0;
}

static int parse_stop(struct parse *p)
{
    const json_t *v = request_field_get(p->obj, "stop");
    if (!v)
        return 0;
    if (!json_is_string(v) && !json_is_array(v))
        return BAD(p, "stop", "'stop' must be a string or an array of strings");
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (n == 0)
        return 0;
    if (n > (size_t)p->o->max_stop)
        return BAD(p, "stop", "'stop' holds at most %d strings, got %zu", p->o->max_stop, n);
    if (!p->o->tok)
        return BAD(p, "stop", "stop strings need the model's tokenizer");
    p->r->stop = xcalloc(n, sizeof(char *));
    p->r->submit.stop = p->r->stop;
    if (json_is_string(v))
        return add_stop(p, v, "stop");
    for (size_t i = 0; i < n; i++) {
        char field[32];
        snprintf(field, sizeof field, "stop[%zu]", i);
        if (add_stop(p, json_array_get(v, i), field))
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
    const json_t *v = request_field_get(p->obj, "logit_bias");
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
        if (!bias_token(key, p->o->vocab_size, &id))
            return BAD(p, "logit_bias", "'logit_bias': key '%.40s' is not a token id in [0, %d)", key,
                       p->o->vocab_size);
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
static int encode(struct parse *p, const char *field, const char *text, size_t len, int add_special)
{
    struct token_ids t = {0};
    struct err e = {{0}};
    if (tokenizer_encode(p->o->tok, text, len, add_special, &t, &e)) {
        token_ids_free(&t);
        return BAD(p, field, "'%s': %s", field, e.msg);
    }
    p->r->prompt = t.ids;
    p->r->submit.n_prompt = t.n;
    return 0;
}

/* Joins a message's content (a string or text parts) into one string (new reference). */
static json_t *message_content(struct parse *p, const json_t *c, size_t i, int assistant)
{
    char field[64];
    snprintf(field, sizeof field, "messages[%zu].content", i);
    if (!c || json_is_null(c)) {
        if (assistant) /* tool calls only: "" (templates test and split the content) */
            return json_string("");
        BAD(p, field, "'%s' is required", field);
        return NULL;
    }
    if (json_is_string(c))
        return json_incref((json_t *)c);
    if (!json_is_array(c)) {
        BAD(p, field, "'%s' must be a string or an array of text parts", field);
        return NULL;
    }
    size_t total = 0, j;
    const json_t *part;
    json_array_foreach(c, j, part)
    {
        const json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type) || strcmp(json_string_value(type), "text") ||
            !json_is_string(text)) {
            snprintf(field, sizeof field, "messages[%zu].content[%zu]", i, j);
            BAD(p, field,
                "'%s' must be a text part {\"type\": \"text\", \"text\": \"...\"} (only text is supported)",
                field);
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
        if (json_is_string(args) &&
            !request_fields_too_deep(json_string_value(args), json_string_length(args),
                                     REQUEST_FIELDS_MAX_DEPTH))
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
        char field[64];
        snprintf(field, sizeof field, "messages[%zu]", i);
        if (!json_is_object(m)) {
            BAD(p, field, "'%s' must be a message object", field);
            break;
        }
        const json_t *role = json_object_get(m, "role");
        int r = -1;
        for (int k = 0; json_is_string(role) && k < (int)(sizeof ROLES / sizeof ROLES[0]); k++)
            if (!strcmp(json_string_value(role), ROLES[k]))
                r = k;
        if (r < 0) {
            snprintf(field, sizeof field, "messages[%zu].role", i);
            BAD(p, field, "'%s' must be one of 'system', 'user', 'assistant', 'tool', 'developer'", field);
            break;
        }
        const json_t *call_id = json_object_get(m, "tool_call_id");
        if (!strcmp(ROLES[r], "tool") && !json_is_string(call_id)) { /* which call it answers */
            snprintf(field, sizeof field, "messages[%zu].tool_call_id", i);
            BAD(p, field, "'%s' must be given, a string: the id of the tool call the message answers", field);
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

/* The id of a special token spelt s, or -1. */
static int32_t special_token(struct parse *p, const char *s)
{
    struct token_ids t = {0};
    struct err e = {{0}};
    int32_t id = -1;
    if (!tokenizer_encode(p->o->tok, s, strlen(s), 0, &t, &e) && t.n == 1 && tokenizer_is_special(p->o->tok, t.ids[0]))
        id = t.ids[0];
    token_ids_free(&t);
    return id;
}

static int parse_messages(struct parse *p, const json_t *msgs)
{
    const json_t *kwargs = p->o->template_inputs ? request_field_get(p->obj, "chat_template_kwargs") : NULL;
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return BAD(p, "messages", "'messages' must be a non-empty array of message objects");
    if (kwargs && !json_is_object(kwargs))
        return BAD(p, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
    struct err e = {{0}};
    const struct chat_template *ct =
        p->o->chat_template ? p->o->chat_template(p->o->chat_template_arg, &e) : NULL;
    if (!ct)
        return BAD(p, "messages", "%s", e.msg[0] ? e.msg : "the model has no chat template");
    if (!p->o->tok)
        return BAD(p, "messages", "the model has no tokenizer; %s", p->o->no_tokenizer_hint);
    json_t *conv = chat_messages(p, msgs);
    if (!conv)
        return -1;
    char *text = NULL;
    struct request_fields *r = p->r;
    int rc = chat_render(ct, conv, r->tools.tools, 1, kwargs, &text, &e);
    json_decref(conv);
    if (rc)
        return BAD(p, "messages", "the chat template failed: %s", e.msg);
    r->prompt_text = text;
    r->format = chat_template_format(ct, r->tools.tools != NULL);
    r->read_calls = r->tools.tools != NULL;
    r->read_reasoning = r->format->think_open != NULL;
    r->in_reasoning = chat_format_prompt_in_reasoning(r->format, text, strlen(text));
    r->call_token = r->read_calls && r->format->calls == CHAT_CALLS_LLAMA3 ? special_token(p, CHAT_PYTHON_TAG) : -1;
    /* the template writes BOS and the turn markers itself */
    return encode(p, "messages", text, strlen(text), 0);
}

/* A prompt given as token ids (an array). */
static int prompt_ids(struct parse *p, const json_t *a, const char *field)
{
    size_t n = json_array_size(a);
    p->r->prompt = xmalloc((n ? n : 1) * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) {
        long long id;
        if (!as_int(json_array_get(a, i), 0, p->o->vocab_size - 1, &id)) {
            char fi[48];
            snprintf(fi, sizeof fi, "%s[%zu]", field, i);
            return BAD(p, fi, "'%s' must be a token id in [0, %d)", fi, p->o->vocab_size);
        }
        p->r->prompt[i] = (int32_t)id;
    }
    p->r->submit.n_prompt = (int)n;
    if (p->o->tok) { /* for the caller that shows the prompt (the server's "echo") */
        char *text = NULL;
        size_t len;
        struct err e = {{0}};
        if (!tokenizer_decode(p->o->tok, p->r->prompt, (int)n, 0, &text, &len, &e))
            p->r->prompt_text = text;
    }
    return 0;
}

/* "prompt": text, or (REQUEST_PROMPT_OPENAI) token ids or a list of one prompt. */
static int parse_prompt_field(struct parse *p, const json_t *v)
{
    const char *field = "prompt";
    const int openai = (p->o->prompt_forms & REQUEST_PROMPT_OPENAI) != 0;
    if (openai && json_is_array(v) && json_array_size(v) >= 1 && !json_is_number(json_array_get(v, 0))) {
        /* a list of prompts: one is fine */
        if (json_array_size(v) > 1)
            return BAD(p, "prompt", "batched prompts are not supported; send one prompt per request");
        v = json_array_get(v, 0);
        field = "prompt[0]";
    }
    if (json_is_string(v)) {
        if (!p->o->tok)
            return BAD(p, field, "the model has no tokenizer; %s", p->o->no_tokenizer_hint);
        p->r->prompt_text = xstrdup(json_string_value(v));
        return encode(p, field, json_string_value(v), json_string_length(v), 1);
    }
    if (!openai)
        return BAD(p, field, "'%s' must be a string", field);
    if (!json_is_array(v))
        return BAD(p, field, "'%s' must be a string or an array of token ids", field);
    return prompt_ids(p, v, field);
}

/* "'a', 'b' and 'c'": the allowed prompt fields, for the exactly-one refusal */
static void list_prompt_fields(unsigned forms, char *buf, size_t n)
{
    int total = 0, k = 0;
    for (int i = 0; i < N_PROMPT_FIELDS; i++)
        total += (forms & PROMPT_FIELDS[i].forms) != 0;
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_PROMPT_FIELDS; i++)
        if (forms & PROMPT_FIELDS[i].forms) {
            const char *sep = k == 0 ? "" : k == total - 1 ? " and " : ", ";
            len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s'%s'", sep, PROMPT_FIELDS[i].key);
            k++;
        }
}

/* The one prompt field given, into r->prompt; *field and *what name it. */
static int parse_prompt(struct parse *p, const char **field, const char **what)
{
    const unsigned forms = p->o->prompt_forms;
    int allowed = 0, given = 0, first = -1, which = -1, extra = -1;
    for (int i = 0; i < N_PROMPT_FIELDS; i++) {
        if (!(forms & PROMPT_FIELDS[i].forms))
            continue;
        allowed++;
        first = first < 0 ? i : first;
        if (request_field_get(p->obj, PROMPT_FIELDS[i].key)) {
            given++;
            if (which < 0)
                which = i;
            else if (extra < 0)
                extra = i;
        }
    }
    if (given != 1) {
        const char *name = extra >= 0 ? PROMPT_FIELDS[extra].key : first >= 0 ? PROMPT_FIELDS[first].key : "";
        if (allowed == 1)
            return BAD(p, name, "'%s' is required", name);
        char list[96];
        list_prompt_fields(forms, list, sizeof list);
        return BAD(p, name, "give exactly one of %s", list);
    }
    *field = PROMPT_FIELDS[which].key;
    const json_t *v = request_field_get(p->obj, *field);
    if (PROMPT_FIELDS[which].forms & REQUEST_MESSAGES) {
        *what = "messages";
        return parse_messages(p, v);
    }
    *what = "prompt";
    if (PROMPT_FIELDS[which].forms & REQUEST_PROMPT_IDS) {
        if (!json_is_array(v))
            return BAD(p, *field, "'%s' must be an array of token ids", *field);
        return prompt_ids(p, v, *field);
    }
    return parse_prompt_field(p, v);
}

/* max_tokens from the request, else the default or what the context leaves; the context check. */
static int fit_context(struct parse *p, const char *field, const char *what)
{
    const struct request_fields_opts *o = p->o;
    struct request_fields *r = p->r;
    const long long n_prompt = r->submit.n_prompt, max_tokens = r->submit.max_tokens;
    const int chat = !strcmp(what, "messages");
    if (n_prompt == 0)
        return BAD(p, field, chat ? "the messages encode to no tokens" : "the prompt is empty");
    if (o->max_context <= 0)
        return 0;
    if (r->max_tokens_given && n_prompt + max_tokens > o->max_context)
        return BAD(p, field,
                   "This model's maximum context length is %d tokens. However, you requested %lld tokens "
                   "(%lld in the %s, %lld in the completion). Please reduce the length of the %s or "
                   "completion.",
                   o->max_context, n_prompt + max_tokens, n_prompt, what, max_tokens, what);
    if (!r->max_tokens_given) {
        const long long room = o->max_context - n_prompt;
        if (room < 1)
            return BAD(p, field,
                       "This model's maximum context length is %d tokens. However, your %s resulted in %lld "
                       "tokens. Please reduce the length of the %s.",
                       o->max_context, what, n_prompt, what);
        r->submit.max_tokens = (int)(o->max_tokens > 0 && o->max_tokens < room ? o->max_tokens : room);
    }
    return 0;
}

static int prompt(struct parse *p)
{
    struct request_fields *r = p->r;
    const char *field = "prompt", *what = "prompt";
    int rc = parse_prompt(p, &field, &what);
    r->submit.prompt = r->prompt;
    if (rc)
        return -1;
    for (int i = 0; i < r->submit.n_prompt; i++) /* a tokenizer larger than the model's vocabulary */
        if (r->prompt[i] < 0 || r->prompt[i] >= p->o->vocab_size)
            return BAD(p, field, "the prompt's token %d is outside the model's vocabulary [0, %d)",
                       r->prompt[i], p->o->vocab_size);
    if (fit_context(p, field, what))
        return -1;
    struct err e = {{0}};
    if (sampling_params_check(&r->submit.sampling, p->o->vocab_size, &e)) /* a backstop: checked above */
        return BAD(p, "", "%s", e.msg);
    return 0;
}

/* ---- the steps ---- */

typedef int (*step_fn)(struct parse *p);

static int output(struct parse *p)
{
    int speculative = 1; /* false: this request's steps check no proposals */
    if (request_field_bool(p->obj, "speculative", &speculative, p->err))
        return -1;
    p->r->submit.no_speculation = !speculative;
    if (request_field_bool(p->obj, "ignore_eos", &p->r->submit.ignore_eos, p->err) || parse_stop(p) ||
        parse_bias(p) || (p->o->template_inputs && request_tools_parse(p->obj, &p->r->tools, p->err)) ||
        request_constraint_parse(p->o, p->obj, p->r, p->err))
        return -1;
    return 0;
}

static int run_step(step_fn step, const struct request_fields_opts *o, const json_t *obj,
                    struct request_fields *out, struct request_field_error *err)
{
    struct parse p = {o, obj, out, err};
    if (step(&p)) {
        request_fields_free(out);
        return -1;
    }
    return 0;
}

int request_fields_begin(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                         struct request_field_error *err)
{
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    return run_step(begin, o, obj, out, err);
}

int request_fields_output(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                          struct request_field_error *err)
{
    return run_step(output, o, obj, out, err);
}

int request_fields_prompt(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                          struct request_field_error *err)
{
    return run_step(prompt, o, obj, out, err);
}

int request_fields_parse(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                         struct request_field_error *err)
{
    if (request_fields_begin(o, obj, out, err) || request_fields_output(o, obj, out, err) ||
        request_fields_prompt(o, obj, out, err))
        return -1;
    return 0;
}

void request_fields_free(struct request_fields *r)
{
    for (int i = 0; i < r->submit.n_stop; i++)
        free(r->stop[i]);
    free(r->stop);
    free(r->prompt);
    free(r->bias);
    free(r->prompt_text);
    grammar_ref_release(r->grammar);
    for (int i = 0; i < r->n_warnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    memset(r, 0, sizeof *r);
}
