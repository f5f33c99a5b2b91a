/* The GBNF front end (gbnf.h): a recursive-descent parser following
 * llama.cpp's reading of the format (where whitespace may hold newlines,
 * what a quantifier applies to, which escapes exist), building IR
 * expressions directly: a group is an inline alternation and a quantifier
 * a repetition node, where llama.cpp makes helper rules; only named rules
 * become IR rules. Definitions are collected first and handed to the IR at
 * the end, because a later definition of a name replaces an earlier one
 * (as in llama.cpp) and because an undefined rule must be reported with
 * the place it is used. */
#include "grammar/gbnf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "grammar/chars.h"
#include "grammar/cpset.h"

struct sym {
    char *name;
    int rule;      /* the IR rule */
    int body;      /* the last definition's expression, or -1 */
    size_t ref_at; /* the first use */
};

struct gp {
    struct gir *g;
    const char *s;
    size_t n, i;
    int depth; /* parentheses and stacked quantifiers open */
    int bad;
    struct err *e;
    struct sym *syms;
    int n_syms, cap_syms;
    int *slots; /* open-addressed name table: sym index + 1, 0 empty */
    int n_slots;
};

/* Line and column (1-based, the column in characters) of offset at; a
 * "\r\n", a "\n" and a lone "\r" each end a line, as llama.cpp's parser
 * takes them. */
static void line_col(const struct gp *p, size_t at, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t k = 0; k < at && k < p->n; k++) {
        unsigned char b = (unsigned char)p->s[k];
        if (b == '\n' || (b == '\r' && (k + 1 >= p->n || p->s[k + 1] != '\n'))) {
            l++;
            c = 1;
        } else if (b != '\r' && (b & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static int gp_fail(struct gp *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int gp_fail(struct gp *p, size_t at, const char *fmt, ...)
{
    if (!p->bad && p->e) {
        int line, col;
        line_col(p, at, &line, &col);
        int k = snprintf(p->e->msg, sizeof(p->e->msg), "gbnf: line %d, column %d: ", line, col);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->e->msg + k, sizeof(p->e->msg) - (size_t)k, fmt, ap);
        va_end(ap);
    }
    p->bad = 1;
    return -1;
}

/* What stands at offset at, for messages. */
static const char *found(const struct gp *p, size_t at, char *buf, size_t cap)
{
    if (at >= p->n)
        return "the end of the grammar";
    unsigned char c = (unsigned char)p->s[at];
    if (c == '\n' || c == '\r')
        return "the end of the line";
    if (c >= 0x20 && c < 0x7F) {
        snprintf(buf, cap, "'%c'", c);
    } else {
        size_t k = at;
        snprintf(buf, cap, "U+%04X", (unsigned)utf8_next(p->s, p->n, &k));
    }
    return buf;
}

static int at_end(const struct gp *p) { return p->i >= p->n; }
static int peek(const struct gp *p) { return at_end(p) ? -1 : (unsigned char)p->s[p->i]; }
static int peek_at(const struct gp *p, size_t k)
{
    return p->i + k >= p->n ? -1 : (unsigned char)p->s[p->i + k];
}

static int is_name_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Blanks and comments; newlines too where newline_ok (inside parentheses,
 * after '|' and '::=', between rules). */
static void skip_space(struct gp *p, int newline_ok)
{
    for (int c; (c = peek(p)) >= 0;) {
        if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
            p->i++;
        } else if (c == '#') {
            while (!at_end(p) && peek(p) != '\r' && peek(p) != '\n')
                p->i++;
        } else {
            break;
        }
    }
}

/* --- the rule names ------------------------------------------------------ */

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t k = 0; k < n; k++)
        h = (h ^ (unsigned char)s[k]) * 16777619u;
    return h;
}

static void slots_grow(struct gp *p)
{
    int n = p->n_slots ? p->n_slots * 2 : 64;
    int *slots = xcalloc((size_t)n, sizeof(int));
    for (int k = 0; k < p->n_syms; k++) {
        uint32_t h = name_hash(p->syms[k].name, strlen(p->syms[k].name)) & (uint32_t)(n - 1);
        while (slots[h])
            h = (h + 1) & (uint32_t)(n - 1);
        slots[h] = k + 1;
    }
    free(p->slots);
    p->slots = slots;
    p->n_slots = n;
}

/* The symbol named s[0..n) (a name in the text), made with its IR rule if
 * new; -1 when the IR refuses another rule. */
static int sym_get(struct gp *p, const char *s, size_t n)
{
    if (2 * (p->n_syms + 1) > p->n_slots)
        slots_grow(p);
    uint32_t mask = (uint32_t)p->n_slots - 1, h = name_hash(s, n) & mask;
    for (; p->slots[h]; h = (h + 1) & mask) {
        const char *name = p->syms[p->slots[h] - 1].name;
        if (strlen(name) == n && memcmp(name, s, n) == 0)
            return p->slots[h] - 1;
    }
    char *name = xmalloc(n + 1);
    memcpy(name, s, n);
    name[n] = '\0';
    int rule = gir_rule(p->g, name);
    if (rule < 0) {
        free(name);
        return gp_fail(p, (size_t)(s - p->s), "%s", p->g->error.msg);
    }
    if (p->n_syms == p->cap_syms) {
        p->cap_syms = p->cap_syms ? p->cap_syms * 2 : 32;
        p->syms = xrealloc(p->syms, (size_t)p->cap_syms * sizeof(*p->syms));
    }
    p->syms[p->n_syms] = (struct sym){name, rule, -1, (size_t)-1};
    p->slots[h] = p->n_syms + 1;
    return p->n_syms++;
}

/* --- characters ---------------------------------------------------------- */

/* One character of a literal or class at p->i, raw or escaped; -1 on
 * error. */
static int parse_char(struct gp *p, uint32_t *cp)
{
    size_t at = p->i;
    if (peek(p) != '\\') {
        *cp = utf8_next(p->s, p->n, &p->i); /* the text is valid UTF-8 */
        return 0;
    }
    int c = peek_at(p, 1), nd = 0;
    p->i += 2;
    switch (c) {
    case 'x':
        nd = 2;
        break;
    case 'u':
        nd = 4;
        break;
    case 'U':
        nd = 8;
        break;
    case 't':
        *cp = '\t';
        return 0;
    case 'r':
        *cp = '\r';
        return 0;
    case 'n':
        *cp = '\n';
        return 0;
    case '\\':
    case '"':
    case '[':
    case ']':
    case '-':
        *cp = (uint32_t)c;
        return 0;
    case -1:
        return gp_fail(p, at, "a backslash at the end of the grammar");
    default: {
        char buf[16];
        return gp_fail(p, at, "unknown escape '\\' followed by %s", found(p, at + 1, buf, sizeof(buf)));
    }
    }
    uint64_t v = 0;
    for (int k = 0; k < nd; k++) {
        int h = chars_hex_value(peek(p));
        if (h < 0)
            return gp_fail(p, at, "escape '\\%c' needs %d hex digits", c, nd);
        v = v * 16 + (uint64_t)h;
        p->i++;
    }
    if (v > CP_MAX)
        return gp_fail(p, at, "escape '\\%c' is past U+10FFFF", c);
    *cp = (uint32_t)v;
    return 0;
}

static int is_surrogate(uint32_t c) { return c >= CP_SUR_LO && c <= CP_SUR_HI; }

/* "..." at p->i: its characters in order. */
static int parse_literal(struct gp *p)
{
    size_t at = p->i++;
    size_t cap = 64, n = 0;
    char *buf = xmalloc(cap);
    int x = -1;
    for (;;) {
        if (at_end(p)) {
            gp_fail(p, at, "unterminated string literal");
            break;
        }
        if (peek(p) == '"') {
            p->i++;
            x = gx_literal(p->g, buf, n);
            break;
        }
        size_t c_at = p->i;
        uint32_t cp;
        if (parse_char(p, &cp) < 0)
            break;
        if (is_surrogate(cp)) {
            gp_fail(p, c_at, "a lone surrogate U+%04X in a string literal", (unsigned)cp);
            break;
        }
        if (n + 4 > cap)
            buf = xrealloc(buf, cap *= 2);
        n += chars_utf8(cp, buf + n);
    }
    free(buf);
    return x;
}

/* [...] or [^...] at p->i: a set of code points. */
static int parse_class(struct gp *p)
{
    size_t at = p->i++;
    int neg = 0;
    if (peek(p) == '^') {
        neg = 1;
        p->i++;
    }
    if (peek(p) == ']')
        return gp_fail(p, at, "empty character class");
    struct cpset cs = {0};
    int x = -1;
    for (;;) {
        if (at_end(p)) {
            gp_fail(p, at, "unterminated character class");
            break;
        }
        if (peek(p) == ']') {
            p->i++;
            x = neg ? gx_codepoints_not(p->g, cs.r, cs.n) : gx_codepoints(p->g, cs.r, cs.n);
            break;
        }
        size_t c_at = p->i;
        uint32_t lo, hi;
        if (parse_char(p, &lo) < 0)
            break;
        hi = lo;
        /* a '-' before the closing ']' is itself (llama.cpp's rule) */
        if (peek(p) == '-' && peek_at(p, 1) >= 0 && peek_at(p, 1) != ']') {
            p->i++;
            if (parse_char(p, &hi) < 0)
                break;
            if (hi < lo) {
                gp_fail(p, c_at, "character range out of order");
                break;
            }
        } else if (is_surrogate(lo)) {
            gp_fail(p, c_at, "a lone surrogate U+%04X in a character class", (unsigned)lo);
            break;
        }
        cpset_add(&cs, lo, hi);
    }
    cpset_free(&cs);
    return x;
}

/* --- expressions --------------------------------------------------------- */

/* A repetition bound at p->i, saturated past GIR_MAX_REPEAT. */
static long parse_count(struct gp *p)
{
    long v = 0;
    for (; is_digit(peek(p)); p->i++) {
        v = v * 10 + (peek(p) - '0');
        if (v > GIR_MAX_REPEAT)
            v = GIR_MAX_REPEAT + 1L;
    }
    return v;
}

/* A quantifier at p->i (one of * + ? {); its bounds (max -1: none). Spaces
 * may stand between the parts of {m,n}, newlines only where the sequence
 * allows them, as in llama.cpp. */
static int parse_quant(struct gp *p, int nested, long *min, long *max)
{
    size_t at = p->i;
    int c = peek(p);
    p->i++;
    if (c != '{') {
        *min = c == '+';
        *max = c == '?' ? 1 : -1;
        return 0;
    }
    skip_space(p, nested);
    *min = 0;
    if (is_digit(peek(p))) {
        *min = parse_count(p);
        skip_space(p, nested);
    } else if (peek(p) != ',') {
        char buf[16];
        return gp_fail(p, p->i, "expected a number in the repetition, found %s",
                       found(p, p->i, buf, sizeof(buf)));
    }
    *max = *min;
    if (peek(p) == ',') {
        p->i++;
        skip_space(p, nested);
        *max = -1;
        if (is_digit(peek(p))) {
            *max = parse_count(p);
            skip_space(p, nested);
        }
    }
    if (peek(p) != '}') {
        char buf[16];
        return gp_fail(p, p->i, "expected '}' to end the repetition, found %s",
                       found(p, p->i, buf, sizeof(buf)));
    }
    p->i++;
    if (*min > GIR_MAX_REPEAT || *max > GIR_MAX_REPEAT)
        return gp_fail(p, at, "repetition bound above %d", GIR_MAX_REPEAT);
    if (*max >= 0 && *max < *min)
        return gp_fail(p, at, "repetition bounds out of order");
    return 0;
}

static int parse_alternates(struct gp *p, int nested);

static int parse_group(struct gp *p)
{
    size_t at = p->i++;
    if (p->depth >= GBNF_MAX_DEPTH)
        return gp_fail(p, at, "parentheses nested deeper than %d", GBNF_MAX_DEPTH);
    p->depth++;
    skip_space(p, 1);
    int x = parse_alternates(p, 1);
    p->depth--;
    if (x < 0)
        return -1;
    if (peek(p) != ')') {
        char buf[16];
        int line, col;
        line_col(p, at, &line, &col);
        return gp_fail(p, p->i, "expected ')' to close the '(' of line %d, column %d, found %s", line, col,
                       found(p, p->i, buf, sizeof(buf)));
    }
    p->i++;
    return x;
}

static int parse_ref(struct gp *p)
{
    size_t at = p->i;
    while (is_name_char(peek(p)))
        p->i++;
    int k = sym_get(p, p->s + at, p->i - at);
    if (k < 0)
        return -1;
    if (p->syms[k].ref_at == (size_t)-1)
        p->syms[k].ref_at = at;
    return gx_ref(p->g, p->syms[k].rule);
}

/* '.': any character, a newline included (llama.cpp's CHAR_ANY). */
static int parse_any(struct gp *p)
{
    p->i++;
    return gx_codepoints_not(p->g, NULL, 0);
}

/* One item (no quantifier) at p->i; 0 when none starts here. */
static int parse_item(struct gp *p, int *x)
{
    int c = peek(p);
    if (c == '"')
        *x = parse_literal(p);
    else if (c == '[')
        *x = parse_class(p);
    else if (c == '(')
        *x = parse_group(p);
    else if (c == '.')
        *x = parse_any(p);
    else if (is_name_char(c))
        *x = parse_ref(p);
    else if (c == '<' || c == '!')
        *x = gp_fail(p, p->i, "token references are not supported");
    else
        return 0;
    return 1;
}

/* A sequence of items; newlines between them only when nested. */
static int parse_sequence(struct gp *p, int nested)
{
    int *items = NULL, n = 0, cap = 0, x = 0, stacked = 0;
    while (!at_end(p)) {
        int c = peek(p);
        if (c == '*' || c == '+' || c == '?' || c == '{') {
            size_t at = p->i;
            long min = 0, max = -1;
            if (n == 0) {
                x = gp_fail(p, at, "'%c' has no item before it to repeat", c);
                break;
            }
            if (p->depth + ++stacked > GBNF_MAX_DEPTH) {
                x = gp_fail(p, at, "more than %d quantifiers nested", GBNF_MAX_DEPTH);
                break;
            }
            if ((x = parse_quant(p, nested, &min, &max)) < 0)
                break;
            items[n - 1] = gx_repeat(p->g, items[n - 1], (int)min, (int)max);
        } else {
            int item;
            if (!parse_item(p, &item))
                break;
            if ((x = item) < 0)
                break;
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                items = xrealloc(items, (size_t)cap * sizeof(int));
            }
            items[n++] = item;
            stacked = 0;
        }
        skip_space(p, nested);
    }
    if (x >= 0)
        x = gx_seq(p->g, items, n);
    free(items);
    return x;
}

static int parse_alternates(struct gp *p, int nested)
{
    int *alts = NULL, n = 0, cap = 0, x;
    for (;;) {
        x = parse_sequence(p, nested);
        if (x < 0)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            alts = xrealloc(alts, (size_t)cap * sizeof(int));
        }
        alts[n++] = x;
        if (peek(p) != '|')
            break;
        p->i++;
        skip_space(p, 1); /* a newline after '|' continues the rule */
    }
    if (x >= 0)
        x = gx_alt(p->g, alts, n);
    free(alts);
    return x;
}

/* name ::= alternatives, then the end of the line. */
static int parse_rule(struct gp *p)
{
    size_t at = p->i;
    char buf[16];
    if (!is_name_char(peek(p))) {
        if (peek(p) == '|')
            return gp_fail(p, at,
                           "expected a rule name, found '|' (a rule continues on the next line only after "
                           "'|', after '::=' or inside parentheses)");
        return gp_fail(p, at, "expected a rule name, found %s", found(p, at, buf, sizeof(buf)));
    }
    while (is_name_char(peek(p)))
        p->i++;
    size_t name_end = p->i;
    skip_space(p, 0);
    if (!(peek(p) == ':' && peek_at(p, 1) == ':' && peek_at(p, 2) == '='))
        return gp_fail(p, p->i, "expected '::=' after the rule name '%.*s', found %s", (int)(name_end - at),
                       p->s + at, found(p, p->i, buf, sizeof(buf)));
    p->i += 3;
    skip_space(p, 1);
    int x = parse_alternates(p, 0);
    if (x < 0)
        return -1;
    if (peek(p) == '\r')
        p->i += peek_at(p, 1) == '\n' ? 2 : 1;
    else if (peek(p) == '\n')
        p->i++;
    else if (!at_end(p))
        return gp_fail(p, p->i, "expected the end of the rule '%.*s', found %s", (int)(name_end - at),
                       p->s + at, found(p, p->i, buf, sizeof(buf)));
    skip_space(p, 1);
    int k = sym_get(p, p->s + at, name_end - at);
    if (k < 0)
        return -1;
    p->syms[k].body = x; /* a second definition replaces the first */
    return 0;
}

/* Every name defined, a root, then the rules into the IR. */
static int finish(struct gp *p)
{
    for (int k = 0; k < p->n_syms; k++)
        if (p->syms[k].body < 0)
            return gp_fail(p, p->syms[k].ref_at, "undefined rule '%s'", p->syms[k].name);
    int root = -1;
    for (int k = 0; k < p->n_syms; k++)
        if (strcmp(p->syms[k].name, "root") == 0)
            root = k;
    if (root < 0) {
        p->bad = 1;
        return err_set(p->e, "gbnf: the grammar has no 'root' rule");
    }
    for (int k = 0; k < p->n_syms; k++)
        gir_define(p->g, p->syms[k].rule, p->syms[k].body);
    gir_set_root(p->g, p->syms[root].rule);
    return gir_failed(p->g) ? -1 : 0;
}

/* The text must be valid UTF-8 without NUL bytes (llama.cpp reads a C
 * string, where a NUL would end the grammar early). */
static int check_text(struct gp *p)
{
    size_t valid = utf8_valid_prefix(p->s, p->n);
    const char *nul = valid ? memchr(p->s, 0, valid) : NULL;
    if (nul)
        return gp_fail(p, (size_t)(nul - p->s), "a NUL byte in the grammar");
    if (valid < p->n)
        return gp_fail(p, valid, "invalid UTF-8");
    return 0;
}

int gbnf_to_gir(struct gir *g, const char *text, size_t len, struct err *e)
{
    if (gir_failed(g))
        return err_set(e, "gbnf: %s", g->error.msg);
    struct gp p = {.g = g, .s = text, .n = len, .e = e};
    int rc = check_text(&p);
    if (rc == 0) {
        skip_space(&p, 1);
        while (rc == 0 && !at_end(&p))
            rc = parse_rule(&p);
    }
    if (rc == 0)
        rc = finish(&p);
    if (rc < 0 && !p.bad)
        err_set(e, "gbnf: %s", gir_failed(g) ? g->error.msg : "the grammar could not be built");
    for (int k = 0; k < p.n_syms; k++)
        free(p.syms[k].name);
    free(p.syms);
    free(p.slots);
    return rc < 0 ? -1 : 0;
}
