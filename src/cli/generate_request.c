#include "cli/generate_request.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The engine's limits (engine.h, sampling.h): the most choices, stop strings and alternatives. */
enum { MAX_N = 128, MAX_STOP = 16, MAX_TOP_LOGPROBS = 20 };

static const struct chat_template *line_template(void *arg, struct err *e)
{
    struct generate_context *c = arg;
    if (!c->ct)
        c->ct = chat_template_load(c->model_dir, e);
    return c->ct;
}

static struct request_fields_opts options(struct generate_context *ctx, const struct generate_defaults *d)
{
    return (struct request_fields_opts){
        .refuse_unknown = 1,
        .prompt_forms = REQUEST_PROMPT_TEXT | REQUEST_PROMPT_IDS | REQUEST_MESSAGES,
        .chat_logprobs = 1,
        .sampling = d->sampling,
        .max_tokens = d->max_tokens,
        .ignore_eos = d->ignore_eos,
        .max_n = MAX_N,
        .max_stop = MAX_STOP,
        .max_stop_len = INT_MAX,
        .max_top_logprobs = MAX_TOP_LOGPROBS,
        .vocab_size = ctx->vocab_size,
        .max_context = 0, /* the engine cuts max_tokens to what the context leaves */
        .tok = ctx->tok,
        .no_tokenizer_hint = "give the prompt as 'prompt_ids'",
        .chat_template = line_template,
        .chat_template_arg = ctx,
        .grammars = ctx->grammars,
    };
}

/* Whether message quotes the field ('temperature' ..., unknown field "x"). */
static int quotes_field(const char *message, const char *field)
{
    char single[104], dbl[104];
    snprintf(single, sizeof single, "'%s'", field);
    snprintf(dbl, sizeof dbl, "\"%s\"", field);
    return strstr(message, single) || strstr(message, dbl);
}

/* The parser's refusal, with the field in front where the message does not quote it. */
static int refusal(const struct request_field_error *fe, struct err *e)
{
    if (fe->field[0] && !quotes_field(fe->message, fe->field))
        return err_set(e, "%s: %s", fe->field, fe->message);
    return err_set(e, "%s", fe->message);
}

int generate_request_parse(struct generate_context *ctx, const char *line, size_t len,
                           const struct generate_defaults *d, uint64_t seed_base, int index,
                           struct request_fields *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    struct request_fields_opts o = options(ctx, d);
    if (!d->have_seed) /* a seed of its own, reported nowhere: like an API without "seed" */
        o.sampling.seed = seed_base + (uint64_t)index * 0x9E3779B97F4A7C15ull;
    json_error_t je;
    json_t *obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    struct request_field_error fe;
    int rc = 0;
    if (!obj)
        rc = err_set(e, "not valid JSON (%s at column %d)", je.text, je.column);
    else if (!json_is_object(obj))
        rc = err_set(e, "expected a JSON object");
    else if (request_fields_parse(&o, obj, out, &fe))
        rc = refusal(&fe, e);
    json_decref(obj);
    return rc;
}
