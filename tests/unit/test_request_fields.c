/* The shared request-field parser (src/engine/request_fields.c) in both of
 * its callers' modes: the CLI's (`generate --input`: unknown fields refused,
 * the flags' defaults, exactly one of "prompt", "prompt_ids" and
 * "messages") and the server's (unknown fields ignored, OpenAI's defaults,
 * the context check). The server's full table of refusals is in
 * test_oai.c. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <string.h>

#include "engine/request_fields.h"
#include "tok_fixture.h"

/* One token per character of CHARS (ids 1..), "<s>" = 0 prepended to text prompts. */
static const char CHARS[] = "abcdefghijklmnopqrstuvwxyz :";

static struct tokenizer *make_tok(void)
{
    char json[4096];
    size_t len = (size_t)snprintf(json, sizeof json,
                                  "{\"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {\"<s>\": 0");
    for (size_t c = 0; c < sizeof CHARS - 1; c++)
        len += (size_t)snprintf(json + len, sizeof json - len, ", \"%c\": %zu", CHARS[c], c + 1);
    snprintf(json + len, sizeof json - len,
             "}}, \"decoder\": {\"type\": \"Fuse\"}, \"post_processor\": {\"type\": \"TemplateProcessing\", "
             "\"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": "
             "\"A\", \"type_id\": 0}}], \"pair\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], "
             "\"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [0], \"tokens\": [\"<s>\"]}}}, "
             "\"added_tokens\": [{\"id\": 0, \"content\": \"<s>\", \"single_word\": false, \"lstrip\": false, "
             "\"rstrip\": false, \"normalized\": false, \"special\": true}]}");
    return tok_fixture_load(json);
}

/* Turns as "<first letter of the role>:<content> ", then "a:" for the reply. */
static const char TEMPLATE[] = "{\"chat_template\": \"{% for m in messages %}{{ m.role[0] }}:{{ m.content }} "
                               "{% endfor %}{% if add_generation_prompt %}a:{% endif %}\"}";

static struct tokenizer *tok;
static struct chat_template *ct;
static int template_calls;

static void setup(void)
{
    tok = make_tok();
    ct = tok_fixture_template(TEMPLATE);
    template_calls = 0;
}

static void teardown(void)
{
    chat_template_free(ct);
    tokenizer_free(tok);
}

TestSuite(request_fields, .init = setup, .fini = teardown);

/* Counts the calls: the CLI loads its template on the first "messages". */
static const struct chat_template *the_template(void *arg, struct err *e)
{
    (void)e;
    template_calls++;
    return arg;
}

/* generate --input's options: the flags' defaults (greedy, 16 tokens, seed 77, ignore_eos). */
static struct request_fields_opts cli_opts(void)
{
    struct request_fields_opts o = {
        .refuse_unknown = 1,
        .prompt_forms = REQUEST_PROMPT_TEXT | REQUEST_PROMPT_IDS | REQUEST_MESSAGES,
        .chat_logprobs = 1,
        .sampling = sampling_params_default(),
        .max_tokens = 16,
        .ignore_eos = 1,
        .max_n = 128,
        .max_stop = 16,
        .max_stop_len = INT_MAX,
        .max_top_logprobs = 20,
        .vocab_size = tokenizer_vocab_size(tok),
        .tok = tok,
        .no_tokenizer_hint = "give the prompt as 'prompt_ids'",
        .chat_template = the_template,
        .chat_template_arg = ct,
    };
    o.sampling.seed = 77;
    return o;
}

/* The server's chat options: OpenAI's defaults, a context of 32 tokens. */
static struct request_fields_opts server_opts(void)
{
    struct request_fields_opts o = {
        .prompt_forms = REQUEST_MESSAGES,
        .chat_logprobs = 1,
        .template_inputs = 1,
        .sampling = sampling_params_default(),
        .max_tokens = 1 << 20,
        .max_n = 8,
        .max_stop = 4,
        .max_stop_len = 16,
        .max_top_logprobs = 20,
        .vocab_size = tokenizer_vocab_size(tok),
        .max_context = 32,
        .tok = tok,
        .no_tokenizer_hint = "use /v1/completions with token ids",
        .chat_template = the_template,
        .chat_template_arg = ct,
    };
    o.sampling.temperature = 1.f;
    o.sampling.seed = 42;
    return o;
}

static int parse(const struct request_fields_opts *o, const char *text, struct request_fields *r,
                 struct request_field_error *err)
{
    json_error_t je;
    json_t *obj = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    cr_assert(obj, "%s: %s", je.text, text);
    memset(r, 0x5a, sizeof *r);
    int rc = request_fields_parse(o, obj, r, err);
    json_decref(obj);
    return rc;
}

static void parse_ok(const struct request_fields_opts *o, const char *text, struct request_fields *r)
{
    struct request_field_error err;
    cr_assert_eq(parse(o, text, r, &err), 0, "refused (%s): %s\nrequest: %s", err.field, err.message, text);
    cr_assert(r->submit.prompt == r->prompt && r->submit.stop == r->stop);
}

/* Refused, naming field, the message holding says; nothing left to free. */
static void parse_bad(const struct request_fields_opts *o, const char *text, const char *field, const char *says)
{
    struct request_fields r;
    struct request_field_error err;
    cr_assert_eq(parse(o, text, &r, &err), -1, "accepted: %s", text);
    cr_assert_str_eq(err.field, field, "field '%s' (%s), expected '%s': %s", err.field, err.message, field, text);
    cr_assert(strstr(err.message, says), "'%s' does not say '%s'", err.message, says);
    cr_assert(!r.prompt && !r.stop && !r.bias && !r.prompt_text, "a refused request holds nothing");
}

Test(request_fields, cli_defaults_when_absent)
{
    const struct request_fields_opts o = cli_opts();
    struct request_fields r;
    parse_ok(&o, "{\"prompt_ids\": [3, 4, 5]}", &r);
    cr_assert(r.submit.n_prompt == 3 && r.prompt[0] == 3 && r.prompt[2] == 5);
    cr_assert_eq(r.submit.max_tokens, 16, "the flags' max tokens, no context check");
    cr_assert_eq(r.submit.n, 1);
    cr_assert(r.submit.ignore_eos, "the flags' --ignore-eos");
    cr_assert(!r.submit.no_speculation, "speculative decoding as the engine has it");
    const struct sampling_params *s = &r.submit.sampling;
    cr_assert(s->temperature == 0.f && s->top_p == 1.f && s->top_k == 0 && s->min_p == 0.f, "greedy");
    cr_assert(s->repetition_penalty == 1.f && s->presence_penalty == 0.f && s->frequency_penalty == 0.f);
    cr_assert_eq(s->seed, 77, "the line's seed");
    cr_assert(!r.logprobs && s->top_logprobs == 0 && s->n_bias == 0 && r.submit.n_stop == 0);
    cr_assert(!s->logprobs, "no log-probability asked: the sampler may skip it");
    cr_assert_str_eq(r.prompt_text, "cde", "the ids decoded");
    request_fields_free(&r);
}

Test(request_fields, openai_defaults_when_absent)
{
    const struct request_fields_opts o = server_opts();
    struct request_fields r;
    parse_ok(&o, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"model\": \"x\"}", &r);
    cr_assert_str_eq(r.prompt_text, "u:hi a:");
    cr_assert_eq(r.submit.n_prompt, 7, "the template's text, no BOS added");
    cr_assert_eq(r.submit.max_tokens, 25, "what the context leaves");
    cr_assert(r.submit.sampling.temperature == 1.f && r.submit.sampling.seed == 42 && !r.submit.ignore_eos);
    request_fields_free(&r);
}

Test(request_fields, every_field_given)
{
    const struct request_fields_opts o = cli_opts();
    struct request_fields r;
    parse_ok(&o,
             "{\"prompt\": \"ab c\", \"max_tokens\": 5, \"n\": 2.0, \"temperature\": 0.5, \"top_p\": 0.9, "
             "\"top_k\": -1, \"min_p\": 0.1, \"seed\": -1, \"presence_penalty\": 1, \"frequency_penalty\": -1, "
             "\"repetition_penalty\": 1.5, \"stop\": [\"x\", \"yz\"], \"logit_bias\": {\"3\": -2}, "
             "\"logprobs\": true, \"top_logprobs\": 4, \"ignore_eos\": false, \"speculative\": false}",
             &r);
    cr_assert(r.submit.no_speculation, "\"speculative\": false opts out");
    cr_assert(r.submit.n_prompt == 5 && r.prompt[0] == 0 && r.prompt[1] == 1, "BOS, then the text");
    cr_assert(r.submit.max_tokens == 5 && r.submit.n == 2 && !r.submit.ignore_eos);
    const struct sampling_params *s = &r.submit.sampling;
    cr_assert(s->temperature == 0.5f && s->top_p == 0.9f && s->top_k == 0 && s->min_p == 0.1f);
    cr_assert(s->presence_penalty == 1.f && s->frequency_penalty == -1.f && s->repetition_penalty == 1.5f);
    cr_assert_eq(s->seed, UINT64_MAX, "-1 as OpenAI's int64 seed");
    cr_assert(r.submit.n_stop == 2 && !strcmp(r.stop[1], "yz"));
    cr_assert(s->n_bias == 1 && s->bias == r.bias && r.bias[0].token == 3 && r.bias[0].bias == -2.f);
    cr_assert(r.logprobs && s->top_logprobs == 4 && s->logprobs);
    request_fields_free(&r);
}

Test(request_fields, unknown_fields_refused_or_ignored)
{
    const struct request_fields_opts cli = cli_opts(), srv = server_opts();
    parse_bad(&cli, "{\"prompt_ids\": [1], \"max_token\": 5}", "max_token", "unknown field \"max_token\"");
    parse_bad(&cli, "{\"prompt_ids\": [1], \"speculative\": \"no\"}", "speculative", "must be true or false");
    parse_bad(&cli, "{\"prompt_ids\": [1], \"model\": \"m\"}", "model", "unknown field \"model\"");
    parse_bad(&cli, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"tools\": []}", "tools",
              "unknown field");
    struct request_fields r;
    parse_ok(&srv,
             "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"max_token\": 5, \"user\": \"u\", "
             "\"prompt\": \"ignored: not a form the chat route takes\", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], \"tool_choice\": \"none\"}",
             &r);
    cr_assert_str_eq(r.prompt_text, "u:a a:");
    request_fields_free(&r);
}

Test(request_fields, null_is_absent)
{
    const struct request_fields_opts o = cli_opts();
    struct request_fields r;
    parse_ok(&o,
             "{\"prompt\": null, \"messages\": null, \"prompt_ids\": [2], \"temperature\": null, \"n\": null, "
             "\"stop\": null, \"logit_bias\": null, \"seed\": null, \"max_tokens\": null}",
             &r);
    cr_assert(r.submit.n_prompt == 1 && r.submit.n == 1 && r.submit.max_tokens == 16);
    cr_assert(r.submit.sampling.temperature == 0.f && r.submit.sampling.seed == 77 && r.submit.n_stop == 0);
    request_fields_free(&r);
}

Test(request_fields, bad_values_named)
{
    const struct request_fields_opts o = cli_opts();
    parse_bad(&o, "{\"prompt_ids\": [1], \"temperature\": \"hot\"}", "temperature",
              "'temperature' must be a number in [0, 2], got a string");
    parse_bad(&o, "{\"prompt_ids\": [1], \"top_p\": 0}", "top_p", "'top_p' must be a number in (0, 1]");
    parse_bad(&o, "{\"prompt_ids\": [1], \"n\": 2.5}", "n", "'n' must be an integer in [1, 128], got 2.5");
    parse_bad(&o, "{\"prompt_ids\": [1, 99]}", "prompt_ids[1]", "'prompt_ids[1]' must be a token id in [0, 29)");
    parse_bad(&o, "{\"prompt_ids\": []}", "prompt_ids", "the prompt is empty");
    parse_bad(&o, "{\"prompt_ids\": \"1 2\"}", "prompt_ids", "'prompt_ids' must be an array of token ids");
    parse_bad(&o, "{\"prompt\": [1, 2]}", "prompt", "'prompt' must be a string");
    parse_bad(&o, "{\"prompt_ids\": [1], \"stop\": [\"a\", \"\"]}", "stop[1]", "must not be empty");
    parse_bad(&o, "{\"prompt_ids\": [1], \"logit_bias\": {\"01\": 1}}", "logit_bias", "key '01'");
    parse_bad(&o, "{\"prompt_ids\": [1], \"top_logprobs\": 0}", "top_logprobs", "needs 'logprobs': true");
    parse_bad(&o, "{\"messages\": [{\"role\": \"wizard\", \"content\": \"a\"}]}", "messages[0].role",
              "must be one of");
    struct request_fields_opts no_tok = o;
    no_tok.tok = NULL;
    parse_bad(&no_tok, "{\"prompt\": \"ab\"}", "prompt", "the model has no tokenizer; give the prompt as");
    parse_bad(&no_tok, "{\"prompt_ids\": [1], \"stop\": \"a\"}", "stop", "need the model's tokenizer");
}

Test(request_fields, exactly_one_prompt_form)
{
    const struct request_fields_opts cli = cli_opts(), srv = server_opts();
    const char *one = "give exactly one of 'prompt', 'prompt_ids' and 'messages'";
    parse_bad(&cli, "{\"max_tokens\": 3}", "prompt", one);
    parse_bad(&cli, "{\"prompt\": \"a\", \"prompt_ids\": [1]}", "prompt_ids", one);
    parse_bad(&cli, "{\"prompt\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}", "messages",
              one);
    parse_bad(&srv, "{\"max_tokens\": 3}", "messages", "'messages' is required");
    struct request_fields r;
    parse_ok(&cli, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}", &r);
    cr_assert_str_eq(r.prompt_text, "u:hi a:");
    cr_assert_eq(r.submit.n_prompt, 7);
    request_fields_free(&r);
}

Test(request_fields, template_asked_for_messages_only)
{
    const struct request_fields_opts o = cli_opts();
    struct request_fields r;
    parse_ok(&o, "{\"prompt\": \"ab\"}", &r);
    request_fields_free(&r);
    parse_bad(&o, "{\"messages\": []}", "messages", "non-empty array");
    cr_assert_eq(template_calls, 0, "no template for prompts or malformed messages");
    parse_ok(&o, "{\"messages\": [{\"role\": \"user\", \"content\": \"ab\"}]}", &r);
    request_fields_free(&r);
    cr_assert_eq(template_calls, 1);
}

Test(request_fields, context_checked_where_asked)
{
    const struct request_fields_opts srv = server_opts();
    struct request_fields_opts cli = cli_opts();
    parse_bad(&srv, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 26}", "messages",
              "This model's maximum context length is 32 tokens. However, you requested 33 tokens (7 in the "
              "messages, 26 in the completion)");
    struct request_fields r;
    parse_ok(&srv, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_completion_tokens\": 25}",
             &r);
    cr_assert_eq(r.submit.max_tokens, 25);
    request_fields_free(&r);
    parse_ok(&cli, "{\"prompt_ids\": [1], \"max_tokens\": 100000}", &r);
    cr_assert_eq(r.submit.max_tokens, 100000, "no context check: the engine cuts");
    request_fields_free(&r);
    cli.max_context = 4;
    parse_bad(&cli, "{\"prompt_ids\": [1, 2, 3], \"max_tokens\": 2}", "prompt_ids", "maximum context length is 4");
}

/* The three steps give what the whole parse gives, and a refusal in a later step empties out. */
Test(request_fields, steps_equal_the_whole)
{
    const struct request_fields_opts o = cli_opts();
    const char *text = "{\"prompt\": \"abc\", \"n\": 3, \"stop\": \"b\", \"logit_bias\": {\"2\": 5}, \"seed\": 9}";
    json_t *obj = json_loads(text, 0, NULL);
    struct request_fields whole, steps;
    struct request_field_error err;
    cr_assert_eq(request_fields_parse(&o, obj, &whole, &err), 0, "%s", err.message);
    cr_assert(!request_fields_begin(&o, obj, &steps, &err) && !request_fields_output(&o, obj, &steps, &err) &&
              !request_fields_prompt(&o, obj, &steps, &err));
    cr_assert(whole.submit.n == steps.submit.n && whole.submit.n_prompt == steps.submit.n_prompt);
    cr_assert(!memcmp(whole.prompt, steps.prompt, (size_t)whole.submit.n_prompt * sizeof(int32_t)));
    cr_assert(whole.submit.sampling.seed == 9 && steps.submit.sampling.seed == 9);
    cr_assert(steps.submit.n_stop == 1 && steps.submit.sampling.n_bias == 1);
    request_fields_free(&whole);
    request_fields_free(&steps);
    json_decref(obj);
    obj = json_loads("{\"prompt\": 5, \"stop\": \"b\"}", 0, NULL);
    cr_assert(!request_fields_begin(&o, obj, &steps, &err) && !request_fields_output(&o, obj, &steps, &err));
    cr_assert(steps.stop != NULL);
    cr_assert_eq(request_fields_prompt(&o, obj, &steps, &err), -1);
    cr_assert(!steps.stop && !steps.prompt && steps.submit.n_stop == 0, "emptied");
    json_decref(obj);
}
