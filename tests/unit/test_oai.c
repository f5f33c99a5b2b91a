/* The OpenAI layer (src/server/oai_*.c): bodies of /v1/chat/completions and
 * /v1/completions to engine requests (every field, the defaults, and a table
 * of malformed and hostile bodies with the status and param each must get),
 * and results to response objects and SSE chunks, parsed back with jansson. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/oai.h"
#include "tok_fixture.h"

/* A byte-fallback tokenizer: specials 0..4, bytes <0x00>..<0xFF> at 5..260,
 * then one token per character of CHARS; "<s>" is prepended to text
 * prompts (TemplateProcessing). */
enum { BOS, EOS, T_USER, T_ASSISTANT, T_SYSTEM, BYTE0 = 5, CHAR0 = BYTE0 + 256 };
static const char CHARS[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n.,:!?|{}\"'[]_-";

static struct tokenizer *make_tok(void)
{
    static const char *const specials[] = {"<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"};
    size_t cap = 64 * 1024, len = 0;
    char *j = malloc(cap);
    len += (size_t)snprintf(
        j + len, cap - len,
        "{\"model\": {\"type\": \"BPE\", \"merges\": [], \"byte_fallback\": true, \"vocab\": {");
    for (int i = 0; i < 5; i++)
        len += (size_t)snprintf(j + len, cap - len, "\"%s\": %d, ", specials[i], i);
    for (int b = 0; b < 256; b++)
        len += (size_t)snprintf(j + len, cap - len, "\"<0x%02X>\": %d, ", b, BYTE0 + b);
    for (size_t c = 0; c < sizeof CHARS - 1; c++) {
        char ch[8];
        if (CHARS[c] == '"' || CHARS[c] == '\n')
            snprintf(ch, sizeof ch, "\\%c", CHARS[c] == '"' ? '"' : 'n');
        else
            snprintf(ch, sizeof ch, "%c", CHARS[c]);
        len += (size_t)snprintf(j + len, cap - len, "%s\"%s\": %d", c ? ", " : "", ch, CHAR0 + (int)c);
    }
    len += (size_t)snprintf(
        j + len, cap - len,
        "}}, \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}, "
        "{\"type\": \"Fuse\"}]}, \"post_processor\": {\"type\": \"TemplateProcessing\", "
        "\"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": "
        "{\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": "
        "0}}], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [0], \"tokens\": "
        "[\"<s>\"]}}}, \"added_tokens\": [");
    for (int i = 0; i < 5; i++)
        len +=
            (size_t)snprintf(j + len, cap - len,
                             "%s{\"id\": %d, \"content\": \"%s\", \"single_word\": false, \"lstrip\": false, "
                             "\"rstrip\": false, \"normalized\": false, \"special\": true}",
                             i ? ", " : "", i, specials[i]);
    snprintf(j + len, cap - len, "]}");
    struct tokenizer *t = tok_fixture_load(j);
    free(j);
    return t;
}

/* Turns as "<|role|>content\n"; tool calls' arguments through tojson; a
 * "tool" message raises; T<n> when tools are given; X when the kwarg x is set. */
static const char TEMPLATE[] =
    "{\"bos_token\": \"<s>\", \"chat_template\": \"{{ bos_token }}{% if tools %}T{{ tools|length }}{% endif "
    "%}"
    "{% if x %}X{% endif %}{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tool "
    "turns') }}"
    "{% endif %}<|{{ m.role }}|>{% if m.content %}{{ m.content }}{% endif %}{% if m.tool_calls %}"
    "{{ m.tool_calls[0].function.arguments | tojson }}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}\"}";

static struct tokenizer *tok;
static struct chat_template *ct;
static struct oai_context ctx;
static const char *const NAMES[] = {"m1", "alias"};

static void setup(void)
{
    tok = make_tok();
    ct = tok_fixture_template(TEMPLATE);
    ctx = (struct oai_context){.tok = tok,
                               .ct = ct,
                               .model_names = NAMES,
                               .n_model_names = 2,
                               .vocab_size = tokenizer_vocab_size(tok),
                               .max_context = 64,
                               .max_n = 8,
                               .max_stop = 4,
                               .max_stop_len = 16,
                               .default_max_tokens = 16};
}

static void teardown(void)
{
    chat_template_free(ct);
    tokenizer_free(tok);
}

static int parse_len(enum oai_kind k, const char *body, size_t len, struct oai_completion_request *r,
                     struct oai_error *e)
{
    return oai_request_parse(&ctx, k, body, len, 42, r, e);
}

static int parse(enum oai_kind k, const char *body, struct oai_completion_request *r, struct oai_error *e)
{
    return parse_len(k, body, strlen(body), r, e);
}

static void parse_ok(enum oai_kind k, const char *body, struct oai_completion_request *r)
{
    struct oai_error e;
    cr_assert_eq(parse(k, body, r, &e), 0, "refused (%d, %s): %s\nbody: %s", e.status, e.param, e.message,
                 body);
}

/* The ids of text as the server encodes it. */
static void expect_ids(const struct oai_completion_request *r, const char *text, int add_special)
{
    struct token_ids t = {0};
    struct err e = {{0}};
    cr_assert_eq(tokenizer_encode(tok, text, strlen(text), add_special, &t, &e), 0, "%s", e.msg);
    cr_assert_eq(r->f.submit.n_prompt, t.n, "%d prompt tokens, expected %d", r->f.submit.n_prompt, t.n);
    cr_assert(r->f.submit.prompt == r->f.prompt);
    for (int i = 0; i < t.n; i++)
        cr_assert_eq(r->f.prompt[i], t.ids[i], "token %d: %d, expected %d", i, r->f.prompt[i], t.ids[i]);
    token_ids_free(&t);
}

#define CHAT(x) "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]" x "}"
#define CMPL(x) "{\"model\": \"m1\", \"prompt\": \"hi\"" x "}"

TestSuite(oai_request, .init = setup, .fini = teardown);
TestSuite(oai_reject, .init = setup, .fini = teardown);
TestSuite(oai_response, .init = setup, .fini = teardown);

/* ---- valid bodies ---- */

Test(oai_request, chat_every_field)
{
    struct oai_completion_request r;
    parse_ok(
        OAI_CHAT,
        "{\"model\": \"alias\", \"messages\": [{\"role\": \"developer\", \"content\": \"be brief\"}, "
        "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"one\"}, {\"type\": \"text\", "
        "\"text\": \"two\"}]}], \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], "
        "\"n\": 2, \"max_tokens\": 5, \"temperature\": 0.5, \"top_p\": 0.9, \"top_k\": 40, \"min_p\": 0.05, "
        "\"presence_penalty\": 0.5, \"frequency_penalty\": -0.5, \"repetition_penalty\": 1.1, \"seed\": 7, "
        "\"stop\": [\"ab\", \"cd\"], \"logit_bias\": {\"5\": -100, \"7\": 2.5}, \"logprobs\": true, "
        "\"top_logprobs\": 3, \"stream\": true, \"stream_options\": {\"include_usage\": true}, "
        "\"ignore_eos\": true, \"user\": \"u\", \"some_future_field\": {\"a\": [1]}}",
        &r);
    cr_assert_eq(r.kind, OAI_CHAT);
    cr_assert_str_eq(r.model, "alias");
    const char *want = "<s>T1<|system|>be brief\n<|user|>one\ntwo\n<|assistant|>";
    cr_assert_str_eq(r.f.prompt_text, want);
    expect_ids(&r, want, 0);
    cr_assert_eq(r.f.prompt[0], BOS, "the template's BOS is the only one");
    cr_assert_eq(r.f.submit.n, 2);
    cr_assert_eq(r.f.submit.max_tokens, 5);
    const struct sampling_params *s = &r.f.submit.sampling;
    cr_assert_float_eq(s->temperature, 0.5f, 1e-6);
    cr_assert_float_eq(s->top_p, 0.9f, 1e-6);
    cr_assert_eq(s->top_k, 40);
    cr_assert_float_eq(s->min_p, 0.05f, 1e-6);
    cr_assert_float_eq(s->presence_penalty, 0.5f, 1e-6);
    cr_assert_float_eq(s->frequency_penalty, -0.5f, 1e-6);
    cr_assert_float_eq(s->repetition_penalty, 1.1f, 1e-6);
    cr_assert_eq(s->seed, 7);
    cr_assert_eq(s->top_logprobs, 3);
    cr_assert_eq(s->n_bias, 2);
    cr_assert(s->bias == r.f.bias);
    cr_assert(s->bias[0].token == 5 && s->bias[0].bias == -100.f);
    cr_assert(s->bias[1].token == 7 && s->bias[1].bias == 2.5f);
    cr_assert_eq(r.f.submit.n_stop, 2);
    cr_assert(r.f.submit.stop == r.f.stop);
    cr_assert_str_eq(r.f.stop[0], "ab");
    cr_assert_str_eq(r.f.stop[1], "cd");
    cr_assert(r.logprobs && r.f.submit.sampling.top_logprobs == 3 && r.stream && r.include_usage && r.f.submit.ignore_eos);
    oai_request_free(&r);
}

Test(oai_request, chat_defaults)
{
    struct oai_completion_request r;
    parse_ok(OAI_CHAT, CHAT(""), &r);
    const char *want = "<s><|user|>hi\n<|assistant|>";
    cr_assert_str_eq(r.f.prompt_text, want);
    expect_ids(&r, want, 0);
    cr_assert_eq(r.f.submit.n, 1);
    cr_assert_eq(r.f.submit.max_tokens, 16, "default_max_tokens caps what the context leaves");
    const struct sampling_params *s = &r.f.submit.sampling;
    cr_assert(s->temperature == 1.f && s->top_p == 1.f && s->top_k == 0 && s->min_p == 0.f);
    cr_assert(s->presence_penalty == 0.f && s->frequency_penalty == 0.f && s->repetition_penalty == 1.f);
    cr_assert_eq(s->seed, 42, "seed_if_absent");
    cr_assert(s->n_bias == 0 && s->top_logprobs == 0 && r.f.submit.n_stop == 0);
    cr_assert(!r.stream && !r.include_usage && !r.logprobs && !r.echo && !r.f.submit.ignore_eos);
    oai_request_free(&r);
}

Test(oai_request, nulls_are_absent_and_integral_reals_count)
{
    struct oai_completion_request r;
    parse_ok(OAI_CHAT,
             CHAT(", \"temperature\": null, \"max_tokens\": null, \"n\": 2.0, \"top_k\": -1, "
                  "\"seed\": -3, \"stream_options\": null, \"logit_bias\": null, \"tools\": null, \"stop\": "
                  "\"zz\""),
             &r);
    cr_assert_eq(r.f.submit.sampling.temperature, 1.f);
    cr_assert_eq(r.f.submit.n, 2);
    cr_assert_eq(r.f.submit.sampling.top_k, 0, "-1 is off");
    cr_assert_eq(r.f.submit.sampling.seed, (uint64_t)-3);
    cr_assert(r.f.submit.n_stop == 1 && !strcmp(r.f.stop[0], "zz"));
    oai_request_free(&r);
}

Test(oai_request, max_tokens_and_the_context)
{
    struct oai_completion_request r;
    struct oai_error e;
    /* "<s><|user|>" + 40 chars + "\n<|assistant|>" = 44 tokens; 20 left */
    char body[512];
    const char *fill = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    snprintf(body, sizeof body,
             "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": \"%s\"}]}", fill);
    parse_ok(OAI_CHAT, body, &r);
    cr_assert_eq(r.f.submit.n_prompt, 44);
    cr_assert_eq(r.f.submit.max_tokens, 16);
    oai_request_free(&r);
    ctx.default_max_tokens = 0; /* none: everything the context leaves */
    parse_ok(OAI_CHAT, body, &r);
    cr_assert_eq(r.f.submit.max_tokens, 20);
    oai_request_free(&r);
    snprintf(
        body, sizeof body,
        "{\"model\": \"m1\", \"max_tokens\": 20, \"messages\": [{\"role\": \"user\", \"content\": \"%s\"}]}",
        fill);
    parse_ok(OAI_CHAT, body, &r); /* exactly fits */
    cr_assert_eq(r.f.submit.max_tokens, 20);
    oai_request_free(&r);
    snprintf(
        body, sizeof body,
        "{\"model\": \"m1\", \"max_tokens\": 21, \"messages\": [{\"role\": \"user\", \"content\": \"%s\"}]}",
        fill);
    cr_assert_eq(parse(OAI_CHAT, body, &r, &e), -1);
    cr_assert_eq(e.status, 400);
    cr_assert_str_eq(e.param, "messages");
    cr_assert(strstr(e.message,
                     "maximum context length is 64 tokens. However, you requested 65 tokens (44 in the "
                     "messages, 21 in the completion)"),
              "%s", e.message);
    snprintf(body, sizeof body,
             "{\"model\": \"m1\", \"max_tokens\": 3, \"max_completion_tokens\": 7, \"messages\": [{\"role\": "
             "\"user\", \"content\": \"%s\"}]}",
             fill);
    parse_ok(OAI_CHAT, body, &r);
    cr_assert_eq(r.f.submit.max_tokens, 7, "max_completion_tokens wins over the deprecated max_tokens");
    oai_request_free(&r);
}

Test(oai_request, chat_message_forms)
{
    struct oai_completion_request r;
    parse_ok(
        OAI_CHAT,
        "{\"model\": \"m1\", \"chat_template_kwargs\": {\"x\": true}, \"messages\": [{\"role\": \"user\", "
        "\"content\": []}, {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c\", "
        "\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}}]}, "
        "{\"role\": \"assistant\"}, {\"role\": \"system\", \"content\": \"\"}]}",
        &r);
    cr_assert_str_eq(r.f.prompt_text,
                     "<s>X<|user|>\n<|assistant|>{\"a\": 1}\n<|assistant|>\n<|system|>\n<|assistant|>");
    oai_request_free(&r);
}

Test(oai_request, completion_text_prompt)
{
    struct oai_completion_request r;
    parse_ok(OAI_COMPLETION,
             CMPL(", \"echo\": true, \"n\": 3, \"best_of\": 3, \"suffix\": \"\", \"max_tokens\": 4, "
                  "\"stream\": true"),
             &r);
    cr_assert_eq(r.kind, OAI_COMPLETION);
    cr_assert_str_eq(r.f.prompt_text, "hi");
    expect_ids(&r, "hi", 1);
    cr_assert_eq(r.f.prompt[0], BOS, "text prompts get the post-processor's BOS");
    cr_assert(r.echo && r.stream && !r.logprobs && r.f.submit.n == 3 && r.f.submit.max_tokens == 4);
    cr_assert(!r.f.submit.sampling.logprobs, "no log-probability asked: the sampler may skip it");
    oai_request_free(&r);
    parse_ok(OAI_COMPLETION, "{\"model\": \"m1\", \"prompt\": [\"hi\"], \"logprobs\": 3}", &r);
    expect_ids(&r, "hi", 1);
    cr_assert(r.logprobs && r.f.submit.sampling.top_logprobs == 3 && r.f.submit.sampling.top_logprobs == 3);
    oai_request_free(&r);
    parse_ok(OAI_COMPLETION, CMPL(", \"logprobs\": 0"), &r);
    cr_assert(r.logprobs && r.f.submit.sampling.top_logprobs == 0 && r.f.submit.sampling.logprobs,
              "logprobs 0: the chosen tokens only");
    oai_request_free(&r);
}

Test(oai_request, completion_token_prompt)
{
    const char *bodies[] = {"{\"model\": \"m1\", \"prompt\": [0, 268, 269]}",
                            "{\"model\": \"m1\", \"prompt\": [[0, 268, 269]]}",
                            "{\"model\": \"m1\", \"prompt\": [0, 268.0, 269]}"};
    for (size_t b = 0; b < sizeof bodies / sizeof bodies[0]; b++) {
        struct oai_completion_request r;
        parse_ok(OAI_COMPLETION, bodies[b], &r);
        cr_assert_eq(r.f.submit.n_prompt, 3);
        cr_assert(r.f.prompt[0] == 0 && r.f.prompt[1] == 268 && r.f.prompt[2] == 269);
        cr_assert_str_eq(r.f.prompt_text, "<s>hi", "decoded for echo");
        cr_assert_eq(r.f.submit.max_tokens, 16);
        oai_request_free(&r);
    }
}

/* ---- refused bodies ---- */

struct bad {
    enum oai_kind kind;
    const char *body;
    int status;
    const char *param;
    const char *says; /* part of the message, or NULL */
};

#define C OAI_CHAT
#define P OAI_COMPLETION
static const struct bad BAD[] = {
    /* not JSON, not an object, not UTF-8 */
    {C, "", 400, "", "not valid JSON"},
    {C, "{", 400, "", "not valid JSON"},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"", 400, "",
     "not valid JSON"},
    {C, "[]", 400, "", "JSON object"},
    {C, "42", 400, "", NULL},
    {C, "\"m1\"", 400, "", NULL},
    {C, "null", 400, "", NULL},
    {C, CHAT("") " x", 400, "", "not valid JSON"},
    {C, "{\"model\": \"m\xff\"}", 400, "", NULL},
    {C, CHAT(", \"user\": \"\xc0\xaf\""), 400, "", NULL},     /* overlong "/" */
    {C, CHAT(", \"user\": \"\xed\xa0\x80\""), 400, "", NULL}, /* a surrogate in UTF-8 */
    {C, CHAT(", \"user\": \"\xe2\x82\""), 400, "", NULL},     /* truncated sequence */
    {C, CHAT(", \"user\": \"\\ud800\""), 400, "", NULL},      /* lone high surrogate */
    {C, CHAT(", \"user\": \"\\udc00x\""), 400, "", NULL},     /* lone low surrogate */
    {C, CHAT(", \"user\": \"a\\u0000b\""), 400, "", NULL},    /* NUL inside a string */
    {C, CHAT(", \"model\": \"m1\""), 400, "", "duplicate"},
    {C, CHAT(", \"temperature\": NaN"), 400, "", NULL},
    {C, CHAT(", \"temperature\": Infinity"), 400, "", NULL},
    {C, CHAT(", \"temperature\": -Infinity"), 400, "", NULL},
    {C, CHAT(", \"temperature\": 1e400"), 400, "", NULL},
    {C, CHAT(", \"seed\": 99999999999999999999"), 400, "", NULL},
    {C, CHAT(", \"temperature\": .5"), 400, "", NULL},
    {C, CHAT(", \"n\": 01"), 400, "", NULL},
    /* model */
    {C, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", 400, "model", "model"},
    {C, "{\"model\": null, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", 400, "model", NULL},
    {C, "{\"model\": 5, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", 400, "model", NULL},
    {C, "{\"model\": \"gpt-4\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", 404, "model",
     "does not exist"},
    {P, "{\"model\": \"M1\", \"prompt\": \"hi\"}", 404, "model", NULL},
    /* messages */
    {C, "{\"model\": \"m1\"}", 400, "messages", "required"},
    {C, "{\"model\": \"m1\", \"messages\": []}", 400, "messages", NULL},
    {C, "{\"model\": \"m1\", \"messages\": \"hi\"}", 400, "messages", NULL},
    {C, "{\"model\": \"m1\", \"messages\": {\"role\": \"user\"}}", 400, "messages", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [1]}", 400, "messages[0]", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"wizard\", \"content\": \"hi\"}]}", 400,
     "messages[0].role", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"content\": \"hi\"}]}", 400, "messages[0].role", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": 3, \"content\": \"hi\"}]}", 400, "messages[0].role",
     NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": 5}]}", 400,
     "messages[0].content", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": {\"text\": \"x\"}}]}", 400,
     "messages[0].content", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\"}]}", 400, "messages[0].content", "required"},
    {C,
     "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", "
     "\"image_url\": {\"url\": \"x\"}}]}]}",
     400, "messages[0].content[0]", "only text"},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]}", 400,
     "messages[0].content[0]", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": [\"hi\"]}]}", 400,
     "messages[0].content[0]", NULL},
    {C,
     "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"user\", "
     "\"content\": [{\"type\": \"text\", \"text\": 5}]}]}",
     400, "messages[1].content[0]", NULL},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"tool\", \"tool_call_id\": \"c\", \"content\": \"42\"}]}",
     400, "messages", "no tool turns"},
    {C, "{\"model\": \"m1\", \"messages\": [{\"role\": \"tool\", \"content\": \"42\"}]}", 400,
     "messages[0].tool_call_id", "the id of the tool call"},
    {C, CHAT(", \"tools\": \"f\""), 400, "tools", NULL},
    {C, CHAT(", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}, 1]"), 400, "tools[1]", NULL},
    {C, CHAT(", \"tools\": [{}]"), 400, "tools[0]", "\"type\": \"function\""},
    {C, CHAT(", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f.g\"}}]"), 400,
     "tools[0].function.name", "letters, digits"},
    {C, CHAT(", \"tool_choice\": \"required\""), 400, "tool_choice", "only allowed when"},
    {C, CHAT(", \"chat_template_kwargs\": [1]"), 400, "chat_template_kwargs", NULL},
    {C, CHAT(", \"response_format\": {\"type\": \"json_object\"}"), 400, "response_format", NULL},
    /* numbers: type, range, fraction */
    {C, CHAT(", \"temperature\": -0.1"), 400, "temperature", "[0, 2]"},
    {C, CHAT(", \"temperature\": 2.5"), 400, "temperature", NULL},
    {C, CHAT(", \"temperature\": \"1\""), 400, "temperature", "a string"},
    {C, CHAT(", \"temperature\": true"), 400, "temperature", NULL},
    {C, CHAT(", \"top_p\": 0"), 400, "top_p", "(0, 1]"},
    {C, CHAT(", \"top_p\": 1.5"), 400, "top_p", NULL},
    {C, CHAT(", \"top_k\": -2"), 400, "top_k", NULL},
    {C, CHAT(", \"top_k\": 1.5"), 400, "top_k", NULL},
    {C, CHAT(", \"top_k\": 1e10"), 400, "top_k", NULL},
    {C, CHAT(", \"min_p\": 1.1"), 400, "min_p", NULL},
    {C, CHAT(", \"min_p\": -0.5"), 400, "min_p", NULL},
    {C, CHAT(", \"presence_penalty\": 3"), 400, "presence_penalty", NULL},
    {C, CHAT(", \"frequency_penalty\": -2.5"), 400, "frequency_penalty", NULL},
    {C, CHAT(", \"repetition_penalty\": 0"), 400, "repetition_penalty", NULL},
    {C, CHAT(", \"repetition_penalty\": -1"), 400, "repetition_penalty", NULL},
    {C, CHAT(", \"n\": 0"), 400, "n", NULL},
    {C, CHAT(", \"n\": 1000"), 400, "n", "[1, 8]"},
    {C, CHAT(", \"n\": 2.5"), 400, "n", NULL},
    {C, CHAT(", \"n\": \"2\""), 400, "n", NULL},
    {C, CHAT(", \"n\": true"), 400, "n", NULL},
    {C, CHAT(", \"n\": [2]"), 400, "n", "an array"},
    {C, CHAT(", \"max_tokens\": 0"), 400, "max_tokens", NULL},
    {C, CHAT(", \"max_tokens\": -5"), 400, "max_tokens", NULL},
    {C, CHAT(", \"max_tokens\": 1.5"), 400, "max_tokens", NULL},
    {C, CHAT(", \"max_tokens\": 99999999999999"), 400, "max_tokens", NULL},
    {C, CHAT(", \"max_completion_tokens\": 0"), 400, "max_completion_tokens", NULL},
    {C, CHAT(", \"seed\": 1.5"), 400, "seed", NULL},
    {C, CHAT(", \"seed\": \"abc\""), 400, "seed", NULL},
    {C, CHAT(", \"seed\": 1e19"), 400, "seed", NULL},
    /* log-probs, streaming, flags */
    {C, CHAT(", \"logprobs\": 1"), 400, "logprobs", NULL},
    {C, CHAT(", \"logprobs\": true, \"top_logprobs\": 21"), 400, "top_logprobs", NULL},
    {C, CHAT(", \"logprobs\": true, \"top_logprobs\": -1"), 400, "top_logprobs", NULL},
    {C, CHAT(", \"top_logprobs\": 2"), 400, "top_logprobs", "logprobs"},
    {C, CHAT(", \"logprobs\": false, \"top_logprobs\": 0"), 400, "top_logprobs", NULL},
    {C, CHAT(", \"stream\": \"yes\""), 400, "stream", NULL},
    {C, CHAT(", \"stream_options\": {\"include_usage\": true}"), 400, "stream_options", "stream"},
    {C, CHAT(", \"stream\": false, \"stream_options\": {}"), 400, "stream_options", NULL},
    {C, CHAT(", \"stream\": true, \"stream_options\": 5"), 400, "stream_options", NULL},
    {C, CHAT(", \"stream\": true, \"stream_options\": {\"include_usage\": 1}"), 400,
     "stream_options.include_usage", NULL},
    {C, CHAT(", \"ignore_eos\": 1"), 400, "ignore_eos", NULL},
    /* stop strings */
    {C, CHAT(", \"stop\": 5"), 400, "stop", NULL},
    {C, CHAT(", \"stop\": {\"a\": 1}"), 400, "stop", NULL},
    {C, CHAT(", \"stop\": [1]"), 400, "stop[0]", NULL},
    {C, CHAT(", \"stop\": [\"a\", null]"), 400, "stop[1]", NULL},
    {C, CHAT(", \"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]"), 400, "stop", "at most 4"},
    {C, CHAT(", \"stop\": \"abcdefghijklmnopq\""), 400, "stop", "at most 16 bytes"},
    {C, CHAT(", \"stop\": [\"\"]"), 400, "stop[0]", "empty"},
    /* logit bias */
    {C, CHAT(", \"logit_bias\": [1]"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"abc\": 1}"), 400, "logit_bias", "abc"},
    {C, CHAT(", \"logit_bias\": {\"-1\": 1}"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"+5\": 1}"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"05\": 1}"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"\": 1}"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"99999\": 1}"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"99999999999999999999\": 1}"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"5\": 101}"), 400, "logit_bias", "[-100, 100]"},
    {C, CHAT(", \"logit_bias\": {\"5\": -100.5}"), 400, "logit_bias", NULL},
    {C, CHAT(", \"logit_bias\": {\"5\": \"1\"}"), 400, "logit_bias", NULL},
    /* the context */
    {C, CHAT(", \"max_tokens\": 64"), 400, "messages", "maximum context length is 64 tokens"},
    {P, CMPL(", \"max_tokens\": 62"), 400, "prompt", "(3 in the prompt, 62 in the completion)"},
    {P,
     "{\"model\": \"m1\", \"prompt\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
     400, "prompt", "your prompt resulted in 65 tokens"},
    /* completions */
    {P, "{\"model\": \"m1\"}", 400, "prompt", "required"},
    {P, "{\"model\": \"m1\", \"prompt\": 5}", 400, "prompt", NULL},
    {P, "{\"model\": \"m1\", \"prompt\": {}}", 400, "prompt", NULL},
    {P, "{\"model\": \"m1\", \"prompt\": []}", 400, "prompt", "empty"},
    {P, "{\"model\": \"m1\", \"prompt\": [[]]}", 400, "prompt", "empty"},
    {P, "{\"model\": \"m1\", \"prompt\": [\"a\", \"b\"]}", 400, "prompt", "batched"},
    {P, "{\"model\": \"m1\", \"prompt\": [[1], [2]]}", 400, "prompt", "batched"},
    {P, "{\"model\": \"m1\", \"prompt\": [1, -1]}", 400, "prompt[1]", NULL},
    {P, "{\"model\": \"m1\", \"prompt\": [1, 100000]}", 400, "prompt[1]", "token id"},
    {P, "{\"model\": \"m1\", \"prompt\": [1, 2.5]}", 400, "prompt[1]", NULL},
    {P, "{\"model\": \"m1\", \"prompt\": [[1, \"x\"]]}", 400, "prompt[0][1]", NULL},
    {P, "{\"model\": \"m1\", \"prompt\": [true]}", 400, "prompt[0]", NULL},
    {P, "{\"model\": \"m1\", \"prompt\": \"\xff\"}", 400, "", NULL},
    {P, CMPL(", \"suffix\": \"x\""), 400, "suffix", NULL},
    {P, CMPL(", \"best_of\": 3"), 400, "best_of", NULL},
    {P, CMPL(", \"n\": 2, \"best_of\": 3"), 400, "best_of", NULL},
    {P, CMPL(", \"best_of\": 0"), 400, "best_of", NULL},
    {P, CMPL(", \"logprobs\": 6"), 400, "logprobs", NULL},
    {P, CMPL(", \"logprobs\": -1"), 400, "logprobs", NULL},
    {P, CMPL(", \"logprobs\": true"), 400, "logprobs", NULL},
    {P, CMPL(", \"echo\": \"yes\""), 400, "echo", NULL},
    {P, CMPL(", \"echo\": true, \"logprobs\": 1"), 400, "echo", NULL},
    {P, CMPL(", \"tools\": []"), 400, "tools", NULL},
    {P, CMPL(", \"stream_options\": {\"include_usage\": true}"), 400, "stream_options", NULL},
};
#undef C
#undef P

Test(oai_reject, table)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        const struct bad *b = &BAD[i];
        struct oai_completion_request r;
        struct oai_error e;
        memset(&r, 0x5a, sizeof r);
        int rc = parse(b->kind, b->body, &r, &e);
        cr_assert_eq(rc, -1, "case %zu accepted: %s", i, b->body);
        cr_assert_eq(e.status, b->status, "case %zu: status %d (%s), expected %d", i, e.status, e.message,
                     b->status);
        cr_assert_str_eq(e.param, b->param, "case %zu: param '%s' (%s), expected '%s'", i, e.param, e.message,
                         b->param);
        cr_assert_str_eq(e.type, b->status == 404 ? "not_found_error" : "invalid_request_error");
        cr_assert(!b->says || strstr(e.message, b->says), "case %zu: '%s' does not say '%s'", i, e.message,
                  b->says);
        cr_assert(r.f.prompt == NULL && r.model == NULL && r.f.stop == NULL && r.f.bias == NULL && !r.f.prompt_text,
                  "case %zu: a refused request holds nothing", i);
        json_decref(oai_error_json(&e)); /* every message renders (ASan) */
    }
    cr_log_info("%zu refused bodies", sizeof BAD / sizeof BAD[0]);
}

Test(oai_reject, nul_byte_in_body)
{
    static const char body[] = "{\"model\": \"m1\"\0, \"messages\": []}";
    struct oai_completion_request r;
    struct oai_error e;
    cr_assert_eq(parse_len(OAI_CHAT, body, sizeof body - 1, &r, &e), -1);
    cr_assert_eq(e.status, 400);
}

Test(oai_reject, no_chat_template_or_tokenizer)
{
    struct oai_completion_request r;
    struct oai_error e;
    ctx.ct = NULL;
    cr_assert_eq(parse(OAI_CHAT, CHAT(""), &r, &e), -1);
    cr_assert(e.status == 400 && strstr(e.message, "no chat template"), "%s", e.message);
    ctx.ct = ct;
    ctx.tok = NULL;
    cr_assert_eq(parse(OAI_COMPLETION, CMPL(""), &r, &e), -1);
    cr_assert(e.status == 400 && !strcmp(e.param, "prompt"), "%s", e.message);
    cr_assert_eq(parse(OAI_COMPLETION, "{\"model\": \"m1\", \"prompt\": [1, 2], \"stop\": \"x\"}", &r, &e),
                 -1);
    cr_assert_str_eq(e.param, "stop");
    parse_ok(OAI_COMPLETION, "{\"model\": \"m1\", \"prompt\": [1, 2]}", &r);
    cr_assert_str_eq(r.f.prompt_text, "");
    oai_request_free(&r);
}

/* Nesting: 64 levels pass, 65 and 100000 are refused before the parser recurses. */
Test(oai_reject, deep_nesting)
{
    size_t depth = 100000, cap = 2 * depth + 256, len = 0;
    char *body = malloc(cap);
    for (int levels = 63; levels <= 64; levels++) { /* plus the body's own object */
        len = (size_t)snprintf(body, cap, "{\"model\": \"m1\", \"prompt\": \"hi\", \"x\": ");
        for (int i = 0; i < levels; i++)
            body[len++] = '[';
        for (int i = 0; i < levels; i++)
            body[len++] = ']';
        body[len++] = '}';
        struct oai_completion_request r;
        struct oai_error e;
        int rc = parse_len(OAI_COMPLETION, body, len, &r, &e);
        cr_assert_eq(rc, levels == 63 ? 0 : -1, "%d levels: %s", levels + 1, e.message);
        if (rc == 0)
            oai_request_free(&r);
        else
            cr_assert(strstr(e.message, "deeper than 64"), "%s", e.message);
    }
    /* brackets inside strings do not count */
    len = (size_t)snprintf(body, cap, "{\"model\": \"m1\", \"prompt\": \"");
    for (int i = 0; i < 200; i++)
        body[len++] = i % 2 ? '{' : '[';
    len += (size_t)snprintf(body + len, cap - len, "\\\"]\"}");
    struct oai_completion_request r;
    struct oai_error e;
    cr_assert_eq(parse_len(OAI_COMPLETION, body, len, &r, &e), -1);
    cr_assert(strstr(e.message, "context length"), "the string is parsed, then too long: %s", e.message);
    /* 100000 deep, unterminated */
    len = (size_t)snprintf(body, cap, "{\"model\": \"m1\", \"messages\": ");
    for (size_t i = 0; i < depth; i++)
        body[len++] = '[';
    cr_assert_eq(parse_len(OAI_CHAT, body, len, &r, &e), -1);
    cr_assert(e.status == 400 && strstr(e.message, "deeper than 64"), "%s", e.message);
    /* 100000 deep, closed, in the arguments of a tool call (parsed for the template) */
    len = (size_t)snprintf(body, cap,
                           "{\"model\": \"m1\", \"messages\": [{\"role\": \"assistant\", \"tool_calls\": "
                           "[{\"function\": {\"name\": \"f\", \"arguments\": \"");
    for (size_t i = 0; i < depth / 2; i++)
        body[len++] = '[';
    for (size_t i = 0; i < depth / 2; i++)
        body[len++] = ']';
    len += (size_t)snprintf(body + len, cap - len, "\"}}]}]}");
    parse_ok(OAI_CHAT, "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", &r);
    oai_request_free(&r);
    int rc = parse_len(OAI_CHAT, body, len, &r, &e);
    if (rc == 0) /* the arguments stay a string: the template prints it as such */
        oai_request_free(&r);
    else
        cr_assert_eq(e.status, 400);
    free(body);
}

/* 10 MB of prompt: refused for the context after one tokenizer pass, quickly. */
Test(oai_reject, ten_megabyte_prompt)
{
    size_t n = 10u << 20, cap = n + 128;
    char *body = malloc(cap);
    size_t len = (size_t)snprintf(body, cap, "{\"model\": \"m1\", \"prompt\": \"");
    for (size_t i = 0; i < n; i++)
        body[len++] = "ab c."[i % 5];
    len += (size_t)snprintf(body + len, cap - len, "\"}");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct oai_completion_request r;
    struct oai_error e;
    cr_assert_eq(parse_len(OAI_COMPLETION, body, len, &r, &e), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_assert(e.status == 400 && strstr(e.message, "maximum context length"), "%s", e.message);
    cr_assert_str_eq(e.param, "prompt");
    cr_log_info("10 MB prompt refused in %.2f s", s);
    cr_assert(s < 20, "took %.1f s", s);
    free(body);
}

/* Every prefix of valid bodies, and every byte of one replaced: no crash, no leak. */
Test(oai_reject, truncations_and_mutations)
{
    static const char *const bodies[] = {
        "{\"model\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", "
        "\"text\": "
        "\"hi\"}]}], \"stop\": [\"ab\"], \"logit_bias\": {\"5\": 1}, \"n\": 2, \"stream\": true, "
        "\"stream_options\": {\"include_usage\": true}, \"logprobs\": true, \"top_logprobs\": 2}",
        "{\"model\": \"m1\", \"prompt\": [[0, 268, 269]], \"logprobs\": 2, \"stop\": \"x\", \"best_of\": 1}"};
    static const char repl[] = "\"[]{}:,\\0 -\xff\xc3";
    int accepted = 0, total = 0;
    for (size_t b = 0; b < 2; b++) {
        enum oai_kind k = b == 0 ? OAI_CHAT : OAI_COMPLETION;
        size_t n = strlen(bodies[b]);
        char *buf = malloc(n);
        for (size_t cut = 0; cut <= n; cut++) {
            struct oai_completion_request r;
            struct oai_error e;
            memcpy(buf, bodies[b], n);
            total++;
            if (parse_len(k, buf, cut, &r, &e) == 0) {
                accepted++;
                oai_request_free(&r);
            }
        }
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < sizeof repl - 1; c++) {
                struct oai_completion_request r;
                struct oai_error e;
                memcpy(buf, bodies[b], n);
                buf[i] = repl[c];
                total++;
                if (parse_len(k, buf, n, &r, &e) == 0) {
                    accepted++;
                    oai_request_free(&r);
                } else {
                    cr_assert(e.status == 400 || e.status == 404);
                }
            }
        free(buf);
    }
    cr_log_info("%d of %d mutated bodies accepted", accepted, total);
}

/* ---- responses ---- */

static json_t *roundtrip(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    cr_assert(s);
    json_decref(o);
    json_error_t je;
    json_t *back = json_loads(s, 0, &je);
    cr_assert(back, "%s: %s", je.text, s);
    free(s);
    return back;
}

/* A chunk's JSON after checking its framing. */
static json_t *chunk_json(char *chunk)
{
    cr_assert(chunk);
    size_t n = strlen(chunk);
    cr_assert(n > 8 && !strncmp(chunk, "data: ", 6) && !strcmp(chunk + n - 2, "\n\n"), "framing: %s", chunk);
    cr_assert(!memchr(chunk, '\n', n - 2), "one line: %s", chunk);
    cr_assert(!strstr(chunk + 6, "\": ") && !strstr(chunk + 6, ", \""), "compact: %s", chunk);
    json_error_t je;
    json_t *o = json_loadb(chunk + 6, n - 8, 0, &je);
    cr_assert(o, "%s: %s", je.text, chunk);
    free(chunk);
    return o;
}

static struct oai_completion_request request(enum oai_kind k, const char *body)
{
    struct oai_completion_request r;
    parse_ok(k, body, &r);
    return r;
}

static double num(const json_t *o, const char *path_key)
{
    return json_number_value(json_object_get(o, path_key));
}

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    cr_assert(json_is_string(v), "'%s' is not a string", key);
    return json_string_value(v);
}

static struct oai_token_logprob tlp(int32_t token, float logprob, int n_top, const int32_t *ids,
                                    const float *lps)
{
    struct oai_token_logprob t = {.token = token, .logprob = logprob, .n_top = n_top};
    for (int i = 0; i < n_top; i++) {
        t.top_ids[i] = ids[i];
        t.top_logprobs[i] = lps[i];
    }
    return t;
}

#define TOK_A (CHAR0 + 0)
#define TOK_B (CHAR0 + 1)
#define TOK_H (CHAR0 + 7)

Test(oai_response, chat)
{
    struct oai_completion_request r = request(OAI_CHAT, CHAT(", \"n\": 2, \"logprobs\": true, \"top_logprobs\": 2"));
    const int32_t top_ids[] = {TOK_A, TOK_B};
    const float top_lps[] = {-0.1f, -2.5f};
    struct oai_token_logprob lp[] = {tlp(TOK_A, -0.1f, 2, top_ids, top_lps),
                                     tlp(BYTE0 + 0xC3, -INFINITY, 0, NULL, NULL)};
    struct oai_choice ch[] = {{"a\xc3\xa9", 3, FINISH_REASON_STOP, lp, 2, NULL},
                              {"xyz", 3, FINISH_REASON_LENGTH, NULL, 0, NULL}};
    json_t *o = roundtrip(oai_response(&r, tok, "chatcmpl-abc", 1700000000, ch, 2, 7, 5));
    cr_assert_str_eq(str(o, "id"), "chatcmpl-abc");
    cr_assert_str_eq(str(o, "object"), "chat.completion");
    cr_assert_eq(num(o, "created"), 1700000000);
    cr_assert_str_eq(str(o, "model"), "m1");
    const json_t *usage = json_object_get(o, "usage");
    cr_assert(num(usage, "prompt_tokens") == 7 && num(usage, "completion_tokens") == 5 &&
              num(usage, "total_tokens") == 12);
    const json_t *choices = json_object_get(o, "choices");
    cr_assert_eq(json_array_size(choices), 2);
    const json_t *c0 = json_array_get(choices, 0), *c1 = json_array_get(choices, 1);
    cr_assert(num(c0, "index") == 0 && num(c1, "index") == 1);
    cr_assert_str_eq(str(c0, "finish_reason"), "stop");
    cr_assert_str_eq(str(c1, "finish_reason"), "length");
    const json_t *msg = json_object_get(c0, "message");
    cr_assert_str_eq(str(msg, "role"), "assistant");
    cr_assert_str_eq(str(msg, "content"), "a\xc3\xa9");
    cr_assert_eq(json_array_size(json_object_get(json_object_get(c1, "logprobs"), "content")), 0,
                 "asked for, none given: an empty list");
    const json_t *content = json_object_get(json_object_get(c0, "logprobs"), "content");
    cr_assert_eq(json_array_size(content), 2);
    const json_t *e0 = json_array_get(content, 0), *e1 = json_array_get(content, 1);
    cr_assert_str_eq(str(e0, "token"), "a");
    cr_assert_float_eq(num(e0, "logprob"), -0.1, 1e-6);
    cr_assert_eq(json_array_size(json_object_get(e0, "bytes")), 1);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(e0, "bytes"), 0)), 'a');
    const json_t *top = json_object_get(e0, "top_logprobs");
    cr_assert_eq(json_array_size(top), 2);
    cr_assert_str_eq(str(json_array_get(top, 1), "token"), "b");
    cr_assert_float_eq(num(json_array_get(top, 1), "logprob"), -2.5, 1e-6);
    cr_assert(json_is_array(json_object_get(json_array_get(top, 1), "bytes")));
    /* a lone byte token: valid JSON text, -inf as -9999 */
    cr_assert_str_eq(str(e1, "token"), "\xef\xbf\xbd");
    cr_assert_eq(num(e1, "logprob"), -9999.0);
    cr_assert_eq(json_array_size(json_object_get(e1, "top_logprobs")), 0);
    json_decref(o);
    oai_request_free(&r);
}

Test(oai_response, completion_logprobs_shape)
{
    struct oai_completion_request r = request(OAI_COMPLETION, CMPL(", \"logprobs\": 2"));
    const int32_t ids0[] = {TOK_B, TOK_H}, ids1[] = {TOK_A, TOK_B};
    const float lps0[] = {-0.5f, -1.0f}, lps1[] = {-0.2f, -0.3f};
    /* the chosen token is not among the top two at position 0: the dict has three entries */
    struct oai_token_logprob lp[] = {tlp(TOK_A, -3.0f, 2, ids0, lps0), tlp(TOK_B, -0.3f, 2, ids1, lps1)};
    struct oai_choice ch = {"ab", 2, FINISH_REASON_LENGTH, lp, 2, NULL};
    json_t *o = roundtrip(oai_response(&r, tok, "cmpl-1", 5, &ch, 1, 3, 2));
    cr_assert_str_eq(str(o, "object"), "text_completion");
    const json_t *c = json_array_get(json_object_get(o, "choices"), 0);
    cr_assert_str_eq(str(c, "text"), "ab");
    cr_assert_str_eq(str(c, "finish_reason"), "length");
    const json_t *l = json_object_get(c, "logprobs");
    const json_t *tokens = json_object_get(l, "tokens"), *tl = json_object_get(l, "token_logprobs"),
                 *top = json_object_get(l, "top_logprobs"), *off = json_object_get(l, "text_offset");
    cr_assert(json_array_size(tokens) == 2 && json_array_size(tl) == 2 && json_array_size(top) == 2 &&
              json_array_size(off) == 2);
    cr_assert_str_eq(json_string_value(json_array_get(tokens, 0)), "a");
    cr_assert_str_eq(json_string_value(json_array_get(tokens, 1)), "b");
    cr_assert_float_eq(json_real_value(json_array_get(tl, 0)), -3.0, 1e-6);
    const json_t *d0 = json_array_get(top, 0), *d1 = json_array_get(top, 1);
    cr_assert_eq(json_object_size(d0), 3);
    cr_assert_float_eq(num(d0, "b"), -0.5, 1e-6);
    cr_assert_float_eq(num(d0, "h"), -1.0, 1e-6);
    cr_assert_float_eq(num(d0, "a"), -3.0, 1e-6);
    cr_assert_eq(json_object_size(d1), 2);
    cr_assert(json_integer_value(json_array_get(off, 0)) == 0 &&
              json_integer_value(json_array_get(off, 1)) == 1);
    json_decref(o);
    oai_request_free(&r);

    /* logprobs 0: the chosen tokens only, "top_logprobs": null */
    r = request(OAI_COMPLETION, CMPL(", \"logprobs\": 0"));
    o = roundtrip(oai_response(&r, tok, "cmpl-2", 5, &ch, 1, 3, 2));
    l = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "logprobs");
    cr_assert(json_is_null(json_object_get(l, "top_logprobs")));
    cr_assert_eq(json_array_size(json_object_get(l, "tokens")), 2);
    json_decref(o);
    oai_request_free(&r);

    /* echo: the prompt before the text; no logprobs requested: null */
    r = request(OAI_COMPLETION, "{\"model\": \"m1\", \"prompt\": \"h\xc3\xa9!\", \"echo\": true}");
    o = roundtrip(oai_response(&r, tok, "cmpl-3", 5, &ch, 1, 4, 2));
    c = json_array_get(json_object_get(o, "choices"), 0);
    cr_assert_str_eq(str(c, "text"), "h\xc3\xa9!ab");
    cr_assert(json_is_null(json_object_get(c, "logprobs")));
    json_decref(o);
    oai_request_free(&r);
}

Test(oai_response, chat_stream_chunks)
{
    struct oai_completion_request r =
        request(OAI_CHAT, CHAT(", \"stream\": true, \"stream_options\": {\"include_usage\": true}"));
    json_t *o = chunk_json(oai_chunk(&r, tok, "chatcmpl-x", 9, 0, 1, "", 0, NULL, 0, -1));
    cr_assert_str_eq(str(o, "object"), "chat.completion.chunk");
    cr_assert_str_eq(str(o, "id"), "chatcmpl-x");
    cr_assert(json_is_null(json_object_get(o, "usage")) && json_object_get(o, "usage"),
              "usage: null in every chunk but the last when include_usage");
    const json_t *c = json_array_get(json_object_get(o, "choices"), 0);
    const json_t *d = json_object_get(c, "delta");
    cr_assert_eq(json_object_size(d), 2);
    cr_assert_str_eq(str(d, "role"), "assistant");
    cr_assert_str_eq(str(d, "content"), "");
    cr_assert(json_is_null(json_object_get(c, "finish_reason")) &&
              json_is_null(json_object_get(c, "logprobs")));
    json_decref(o);

    o = chunk_json(oai_chunk(&r, tok, "chatcmpl-x", 9, 0, 0, "Hel\"lo\n", 7, NULL, 0, -1));
    d = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "delta");
    cr_assert_eq(json_object_size(d), 1);
    cr_assert_str_eq(str(d, "content"), "Hel\"lo\n");
    json_decref(o);

    o = chunk_json(oai_chunk(&r, tok, "chatcmpl-x", 9, 1, 0, NULL, 0, NULL, 0, FINISH_REASON_STOP));
    c = json_array_get(json_object_get(o, "choices"), 0);
    cr_assert_eq(num(c, "index"), 1);
    cr_assert_eq(json_object_size(json_object_get(c, "delta")), 0, "the last chunk's delta is {}");
    cr_assert_str_eq(str(c, "finish_reason"), "stop");
    json_decref(o);

    o = chunk_json(oai_chunk(&r, tok, "chatcmpl-x", 9, 0, 0, NULL, 0, NULL, 0, FINISH_REASON_ABORT));
    cr_assert_str_eq(str(json_array_get(json_object_get(o, "choices"), 0), "finish_reason"), "abort");
    json_decref(o);

    o = chunk_json(oai_usage_chunk(&r, "chatcmpl-x", 9, 4, 6));
    cr_assert_str_eq(str(o, "object"), "chat.completion.chunk");
    cr_assert_eq(json_array_size(json_object_get(o, "choices")), 0);
    const json_t *u = json_object_get(o, "usage");
    cr_assert(num(u, "prompt_tokens") == 4 && num(u, "completion_tokens") == 6 &&
              num(u, "total_tokens") == 10);
    json_decref(o);
    oai_request_free(&r);

    /* without include_usage there is no "usage" key; log-probs ride on the delta's chunk */
    r = request(OAI_CHAT, CHAT(", \"stream\": true, \"logprobs\": true"));
    struct oai_token_logprob lp = tlp(TOK_A, -0.25f, 0, NULL, NULL);
    o = chunk_json(oai_chunk(&r, tok, "chatcmpl-y", 9, 0, 0, "a", 1, &lp, 1, -1));
    cr_assert_null(json_object_get(o, "usage"));
    const json_t *content = json_object_get(
        json_object_get(json_array_get(json_object_get(o, "choices"), 0), "logprobs"), "content");
    cr_assert_eq(json_array_size(content), 1);
    cr_assert_str_eq(str(json_array_get(content, 0), "token"), "a");
    cr_assert_eq(num(json_array_get(content, 0), "logprob"), -0.25);
    json_decref(o);
    oai_request_free(&r);
}

Test(oai_response, completion_stream_chunks)
{
    struct oai_completion_request r = request(OAI_COMPLETION, CMPL(", \"stream\": true, \"echo\": true"));
    json_t *o = chunk_json(oai_chunk(&r, tok, "cmpl-z", 3, 0, 1, "ab", 2, NULL, 0, -1));
    cr_assert_str_eq(str(o, "object"), "text_completion");
    const json_t *c = json_array_get(json_object_get(o, "choices"), 0);
    cr_assert_str_eq(str(c, "text"), "hiab", "the first chunk echoes the prompt");
    cr_assert(json_is_null(json_object_get(c, "finish_reason")) &&
              json_is_null(json_object_get(c, "logprobs")));
    json_decref(o);
    o = chunk_json(oai_chunk(&r, tok, "cmpl-z", 3, 0, 0, "c", 1, NULL, 0, FINISH_REASON_LENGTH));
    c = json_array_get(json_object_get(o, "choices"), 0);
    cr_assert_str_eq(str(c, "text"), "c");
    cr_assert_str_eq(str(c, "finish_reason"), "length");
    json_decref(o);
    o = chunk_json(oai_usage_chunk(&r, "cmpl-z", 3, 3, 3));
    cr_assert_eq(num(json_object_get(o, "usage"), "total_tokens"), 6);
    json_decref(o);
    oai_request_free(&r);

    r = request(OAI_COMPLETION, CMPL(", \"stream\": true, \"logprobs\": 1"));
    const int32_t ids[] = {TOK_B};
    const float lps[] = {-0.5f};
    struct oai_token_logprob lp[] = {tlp(TOK_A, -1.5f, 1, ids, lps), tlp(TOK_B, -0.5f, 1, ids, lps)};
    o = chunk_json(oai_chunk(&r, tok, "cmpl-w", 3, 0, 0, "ab", 2, lp, 2, -1));
    const json_t *l = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "logprobs");
    cr_assert_eq(json_array_size(json_object_get(l, "tokens")), 2);
    cr_assert_eq(json_object_size(json_array_get(json_object_get(l, "top_logprobs"), 0)), 2);
    cr_assert_eq(json_object_size(json_array_get(json_object_get(l, "top_logprobs"), 1)), 1);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(l, "text_offset"), 1)), 1);
    json_decref(o);
    oai_request_free(&r);
}

Test(oai_response, invalid_utf8_text_stays_valid_json)
{
    struct oai_completion_request r = request(OAI_CHAT, CHAT(""));
    struct oai_choice ch = {"ok\xe2\x82", 4, FINISH_REASON_LENGTH, NULL, 0, NULL};
    json_t *o = roundtrip(oai_response(&r, tok, "chatcmpl-q", 1, &ch, 1, 1, 1));
    cr_assert_str_eq(
        str(json_object_get(json_array_get(json_object_get(o, "choices"), 0), "message"), "content"),
        "ok\xef\xbf\xbd");
    json_decref(o);
    json_decref(chunk_json(oai_chunk(&r, tok, "chatcmpl-q", 1, 0, 0, "\xff", 1, NULL, 0, -1)));
    oai_request_free(&r);
}

Test(oai_response, error_json)
{
    struct oai_completion_request r;
    struct oai_error e;
    cr_assert_eq(parse(OAI_CHAT, "{\"model\": \"nope\", \"messages\": []}", &r, &e), -1);
    json_t *o = roundtrip(oai_error_json(&e));
    cr_assert_eq(json_object_size(o), 1);
    const json_t *err = json_object_get(o, "error");
    cr_assert_eq(json_object_size(err), 4);
    cr_assert(strstr(str(err, "message"), "nope"));
    cr_assert_str_eq(str(err, "type"), "not_found_error");
    cr_assert_str_eq(str(err, "param"), "model");
    cr_assert_str_eq(str(err, "code"), "model_not_found");
    json_decref(o);

    cr_assert_eq(parse(OAI_CHAT, CHAT(", \"max_tokens\": 100"), &r, &e), -1);
    o = roundtrip(oai_error_json(&e));
    cr_assert_str_eq(str(json_object_get(o, "error"), "code"), "context_length_exceeded");
    json_decref(o);

    cr_assert_eq(oai_error_set(&e, 503, NULL, "busy: %d waiting", 7), -1);
    o = roundtrip(oai_error_json(&e));
    err = json_object_get(o, "error");
    cr_assert_str_eq(str(err, "message"), "busy: 7 waiting");
    cr_assert_str_eq(str(err, "type"), "server_error");
    cr_assert(json_is_null(json_object_get(err, "param")) && json_is_null(json_object_get(err, "code")));
    json_decref(o);
    oai_error_set(&e, 401, "", "no key");
    cr_assert_str_eq(e.type, "authentication_error");
    oai_error_set(&e, 429, "", "slow down");
    cr_assert_str_eq(e.type, "rate_limit_error");
    /* a message cut inside a character still renders */
    char longmsg[600];
    memset(longmsg, 'x', sizeof longmsg);
    memcpy(longmsg + 510, "\xe2\x82\xac\xe2\x82\xac", 6);
    longmsg[599] = '\0';
    oai_error_set(&e, 400, "messages", "%s", longmsg);
    o = roundtrip(oai_error_json(&e));
    json_decref(o);
}
