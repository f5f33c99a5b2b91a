/* The GBNF front end (grammar/gbnf.h), checked with the reference
 * recognizer (gir_match): grammars modeled on the ones llama.cpp ships
 * (JSON, arithmetic, a list, a chess-like notation, Japanese character
 * classes) with accepted and rejected strings; each construct and escape;
 * where a newline ends a rule and where it does not; a rule defined twice;
 * the errors with their line:column; and hostile grammars. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "gir_match.h"
#include "grammar/gbnf.h"

static int gb_build(struct gir *g, const char *text, size_t len, struct err *e)
{
    gir_init(g);
    return gbnf_to_gir(g, text, len, e);
}

static void gb_ok(struct gir *g, const char *text)
{
    struct err e = {{0}};
    cr_assert(gb_build(g, text, strlen(text), &e) == 0, "grammar refused: %s\n%s", e.msg, text);
    cr_assert(g->root >= 0 && strcmp(g->rules[g->root].name, "root") == 0);
}

static void expect(const char *text, const char *const *yes, const char *const *no)
{
    struct gir g;
    gb_ok(&g, text);
    for (int i = 0; yes[i]; i++)
        cr_expect(gir_match_str(&g, yes[i]), "should match '%s':\n%s", yes[i], text);
    for (int i = 0; no[i]; i++)
        cr_expect(!gir_match_str(&g, no[i]), "should not match '%s':\n%s", no[i], text);
    gir_free(&g);
}

#define YES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE ((const char *const[]){NULL})

static void expect_error_n(const char *text, size_t len, const char *want)
{
    struct gir g;
    struct err e = {{0}};
    cr_expect(gb_build(&g, text, len, &e) < 0, "should be refused:\n%s", text);
    cr_expect(strstr(e.msg, want) != NULL, "message '%s' lacks '%s'", e.msg, want);
    cr_expect(strncmp(e.msg, "gbnf: ", 6) == 0, "message '%s' lacks the prefix", e.msg);
    gir_free(&g);
}

#define ERR(text, want) expect_error_n(text, strlen(text), want)

/* --- grammars in the style of llama.cpp's grammars/ ------------------------- */

static const char json_gbnf[] =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "\n"
    "# Optional space: by convention, applied in this grammar after literal chars when allowed\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

Test(gbnf, json)
{
    expect(json_gbnf,
           YES("{}", "{\"a\": 1}", "{\"a\":[1, 2.5, -3e4, \"x\"], \"b\": {\"c\": null}}",
               "{\"k\":[true,false,null]}", "{\"s\": \"\\\"\\u00e9\\n\"}", "{ \"a\" : \"é😀\" }",
               "{\n  \"a\": 1\n}"),
           NO("", "[]", "{\"a\" 1}", "{\"a\": [1,]}", "{\"a\": \"b}", "{\"a\": \"\x01\"}", "{\"a\": \"\\x\"}",
              "{\"a\": 01}", "{a: 1}"));
}

static const char arithmetic_gbnf[] = "root  ::= (expr \"=\" ws term \"\\n\")+\n"
                                      "expr  ::= term ([-+*/] term)*\n"
                                      "term  ::= ident | num | \"(\" ws expr \")\" ws\n"
                                      "ident ::= [a-z] [a-z0-9_]* ws\n"
                                      "num   ::= [0-9]+ ws\n"
                                      "ws    ::= [ \\t\\n]*\n";

Test(gbnf, arithmetic)
{
    expect(arithmetic_gbnf, YES("1+2=3\n", "(a +b) *c = x_1\n", "x=1\ny=(2)\n", "a*(b-c)/d=e\n"),
           NO("", "1+2=3", "1++2=3\n", "(a=b\n", "A=1\n"));
}

static const char list_gbnf[] = "root ::= item+\n"
                                "\n"
                                "# Excludes various line break characters\n"
                                "item ::= \"- \" [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ \"\\n\"\n";

Test(gbnf, list)
{
    expect(list_gbnf, YES("- a\n", "- milk\n- eggs é\n"),
           NO("", "- \n", "- a", "* a\n", "- a\u2028b\n", "- a\xC2\x85\n", "- a\rb\n"));
}

static const char chess_gbnf[] = "# a chess-like move list\n"
                                 "root ::= (\n"
                                 "    # the first move\n"
                                 "    \"1. \" move \" \" move \"\\n\"\n"
                                 "\n"
                                 "    # then more, numbered with one or two digits\n"
                                 "    ([1-9] [0-9]? \". \" move \" \" move \"\\n\")+\n"
                                 ")\n"
                                 "move ::= (pawn | nonpawn | castle) [+#]?\n"
                                 "pawn ::= ([a-h] \"x\")? [a-h] [1-8] (\"=\" [NBKQR])?\n"
                                 "nonpawn ::= [NBKQR] [a-h]? [1-8]? \"x\"? [a-h] [1-8]\n"
                                 "castle ::= \"O-O\" \"-O\"?\n";

Test(gbnf, chess)
{
    expect(chess_gbnf, YES("1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n10. O-O O-O-O+\n"),
           NO("1. e4 e5\n", "1. e4 e5\n2. Nf3\n", "1. e9 e5\n2. a1 a2\n"));
}

static const char japanese_gbnf[] = "# A probably incorrect grammar for Japanese\n"
                                    "root        ::= jp-char+ ([ \\t\\n] jp-char+)*\n"
                                    "jp-char     ::= hiragana | katakana | punctuation | cjk\n"
                                    "hiragana    ::= [ぁ-ゟ]\n"
                                    "katakana    ::= [ァ-ヿ]\n"
                                    "punctuation ::= [、-〾]\n"
                                    "cjk         ::= [一-鿿]\n";

Test(gbnf, japanese)
{
    expect(japanese_gbnf, YES("こんにちは", "カタカナ 日本語。", "ひらがな\n漢字"),
           NO("", "abc", "日本 ", "日本a"));
}

/* --- constructs -------------------------------------------------------------- */

Test(gbnf, literals_and_escapes)
{
    expect("root ::= \"ab\" \"\" \"c\"\n", YES("abc"), NO("ab", "abcc"));
    expect("root ::= \"\\x41\\u00e9\\U0001F600\\t\\n\\r\\\\\\\"\\[\\]\\-\"\n", YES("Aé😀\t\n\r\\\"[]-"), NONE);
    /* hex escapes are code points, not bytes */
    expect("root ::= \"\\xC3\\xA9\"\n", YES("\xC3\x83\xC2\xA9"), NO("é"));
    expect("root ::= \"a\nb\"\n", YES("a\nb"), NONE); /* a raw newline inside a literal is itself */
    expect("root ::= \"é😀\"\n", YES("é😀"), NO("é"));
    expect("root ::= \"#\"  # a comment\n", YES("#"), NONE);
}

Test(gbnf, character_classes)
{
    expect("root ::= [abc]\n", YES("a", "c"), NO("d", "ab"));
    expect("root ::= [a-cx-z0]\n", YES("b", "y", "0"), NO("d", "1"));
    expect("root ::= [^a-c]\n", YES("d", "\n", "é", "😀"), NO("a", "b", ""));
    expect("root ::= [a-]\n", YES("a", "-"), NO("b"));
    expect("root ::= [-a]\n", YES("a", "-"), NO("b"));
    expect("root ::= [\\]\\[\\\\\\-\\\"]\n", YES("]", "[", "\\", "-", "\""), NO("a"));
    expect("root ::= [\\x00-\\x1F\\u2028]+\n", YES("\x01\x1F", "\u2028"), NO(" "));
    expect("root ::= [ぁ-ゟ]\n", YES("ぁ", "ゟ", "あ"), NO("ァ"));
    expect("root ::= [\\U0001F600-\\U0001F64F]\n", YES("😀", "🙏"), NO("🚀"));
    expect("root ::= [\\u0000-\\uFFFF]\n", YES("a", "\uFFFF"), NO("😀")); /* the surrogates drop out */
    expect("root ::= [#]\n", YES("#"), NONE);
    expect("root ::= [\"]\n", YES("\""), NONE);
}

Test(gbnf, any_character)
{
    expect("root ::= .\n", YES("a", "\n", "é", "😀"), NO("", "ab"));
    expect("root ::= \"<\" .* \">\"\n", YES("<>", "<a\nb>", "<>>"), NO("<"));
}

Test(gbnf, quantifiers)
{
    expect("root ::= \"ab\"*\n", YES("", "ab", "abab"), NO("a", "abb", "aba"));
    expect("root ::= \"a\"+ \"b\"?\n", YES("a", "aab"), NO("", "b", "abb"));
    expect("root ::= [a]{3}\n", YES("aaa"), NO("aa", "aaaa"));
    expect("root ::= [a]{2,}\n", YES("aa", "aaaaaa"), NO("a"));
    expect("root ::= [a]{1,3}\n", YES("a", "aaa"), NO("", "aaaa"));
    expect("root ::= [a]{0,2}\n", YES("", "aa"), NO("aaa"));
    expect("root ::= [a]{,2}\n", YES("", "aa"), NO("aaa"));
    expect("root ::= [a]{ 1 , 2 }\n", YES("a", "aa"), NO("", "aaa"));
    expect("root ::= [a]{0}\n", YES(""), NO("a"));
    /* stacked quantifiers apply one after the other, as in llama.cpp */
    expect("root ::= [a]{2}{3}\n", YES("aaaaaa"), NO("aaaa", "aaa"));
    expect("root ::= [a]?*\n", YES("", "a", "aaa"), NONE);
    expect("root ::= (\"a\" | \"bc\"){2}\n", YES("aa", "abc", "bcbc"), NO("a", "abcbc"));
    expect("root ::= x* \"!\"\nx ::= \"x\"\n", YES("!", "xxx!"), NO("x"));
    struct gir g;
    gb_ok(&g, "root ::= \"a\"{65536}\n");
    gir_free(&g);
}

Test(gbnf, rule_names)
{
    expect("root ::= a-b A_1 9x\na-b ::= \"1\"\nA_1 ::= \"2\"\n9x ::= \"3\"\n", YES("123"), NO("12"));
    expect("root::=\"x\"\n", YES("x"), NONE);
    expect("root\t::=\t\"x\"\n", YES("x"), NONE);
}

Test(gbnf, alternatives_and_empty)
{
    expect("root ::= \"a\" | \"b\" | \"\"\n", YES("a", "b", ""), NO("ab"));
    expect("root ::= | \"a\"\n", YES("", "a"), NONE);
    expect("root ::= \"a\" |\n", YES("", "a"), NONE);
    expect("root ::=\n", YES(""), NO("a"));
    expect("root ::= ()\n", YES(""), NO("a"));
    expect("root ::= (\"a\" (\"b\" | \"c\") | \"d\")\n", YES("ab", "ac", "d"), NO("a", "bd"));
}

/* --- newlines, comments, line endings ----------------------------------------- */

Test(gbnf, continuation_lines)
{
    /* after '|' */
    expect("root ::= \"a\" |\n    \"b\" |\n\n  # a comment\n  \"c\"\n", YES("a", "b", "c"), NONE);
    /* inside parentheses, anywhere between items */
    expect("root ::= (\n  \"a\"\n  \"b\" # comment\n  | \"c\"\n)\n", YES("ab", "c"), NO("a"));
    expect("root ::= (\"a\"\n  )*\n", YES("", "aa"), NONE);
    /* after '::=' */
    expect("root ::=\n\n  \"a\"\nb ::= \"b\"\n", YES("a"), NONE);
    /* Windows line endings and a grammar without a final newline */
    expect("root ::= x |\r\n  \"b\"\r\nx ::= \"a\"", YES("a", "b"), NONE);
    expect("# leading comment\n\n\nroot ::= \"a\" # trailing\n# end\n", YES("a"), NONE);
}

Test(gbnf, newline_ends_a_rule)
{
    /* a line starting with '|' does not continue the rule (llama.cpp refuses it too) */
    ERR("root ::= \"a\"\n  | \"b\"\n", "gbnf: line 2, column 3: expected a rule name, found '|'");
    ERR("root ::= \"a\"\n  \"b\"\n", "line 2, column 3: expected a rule name, found '\"'");
    ERR("root ::= \"a\"\nb\n",
        "line 2, column 2: expected '::=' after the rule name 'b', found the end of the line");
    ERR("root ::= [a]{\n1}\n", "line 1, column 14: expected a number in the repetition");
}

Test(gbnf, defined_twice_takes_the_last)
{
    expect("root ::= x\nx ::= \"first\"\nx ::= \"second\"\n", YES("second"), NO("first"));
}

Test(gbnf, unused_rules_and_recursion)
{
    expect("root ::= \"a\"\nunused ::= \"b\"\n", YES("a"), NO("b"));
    expect("root ::= \"(\" root \")\" | \"\"\n", YES("", "()", "(())"), NO("(", "())"));
}

/* --- errors ------------------------------------------------------------------- */

Test(gbnf, undefined_rule)
{
    ERR("root ::= value\nvalue ::= \"[\" valu \"]\"\n", "gbnf: line 2, column 15: undefined rule 'valu'");
    ERR("root ::= \"é😀\" valu\n", "line 1, column 15: undefined rule 'valu'");
    ERR("root ::= a\n", "line 1, column 10: undefined rule 'a'");
}

Test(gbnf, token_references_are_refused)
{
    ERR("root ::= <think> \"x\"\n", "line 1, column 10: token references are not supported");
    ERR("root ::= \"a\" <[1000]>\n", "line 1, column 14: token references are not supported");
    ERR("root ::= !<[1001]>*\n", "line 1, column 10: token references are not supported");
}

Test(gbnf, missing_root)
{
    ERR("value ::= \"a\"\n", "gbnf: the grammar has no 'root' rule");
    ERR("", "no 'root' rule");
    ERR("# only a comment\n", "no 'root' rule");
}

Test(gbnf, syntax_errors)
{
    ERR("root ::= \"abc\n", "line 1, column 10: unterminated string literal");
    ERR("root ::= [abc\n", "line 1, column 10: unterminated character class");
    ERR("root ::= \"\\q\"\n", "line 1, column 11: unknown escape '\\' followed by 'q'");
    ERR("root ::= \"\\x4\"\n", "line 1, column 11: escape '\\x' needs 2 hex digits");
    ERR("root ::= \"\\u12\"\n", "escape '\\u' needs 4 hex digits");
    ERR("root ::= \"\\U00110000\"\n", "escape '\\U' is past U+10FFFF");
    ERR("root ::= \"\\uD800\"\n", "lone surrogate U+D800 in a string literal");
    ERR("root ::= [\\uDC00]\n", "lone surrogate U+DC00 in a character class");
    ERR("root ::= []\n", "line 1, column 10: empty character class");
    ERR("root ::= [^]\n", "empty character class");
    ERR("root ::= [z-a]\n", "line 1, column 11: character range out of order");
    ERR("root ::= * \"a\"\n", "line 1, column 10: '*' has no item before it to repeat");
    ERR("root ::= (+)\n", "'+' has no item before it");
    ERR("root ::= \"a\" | ?\n", "'?' has no item before it");
    ERR("root ::= [a]{3,2}\n", "line 1, column 13: repetition bounds out of order");
    ERR("root ::= [a]{70000}\n", "repetition bound above 65536");
    ERR("root ::= [a]{1,99999999999999999999999}\n", "repetition bound above 65536");
    ERR("root ::= [a]{x}\n", "expected a number in the repetition, found 'x'");
    ERR("root ::= [a]{2\n", "expected '}' to end the repetition, found the end of the line");
    ERR("root ::= (\"a\"\n",
        "expected ')' to close the '(' of line 1, column 10, found the end of the grammar");
    ERR("root ::= (\"a\" ]\n", "expected ')' to close the '(' of line 1, column 10, found ']'");
    ERR("root ::= \"a\" )\n", "line 1, column 14: expected the end of the rule 'root', found ')'");
    ERR("root = \"a\"\n", "line 1, column 6: expected '::=' after the rule name 'root', found '='");
    ERR("::= \"a\"\n", "line 1, column 1: expected a rule name, found ':'");
    ERR("root ::= \"a\" \\\n", "expected the end of the rule 'root', found '\\'");
    ERR("root ::= \"a\\", "a backslash at the end of the grammar");
    ERR("root ::= \"a\"\r\nx ::= \"b\" @\r\n",
        "line 2, column 11: expected the end of the rule 'x', found '@'");
    ERR("root ::= \"a\"\rx ::= \"b\" @", "line 2, column 11:");
    expect_error_n("root ::= \"a\0\"\n", 14, "line 1, column 12: a NUL byte");
    expect_error_n("root ::= \"\xFF\"\n", 13, "line 1, column 11: invalid UTF-8");
}

/* --- hostile grammars ---------------------------------------------------------- */

static char *repeat_str(const char *a, int n, const char *mid, const char *b)
{
    size_t la = strlen(a), lm = strlen(mid), lb = strlen(b);
    char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1), *q = s;
    for (int i = 0; i < n; i++, q += la)
        memcpy(q, a, la);
    memcpy(q, mid, lm);
    q += lm;
    for (int i = 0; i < n; i++, q += lb)
        memcpy(q, b, lb);
    *q = '\0';
    return s;
}

/* a b c concatenated, malloc'ed. */
static char *cat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    cr_assert(s);
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

Test(gbnf, deep_nesting)
{
    char *text = repeat_str("(", GBNF_MAX_DEPTH, "\"a\"", ")");
    char *full = cat3("root ::= ", text, "\n");
    struct gir g;
    gb_ok(&g, full);
    cr_expect(gir_match_str(&g, "a"));
    gir_free(&g);
    free(text);
    free(full);

    text = repeat_str("(", 1000000, "", "");
    full = cat3("root ::= ", text, "\n");
    ERR(full, "line 1, column 1010: parentheses nested deeper than 1000");
    free(text);
    free(full);

    text = repeat_str("*", 100000, "", "");
    full = cat3("root ::= \"a\"", text, "\n");
    ERR(full, "more than 1000 quantifiers nested");
    free(text);
    free(full);
}

Test(gbnf, long_grammars)
{
    /* a long literal, a long alternation, many rules */
    char *lit = repeat_str("a", 100000, "", "");
    char *full = cat3("root ::= \"", lit, "\"\n");
    struct gir g;
    gb_ok(&g, full);
    gir_free(&g);
    free(full);
    free(lit);

    char *alts = repeat_str("\"ab\" | ", 20000, "\"c\"", "");
    full = cat3("root ::= ", alts, "\n");
    gb_ok(&g, full);
    cr_expect(gir_match_str(&g, "ab"));
    cr_expect(gir_match_str(&g, "c"));
    gir_free(&g);
    free(full);
    free(alts);

    int n = 3000;
    size_t cap = (size_t)n * 40 + 64, len = 0;
    char *rules = malloc(cap);
    cr_assert(rules);
    len += (size_t)sprintf(rules + len, "root ::= r0\n");
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(rules + len, "r%d ::= \"x\" r%d | \"y\"\n", i, i + 1);
    sprintf(rules + len, "r%d ::= \"z\"\n", n);
    gb_ok(&g, rules);
    cr_expect(gir_match_str(&g, "xxxy"));
    cr_expect(!gir_match_str(&g, "xxx"));
    gir_free(&g);
    free(rules);
}
