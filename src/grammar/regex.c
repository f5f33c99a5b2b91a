/* The regular-expression front end (regex.h): a recursive-descent parser
 * that builds the IR expression as it reads the pattern. Every character
 * a pattern can match (a literal, `.`, an escape, a class) becomes a set
 * of code points first, so one function decides how a set is written:
 * as its UTF-8 encodings, or, in JSON-string mode, as every way a JSON
 * string literal can spell its characters (json_chars.h). Groups are
 * the only recursion (bounded by REGEX_MAX_DEPTH); sequences and
 * alternations are loops, so a long pattern costs no stack. */
#include "grammar/regex.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "grammar/chars.h"
#include "grammar/cpset.h"
#include "grammar/json_chars.h"

/* \d \w \s (the ECMA-262 WhiteSpace and LineTerminator characters). */
static void class_escape(struct cpset *s, char letter)
{
    static const uint32_t space[] = {0x09,   0x0D,   0x20,   0x20,   0xA0,   0xA0,   0x1680,
                                     0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x202F,
                                     0x205F, 0x205F, 0x3000, 0x3000, 0xFEFF, 0xFEFF};
    struct cpset t = {0};
    switch (letter | 0x20) {
    case 'd':
        cpset_add(&t, '0', '9');
        break;
    case 'w':
        cpset_add(&t, '0', '9');
        cpset_add(&t, 'A', 'Z');
        cpset_add(&t, '_', '_');
        cpset_add(&t, 'a', 'z');
        break;
    default:
        for (size_t i = 0; i < sizeof(space) / sizeof(space[0]); i += 2)
            cpset_add(&t, space[i], space[i + 1]);
        break;
    }
    cpset_norm(&t);
    if (letter >= 'A' && letter <= 'Z')
        cpset_invert(&t);
    for (int i = 0; i < t.n; i++)
        cpset_add(s, t.r[2 * i], t.r[2 * i + 1]);
    cpset_free(&t);
}

/* --- the parser ------------------------------------------------------------ */

struct rx {
    struct gir *g;
    const char *s;
    size_t n, i;
    int json, search;
    int depth; /* groups open */
    int bad;   /* an error was reported into e */
    struct err *e;
};

static int rx_fail(struct rx *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rx_fail(struct rx *p, const char *fmt, ...)
{
    if (!p->bad && p->e) {
        int k = snprintf(p->e->msg, sizeof(p->e->msg), "regex: ");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->e->msg + k, sizeof(p->e->msg) - (size_t)k, fmt, ap);
        va_end(ap);
    }
    p->bad = 1;
    return -1;
}

struct xv {
    int *v;
    int n, cap;
};

static void xv_push(struct xv *a, int x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 8;
        a->v = xrealloc(a->v, (size_t)a->cap * sizeof(int));
    }
    a->v[a->n++] = x;
}

static int at_end(const struct rx *p) { return p->i >= p->n; }
static int peek(const struct rx *p) { return at_end(p) ? -1 : (unsigned char)p->s[p->i]; }
static int peek_at(const struct rx *p, size_t k)
{
    return p->i + k >= p->n ? -1 : (unsigned char)p->s[p->i + k];
}

/* Exactly nd hex digits at p->i (consumed), or -1. */
static long fixed_hex(struct rx *p, int nd)
{
    long v = 0;
    for (int k = 0; k < nd; k++) {
        int h = chars_hex_value(peek_at(p, (size_t)k));
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    p->i += (size_t)nd;
    return v;
}

static int set_expr(struct rx *p, const struct cpset *s)
{
    return p->json ? json_chars(p->g, s) : gx_codepoints(p->g, s->r, s->n);
}

static int char_expr(struct rx *p, uint32_t c)
{
    struct cpset s = {0};
    cpset_add(&s, c, c);
    int x = set_expr(p, &s);
    cpset_free(&s);
    return x;
}

/* The rest of a \u escape (p->i past the 'u'): \uHHHH, a surrogate pair
 * of two, or \u{H...}. */
static int u_escape(struct rx *p, size_t at, uint32_t *cp)
{
    if (peek(p) == '{') {
        p->i++;
        uint32_t v = 0;
        int nd = 0;
        for (int h; (h = chars_hex_value(peek(p))) >= 0; p->i++, nd++) {
            v = v * 16 + (uint32_t)h;
            if (v > CP_MAX)
                return rx_fail(p, "escape \\u{...} at offset %zu is past U+10FFFF", at);
        }
        if (nd == 0 || peek(p) != '}')
            return rx_fail(p, "escape \\u{...} at offset %zu needs hex digits and a '}'", at);
        p->i++;
        if (v >= CP_SUR_LO && v <= CP_SUR_HI)
            return rx_fail(p, "escape at offset %zu is a lone surrogate", at);
        *cp = v;
        return 0;
    }
    long v = fixed_hex(p, 4);
    if (v < 0)
        return rx_fail(p, "escape \\u at offset %zu needs four hex digits", at);
    if (v >= 0xDC00 && v <= CP_SUR_HI)
        return rx_fail(p, "escape at offset %zu is a lone surrogate", at);
    if (v >= CP_SUR_LO && v < 0xDC00) { /* a high surrogate: its low half must follow */
        long lo = -1;
        if (peek(p) == '\\' && peek_at(p, 1) == 'u') {
            p->i += 2;
            lo = fixed_hex(p, 4);
        }
        if (lo < 0xDC00 || lo > CP_SUR_HI)
            return rx_fail(p, "escape at offset %zu is a lone surrogate", at);
        v = 0x10000 + ((v - CP_SUR_LO) << 10) + (lo - 0xDC00);
    }
    *cp = (uint32_t)v;
    return 0;
}

enum { ESC_CHAR = 1, ESC_SET = 2 };

/* An escape at p->i (the backslash): ESC_CHAR with *cp, or ESC_SET with
 * the set added to set; -1 on error. */
static int parse_escape(struct rx *p, int in_class, struct cpset *set, uint32_t *cp)
{
    size_t at = p->i++;
    int c = peek(p);
    if (c < 0)
        return rx_fail(p, "trailing backslash at offset %zu", at);
    p->i++;
    switch (c) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
        class_escape(set, (char)c);
        return ESC_SET;
    case 'n':
    case 't':
    case 'r':
    case 'f':
    case 'v':
        *cp = (uint32_t) "\n\t\r\f\v"[strchr("ntrfv", c) - "ntrfv"];
        return ESC_CHAR;
    case '0':
        if (peek(p) >= '0' && peek(p) <= '9')
            return rx_fail(p, "octal escape at offset %zu is not supported", at);
        *cp = 0;
        return ESC_CHAR;
    case 'b':
        if (in_class) {
            *cp = '\b';
            return ESC_CHAR;
        }
        return rx_fail(p, "word boundary \\b at offset %zu is not supported", at);
    case 'B':
        return rx_fail(p, "word boundary \\B at offset %zu is not supported", at);
    case 'A':
    case 'Z':
    case 'z':
    case 'G':
        return rx_fail(p, "anchor \\%c at offset %zu is not supported (use ^ and $)", c, at);
    case 'x': {
        long v = fixed_hex(p, 2);
        if (v < 0)
            return rx_fail(p, "escape \\x at offset %zu needs two hex digits", at);
        *cp = (uint32_t)v;
        return ESC_CHAR;
    }
    case 'u':
        return u_escape(p, at, cp) < 0 ? -1 : ESC_CHAR;
    case 'U': {
        long v = fixed_hex(p, 8);
        if (v < 0 || v > CP_MAX || (v >= CP_SUR_LO && v <= CP_SUR_HI))
            return rx_fail(p, "escape \\U at offset %zu needs eight hex digits of a code point", at);
        *cp = (uint32_t)v;
        return ESC_CHAR;
    }
    case 'c': {
        int l = peek(p);
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')))
            return rx_fail(p, "escape \\c at offset %zu needs a letter", at);
        p->i++;
        *cp = (uint32_t)(l & 0x1F);
        return ESC_CHAR;
    }
    case 'p':
    case 'P':
        return rx_fail(p, "unicode property class \\%c at offset %zu is not supported", c, at);
    case 'k':
        return rx_fail(p, "backreference \\k at offset %zu is not supported", at);
    default:
        break;
    }
    if (c >= '1' && c <= '9') {
        if (in_class)
            return rx_fail(p, "octal escape \\%c at offset %zu is not supported", c, at);
        return rx_fail(p, "backreference \\%c at offset %zu is not supported", c, at);
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return rx_fail(p, "unknown escape \\%c at offset %zu", c, at);
    /* punctuation, space or a non-ASCII character: itself */
    p->i = at + 1;
    *cp = utf8_next(p->s, p->n, &p->i);
    return ESC_CHAR;
}

/* One member of a class: ESC_CHAR with *cp or ESC_SET added to set. */
static int class_atom(struct rx *p, struct cpset *set, uint32_t *cp)
{
    if (peek(p) == '\\')
        return parse_escape(p, 1, set, cp);
    if (peek(p) == '[' && (peek_at(p, 1) == ':' || peek_at(p, 1) == '=' || peek_at(p, 1) == '.'))
        return rx_fail(p, "POSIX class '[%c' at offset %zu is not supported", peek_at(p, 1), p->i);
    *cp = utf8_next(p->s, p->n, &p->i);
    return ESC_CHAR;
}

static int parse_class(struct rx *p)
{
    size_t at = p->i++;
    int neg = 0;
    if (peek(p) == '^') {
        neg = 1;
        p->i++;
    }
    if (peek(p) == ']')
        return rx_fail(
            p, "empty character class at offset %zu is not supported (write \\] for a literal ']')", at);
    struct cpset cs = {0};
    for (;;) {
        if (at_end(p)) {
            cpset_free(&cs);
            return rx_fail(p, "unterminated character class opened at offset %zu", at);
        }
        if (peek(p) == ']') {
            p->i++;
            break;
        }
        size_t a_at = p->i;
        uint32_t lo, hi;
        int k = class_atom(p, &cs, &lo);
        if (k < 0) {
            cpset_free(&cs);
            return -1;
        }
        if (peek(p) == '-' && peek_at(p, 1) >= 0 && peek_at(p, 1) != ']') {
            p->i++;
            struct cpset ignored = {0};
            int k2 = class_atom(p, &ignored, &hi);
            cpset_free(&ignored);
            if (k2 < 0 || k != ESC_CHAR || k2 != ESC_CHAR || lo > hi) {
                cpset_free(&cs);
                if (k2 < 0)
                    return -1;
                if (k != ESC_CHAR || k2 != ESC_CHAR)
                    return rx_fail(p, "character range at offset %zu has a class escape as an end", a_at);
                return rx_fail(p, "character range at offset %zu is out of order", a_at);
            }
            cpset_add(&cs, lo, hi);
        } else if (k == ESC_CHAR) {
            cpset_add(&cs, lo, lo);
        }
    }
    cpset_norm(&cs);
    if (neg)
        cpset_invert(&cs);
    int x = set_expr(p, &cs);
    cpset_free(&cs);
    return x;
}

static int parse_alt(struct rx *p);

static int parse_group(struct rx *p)
{
    size_t at = p->i++;
    if (peek(p) == '?') {
        int c1 = peek_at(p, 1), c2 = peek_at(p, 2);
        if (c1 == ':') {
            p->i += 2;
        } else if (c1 == '=' || c1 == '!' || (c1 == '<' && (c2 == '=' || c2 == '!'))) {
            return rx_fail(p, "lookaround group at offset %zu is not supported", at);
        } else if (c1 == 'P' && c2 == '=') {
            return rx_fail(p, "backreference (?P=...) at offset %zu is not supported", at);
        } else if (c1 == '<' || (c1 == 'P' && c2 == '<')) {
            p->i += c1 == '<' ? 2 : 3;
            size_t name = p->i;
            for (int c; (c = peek(p)) == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (p->i > name && c >= '0' && c <= '9');)
                p->i++;
            if (p->i == name || peek(p) != '>')
                return rx_fail(p, "bad group name at offset %zu", name);
            p->i++;
        } else if (c1 == '#') {
            return rx_fail(p, "comment group (?#...) at offset %zu is not supported", at);
        } else if (c1 == '>') {
            return rx_fail(p, "atomic group (?>...) at offset %zu is not supported", at);
        } else {
            return rx_fail(p, "group flags or extension '(?%c' at offset %zu are not supported",
                           c1 < 0 ? ' ' : c1, at);
        }
    }
    if (p->depth >= REGEX_MAX_DEPTH)
        return rx_fail(p, "groups nested deeper than %d at offset %zu", REGEX_MAX_DEPTH, at);
    p->depth++;
    int x = parse_alt(p);
    p->depth--;
    if (x < 0)
        return -1;
    if (peek(p) != ')')
        return rx_fail(p, "missing ')' for the group opened at offset %zu", at);
    p->i++;
    return x;
}

/* At p->i == '{': whether {n} {n,} {n,m} or {,m} follows; sets the bounds
 * (saturated past GIR_MAX_REPEAT; max -1: none) and the end. Anything else
 * is a literal '{', as in Python and ECMA-262's web dialect. */
static int brace_quant(const struct rx *p, long *min, long *max, size_t *end)
{
    size_t i = p->i + 1;
    long v[2] = {0, 0};
    int has[2] = {0, 0};
    for (int part = 0; part < 2; part++) {
        for (; i < p->n && p->s[i] >= '0' && p->s[i] <= '9'; i++) {
            has[part] = 1;
            v[part] = v[part] * 10 + (p->s[i] - '0');
            if (v[part] > GIR_MAX_REPEAT)
                v[part] = GIR_MAX_REPEAT + 1L;
        }
        if (i < p->n && p->s[i] == '}') {
            if (part == 0) {
                if (!has[0])
                    return 0;
                v[1] = v[0];
                has[1] = 1;
            } else if (!has[0] && !has[1]) {
                return 0;
            }
            *min = v[0];
            *max = has[1] ? v[1] : -1;
            *end = i + 1;
            return 1;
        }
        if (part == 1 || i >= p->n || p->s[i] != ',')
            return 0;
        i++;
    }
    return 0;
}

/* Whether a quantifier starts at p->i; its bounds and end. */
static int quant_at(const struct rx *p, long *min, long *max, size_t *end)
{
    switch (peek(p)) {
    case '*':
        *min = 0, *max = -1;
        break;
    case '+':
        *min = 1, *max = -1;
        break;
    case '?':
        *min = 0, *max = 1;
        break;
    case '{':
        return brace_quant(p, min, max, end);
    default:
        return 0;
    }
    *end = p->i + 1;
    return 1;
}

static int parse_atom(struct rx *p)
{
    int c = peek(p);
    if (c == '(')
        return parse_group(p);
    if (c == '[')
        return parse_class(p);
    if (c == '.') {
        p->i++;
        struct cpset s = {0};
        cpset_add(&s, 0, '\n' - 1);
        cpset_add(&s, '\n' + 1, CP_MAX);
        cpset_norm(&s);
        int x = set_expr(p, &s);
        cpset_free(&s);
        return x;
    }
    uint32_t cp;
    if (c == '\\') {
        struct cpset s = {0};
        int k = parse_escape(p, 0, &s, &cp);
        int x = -1;
        if (k == ESC_SET) {
            cpset_norm(&s);
            x = set_expr(p, &s);
        } else if (k == ESC_CHAR) {
            x = char_expr(p, cp);
        }
        cpset_free(&s);
        return x;
    }
    cp = utf8_next(p->s, p->n, &p->i);
    return char_expr(p, cp);
}

/* Any characters: what an unanchored side of a searched pattern allows. */
static int any_star(struct rx *p)
{
    struct cpset s = {0};
    cpset_add(&s, 0, CP_MAX);
    cpset_norm(&s);
    int x = gx_star(p->g, set_expr(p, &s));
    cpset_free(&s);
    return x;
}

/* A sequence up to '|', ')' or the end. At the top level, sets whether it
 * starts with ^ and ends with $. */
static int parse_seq(struct rx *p, int *anchor_start, int *anchor_end)
{
    struct xv items = {0};
    size_t start = p->i;
    int quantified = 0, x = 0;
    while (!at_end(p) && peek(p) != '|' && peek(p) != ')') {
        size_t at = p->i;
        long min, max;
        size_t end;
        if (peek(p) == '^') {
            if (p->depth > 0 || at != start) {
                x = rx_fail(p,
                            "anchor '^' at offset %zu is only supported at the start of the pattern or of a "
                            "top-level alternative",
                            at);
                break;
            }
            *anchor_start = 1;
            p->i++;
            continue;
        }
        if (peek(p) == '$') {
            p->i++;
            if (p->depth > 0 || !(at_end(p) || peek(p) == '|' || peek(p) == ')')) {
                x = rx_fail(p,
                            "anchor '$' at offset %zu is only supported at the end of the pattern or of a "
                            "top-level alternative",
                            at);
                break;
            }
            *anchor_end = 1;
            continue;
        }
        if (quant_at(p, &min, &max, &end)) {
            if (items.n == 0) {
                x = rx_fail(p, "nothing to repeat at offset %zu", at);
                break;
            }
            if (quantified) {
                x = rx_fail(p,
                            "a quantifier right after a quantifier at offset %zu (possessive or repeated) is "
                            "not supported",
                            at);
                break;
            }
            if (max >= 0 && min > max) {
                x = rx_fail(p, "repetition at offset %zu has its bounds out of order", at);
                break;
            }
            if (min > GIR_MAX_REPEAT || max > GIR_MAX_REPEAT) {
                x = rx_fail(p, "repetition bound above %d at offset %zu is not supported", GIR_MAX_REPEAT,
                            at);
                break;
            }
            p->i = end;
            if (peek(p) == '?') /* lazy: the same language */
                p->i++;
            items.v[items.n - 1] = gx_repeat(p->g, items.v[items.n - 1], (int)min, (int)max);
            quantified = 1;
            continue;
        }
        x = parse_atom(p);
        if (x < 0)
            break;
        xv_push(&items, x);
        quantified = 0;
    }
    if (x >= 0)
        x = gx_seq(p->g, items.v, items.n);
    free(items.v);
    return x;
}

static int parse_alt(struct rx *p)
{
    struct xv alts = {0};
    int x;
    for (;;) {
        int a0 = 0, a1 = 0;
        x = parse_seq(p, &a0, &a1);
        if (x < 0)
            break;
        if (p->depth == 0 && p->search) {
            int items[3] = {a0 ? gx_empty(p->g) : any_star(p), x, a1 ? gx_empty(p->g) : any_star(p)};
            x = gx_seq(p->g, items, 3);
        }
        xv_push(&alts, x);
        if (peek(p) != '|')
            break;
        p->i++;
    }
    if (x >= 0)
        x = gx_alt(p->g, alts.v, alts.n);
    free(alts.v);
    return x;
}

int regex_to_gx(struct gir *g, const char *re, size_t len, unsigned flags, struct err *e)
{
    if (gir_failed(g))
        return err_set(e, "regex: %s", g->error.msg);
    size_t valid = utf8_valid_prefix(re, len);
    if (valid < len)
        return err_set(e, "regex: invalid UTF-8 at offset %zu", valid);
    struct rx p = {.g = g,
                   .s = re,
                   .n = len,
                   .json = !!(flags & REGEX_JSON_STRING),
                   .search = !!(flags & REGEX_SEARCH),
                   .e = e};
    int x = parse_alt(&p);
    if (x >= 0 && !at_end(&p))
        x = rx_fail(&p, "unmatched ')' at offset %zu", p.i);
    if (p.bad)
        return -1;
    if (x < 0 || gir_failed(g))
        return err_set(e, "regex: %s", gir_failed(g) ? g->error.msg : "the grammar could not be built");
    return x;
}
