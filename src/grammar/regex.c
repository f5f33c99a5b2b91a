/* The regular-expression front end (regex.h): a recursive-descent parser
 * that builds the IR expression as it reads the pattern. Every character
 * a pattern can match (a literal, `.`, an escape, a class) becomes a set
 * of code points first, so one function decides how a set is written:
 * as its UTF-8 encodings, or, in JSON-string mode, as every way a JSON
 * string literal can spell its characters. Groups are the only recursion
 * (bounded by REGEX_MAX_DEPTH); sequences and alternations are loops, so
 * a long pattern costs no stack. */
#include "grammar/regex.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

enum { CP_MAX = 0x10FFFF, SUR_LO = 0xD800, SUR_HI = 0xDFFF };

/* --- code point sets ------------------------------------------------------ */

/* Inclusive [lo, hi] ranges; cset_norm makes them sorted, disjoint, not
 * adjacent and free of surrogates (which no UTF-8 text or JSON string
 * decodes to). */
struct cset {
    uint32_t *r;
    int n, cap;
};

static void cset_add(struct cset *s, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->r = xrealloc(s->r, (size_t)s->cap * 2 * sizeof(uint32_t));
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
}

static void cset_free(struct cset *s)
{
    free(s->r);
    memset(s, 0, sizeof(*s));
}

static int cmp_range(const void *a, const void *b)
{
    const uint32_t *p = a, *q = b;
    return p[0] < q[0] ? -1 : p[0] > q[0];
}

static void cset_norm(struct cset *s)
{
    qsort(s->r, (size_t)s->n, 2 * sizeof(uint32_t), cmp_range);
    struct cset out = {0};
    for (int i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1] > CP_MAX ? CP_MAX : s->r[2 * i + 1];
        if (lo > hi)
            continue;
        if (out.n > 0 && lo <= out.r[2 * out.n - 1] + 1) {
            if (hi > out.r[2 * out.n - 1])
                out.r[2 * out.n - 1] = hi;
        } else {
            cset_add(&out, lo, hi);
        }
    }
    struct cset res = {0};
    for (int i = 0; i < out.n; i++) {
        uint32_t lo = out.r[2 * i], hi = out.r[2 * i + 1];
        if (hi < SUR_LO || lo > SUR_HI) {
            cset_add(&res, lo, hi);
            continue;
        }
        if (lo < SUR_LO)
            cset_add(&res, lo, SUR_LO - 1);
        if (hi > SUR_HI)
            cset_add(&res, SUR_HI + 1, hi);
    }
    cset_free(&out);
    cset_free(s);
    *s = res;
}

/* The complement of normalized s among the Unicode scalar values. */
static void cset_invert(struct cset *s)
{
    struct cset out = {0};
    uint32_t next = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->r[2 * i] > next)
            cset_add(&out, next, s->r[2 * i] - 1);
        next = s->r[2 * i + 1] + 1;
    }
    if (next <= CP_MAX)
        cset_add(&out, next, CP_MAX);
    cset_free(s);
    *s = out;
    cset_norm(s);
}

/* out = a ∩ b, both normalized. */
static void cset_intersect(const struct cset *a, const struct cset *b, struct cset *out)
{
    int i = 0, j = 0;
    while (i < a->n && j < b->n) {
        uint32_t lo = a->r[2 * i] > b->r[2 * j] ? a->r[2 * i] : b->r[2 * j];
        uint32_t hi = a->r[2 * i + 1] < b->r[2 * j + 1] ? a->r[2 * i + 1] : b->r[2 * j + 1];
        if (lo <= hi)
            cset_add(out, lo, hi);
        if (a->r[2 * i + 1] < b->r[2 * j + 1])
            i++;
        else
            j++;
    }
}

static int cset_has(const struct cset *s, uint32_t c)
{
    for (int i = 0; i < s->n; i++)
        if (c >= s->r[2 * i] && c <= s->r[2 * i + 1])
            return 1;
    return 0;
}

/* \d \w \s (the ECMA-262 WhiteSpace and LineTerminator characters). */
static void cset_class_escape(struct cset *s, char letter)
{
    static const uint32_t space[] = {0x09,   0x0D,   0x20,   0x20,   0xA0,   0xA0,   0x1680,
                                     0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x202F,
                                     0x205F, 0x205F, 0x3000, 0x3000, 0xFEFF, 0xFEFF};
    struct cset t = {0};
    switch (letter | 0x20) {
    case 'd':
        cset_add(&t, '0', '9');
        break;
    case 'w':
        cset_add(&t, '0', '9');
        cset_add(&t, 'A', 'Z');
        cset_add(&t, '_', '_');
        cset_add(&t, 'a', 'z');
        break;
    default:
        for (size_t i = 0; i < sizeof(space) / sizeof(space[0]); i += 2)
            cset_add(&t, space[i], space[i + 1]);
        break;
    }
    cset_norm(&t);
    if (letter >= 'A' && letter <= 'Z')
        cset_invert(&t);
    for (int i = 0; i < t.n; i++)
        cset_add(s, t.r[2 * i], t.r[2 * i + 1]);
    cset_free(&t);
}

/* --- sets as IR: UTF-8, or JSON string content ---------------------------- */

/* One hex digit whose value is in [lo, hi], in either case. */
static int hex_digits(struct gir *g, unsigned lo, unsigned hi)
{
    struct byteset b = {{0}};
    for (unsigned v = lo; v <= hi; v++) {
        if (v < 10) {
            byteset_add(&b, '0' + v);
        } else {
            byteset_add(&b, 'a' + v - 10);
            byteset_add(&b, 'A' + v - 10);
        }
    }
    return gx_bytes(g, &b);
}

/* nd hex digits spelling a value in [lo, hi] (both below 16^nd): the
 * classic split of a numeric range into digit-wise ranges, so the set of
 * \uXXXX escapes of a large range stays a handful of nodes. */
static int hex_range(struct gir *g, unsigned lo, unsigned hi, int nd)
{
    if (nd == 1)
        return hex_digits(g, lo, hi);
    unsigned shift = 4u * (unsigned)(nd - 1), m = (1u << shift) - 1, dl = lo >> shift, dh = hi >> shift;
    if (dl == dh)
        return gx_seq2(g, hex_digits(g, dl, dl), hex_range(g, lo & m, hi & m, nd - 1));
    int alts[3], k = 0;
    if ((lo & m) != 0) {
        alts[k++] = gx_seq2(g, hex_digits(g, dl, dl), hex_range(g, lo & m, m, nd - 1));
        dl++;
    }
    if ((hi & m) != m) {
        alts[k++] = gx_seq2(g, hex_digits(g, dh, dh), hex_range(g, 0, hi & m, nd - 1));
        dh--;
    }
    if (dl <= dh)
        alts[k++] = gx_seq2(g, hex_digits(g, dl, dh), gx_repeat(g, hex_digits(g, 0, 15), nd - 1, nd - 1));
    return gx_alt(g, alts, k);
}

/* The escapes after "\u" of the astral code points [lo, hi]: a high
 * surrogate's four digits, "\u", a low surrogate's. Code points sharing a
 * high surrogate form one piece; a range crosses at most two partial
 * high surrogates and a run of full ones between. */
static int json_astral(struct gir *g, uint32_t lo, uint32_t hi)
{
    uint32_t a = lo - 0x10000, b = hi - 0x10000;
    uint32_t ha = a >> 10, hb = b >> 10, la = a & 0x3FF, lb = b & 0x3FF;
    uint32_t h0[3], h1[3], l0[3], l1[3];
    int k = 0;
    if (ha == hb) {
        h0[k] = h1[k] = ha, l0[k] = la, l1[k] = lb, k++;
    } else {
        h0[k] = h1[k] = ha, l0[k] = la, l1[k] = 0x3FF, k++;
        if (hb > ha + 1)
            h0[k] = ha + 1, h1[k] = hb - 1, l0[k] = 0, l1[k] = 0x3FF, k++;
        h0[k] = h1[k] = hb, l0[k] = 0, l1[k] = lb, k++;
    }
    int alts[3];
    for (int i = 0; i < k; i++) {
        int items[3] = {hex_range(g, 0xD800 + h0[i], 0xD800 + h1[i], 4), gx_str(g, "\\u"),
                        hex_range(g, 0xDC00 + l0[i], 0xDC00 + l1[i], 4)};
        alts[i] = gx_seq(g, items, 3);
    }
    return gx_alt(g, alts, k);
}

/* What may follow "\u" for the characters of s. */
static int json_u_escapes(struct gir *g, const struct cset *s)
{
    int *alts = xmalloc((size_t)(2 * s->n + 1) * sizeof(int)), k = 0;
    for (int i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (lo <= 0xFFFF)
            alts[k++] = hex_range(g, lo, hi < 0xFFFF ? hi : 0xFFFF, 4);
        if (hi >= 0x10000)
            alts[k++] = json_astral(g, lo > 0x10000 ? lo : 0x10000, hi);
    }
    int x = gx_alt(g, alts, k);
    free(alts);
    return x;
}

/* The characters of s as JSON string content: raw where JSON allows
 * (everything but controls, '"' and '\'), and every escape of each. */
static int json_set(struct gir *g, const struct cset *s)
{
    static const struct {
        uint32_t c;
        char letter;
    } short_esc[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {8, 'b'},
                     {12, 'f'},  {10, 'n'},    {13, 'r'},  {9, 't'}};
    struct cset plain = {0}, raw = {0};
    cset_add(&plain, 0x20, 0x21);
    cset_add(&plain, 0x23, 0x5B);
    cset_add(&plain, 0x5D, CP_MAX);
    cset_intersect(s, &plain, &raw);
    int raw_x = gx_codepoints(g, raw.r, raw.n);
    cset_free(&plain);
    cset_free(&raw);

    struct byteset letters = {{0}};
    for (size_t i = 0; i < sizeof(short_esc) / sizeof(short_esc[0]); i++)
        if (cset_has(s, short_esc[i].c))
            byteset_add(&letters, (unsigned char)short_esc[i].letter);
    int after = gx_alt2(g, gx_bytes(g, &letters), gx_seq2(g, gx_byte(g, 'u'), json_u_escapes(g, s)));
    return gx_alt2(g, raw_x, gx_seq2(g, gx_byte(g, '\\'), after));
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

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Exactly nd hex digits at p->i (consumed), or -1. */
static long fixed_hex(struct rx *p, int nd)
{
    long v = 0;
    for (int k = 0; k < nd; k++) {
        int h = hexval(peek_at(p, (size_t)k));
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    p->i += (size_t)nd;
    return v;
}

static int set_expr(struct rx *p, const struct cset *s)
{
    return p->json ? json_set(p->g, s) : gx_codepoints(p->g, s->r, s->n);
}

static int char_expr(struct rx *p, uint32_t c)
{
    struct cset s = {0};
    cset_add(&s, c, c);
    int x = set_expr(p, &s);
    cset_free(&s);
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
        for (int h; (h = hexval(peek(p))) >= 0; p->i++, nd++) {
            v = v * 16 + (uint32_t)h;
            if (v > CP_MAX)
                return rx_fail(p, "escape \\u{...} at offset %zu is past U+10FFFF", at);
        }
        if (nd == 0 || peek(p) != '}')
            return rx_fail(p, "escape \\u{...} at offset %zu needs hex digits and a '}'", at);
        p->i++;
        if (v >= SUR_LO && v <= SUR_HI)
            return rx_fail(p, "escape at offset %zu is a lone surrogate", at);
        *cp = v;
        return 0;
    }
    long v = fixed_hex(p, 4);
    if (v < 0)
        return rx_fail(p, "escape \\u at offset %zu needs four hex digits", at);
    if (v >= 0xDC00 && v <= SUR_HI)
        return rx_fail(p, "escape at offset %zu is a lone surrogate", at);
    if (v >= SUR_LO && v < 0xDC00) { /* a high surrogate: its low half must follow */
        long lo = -1;
        if (peek(p) == '\\' && peek_at(p, 1) == 'u') {
            p->i += 2;
            lo = fixed_hex(p, 4);
        }
        if (lo < 0xDC00 || lo > SUR_HI)
            return rx_fail(p, "escape at offset %zu is a lone surrogate", at);
        v = 0x10000 + ((v - SUR_LO) << 10) + (lo - 0xDC00);
    }
    *cp = (uint32_t)v;
    return 0;
}

enum { ESC_CHAR = 1, ESC_SET = 2 };

/* An escape at p->i (the backslash): ESC_CHAR with *cp, or ESC_SET with
 * the set added to set; -1 on error. */
static int parse_escape(struct rx *p, int in_class, struct cset *set, uint32_t *cp)
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
        cset_class_escape(set, (char)c);
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
        if (v < 0 || v > CP_MAX || (v >= SUR_LO && v <= SUR_HI))
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
static int class_atom(struct rx *p, struct cset *set, uint32_t *cp)
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
    struct cset cs = {0};
    for (;;) {
        if (at_end(p)) {
            cset_free(&cs);
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
            cset_free(&cs);
            return -1;
        }
        if (peek(p) == '-' && peek_at(p, 1) >= 0 && peek_at(p, 1) != ']') {
            p->i++;
            struct cset ignored = {0};
            int k2 = class_atom(p, &ignored, &hi);
            cset_free(&ignored);
            if (k2 < 0 || k != ESC_CHAR || k2 != ESC_CHAR || lo > hi) {
                cset_free(&cs);
                if (k2 < 0)
                    return -1;
                if (k != ESC_CHAR || k2 != ESC_CHAR)
                    return rx_fail(p, "character range at offset %zu has a class escape as an end", a_at);
                return rx_fail(p, "character range at offset %zu is out of order", a_at);
            }
            cset_add(&cs, lo, hi);
        } else if (k == ESC_CHAR) {
            cset_add(&cs, lo, lo);
        }
    }
    cset_norm(&cs);
    if (neg)
        cset_invert(&cs);
    int x = set_expr(p, &cs);
    cset_free(&cs);
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
        struct cset s = {0};
        cset_add(&s, 0, '\n' - 1);
        cset_add(&s, '\n' + 1, CP_MAX);
        cset_norm(&s);
        int x = set_expr(p, &s);
        cset_free(&s);
        return x;
    }
    uint32_t cp;
    if (c == '\\') {
        struct cset s = {0};
        int k = parse_escape(p, 0, &s, &cp);
        int x = -1;
        if (k == ESC_SET) {
            cset_norm(&s);
            x = set_expr(p, &s);
        } else if (k == ESC_CHAR) {
            x = char_expr(p, cp);
        }
        cset_free(&s);
        return x;
    }
    cp = utf8_next(p->s, p->n, &p->i);
    return char_expr(p, cp);
}

/* Any characters: what an unanchored side of a searched pattern allows. */
static int any_star(struct rx *p)
{
    struct cset s = {0};
    cset_add(&s, 0, CP_MAX);
    cset_norm(&s);
    int x = gx_star(p->g, set_expr(p, &s));
    cset_free(&s);
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
