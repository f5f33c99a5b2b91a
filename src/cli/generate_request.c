#include "cli/generate_request.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const KNOWN[] = {"prompt", "prompt_ids", "messages", "max_tokens", "temperature", "top_p", "top_k",
                                    "min_p", "seed", "stop", "n", "logprobs", "top_logprobs", "presence_penalty",
                                    "frequency_penalty", "repetition_penalty", "logit_bias", "ignore_eos"};

static int get_number(const json_t *o, const char *key, float *dst, struct err *e)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return err_set(e, "\"%s\" must be a number", key);
    *dst = (float)json_number_value(v);
    return 0;
}

static int get_int(const json_t *o, const char *key, long min, long max, long *dst, struct err *e)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return err_set(e, "\"%s\" must be an integer in [%ld, %ld]", key, min, max);
    *dst = (long)json_integer_value(v);
    return 0;
}

static int get_bool(const json_t *o, const char *key, int *dst, struct err *e)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return err_set(e, "\"%s\" must be true or false", key);
    *dst = json_is_true(v);
    return 0;
}

static int parse_prompt_ids(const json_t *v, struct generate_request *r, struct err *e)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return err_set(e, "\"prompt_ids\" must be a non-empty array of token ids");
    int n = (int)json_array_size(v);
    r->prompt = xmalloc((size_t)n * sizeof(int32_t));
    for (int i = 0; i < n; i++) {
        const json_t *x = json_array_get(v, (size_t)i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
            return err_set(e, "\"prompt_ids\"[%d] must be a token id (an integer >= 0)", i);
        r->prompt[i] = (int32_t)json_integer_value(x);
    }
    r->submit.n_prompt = n;
    return 0;
}

static int encode(const struct generate_context *c, const char *field, const char *text, int add_special,
                  struct generate_request *r, struct err *e)
{
    struct token_ids t = {0};
    if (tokenizer_encode(c->tok, text, strlen(text), add_special, &t, e))
        return err_prefix(e, "\"%s\"", field);
    if (t.n == 0) {
        token_ids_free(&t);
        return err_set(e, "\"%s\" encodes to no tokens", field);
    }
    r->prompt = t.ids;
    r->submit.n_prompt = t.n;
    return 0;
}

/* Exactly one of prompt, prompt_ids, messages. */
static int parse_prompt(struct generate_context *c, const json_t *o, struct generate_request *r, struct err *e)
{
    const json_t *text = json_object_get(o, "prompt"), *ids = json_object_get(o, "prompt_ids"),
                 *msgs = json_object_get(o, "messages");
    if (!!text + !!ids + !!msgs != 1)
        return err_set(e, "give exactly one of \"prompt\", \"prompt_ids\" and \"messages\"");
    if (ids)
        return parse_prompt_ids(ids, r, e);
    const char *field = text ? "prompt" : "messages";
    if (!c->tok)
        return err_set(e, "\"%s\" needs the model's tokenizer.json; use \"prompt_ids\"", field);
    if (text) {
        if (!json_is_string(text))
            return err_set(e, "\"prompt\" must be a string");
        return encode(c, "prompt", json_string_value(text), 1, r, e);
    }
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return err_set(e, "\"messages\" must be a non-empty array of message objects");
    if (!c->ct && !(c->ct = chat_template_load(c->model_dir, e)))
        return err_prefix(e, "\"messages\"");
    char *rendered = NULL;
    if (chat_template_render(c->ct, msgs, NULL, 1, NULL, &rendered, e))
        return err_prefix(e, "\"messages\"");
    /* the template writes the special tokens itself */
    int rc = encode(c, "messages", rendered, 0, r, e);
    free(rendered);
    return rc;
}

static int parse_stop(const json_t *v, struct generate_request *r, struct err *e)
{
    if (!v)
        return 0;
    if (json_is_string(v)) {
        r->stop = xcalloc(1, sizeof(char *));
        r->stop[0] = xstrdup(json_string_value(v));
        r->submit.n_stop = 1;
        return 0;
    }
    if (!json_is_array(v))
        return err_set(e, "\"stop\" must be a string or an array of strings");
    int n = (int)json_array_size(v);
    r->stop = xcalloc((size_t)(n ? n : 1), sizeof(char *));
    for (int i = 0; i < n; i++) {
        const json_t *s = json_array_get(v, (size_t)i);
        if (!json_is_string(s))
            return err_set(e, "\"stop\"[%d] must be a string", i);
        r->stop[i] = xstrdup(json_string_value(s));
        r->submit.n_stop = i + 1;
    }
    return 0;
}

static int parse_bias(const json_t *v, struct generate_request *r, struct err *e)
{
    if (!v)
        return 0;
    if (!json_is_object(v))
        return err_set(e, "\"logit_bias\" must be an object of token id: bias");
    r->bias = xcalloc(json_object_size(v) + 1, sizeof *r->bias);
    const char *key;
    const json_t *val;
    int n = 0;
    json_object_foreach((json_t *)v, key, val)
    {
        char *end;
        long id = strtol(key, &end, 10);
        if (!*key || *end || id < 0 || id > INT32_MAX)
            return err_set(e, "\"logit_bias\": key \"%s\" is not a token id", key);
        if (!json_is_number(val))
            return err_set(e, "\"logit_bias\": the bias of token %ld must be a number", id);
        r->bias[n++] = (struct logit_bias){(int32_t)id, (float)json_number_value(val)};
    }
    r->submit.sampling.bias = r->bias;
    r->submit.sampling.n_bias = n;
    return 0;
}

static int parse_fields(struct generate_context *c, const json_t *o, struct generate_request *r, struct err *e)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)o, key, val)
    {
        int known = 0;
        for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0] && !known; i++)
            known = !strcmp(key, KNOWN[i]);
        if (!known)
            return err_set(e, "unknown field \"%s\"", key);
    }
    struct sampling_params *p = &r->submit.sampling;
    long max_tokens = r->submit.max_tokens, top_k = p->top_k, n = 1, top_logprobs = -1, seed = -1;
    if (parse_prompt(c, o, r, e) || get_int(o, "max_tokens", 1, 1 << 24, &max_tokens, e) ||
        get_number(o, "temperature", &p->temperature, e) || get_number(o, "top_p", &p->top_p, e) ||
        get_int(o, "top_k", 0, INT32_MAX, &top_k, e) || get_number(o, "min_p", &p->min_p, e) ||
        get_int(o, "seed", 0, INT64_MAX, &seed, e) || parse_stop(json_object_get(o, "stop"), r, e) ||
        get_int(o, "n", 1, 128, &n, e) || get_bool(o, "logprobs", &r->logprobs, e) ||
        get_int(o, "top_logprobs", 0, 20, &top_logprobs, e) ||
        get_number(o, "presence_penalty", &p->presence_penalty, e) ||
        get_number(o, "frequency_penalty", &p->frequency_penalty, e) ||
        get_number(o, "repetition_penalty", &p->repetition_penalty, e) ||
        parse_bias(json_object_get(o, "logit_bias"), r, e) || get_bool(o, "ignore_eos", &r->submit.ignore_eos, e))
        return -1;
    if (top_logprobs > 0 && !r->logprobs)
        return err_set(e, "\"top_logprobs\" needs \"logprobs\": true");
    r->submit.max_tokens = (int)max_tokens;
    p->top_k = (int)top_k;
    p->top_logprobs = top_logprobs > 0 ? (int)top_logprobs : 0;
    r->submit.n = (int)n;
    if (seed >= 0)
        p->seed = (uint64_t)seed;
    for (int i = 0; i < r->submit.n_prompt; i++)
        if (r->prompt[i] >= c->vocab_size)
            return err_set(e, "\"prompt_ids\"[%d]: token %d is outside the vocabulary (0..%d)", i, r->prompt[i],
                           c->vocab_size - 1);
    return sampling_params_check(p, c->vocab_size, e);
}

int generate_request_parse(struct generate_context *ctx, const char *line, size_t len, const struct generate_defaults *d,
                      uint64_t seed_base, int index, struct generate_request *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->submit.max_tokens = d->max_tokens;
    out->submit.sampling = d->sampling;
    out->submit.ignore_eos = d->ignore_eos;
    if (!d->have_seed) /* a seed of its own, reported nowhere: like an API without "seed" */
        out->submit.sampling.seed = seed_base + (uint64_t)index * 0x9E3779B97F4A7C15ull;
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    int rc;
    if (!o)
        rc = err_set(e, "not valid JSON (%s at column %d)", je.text, je.column);
    else if (!json_is_object(o))
        rc = err_set(e, "expected a JSON object");
    else
        rc = parse_fields(ctx, o, out, e);
    json_decref(o);
    out->submit.prompt = out->prompt;
    out->submit.stop = out->stop;
    if (rc)
        generate_request_free(out);
    return rc;
}

void generate_request_free(struct generate_request *r)
{
    for (int i = 0; i < r->submit.n_stop; i++)
        free(r->stop[i]);
    free(r->stop);
    free(r->prompt);
    free(r->bias);
    memset(r, 0, sizeof *r);
}
