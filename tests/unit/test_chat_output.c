/* The chat output parser (chat/chat_output.h): reasoning, content and tool
 * calls read out of model output in the tagged (Qwen3) and Llama 3
 * syntaxes. Every case is fed whole, byte by byte and split at every
 * position, and must give the same message each time; a call is announced
 * once, with its whole name, before any of its arguments. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_format.h"
#include "chat/chat_output.h"

static struct chat_format qwen, llama, plain;

static void formats(void)
{
    static const char qwen_src[] = "{% if tools %}<tool_call>{% endif %}<think></think>";
    static const char llama_src[] = "{% if tools %}\"parameters\": <|python_tag|>{% endif %}";
    chat_format_detect(qwen_src, strlen(qwen_src), &qwen);
    chat_format_detect(llama_src, strlen(llama_src), &llama);
    chat_format_detect("{{ messages }}", 14, &plain);
}

/* Pieces in order, checked as they come: a call's name before its args. */
struct seen {
    struct chat_message m;
    int announced[8];
    int bad_order;
};

static void on_piece(void *arg, const struct chat_piece *p)
{
    struct seen *s = arg;
    if (p->kind == CHAT_PIECE_CALL) {
        if (p->call != s->m.n_calls || s->announced[p->call & 7])
            s->bad_order = 1;
        s->announced[p->call & 7] = 1;
    }
    if (p->kind == CHAT_PIECE_ARGS && (p->call >= s->m.n_calls || !s->announced[p->call & 7]))
        s->bad_order = 1;
    if (p->len == 0 && p->kind != CHAT_PIECE_CALL)
        s->bad_order = 1; /* no empty pieces */
    chat_message_add(&s->m, p);
}

static void parse_split(const struct chat_output_opts *o, const char *text, size_t a, size_t b, struct seen *s)
{
    memset(s, 0, sizeof *s);
    struct chat_output *p = chat_output_new(o);
    size_t n = strlen(text);
    size_t cuts[3] = {a < n ? a : n, b < n ? b : n, n};
    size_t at = 0;
    for (int i = 0; i < 3; i++) {
        if (cuts[i] < at)
            continue;
        chat_output_feed(p, text + at, cuts[i] - at, on_piece, s);
        at = cuts[i];
    }
    chat_output_finish(p, on_piece, s);
    chat_output_free(p);
}

static const char *str(const char *s) { return s ? s : "(null)"; }

/* want_calls: "name|args" strings */
static void expect(const struct chat_format *f, int calls, int in_reasoning, const char *text,
                   const char *want_reasoning, const char *want_content, const char *const *want_calls, int n_calls)
{
    struct chat_output_opts o = {f, calls, 1, in_reasoning, calls < 0};
    o.calls = calls != 0;
    size_t n = strlen(text);
    for (size_t a = 0; a <= n; a++)
        for (size_t b = a; b <= n; b += (n > 40 ? 7 : 1)) {
            struct seen s;
            parse_split(&o, text, a, b, &s);
            cr_assert(!s.bad_order, "pieces out of order for %s split at %zu,%zu", text, a, b);
            cr_assert_str_eq(str(s.m.reasoning), str(want_reasoning), "reasoning of [%s] split at %zu,%zu", text,
                             a, b);
            cr_assert_str_eq(str(s.m.content), str(want_content), "content of [%s] split at %zu,%zu", text, a, b);
            cr_assert_eq(s.m.n_calls, n_calls, "calls of [%s] split at %zu,%zu: %d", text, a, b, s.m.n_calls);
            for (int i = 0; i < n_calls; i++) {
                char got[512];
                snprintf(got, sizeof got, "%s|%s", s.m.calls[i].name, s.m.calls[i].args);
                cr_assert_str_eq(got, want_calls[i], "call %d of [%s] split at %zu,%zu", i, text, a, b);
            }
            chat_message_free(&s.m);
        }
}

Test(chat_output, plain_text_passes_through, .init = formats)
{
    expect(&plain, 0, 0, "Hello <tool_call> world\n\n", NULL, "Hello <tool_call> world\n\n", NULL, 0);
    expect(&qwen, 0, 0, "no calls asked: <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", NULL,
           "no calls asked: <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", NULL, 0);
}

Test(chat_output, reasoning_split_at_think, .init = formats)
{
    expect(&qwen, 0, 0, "<think>\nLet me see.\n</think>\n\nParis.", "Let me see.", "Paris.", NULL, 0);
    expect(&qwen, 0, 1, "still thinking\n</think>\n\nDone", "still thinking", "Done", NULL, 0);
    expect(&qwen, 0, 0, "<think>\ncut off", "cut off", NULL, NULL, 0);
    expect(&qwen, 0, 0, "No think here </think>", NULL, "No think here </think>", NULL, 0);
    expect(&qwen, 0, 0, "<think>a < b </thin k></think>x", "a < b </thin k>", "x", NULL, 0);
}

Test(chat_output, tagged_calls, .init = formats)
{
    const char *one[] = {"get_weather|{\"city\": \"Paris\", \"days\": [1, 2]}"};
    expect(&qwen, 1, 0,
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2]}}\n"
           "</tool_call>",
           NULL, NULL, one, 1);
    const char *two[] = {"a|{\"x\": \"}\\\"{\"}", "b|{}"};
    expect(&qwen, 1, 0,
           "<think>\nplan\n</think>\n\nSure.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": \"}\\\"{\"}}\n"
           "</tool_call>\n<tool_call>\n{\"arguments\": {}, \"name\": \"b\"}\n</tool_call>",
           "plan", "Sure.", two, 2);
    /* arguments as a JSON string are its content */
    const char *str_args[] = {"f|{\"a\":1}"};
    expect(&qwen, 1, 0, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\":1}\"}</tool_call>", NULL, NULL,
           str_args, 1);
}

Test(chat_output, not_a_call_is_content, .init = formats)
{
    expect(&qwen, 1, 0, "I use <tool_call> tags: <tool_call>oops", NULL, "I use <tool_call> tags: <tool_call>oops",
           NULL, 0);
    expect(&qwen, 1, 0, "<tool_call>{\"title\": \"x\"}</tool_call>", NULL, "<tool_call>{\"title\": \"x\"}</tool_call>",
           NULL, 0);
    expect(&qwen, 1, 0, "a <tool_ca", NULL, "a <tool_ca", NULL, 0);
}

Test(chat_output, cut_inside_a_call_keeps_its_arguments, .init = formats)
{
    const char *cut[] = {"f|{\"q\": \"abc"};
    expect(&qwen, 1, 0, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"abc", NULL, NULL, cut, 1);
    const char *named[] = {"g|"};
    expect(&llama, 1, 0, "{\"name\": \"g\", \"param", NULL, NULL, named, 1);
    expect(&llama, 1, 0, "{\"na", NULL, "{\"na", NULL, 0);
    /* held to calls: a call cut before its name is dropped, and so are cut markers */
    expect(&qwen, -1, 0, "<tool_call>\n{\"name\": \"g", NULL, NULL, NULL, 0);
    const char *closed[] = {"f|{}"};
    expect(&qwen, -1, 0, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool", NULL, NULL, closed, 1);
    expect(&qwen, 1, 0, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_c", NULL, NULL, closed,
           1);
}

Test(chat_output, llama3_json_calls, .init = formats)
{
    const char *one[] = {"get_weather|{\"city\": \"Paris\"}"};
    expect(&llama, 1, 0, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", NULL, NULL, one, 1);
    const char *two[] = {"a|{}", "b|{\"k\": 1}"};
    expect(&llama, 1, 0, " {\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"k\": 1}}", NULL,
           NULL, two, 2);
    expect(&llama, 1, 0, "{\"answer\": 42}", NULL, "{\"answer\": 42}", NULL, 0);
    expect(&llama, 1, 0, "The answer is {\"name\": \"a\", \"parameters\": {}}", NULL,
           "The answer is {\"name\": \"a\", \"parameters\": {}}", NULL, 0);
}

Test(chat_output, llama3_python_tag, .init = formats)
{
    const char *json[] = {"f|{\"x\": true}"};
    expect(&llama, 1, 0, CHAT_PYTHON_TAG "{\"name\": \"f\", \"parameters\": {\"x\": true}}", NULL, NULL, json, 1);
    const char *py[] = {"brave_search|{\"query\":\"weather in \\\"Paris\\\"\",\"n\":3,\"safe\":false}"};
    expect(&llama, 1, 0, CHAT_PYTHON_TAG "brave_search.call(query=\"weather in \\\"Paris\\\"\", n=3, safe=False)",
           NULL, NULL, py, 1);
    expect(&llama, 1, 0, CHAT_PYTHON_TAG "print(x)", NULL, "print(x)", NULL, 0);
}

Test(chat_output, prompt_in_reasoning, .init = formats)
{
    const char p1[] = "<|im_start|>assistant\n<think>\n", p2[] = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    cr_assert(chat_format_prompt_in_reasoning(&qwen, p1, strlen(p1)));
    cr_assert(!chat_format_prompt_in_reasoning(&qwen, p2, strlen(p2)));
    cr_assert(!chat_format_prompt_in_reasoning(&plain, p1, strlen(p1)));
}

Test(chat_format, detects_the_families, .init = formats)
{
    cr_assert_eq(qwen.calls, CHAT_CALLS_TAGGED);
    cr_assert(qwen.template_tools);
    cr_assert_str_eq(qwen.think_open, "<think>");
    cr_assert_eq(llama.calls, CHAT_CALLS_LLAMA3);
    cr_assert_str_eq(llama.args_key, "parameters");
    cr_assert(llama.template_tools);
    cr_assert(!plain.template_tools);
    cr_assert_eq(plain.calls, CHAT_CALLS_TAGGED);
    cr_assert_null(plain.think_open);
}
