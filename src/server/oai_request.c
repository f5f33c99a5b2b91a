/* Bodies of POST /v1/chat/completions and /v1/completions → engine requests.
 *
 * The request fields (the prompt or messages, n, max_tokens, sampling, stop,
 * logit_bias, chat log-probs, ignore_eos) go through the shared parser
 * (engine/request_fields.h) with OpenAI's defaults; this file adds what only
 * the server has: the nesting-depth scan that runs before jansson's
 * recursive parser sees the body, "model", "stream" / "stream_options", the
 * completions' "logprobs" (an integer) and "echo", "best_of", and the
 * refusals of fields whose meaning we would silently change. Its checks run
 * between the parser's steps so that a body's first refusal is found in
 * one fixed order.
 *
 * Choices where OpenAI and vLLM leave room (see also oai.h and
 * request_fields.c):
 * - Sampling defaults are OpenAI's (temperature 1, every filter off), not
 *   the engine's greedy defaults.
 * - Unknown fields are ignored (clients send many).
 * - Completions: "echo" with "logprobs" is refused (the engine does not
 *   report prompt log-probs), "suffix" other than "" is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/request_fields.h"
#include "server/oai.h"

enum { MAX_CHAT_TOP_LOGPROBS = 20, MAX_COMPLETION_LOGPROBS = 5 };

struct parse {
    const struct oai_context *ctx;
    enum oai_kind kind;
    const json_t *o;
    struct oai_completion_request *r;
    struct oai_error *err;
};

#define BAD(p, param, ...) oai_error_set((p)->err, 400, (param), __VA_ARGS__)

/* The shared parser's refusal as OpenAI's error (all of them are 400s). */
static int refused(struct parse *p, const struct request_field_error *fe)
{
    return BAD(p, fe->field, "%s", fe->message);
}

static int get_int(struct parse *p, const char *key, long long lo, long long hi, long long *dst, int *given)
{
    struct request_field_error fe;
    return request_field_int(p->o, key, lo, hi, dst, given, &fe) ? refused(p, &fe) : 0;
}

static int get_bool(struct parse *p, const char *key, int *dst)
{
    struct request_field_error fe;
    return request_field_bool(p->o, key, dst, &fe) ? refused(p, &fe) : 0;
}

static int parse_model(struct parse *p)
{
    const json_t *m = request_field_get(p->o, "model");
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

/* Refusals of fields whose meaning we would silently change. */
static int refuse_unsupported(struct parse *p)
{
    const json_t *user = request_field_get(p->o, "user");
    if (user && !json_is_string(user))
        return BAD(p, "user", "'user' must be a string");
    const char *legacy = request_field_get(p->o, "functions")       ? "functions"
                         : request_field_get(p->o, "function_call") ? "function_call"
                                                                    : NULL;
    if (legacy)
        return BAD(p, legacy,
                   "'functions' and 'function_call' (deprecated by OpenAI) are not supported: give "
                   "'tools' and 'tool_choice'");
    const json_t *mod = request_field_get(p->o, "modalities");
    if (mod) {
        if (!json_is_array(mod))
            return BAD(p, "modalities", "'modalities' must be an array");
        for (size_t i = 0; i < json_array_size(mod); i++) {
            const json_t *v = json_array_get(mod, i);
            if (!json_is_string(v) || strcmp(json_string_value(v), "text"))
                return BAD(p, "modalities", "'modalities': only [\"text\"] is supported");
        }
    }
    if (p->kind == OAI_COMPLETION) {
        const json_t *s = request_field_get(p->o, "suffix");
        if (s && !(json_is_string(s) && json_string_length(s) == 0))
            return BAD(p, "suffix", "'suffix' is not supported");
        if (request_field_get(p->o, "tools"))
            return BAD(p, "tools", "'tools' is only supported on /v1/chat/completions");
    }
    return 0;
}

/* Completions: "logprobs": N (the top N with each token) and "echo". */
static int parse_completion_logprobs(struct parse *p)
{
    struct oai_completion_request *r = p->r;
    long long top = 0;
    if (get_int(p, "logprobs", 0, MAX_COMPLETION_LOGPROBS, &top, &r->logprobs) || get_bool(p, "echo", &r->echo))
        return -1;
    if (r->echo && r->logprobs)
        return BAD(p, "echo", "'echo' together with 'logprobs' is not supported");
    p->r->f.submit.sampling.top_logprobs = (int)top;
    p->r->f.submit.sampling.logprobs = r->logprobs;
    return 0;
}

static int parse_stream(struct parse *p)
{
    if (get_bool(p, "stream", &p->r->stream))
        return -1;
    const json_t *so = request_field_get(p->o, "stream_options");
    if (!so)
        return 0;
    if (!json_is_object(so))
        return BAD(p, "stream_options", "'stream_options' must be an object");
    if (!p->r->stream)
        return BAD(p, "stream_options", "'stream_options' is only allowed when 'stream' is true");
    const json_t *iu = request_field_get(so, "include_usage");
    if (iu && !json_is_boolean(iu))
        return BAD(p, "stream_options.include_usage", "'stream_options.include_usage' must be true or false");
    p->r->include_usage = iu && json_is_true(iu);
    return 0;
}

static int parse_best_of(struct parse *p)
{
    long long best_of = 0;
    int given = 0;
    const int n = p->r->f.submit.n;
    if (get_int(p, "best_of", 1, INT32_MAX, &best_of, &given))
        return -1;
    if (given && best_of != n)
        return BAD(p, "best_of", "'best_of' must equal 'n' (%d); best-of sampling is not supported", n);
    return 0;
}

static const struct chat_template *served_template(void *arg, struct err *e)
{
    const struct oai_context *ctx = arg;
    if (!ctx->ct)
        err_set(e, "the model has no chat template; use /v1/completions");
    return ctx->ct;
}

/* The shared parser's options: OpenAI's defaults, the served model's limits. */
static struct request_fields_opts options(const struct oai_context *ctx, enum oai_kind kind, uint64_t seed_if_absent)
{
    struct request_fields_opts o = {
        .prompt_forms = kind == OAI_CHAT ? REQUEST_MESSAGES : REQUEST_PROMPT_OPENAI,
        .chat_logprobs = kind == OAI_CHAT,
        .template_inputs = kind == OAI_CHAT,
        .sampling = sampling_params_default(),
        .max_tokens = ctx->default_max_tokens,
        .max_n = ctx->max_n,
        .max_stop = ctx->max_stop,
        .max_stop_len = ctx->max_stop_len,
        .max_top_logprobs = MAX_CHAT_TOP_LOGPROBS,
        .vocab_size = ctx->vocab_size,
        .max_context = ctx->max_context,
        .tok = ctx->tok,
        .no_tokenizer_hint =
            kind == OAI_CHAT ? "use /v1/completions with token ids" : "give the prompt as token ids",
        .chat_template = served_template,
        .chat_template_arg = (void *)ctx,
        .grammars = ctx->grammars,
    };
    o.sampling.temperature = 1.f; /* OpenAI's default */
    o.sampling.seed = seed_if_absent;
    return o;
}

/* The checks in their order: the server's own fields between the shared parser's steps. */
static int parse_body(struct parse *p, uint64_t seed_if_absent)
{
    const struct request_fields_opts o = options(p->ctx, p->kind, seed_if_absent);
    struct request_field_error fe;
    const int completion = p->kind == OAI_COMPLETION;
    if (parse_model(p) || refuse_unsupported(p))
        return -1;
    if (request_fields_begin(&o, p->o, &p->r->f, &fe))
        return refused(p, &fe);
    if ((completion && parse_completion_logprobs(p)) || parse_stream(p))
        return -1;
    if (request_fields_output(&o, p->o, &p->r->f, &fe))
        return refused(p, &fe);
    if (completion && parse_best_of(p))
        return -1;
    if (request_fields_prompt(&o, p->o, &p->r->f, &fe))
        return refused(p, &fe);
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
    if (request_fields_too_deep(body, len, REQUEST_FIELDS_MAX_DEPTH)) {
        rc = BAD(&p, "", "the body nests arrays and objects deeper than %d levels", REQUEST_FIELDS_MAX_DEPTH);
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
    if (!out->f.prompt_text)
        out->f.prompt_text = xstrdup("");
    if (kind == OAI_CHAT)
        out->logprobs = out->f.logprobs;
    return 0;
}

void oai_request_free(struct oai_completion_request *r)
{
    request_fields_free(&r->f);
    free(r->model);
    memset(r, 0, sizeof *r);
}
