/* Python's classification of characters (str.isspace, upper/lower,
 * isprintable for repr), over core/utf8.h's decoder. Strings reaching here
 * are valid UTF-8 (jansson validates its input; the lexer copies template
 * bytes as they are).
 *
 * Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic and
 * fullwidth Latin, plus Python's ß -> SS; other scripts are left unchanged.
 * Whitespace is Python's full set, which is what strip()/split() and
 * jinja2's whitespace control use. */
#include <string.h>

#include "template/internal.h"

int tmpl_isspace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* Simple case mapping; returns cp itself when it has no mapping. */
static uint32_t map_upper(uint32_t c)
{
    if (c >= 'a' && c <= 'z')
        return c - 32;
    if (c < 0xB5)
        return c;
    if (c == 0xB5)
        return 0x39C;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7)
        return c - 32;
    if (c == 0xFF)
        return 0x178;
    if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
        return (c & 1) ? c - 1 : c;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
        return (c & 1) ? c : c - 1;
    if (c == 0x131)
        return 'I';
    if (c == 0x17F)
        return 'S';
    if (c >= 0x3B1 && c <= 0x3C9)
        return c == 0x3C2 ? 0x3A3 : c - 32;
    if (c == 0x3AC)
        return 0x386;
    if (c >= 0x3AD && c <= 0x3AF)
        return c - 37;
    if (c == 0x3CC)
        return 0x38C;
    if (c == 0x3CD || c == 0x3CE)
        return c - 63;
    if (c >= 0x430 && c <= 0x44F)
        return c - 32;
    if (c >= 0x450 && c <= 0x45F)
        return c - 80;
    if (c >= 0xFF41 && c <= 0xFF5A)
        return c - 32;
    return c;
}

static uint32_t map_lower(uint32_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c + 32;
    if (c < 0xC0)
        return c;
    if (c <= 0xDE && c != 0xD7)
        return c + 32;
    if (c == 0x178)
        return 0xFF;
    if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
        return (c & 1) ? c : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
        return (c & 1) ? c + 1 : c;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2)
        return c + 32;
    if (c == 0x386)
        return 0x3AC;
    if (c >= 0x388 && c <= 0x38A)
        return c + 37;
    if (c == 0x38C)
        return 0x3CC;
    if (c == 0x38E || c == 0x38F)
        return c + 63;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 80;
    if (c >= 0xFF21 && c <= 0xFF3A)
        return c + 32;
    return c;
}

int tmpl_isupper(uint32_t c) { return map_lower(c) != c; }

int tmpl_islower(uint32_t c) { return map_upper(c) != c || c == 0xDF || c == 0x138; }

int tmpl_isdigit(uint32_t c) { return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19); }

int tmpl_isalpha(uint32_t c)
{
    if (c < 0x80)
        return (c | 32) >= 'a' && (c | 32) <= 'z';
    if (tmpl_isupper(c) || tmpl_islower(c))
        return 1;
    return c == 0xAA || c == 0xBA || (c >= 0x180 && c <= 0x24F) ||
           (c >= 0x370 && c <= 0x3FF && c != 0x37E && c != 0x387) || (c >= 0x400 && c <= 0x481) ||
           (c >= 0x48A && c <= 0x52F) || (c >= 0x5D0 && c <= 0x5EA) || (c >= 0x620 && c <= 0x64A) ||
           (c >= 0x904 && c <= 0x939) || (c >= 0xE01 && c <= 0xE30) || (c >= 0x3041 && c <= 0x3096) ||
           (c >= 0x30A1 && c <= 0x30FA) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0x20000 && c <= 0x2FA1F);
}

int tmpl_isprintable(uint32_t c)
{
    if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD)
        return 0;
    if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
        (c >= 0x205F && c <= 0x206F) || c == 0x3000 || (c >= 0xD800 && c <= 0xF8FF) || c == 0xFEFF ||
        (c >= 0xFFF0 && c <= 0xFFFB) || c == 0xFFFE || c == 0xFFFF || (c >= 0xE0000 && c <= 0xE0FFF) ||
        c >= 0xF0000 || c == 0x61C || c == 0x180E)
        return 0;
    return 1;
}

void tmpl_put_upper(struct sbuf *b, uint32_t c)
{
    if (c == 0xDF) {
        tmpl_strbuf_put(b, "SS", 2);
        return;
    }
    tmpl_strbuf_put_cp(b, map_upper(c));
}

void tmpl_put_lower(struct sbuf *b, uint32_t c)
{
    if (c == 0x130) { /* İ -> i + combining dot above */
        tmpl_strbuf_putc(b, 'i');
        tmpl_strbuf_put_cp(b, 0x307);
        return;
    }
    tmpl_strbuf_put_cp(b, map_lower(c));
}

static int in_chars(uint32_t c, const char *chars, size_t nchars)
{
    if (!chars)
        return tmpl_isspace(c);
    for (size_t i = 0; i < nchars;)
        if (utf8_next(chars, nchars, &i) == c)
            return 1;
    return 0;
}

void tmpl_strip(const char *s, size_t n, const char *chars, size_t nchars, int which, size_t *start,
              size_t *end)
{
    size_t a = 0, z = n;
    if (which & 1) {
        while (a < z) {
            size_t i = a;
            if (!in_chars(utf8_next(s, n, &i), chars, nchars))
                break;
            a = i;
        }
    }
    if (which & 2) {
        while (z > a) {
            const size_t p = a + utf8_prev(s + a, z - a);
            size_t i = p;
            if (!in_chars(utf8_next(s, n, &i), chars, nchars))
                break;
            z = p;
        }
    }
    *start = a;
    *end = z;
}

static int is_line_break(uint32_t c)
{
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
           c == 0x85 || c == 0x2028 || c == 0x2029;
}

void tmpl_splitlines(const char *s, size_t n, void (*fn)(void *ctx, const char *line, size_t len), void *ctx)
{
    size_t start = 0, i = 0;
    while (i < n) {
        size_t at = i;
        uint32_t c = utf8_next(s, n, &i);
        if (!is_line_break(c))
            continue;
        fn(ctx, s + start, at - start);
        if (c == '\r' && i < n && s[i] == '\n')
            i++;
        start = i;
    }
    if (start < n)
        fn(ctx, s + start, n - start);
}
