/* The regular-expression front end (grammar/regex.h), checked with the
 * reference recognizer (gir_match): accepted and rejected strings for each
 * construct; a differential run against PCRE2 on every short string over
 * an alphabet picked per pattern (full match and search); in JSON-string
 * mode, that the expression accepts exactly the JSON spellings of the
 * decoded strings the pattern matches (again against PCRE2); the refused
 * constructs with their messages and offsets; and hostile patterns (deep
 * nesting, huge counts, long patterns). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "gir_match.h"
#include "grammar/regex.h"

/* g with a root rule of the regex; -1 (e set) when the regex is refused. */
static int rx_build(struct gir *g, const char *re, size_t len, unsigned flags, struct err *e)
{
    gir_init(g);
    int x = regex_to_gx(g, re, len, flags, e);
    if (x < 0)
        return -1;
    int r = gir_rule(g, "root");
    cr_assert(gir_define(g, r, x) == 0, "%s", g->error.msg);
    gir_set_root(g, r);
    return 0;
}

static void rx_ok(struct gir *g, const char *re, unsigned flags)
{
    struct err e = {{0}};
    cr_assert(rx_build(g, re, strlen(re), flags, &e) == 0, "/%s/ refused: %s", re, e.msg);
}

/* re accepts every string of yes and none of no (NULL-terminated). */
static void expect(const char *re, unsigned flags, const char *const *yes, const char *const *no)
{
    struct gir g;
    rx_ok(&g, re, flags);
    for (int i = 0; yes[i]; i++)
        cr_expect(gir_match_str(&g, yes[i]), "/%s/ (flags %u) should match '%s'", re, flags, yes[i]);
    for (int i = 0; no[i]; i++)
        cr_expect(!gir_match_str(&g, no[i]), "/%s/ (flags %u) should not match '%s'", re, flags, no[i]);
    gir_free(&g);
}

#define YES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE ((const char *const[]){NULL})

/* re is refused with a message containing want. */
static void expect_error(const char *re, size_t len, unsigned flags, const char *want)
{
    struct gir g;
    struct err e = {{0}};
    cr_expect(rx_build(&g, re, len, flags, &e) < 0, "/%s/ should be refused", re);
    cr_expect(strstr(e.msg, want) != NULL, "/%s/: message '%s' lacks '%s'", re, e.msg, want);
    cr_expect(strncmp(e.msg, "regex: ", 7) == 0, "message '%s' lacks the prefix", e.msg);
    cr_expect(!gir_failed(&g), "a refused pattern leaves the IR usable");
    gir_free(&g);
}

#define ERR(re, want) expect_error(re, strlen(re), 0, want)

/* --- constructs ------------------------------------------------------------ */

Test(regex, literals_and_utf8)
{
    expect("abc", 0, YES("abc"), NO("", "ab", "abcd", "abd"));
    expect("", 0, YES(""), NO("a"));
    expect("é+", 0, YES("é", "éé"), NO("", "e", "\xC3"));
    expect("😀?x", 0, YES("x", "😀x"), NO("😀", "😀😀x"));
    expect("日本語", 0, YES("日本語"), NO("日本", "日本語語"));
    expect("a]}", 0, YES("a]}"), NO("a"));
}

Test(regex, dot)
{
    expect(".", 0, YES("a", "é", "😀", "\t", "\r", "\x7F"), NO("", "\n", "ab"));
    expect("a.c", 0, YES("abc", "a.c", "a€c"), NO("ac", "a\nc"));
}

Test(regex, class_escapes)
{
    expect("\\d+", 0, YES("0", "0123456789"), NO("", "a", "٣"));
    expect("\\D", 0, YES("a", "é", "\n"), NO("0", "9"));
    expect("\\w+", 0, YES("azAZ09_"), NO("-", "é", " "));
    expect("\\W", 0, YES("-", "é", " "), NO("a", "_", "0"));
    expect("\\s", 0,
           YES(" ", "\t", "\n", "\v", "\f", "\r", "\xC2\xA0", "\u2028", "\u3000", "\uFEFF", "\u2000"),
           NO("a", "\x1C", "\u200B"));
    expect("\\S", 0, YES("a", "\u200B"), NO(" ", "\xC2\xA0", "\uFEFF"));
}

Test(regex, character_escapes)
{
    expect("\\n\\t\\r\\f\\v", 0, YES("\n\t\r\f\v"), NO("ntrfv"));
    expect("\\x41\\x7a", 0, YES("Az"), NO("x41"));
    expect("\\u00e9\\u20AC", 0, YES("é€"), NO("e€"));
    expect("\\u{1F600}\\u{41}", 0, YES("😀A"), NONE);
    expect("\\uD83D\\uDE00", 0, YES("😀"), NONE);
    expect("\\U0001F600", 0, YES("😀"), NONE);
    expect("\\cJ\\ca", 0, YES("\n\x01"), NONE);
    expect("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/\\-", 0, YES(".*+?()[]{}|^$\\/-"), NONE);
    expect("\\ \\é", 0, YES(" é"), NONE);
    struct gir g;
    rx_ok(&g, "a\\0b", 0);
    cr_expect(gir_match(&g, "a\0b", 3));
    cr_expect(!gir_match(&g, "a0b", 3));
    gir_free(&g);
}

Test(regex, classes)
{
    expect("[abc]", 0, YES("a", "b", "c"), NO("d", "", "ab"));
    expect("[a-cx-z]+", 0, YES("abcxyz"), NO("d", "w"));
    expect("[^a-c]", 0, YES("d", "\n", "é", "😀"), NO("a", "b", "c"));
    expect("[-a]", 0, YES("-", "a"), NO("b"));
    expect("[a-]", 0, YES("-", "a"), NO("b"));
    expect("[a-c-e]", 0, YES("a", "c", "-", "e"), NO("d"));
    expect("[\\]\\\\^]", 0, YES("]", "\\", "^"), NO("a"));
    expect("[\\d\\s]", 0, YES("1", " ", "\xC2\xA0"), NO("a"));
    expect("[^\\d\\s]", 0, YES("a", "é"), NO("1", " ", "\xC2\xA0"));
    expect("[\\D]", 0, YES("a"), NO("1"));
    expect("[\\b]", 0, YES("\b"), NO("b"));
    expect("[é-ë]", 0, YES("é", "ê", "ë"), NO("è", "ì", "e"));
    expect("[😀-😂]", 0, YES("😀", "😁", "😂"), NO("😃"));
    expect("[\\u0041-\\u005A]", 0, YES("A", "Z"), NO("a"));
    expect("[[a]", 0, YES("[", "a"), NO("]"));
    expect("[.*+?(){}|$]", 0, YES(".", "*", "+", "?", "(", ")", "{", "}", "|", "$"), NO("a"));
}

Test(regex, groups_and_alternation)
{
    expect("(ab|cd)+", 0, YES("ab", "cdab", "abcdab"), NO("", "ac", "abc"));
    expect("(?:a|b)c", 0, YES("ac", "bc"), NO("c", "abc"));
    expect("(?<first>a)(?P<second>b)", 0, YES("ab"), NO("a"));
    expect("a|", 0, YES("a", ""), NO("b"));
    expect("|a", 0, YES("a", ""), NO("b"));
    expect("()", 0, YES(""), NO("a"));
    expect("(|a)b", 0, YES("b", "ab"), NO("a"));
    expect("a|b|c", 0, YES("a", "b", "c"), NO("ab"));
}

Test(regex, quantifiers)
{
    expect("a*", 0, YES("", "a", "aaaa"), NO("b", "ab"));
    expect("a+", 0, YES("a", "aaa"), NO(""));
    expect("a?", 0, YES("", "a"), NO("aa"));
    expect("a{3}", 0, YES("aaa"), NO("aa", "aaaa"));
    expect("a{2,}", 0, YES("aa", "aaaaa"), NO("a"));
    expect("a{1,3}", 0, YES("a", "aa", "aaa"), NO("", "aaaa"));
    expect("a{,2}", 0, YES("", "a", "aa"), NO("aaa"));
    expect("a{0}", 0, YES(""), NO("a"));
    expect("a*?b+?c??d{1,2}?", 0, YES("bd", "aabbcdd"), NO("aabbccd"));
    expect("(ab){2}", 0, YES("abab"), NO("ab", "abb"));
    expect("é{2}", 0, YES("éé"), NO("é", "\xC3\xA9\xA9"));
    /* a '{' that starts no quantifier is itself */
    expect("a{", 0, YES("a{"), NO("a"));
    expect("a{x}", 0, YES("a{x}"), NONE);
    expect("a{1,2", 0, YES("a{1,2"), NONE);
    expect("a{}", 0, YES("a{}"), NONE);
    expect("a{,}", 0, YES("a{,}"), NONE);
    expect("{", 0, YES("{"), NONE);
}

Test(regex, anchors)
{
    expect("^abc$", 0, YES("abc"), NO("xabc", "abcx"));
    expect("^a|b$", 0, YES("a", "b"), NO("ab"));
    expect("^", 0, YES(""), NO("a"));
    expect("$", 0, YES(""), NO("a"));
    expect("^$", 0, YES(""), NO("a"));
}

Test(regex, search)
{
    expect("abc", REGEX_SEARCH, YES("abc", "xabc", "abcx", "xxabcxx", "a\nabc\n"), NO("", "ab", "acb"));
    expect("^abc", REGEX_SEARCH, YES("abc", "abcx"), NO("xabc"));
    expect("abc$", REGEX_SEARCH, YES("abc", "xabc"), NO("abcx", "abc\n"));
    expect("^abc$", REGEX_SEARCH, YES("abc"), NO("xabc", "abcx"));
    expect("^a|b$", REGEX_SEARCH, YES("a", "ax", "xb", "b"), NO("xa", "bx", ""));
    expect("", REGEX_SEARCH, YES("", "anything", "\n"), NONE);
    expect("(a|b)", REGEX_SEARCH, YES("xxbxx"), NO("xx"));
    expect("^\\d{3}-\\d{4}$", REGEX_SEARCH, YES("555-1234"), NO("555-12345", "x555-1234"));
}

/* --- JSON-string mode --------------------------------------------------------- */

Test(regex, json_string_escapes)
{
    unsigned j = REGEX_JSON_STRING;
    expect("\"", j, YES("\\\"", "\\u0022"), NO("\"", "\\\\"));
    expect("\\\\", j, YES("\\\\", "\\u005c", "\\u005C"), NO("\\", "\\\""));
    expect("/", j, YES("/", "\\/", "\\u002f"), NO("\\\\/"));
    expect("\\n", j, YES("\\n", "\\u000a", "\\u000A"), NO("\n", "n", "\\N"));
    expect("[\\t\\b\\f\\r]", j, YES("\\t", "\\b", "\\f", "\\r", "\\u0009", "\\u0008", "\\u000C", "\\u000d"),
           NO("\t", "\b", "\f", "\r"));
    expect("\\x01", j, YES("\\u0001"), NO("\x01", "\\x01"));
    expect("a", j, YES("a", "\\u0061"), NO("\\a", "\\u0041", "A"));
    expect("é", j, YES("é", "\\u00e9", "\\u00E9", "\\u00e9"), NO("\\u00e8", "\\xe9"));
    expect("😀", j, YES("😀", "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\uD83d\\uDe00"),
           NO("\\ud83d", "\\ude00", "\\u1f600"));
    expect("\x7F", j, YES("\x7F", "\\u007f"), NONE);
}

Test(regex, json_string_sets)
{
    unsigned j = REGEX_JSON_STRING;
    expect("[^\"]*", j, YES("", "abc", "\\\\", "\\n", "é", "\\u00e9", "\\ud83d\\ude00"),
           NO("\"", "\\\"", "\\u0022", "\n", "\\", "\\x"));
    expect(".*", j, YES("", "a\\\"b", "\\t", "\\u0000", "\\u2028"),
           NO("\\n", "\\u000a", "\\u000A", "\n", "\"", "\\"));
    expect("[^a]", j, YES("b", "\\u0062", "\\\"", "\\u0000"), NO("a", "\\u0061", "ab"));
    expect("\\d{2}", j, YES("12", "\\u00312"), NO("1", "123"));
    expect("\\s", j, YES(" ", "\\n", "\\t", "\\u0020", "\\u2028", "\xE2\x80\xA8", "\\uFEFF"), NO("\n", "a"));
    expect("[\\u{10000}-\\u{10FFFF}]", j,
           YES("\\ud800\\udc00", "\\udbff\\udfff", "\\ud83d\\ude00", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"),
           NO("\\uffff", "\\ud800", "\\udc00\\ud800"));
    expect("abc", j | REGEX_SEARCH, YES("abc", "\\\"abc\\\"", "\\u0061bc\\n"), NO("\"abc", "ab\\u0063\n"));
}

Test(regex, json_string_any_is_compact)
{
    /* "any character" as JSON content must not enumerate the BMP */
    struct gir g;
    rx_ok(&g, "[\\s\\S]", REGEX_JSON_STRING);
    cr_expect(g.n_nodes < 400, "any character took %d nodes", g.n_nodes);
    cr_expect(gir_match_str(&g, "\\uabcd"));
    cr_expect(gir_match_str(&g, "\\uABCD"));
    cr_expect(!gir_match_str(&g, "\\ud800"));
    gir_free(&g);
}

/* Every \uXXXX escape (alternately in lower and upper case) against a set
 * of several ranges, and a sample of surrogate pairs against an astral
 * set with a hole: the digit-wise range split, checked exhaustively. */
Test(regex, json_string_u_escapes_exhaustive)
{
    struct gir g;
    rx_ok(&g, "[\\u0011-\\u02FE\\u1234-\\u5678\\uE000-\\uFFFD]", REGEX_JSON_STRING);
    int bad = 0;
    for (unsigned v = 0; v <= 0xFFFF; v++) {
        char s[8];
        snprintf(s, sizeof(s), v & 1 ? "\\u%04X" : "\\u%04x", v);
        int want = (v >= 0x11 && v <= 0x2FE) || (v >= 0x1234 && v <= 0x5678) || (v >= 0xE000 && v <= 0xFFFD);
        if (gir_match_str(&g, s) != want && bad++ < 5)
            cr_expect(0, "\\u%04X: expected %d", v, want);
    }
    gir_free(&g);

    rx_ok(&g, "[\\u{10000}-\\u{1F5FF}\\u{1F601}-\\u{10FFFF}]", REGEX_JSON_STRING);
    for (uint32_t c = 0x10000; c <= 0x10FFFF; c += c >= 0x1F500 && c < 0x1F700 ? 1 : 997) {
        char s[16];
        uint32_t a = c - 0x10000;
        snprintf(s, sizeof(s), c & 1 ? "\\u%04X\\u%04x" : "\\u%04x\\u%04X", 0xD800 + (a >> 10),
                 0xDC00 + (a & 0x3FF));
        int want = c != 0x1F600;
        if (gir_match_str(&g, s) != want && bad++ < 5)
            cr_expect(0, "U+%X as %s: expected %d", c, s, want);
    }
    gir_free(&g);
}

/* --- refused constructs -------------------------------------------------------- */

Test(regex, refused_constructs)
{
    ERR("(a)\\1", "backreference \\1 at offset 3 is not supported");
    ERR("(?<n>a)\\k<n>", "backreference \\k at offset 7");
    ERR("(?P<n>a)(?P=n)", "backreference (?P=...) at offset 8");
    ERR("a(?=b)", "lookaround group at offset 1");
    ERR("a(?!b)", "lookaround group at offset 1");
    ERR("(?<=a)b", "lookaround group at offset 0");
    ERR("(?<!a)b", "lookaround group at offset 0");
    ERR("\\bfoo", "word boundary \\b at offset 0");
    ERR("a\\B", "word boundary \\B at offset 1");
    ERR("(?i)abc", "group flags or extension '(?i' at offset 0");
    ERR("(?", "group flags or extension");
    ERR("(?>a)", "atomic group");
    ERR("(?#x)", "comment group");
    ERR("\\p{L}", "unicode property class \\p at offset 0");
    ERR("x\\P{L}", "unicode property class \\P at offset 1");
    ERR("\\A", "anchor \\A at offset 0");
    ERR("a\\Z", "anchor \\Z at offset 1");
    ERR("a\\z", "anchor \\z at offset 1");
    ERR("a**", "a quantifier right after a quantifier at offset 2");
    ERR("a*+", "a quantifier right after a quantifier at offset 2");
    ERR("a{2}{3}", "a quantifier right after a quantifier at offset 4");
    ERR("a??+", "at offset 3");
    ERR("[[:alpha:]]", "POSIX class '[:' at offset 1");
    ERR("[]a]", "empty character class at offset 0");
    ERR("[^]", "empty character class at offset 0");
    ERR("\\012", "octal escape at offset 0");
    ERR("[\\1]", "octal escape \\1 at offset 1");
    ERR("\\q", "unknown escape \\q at offset 0");
    ERR("\\a", "unknown escape \\a");
    ERR("\\N{DASH}", "unknown escape \\N");
}

Test(regex, syntax_errors)
{
    ERR("(ab", "missing ')' for the group opened at offset 0");
    ERR("((a)", "missing ')' for the group opened at offset 0");
    ERR("ab)", "unmatched ')' at offset 2");
    ERR("[z-a]", "character range at offset 1 is out of order");
    ERR("[a-\\d]", "character range at offset 1 has a class escape");
    ERR("[\\w-z]", "character range at offset 1 has a class escape");
    ERR("[abc", "unterminated character class opened at offset 0");
    ERR("*a", "nothing to repeat at offset 0");
    ERR("a|*", "nothing to repeat at offset 2");
    ERR("(+)", "nothing to repeat at offset 1");
    ERR("^*", "nothing to repeat at offset 1");
    ERR("{2}", "nothing to repeat at offset 0");
    ERR("a^b", "anchor '^' at offset 1");
    ERR("^^a", "anchor '^' at offset 1");
    ERR("a$b", "anchor '$' at offset 1");
    ERR("(^a)", "anchor '^' at offset 1");
    ERR("(a$)", "anchor '$' at offset 2");
    ERR("a$*", "anchor '$' at offset 1");
    ERR("a{3,2}", "repetition at offset 1 has its bounds out of order");
    ERR("a{65537}", "repetition bound above 65536 at offset 1");
    ERR("a{1,99999999999999999999}", "repetition bound above 65536 at offset 1");
    ERR("\\x4", "escape \\x at offset 0 needs two hex digits");
    ERR("\\x{41}", "escape \\x at offset 0 needs two hex digits");
    ERR("ab\\u12", "escape \\u at offset 2 needs four hex digits");
    ERR("\\uD800", "escape at offset 0 is a lone surrogate");
    ERR("\\uD800\\u0041", "lone surrogate");
    ERR("\\uDC00", "lone surrogate");
    ERR("\\u{D800}", "lone surrogate");
    ERR("\\u{110000}", "past U+10FFFF");
    ERR("\\u{}", "needs hex digits");
    ERR("\\U00110000", "escape \\U at offset 0");
    ERR("\\c1", "escape \\c at offset 0 needs a letter");
    ERR("ab\\", "trailing backslash at offset 2");
    ERR("(?<1a>x)", "bad group name at offset 3");
    ERR("(?<a", "bad group name");
    expect_error("a\xFF", 2, 0, "invalid UTF-8 at offset 1");
    expect_error("\xC3", 1, 0, "invalid UTF-8 at offset 0");
}

Test(regex, big_bounds_are_accepted_up_to_the_limit)
{
    struct gir g;
    rx_ok(&g, "a{65536}", 0);
    gir_free(&g);
    rx_ok(&g, "((a{1000}){1000}){1000}", 0);
    cr_expect(g.n_nodes < 20);
    gir_free(&g);
}

/* --- hostile patterns ----------------------------------------------------------- */

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

Test(regex, deep_nesting)
{
    char *ok = repeat_str("(", REGEX_MAX_DEPTH, "a", ")");
    struct gir g;
    rx_ok(&g, ok, 0);
    cr_expect(gir_match_str(&g, "a"));
    gir_free(&g);
    free(ok);

    char *deep = repeat_str("(", REGEX_MAX_DEPTH + 1, "a", ")");
    ERR(deep, "groups nested deeper than 1000 at offset 1000");
    free(deep);
    char *hostile = repeat_str("(?:", 1000000, "", "");
    ERR(hostile, "nested deeper");
    free(hostile);
    char *classes = repeat_str("[", 100000, "", "");
    ERR(classes, "unterminated character class opened at offset 0");
    free(classes);
}

Test(regex, long_patterns)
{
    char *lit = repeat_str("a", 5000, "", "");
    struct gir g;
    rx_ok(&g, lit, 0);
    cr_expect(gir_match_str(&g, lit));
    lit[4999] = 'b';
    cr_expect(!gir_match_str(&g, lit));
    gir_free(&g);
    free(lit);

    char *alts = repeat_str("ab|", 5000, "c", "");
    rx_ok(&g, alts, REGEX_JSON_STRING);
    cr_expect(gir_match_str(&g, "c"));
    cr_expect(gir_match_str(&g, "ab"));
    cr_expect(!gir_match_str(&g, "abc"));
    gir_free(&g);
    free(alts);

    char *quants = repeat_str("a*", 50000, "", "");
    rx_ok(&g, quants, 0);
    gir_free(&g);
    free(quants);
}

/* --- differential against PCRE2 ------------------------------------------------- */

static pcre2_code *pcre_compile(const char *re)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_DOLLAR_ENDONLY,
                                  &err, &off, NULL);
    cr_assert(c, "PCRE2 refuses /%s/ at %zu", re, (size_t)off);
    return c;
}

static int pcre_match(pcre2_code *c, const char *s, size_t n, int full)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(c, NULL);
    int rc = pcre2_match(c, (PCRE2_SPTR)s, n, 0, full ? PCRE2_ANCHORED | PCRE2_ENDANCHORED : 0, md, NULL);
    pcre2_match_data_free(md);
    cr_assert(rc >= 0 || rc == PCRE2_ERROR_NOMATCH, "pcre2_match: %d", rc);
    return rc >= 0;
}

/* The UTF-8 characters of alpha, as offsets/lengths. */
static int split_chars(const char *alpha, const char **ch, size_t *len)
{
    int n = 0;
    for (const char *q = alpha; *q;) {
        unsigned char b = (unsigned char)*q;
        size_t l = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        ch[n] = q;
        len[n++] = l;
        q += l;
    }
    return n;
}

/* Calls f on every string of up to max_len characters of alpha; returns the count. */
static long each_string(const char *alpha, int max_len, void (*f)(const char *, size_t, void *), void *arg)
{
    const char *ch[32];
    size_t len[32];
    int n = split_chars(alpha, ch, len);
    long count = 0;
    for (int l = 0; l <= max_len; l++) {
        int idx[8] = {0};
        for (;;) {
            char buf[64];
            size_t bl = 0;
            for (int k = 0; k < l; k++) {
                memcpy(buf + bl, ch[idx[k]], len[idx[k]]);
                bl += len[idx[k]];
            }
            f(buf, bl, arg);
            count++;
            int k = l - 1;
            while (k >= 0 && ++idx[k] == n)
                idx[k--] = 0;
            if (k < 0)
                break;
        }
    }
    return count;
}

struct diff {
    const char *re;
    struct gir *g;
    pcre2_code *pc;
    int full;
    long mismatches, matches;
};

static void diff_one(const char *s, size_t n, void *arg)
{
    struct diff *d = arg;
    int want = pcre_match(d->pc, s, n, d->full), got = gir_match(d->g, s, n);
    d->matches += want;
    if (want != got && d->mismatches++ < 5)
        cr_expect(0, "/%s/ on '%.*s' (%zu bytes): PCRE2 says %d, the IR %d", d->re, (int)n, s, n, want, got);
}

struct diff_case {
    const char *re, *pcre; /* pcre: the same pattern in PCRE2's syntax, when it differs */
    const char *alpha;
};

static const struct diff_case full_cases[] = {
    {"a*b", NULL, "ab"},
    {"(a|b)*c", NULL, "abc"},
    {"a|ab|abc", NULL, "abc"},
    {"a?b+c{2}", NULL, "abc"},
    {"(ab){1,2}", NULL, "ab"},
    {"a{2,}b?", NULL, "ab"},
    {"a{0,2}b{1}", NULL, "ab"},
    {"[a-c]+", NULL, "abcd"},
    {"[^a-c]", NULL, "abd\né"},
    {"[^a]*", NULL, "ab\né"},
    {".", NULL, "a\né😀"},
    {".*a", NULL, "ab\n"},
    {"\\d+", NULL, "0a9"},
    {"\\D\\d", NULL, "0aé"},
    {"\\w+", NULL, "a_0-é"},
    {"\\W", NULL, "a_ -é"},
    {"\\s\\S", NULL, "a \t\né"},
    {"[\\s\\d]+", NULL, " 1a\t"},
    {"[\\w-]+", NULL, "a-_ "},
    {"[-a]+", NULL, "-ab"},
    {"[a-]", NULL, "-ab"},
    {"[\\]a]", NULL, "]a["},
    {"\\.\\*\\+\\?", NULL, ".*+?a"},
    {"\\x41\\x62", NULL, "Ab"},
    {"\\n\\t", NULL, "\n\ta"},
    {"(?:ab|cd)+", NULL, "abcd"},
    {"(?<x>a)b", NULL, "ab"},
    {"(?P<y>a|b)c", NULL, "abc"},
    {"a*?b", NULL, "ab"},
    {"(a+)+b", NULL, "ab"},
    {"é+e", NULL, "eé"},
    {"[é-ë]", NULL, "eéêëì"},
    {"😀|a", NULL, "😀a"},
    {"[^😀]", NULL, "😀a"},
    {"^ab$", NULL, "ab"},
    {"^a|b$", NULL, "ab"},
    {"(a|)b", NULL, "ab"},
    {"()a", NULL, "a"},
    {"a{3}", NULL, "a"},
    {"a{1,3}?", NULL, "a"},
    {"x{", NULL, "x{"},
    {"[a\\-z]", NULL, "a-z b"},
    {"\\cA", NULL,
     "\x01"
     "a"},
    {"[\\b]", NULL, "\ba"},
    {"\\u0041", "\\x{41}", "Aa"},
    {"\\u{1F600}", "\\x{1F600}", "😀a"},
    {"\\uD83D\\uDE00+", "\\x{1F600}+", "😀a"},
    {"[\\u00e0-\\u00ff]", "[\\x{e0}-\\x{ff}]", "àÿa"},
    {"\\U0001F600", "\\x{1F600}", "😀a"},
    {"]a}", NULL, "]a}"},
    {"(a|b(c|d)*)+e?", NULL, "abcde"},
};

static const struct diff_case search_cases[] = {
    {"a", NULL, "ab\n"},       {"^a", NULL, "ab\n"},         {"a$", NULL, "ab\n"}, {"^a$", NULL, "ab\n"},
    {"ab|^c", NULL, "abc"},    {"b$|c", NULL, "abc"},        {"a+", NULL, "ab"},   {"", NULL, "ab"},
    {"[0-9]{2}", NULL, "1a2"}, {"^(a|b)b$|^c", NULL, "abc"}, {"é.", NULL, "éa\n"},
};

static void run_diff(const struct diff_case *c, unsigned flags, int full)
{
    struct gir g;
    rx_ok(&g, c->re, flags);
    struct diff d = {c->re, &g, pcre_compile(c->pcre ? c->pcre : c->re), full, 0, 0};
    long n = each_string(c->alpha, 4, diff_one, &d);
    cr_expect(d.matches > 0 && (d.matches < n || !*c->re),
              "/%s/ over '%s' is not discriminating (%ld of %ld match)", c->re, c->alpha, d.matches, n);
    pcre2_code_free(d.pc);
    gir_free(&g);
}

Test(regex, differential_full_match)
{
    for (size_t i = 0; i < sizeof(full_cases) / sizeof(full_cases[0]); i++)
        run_diff(&full_cases[i], 0, 1);
}

Test(regex, differential_search)
{
    for (size_t i = 0; i < sizeof(search_cases) / sizeof(search_cases[0]); i++)
        run_diff(&search_cases[i], REGEX_SEARCH, 0);
}

/* --- JSON-string mode against PCRE2 on the decoded strings ------------------------ */

static int hexv(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static long hex4(const char *s, size_t n, size_t i)
{
    if (i + 4 > n)
        return -1;
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexv(s[i + (size_t)k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t put_utf8(char *o, long c)
{
    if (c < 0x80)
        return o[0] = (char)c, 1;
    if (c < 0x800)
        return o[0] = (char)(0xC0 | (c >> 6)), o[1] = (char)(0x80 | (c & 0x3F)), 2;
    if (c < 0x10000)
        return o[0] = (char)(0xE0 | (c >> 12)), o[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
               o[2] = (char)(0x80 | (c & 0x3F)), 3;
    o[0] = (char)(0xF0 | (c >> 18)), o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Decodes JSON string content (no quotes) into out; 0 when it is not valid
 * content of a string of Unicode scalar values (RFC 8259 plus no lone
 * surrogates). */
static int json_decode(const char *s, size_t n, char *out, size_t *on)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c < 0x20)
            return 0;
        if (c != '\\') {
            out[o++] = s[i++];
            continue;
        }
        if (i + 1 >= n)
            return 0;
        char e = s[i + 1];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *k = e ? strchr(from, e) : NULL;
        if (k) {
            out[o++] = to[k - from];
            i += 2;
            continue;
        }
        if (e != 'u')
            return 0;
        long v = hex4(s, n, i + 2);
        if (v < 0 || (v >= 0xDC00 && v <= 0xDFFF))
            return 0;
        i += 6;
        if (v >= 0xD800 && v <= 0xDBFF) {
            long lo = i + 1 < n && s[i] == '\\' && s[i + 1] == 'u' ? hex4(s, n, i + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return 0;
            v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
        o += put_utf8(out + o, v);
    }
    *on = o;
    return 1;
}

/* Fragments of JSON string content whose concatenations cover raw and
 * escaped spellings, the forbidden raw characters and broken escapes. */
static const char *const json_frags[] = {
    "a",       "\"",      "\\",      "\\\"",    "\\\\",           "\\/", "/",       "\\n", "\n",  "\\u0061",
    "\\u00E9", "\\u00e9", "é",       "\\u000a", "\\uD83D\\uDE00", "😀",   "\\ud83d", "\\t", "\\x", "u",
    "\\U0061", "\\u0022", "\\u005C", "\\u002f", "\\ude00",
};

struct jdiff {
    const char *re;
    struct gir *g;
    pcre2_code *pc;
    int full;
    long mismatches, matches, valid;
};

static void jdiff_one(struct jdiff *d, const char *s, size_t n)
{
    char dec[256];
    size_t dn = 0;
    int ok = json_decode(s, n, dec, &dn);
    int want = ok && pcre_match(d->pc, dec, dn, d->full), got = gir_match(d->g, s, n);
    d->matches += want;
    d->valid += ok;
    if (want != got && d->mismatches++ < 5)
        cr_expect(0, "/%s/ on JSON content '%.*s': expected %d, the IR says %d", d->re, (int)n, s, want, got);
}

static void run_json_diff(const char *re, unsigned flags)
{
    struct gir g;
    rx_ok(&g, re, REGEX_JSON_STRING | flags);
    int full = !(flags & REGEX_SEARCH);
    struct jdiff d = {re, &g, pcre_compile(re), full, 0, 0, 0};
    int nf = (int)(sizeof(json_frags) / sizeof(json_frags[0]));
    long count = 0;
    for (int l = 0; l <= 3; l++) {
        int idx[3] = {0, 0, 0};
        for (;;) {
            char buf[128];
            size_t bl = 0;
            for (int k = 0; k < l; k++) {
                size_t fl = strlen(json_frags[idx[k]]);
                memcpy(buf + bl, json_frags[idx[k]], fl);
                bl += fl;
            }
            if (l < 3 || count++ % 3 == 0) /* a third of the triples keeps the test quick */
                jdiff_one(&d, buf, bl);
            int k = l - 1;
            while (k >= 0 && ++idx[k] == nf)
                idx[k--] = 0;
            if (k < 0)
                break;
        }
    }
    cr_expect(d.matches > 0 && d.matches < d.valid, "/%s/ is not discriminating (%ld of %ld)", re, d.matches,
              d.valid);
    pcre2_code_free(d.pc);
    gir_free(&g);
}

Test(regex, differential_json_string)
{
    static const char *const pats[] = {
        "a*",      "[^\"]*", ".*",    "[^a]+",    "\\\\.",          "\"",   "[\\s\\S]{2}", "\\w+",
        "[^\\n]*", "é|😀",    "[^é]*", "(a|\\n)+", "[\\x00-\\x1f]+", "/\"?", "[^\\\\/]*",   "u+",
        "[^😀a]",
    };
    for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
        run_json_diff(pats[i], 0);
}

Test(regex, differential_json_string_search)
{
    static const char *const pats[] = {"a", "^a", "a$", "^\"", "\\n$", "é"};
    for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
        run_json_diff(pats[i], REGEX_SEARCH);
}
