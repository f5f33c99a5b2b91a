/* Tool-call constraints (grammar/tool_calls.h, GRAMMAR_TOOL_CALLS) and the
 * pieces they are made of: gx_without against a brute-force "does not
 * contain" over every short string; the calls' grammar accepting exactly
 * the calls (names, argument schemas, counts, separators), prose where the
 * spec lets the model choose, and a reasoning block before either. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gir_match.h"
#include "grammar/grammar.h"
#include "grammar/spec.h"

static int contains(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(s + i, lit, m))
            return 1;
    return 0;
}

Test(tool_grammar, without_is_exactly_not_containing)
{
    static const char *const lits[] = {"</think>", "<a>", "<tool_call>", "ab"};
    for (int l = 0; l < 4; l++) {
        struct gir g;
        gir_init(&g);
        int root = gir_rule(&g, "root");
        gir_define(&g, root, gx_without(&g, lits[l]));
        gir_set_root(&g, root);
        cr_assert(!gir_failed(&g), "%s", g.error.msg);
        /* every string of up to 6 bytes over the literal's bytes and one other */
        char alpha[16];
        size_t na = 0;
        for (const char *c = lits[l]; *c; c++)
            if (!memchr(alpha, *c, na))
                alpha[na++] = *c;
        alpha[na++] = 'x';
        char s[8];
        for (int len = 0; len <= 6; len++) {
            long total = 1;
            for (int k = 0; k < len; k++)
                total *= (long)na;
            for (long i = 0; i < total; i++) {
                long x = i;
                for (int k = 0; k < len; k++, x /= (long)na)
                    s[k] = alpha[x % (long)na];
                cr_assert_eq(gir_match(&g, s, (size_t)len), !contains(s, (size_t)len, lits[l]), "'%s' on '%.*s'",
                             lits[l], len, s);
            }
        }
        gir_free(&g);
    }
    struct gir g;
    gir_init(&g);
    cr_assert_lt(gx_without(&g, "<a<"), 0, "a repeated first byte is refused");
    gir_free(&g);
}

static const char FNS[] = "[{\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", \"properties\": "
                          "{\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"], "
                          "\"additionalProperties\": false}}, {\"name\": \"now\"}]";

/* The grammar of a tool spec (the tagged syntax unless llama3). */
static void build(struct gir *g, int min, int max, const char *text, int llama3, int think)
{
    char spec[1024];
    if (llama3)
        snprintf(spec, sizeof spec,
                 "{\"functions\": %s, \"open\": \"\", \"close\": \"\", \"sep\": \"; \", \"args_key\": "
                 "\"parameters\", \"min\": %d, \"max\": %d, \"text\": \"%s\"}",
                 FNS, min, max, text);
    else
        snprintf(spec, sizeof spec,
                 "{\"functions\": %s, \"open\": \"<tool_call>\\n\", \"close\": \"\\n</tool_call>\", \"sep\": "
                 "\"\\n\", \"args_key\": \"arguments\", \"min\": %d, \"max\": %d, \"text\": \"%s\", \"trigger\": "
                 "\"<tool_call>\"}",
                 FNS, min, max, text);
    struct grammar_spec gs = {.kind = GRAMMAR_TOOL_CALLS, .text = spec, .len = strlen(spec), .strict = 1,
                              .ws_max = 16, .ws_lines = 1};
    if (think) {
        gs.think_open = "<think>";
        gs.think_close = "</think>";
    }
    gir_init(g);
    struct err e = {{0}};
    cr_assert_eq(grammar_spec_build(&gs, g, NULL, &e), 0, "%s", e.msg);
    struct grammar *compiled = grammar_compile(g, &e);
    cr_assert(compiled, "compile: %s", e.msg);
    grammar_free(compiled);
}

#define CALL_W "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
#define CALL_N "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"

Test(tool_grammar, required_calls)
{
    struct gir g;
    build(&g, 1, 0, "none", 0, 0);
    cr_assert(gir_match_str(&g, CALL_W));
    cr_assert(gir_match_str(&g, CALL_W "\n" CALL_N));
    cr_assert(gir_match_str(&g, CALL_N "\n" CALL_W "\n" CALL_W));
    cr_assert(!gir_match_str(&g, ""), "required: at least one call");
    cr_assert(!gir_match_str(&g, "Sure. " CALL_W));
    cr_assert(!gir_match_str(&g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"),
              "the schema's required property");
    cr_assert(!gir_match_str(&g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
    cr_assert(gir_match_str(&g, "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"any\": [1, 2]}}\n</tool_call>"),
              "no parameters: any object");
    gir_free(&g);
    build(&g, 1, 1, "none", 0, 0);
    cr_assert(gir_match_str(&g, CALL_W));
    cr_assert(!gir_match_str(&g, CALL_W "\n" CALL_N), "parallel_tool_calls false: one call");
    gir_free(&g);
}

Test(tool_grammar, auto_lets_prose_come_first)
{
    struct gir g;
    build(&g, 0, 0, "before", 0, 0);
    cr_assert(gir_match_str(&g, ""));
    cr_assert(gir_match_str(&g, "It is sunny <tool_c"));
    cr_assert(gir_match_str(&g, "Let me check.\n" CALL_W));
    cr_assert(!gir_match_str(&g, "Let me check.\n" CALL_W " and more"), "nothing after the calls");
    cr_assert(!gir_match_str(&g, "<tool_call>\n{\"name\": \"nope\"}"), "an opened call is held to the functions");
    cr_assert(!gir_match_prefix(&g, "x <tool_call>\n{\"title\"", 21));
    gir_free(&g);
}

Test(tool_grammar, llama3_calls_or_prose)
{
    struct gir g;
    build(&g, 1, 0, "instead", 1, 0);
    const char *w = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}";
    cr_assert(gir_match_str(&g, w));
    char two[256];
    snprintf(two, sizeof two, "%s; {\"name\": \"now\", \"parameters\": {}}", w);
    cr_assert(gir_match_str(&g, two));
    cr_assert(gir_match_str(&g, "The weather is fine {really}"));
    cr_assert(gir_match_str(&g, "  \n"));
    cr_assert(!gir_match_str(&g, "{\"answer\": 1}"), "a JSON answer must be a call");
    cr_assert(!gir_match_str(&g, "  {\"answer\": 1}"));
    gir_free(&g);
}

Test(tool_grammar, reasoning_first)
{
    struct gir g;
    build(&g, 1, 0, "none", 0, 1);
    cr_assert(gir_match_str(&g, "<think>\nweather? <tool_call> maybe\n</think>\n\n" CALL_W));
    cr_assert(gir_match_str(&g, CALL_W), "the reasoning block may be left out");
    cr_assert(!gir_match_str(&g, "<think>a</think>b</think>\n" CALL_W), "the first </think> ends it");
    cr_assert(!gir_match_str(&g, "<think>a</think>\n\n\n\n\n" CALL_W), "at most 4 blanks after it");
    gir_free(&g);
}
