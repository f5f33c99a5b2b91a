/* Template lexer: jinja2's Lexer as transformers configures it
 * (trim_blocks, lstrip_blocks, keep_trailing_newline off).
 *
 * The source is first normalised: \r\n and \r become \n and one trailing
 * newline is dropped. Text between tags becomes TK_DATA after whitespace
 * control: `{%-`/`{{-`/`{#-` strip all whitespace before the tag; otherwise,
 * for block and comment tags (not `{{`) without `+`, whitespace between the
 * last newline (or the start of a line) and the tag is removed
 * (lstrip_blocks). `-%}`/`-}}`/`-#}` eat all whitespace after the tag;
 * `%}`/`#}` eat one newline (trim_blocks) unless written `+%}`. Inside tags
 * the usual expression tokens are produced; `}}` and `%}` only end a tag
 * when brackets are balanced, as in jinja2. `{% raw %}` bodies are data. */
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"

struct lexer {
    const char *s;
    size_t n, pos;
    int line;
    int line_starting;
    struct token *t;
    int nt, cap;
    char bal[TMPL_MAX_PARSE_DEPTH];
    int nbal;
    struct err *e;
};

static int lex_err(struct lexer *L, const char *fmt, const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    return err_set(L->e, "template line %d: %s", L->line, msg);
}

static struct token *push(struct lexer *L, int type)
{
    if (L->nt == L->cap) {
        L->cap = L->cap ? L->cap * 2 : 64;
        L->t = xrealloc(L->t, (size_t)L->cap * sizeof *L->t);
    }
    struct token *t = &L->t[L->nt++];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    t->line = L->line;
    return t;
}

static char *dup_bytes(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static int count_nl(const char *s, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n';
    return c;
}

/* Length of Python whitespace starting at s[i]. */
static size_t ws_len(const char *s, size_t n, size_t i)
{
    size_t start = i;
    while (i < n) {
        size_t j = i;
        if (!tmpl_isspace(utf8_next(s, n, &j)))
            break;
        i = j;
    }
    return i - start;
}

static int all_ws(const char *s, size_t n) { return n > 0 && ws_len(s, n, 0) == n; }

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* (\d+_)*\d+ : digits with single underscores between them */
static size_t scan_digits(const char *s, size_t n, size_t i)
{
    size_t start = i;
    if (i >= n || !is_digit(s[i]))
        return 0;
    while (i < n) {
        if (is_digit(s[i]))
            i++;
        else if (s[i] == '_' && i + 1 < n && is_digit(s[i + 1]))
            i++;
        else
            break;
    }
    return i - start;
}

static size_t scan_float(const char *s, size_t n, size_t i)
{
    if (i > 0 && s[i - 1] == '.')
        return 0;
    size_t d = scan_digits(s, n, i);
    if (!d)
        return 0;
    size_t j = i + d;
    size_t frac = 0;
    if (j < n && s[j] == '.' && (frac = scan_digits(s, n, j + 1)) > 0)
        j += 1 + frac;
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-'))
            k++;
        size_t ed = scan_digits(s, n, k);
        if (ed)
            return k + ed - i;
    }
    return frac ? j - i : 0;
}

static int digit_ok(char c, int base)
{
    if (base == 2)
        return c == '0' || c == '1';
    if (base == 8)
        return c >= '0' && c <= '7';
    if (base == 16)
        return is_digit(c) || ((c | 32) >= 'a' && (c | 32) <= 'f');
    return is_digit(c);
}

/* integer_re; returns the length and the base */
static size_t scan_int(const char *s, size_t n, size_t i, int *base)
{
    if (i + 1 < n && s[i] == '0' && strchr("bBoOxX", s[i + 1]) && s[i + 1]) {
        int b = (s[i + 1] | 32) == 'b' ? 2 : (s[i + 1] | 32) == 'o' ? 8 : 16;
        size_t j = i + 2, cnt = 0;
        while (j < n) {
            if (digit_ok(s[j], b))
                j++, cnt++;
            else if (s[j] == '_' && j + 1 < n && digit_ok(s[j + 1], b))
                j++;
            else
                break;
        }
        if (cnt) {
            *base = b;
            return j - i;
        }
    }
    *base = 10;
    if (i < n && s[i] >= '1' && s[i] <= '9')
        return scan_digits(s, n, i);
    if (i < n && s[i] == '0') {
        size_t j = i + 1;
        while (j < n && (s[j] == '0' || (s[j] == '_' && j + 1 < n && s[j + 1] == '0')))
            j++;
        return j - i;
    }
    return 0;
}

static size_t scan_name(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n) {
        unsigned char c = (unsigned char)s[j];
        if (c < 0x80) {
            if (!(c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z') || (j > i && is_digit((char)c))))
                break;
            j++;
        } else {
            size_t k = j;
            if (tmpl_isspace(utf8_next(s, n, &k)))
                break;
            j = k;
        }
    }
    return j - i;
}

/* Python's 'unicode-escape' decoding of a string literal body (jinja2 runs
 * the literal through encode('ascii', 'backslashreplace') first, which is why a
 * backslash before a non-ASCII character stays literal). */
static int decode_string(struct lexer *L, const char *s, size_t n, struct token *t)
{
    struct sbuf b = {0};
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\' || i + 1 >= n) {
            tmpl_strbuf_putc(&b, s[i++]);
            continue;
        }
        char c = s[i + 1];
        i += 2;
        switch (c) {
        case '\n':
            break;
        case '\\':
        case '\'':
        case '"':
            tmpl_strbuf_putc(&b, c);
            break;
        case 'a':
            tmpl_strbuf_putc(&b, 7);
            break;
        case 'b':
            tmpl_strbuf_putc(&b, 8);
            break;
        case 'f':
            tmpl_strbuf_putc(&b, 12);
            break;
        case 'n':
            tmpl_strbuf_putc(&b, '\n');
            break;
        case 'r':
            tmpl_strbuf_putc(&b, '\r');
            break;
        case 't':
            tmpl_strbuf_putc(&b, '\t');
            break;
        case 'v':
            tmpl_strbuf_putc(&b, 11);
            break;
        case 'x':
        case 'u':
        case 'U': {
            int nd = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < nd; k++) {
                if (i + (size_t)k >= n || !digit_ok(s[i + k], 16)) {
                    tmpl_strbuf_free(&b);
                    return lex_err(L, "truncated \\%sXX escape", c == 'x' ? "x" : c == 'u' ? "u" : "U");
                }
                char h = s[i + k];
                cp = cp * 16 + (uint32_t)(is_digit(h) ? h - '0' : (h | 32) - 'a' + 10);
            }
            i += (size_t)nd;
            if (cp > 0x10FFFF) {
                tmpl_strbuf_free(&b);
                return lex_err(L, "%s", "illegal Unicode character");
            }
            if (cp >= 0xD800 && cp <= 0xDBFF && i + 5 < n && s[i] == '\\' && s[i + 1] == 'u') {
                uint32_t lo = 0;
                int ok = 1;
                for (int k = 0; k < 4; k++) {
                    char h = s[i + 2 + k];
                    if (!digit_ok(h, 16))
                        ok = 0;
                    else
                        lo = lo * 16 + (uint32_t)(is_digit(h) ? h - '0' : (h | 32) - 'a' + 10);
                }
                if (ok && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            tmpl_strbuf_put_cp(&b, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp);
            break;
        }
        case 'N':
            tmpl_strbuf_free(&b);
            return lex_err(L, "%s", "\\N{...} escapes are not supported");
        default:
            if (c >= '0' && c <= '7') {
                uint32_t cp = (uint32_t)(c - '0');
                for (int k = 0; k < 2 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(s[i++] - '0');
                tmpl_strbuf_put_cp(&b, cp);
            } else if ((unsigned char)c >= 0x80) {
                size_t j = i - 1;
                uint32_t cp = utf8_next(s, n, &j);
                i = j;
                tmpl_strbuf_putc(&b, '\\');
                if (cp <= 0xFF)
                    tmpl_strbuf_printf(&b, "x%02x", cp);
                else if (cp <= 0xFFFF)
                    tmpl_strbuf_printf(&b, "u%04x", cp);
                else
                    tmpl_strbuf_printf(&b, "U%08x", cp);
            } else {
                tmpl_strbuf_putc(&b, '\\');
                tmpl_strbuf_putc(&b, c);
            }
        }
    }
    t->len = b.n;
    t->s = b.p ? b.p : dup_bytes("", 0);
    return 0;
}

static const struct {
    const char *s;
    int op;
} ops[] = {
    {"//", OP_FLOORDIV}, {"**", OP_POW},   {"==", OP_EQ},      {"!=", OP_NE},      {">=", OP_GTEQ},
    {"<=", OP_LTEQ},     {"+", OP_ADD},    {"-", OP_SUB},      {"/", OP_DIV},      {"*", OP_MUL},
    {"%", OP_MOD},       {"~", OP_TILDE},  {"[", OP_LBRACKET}, {"]", OP_RBRACKET}, {"(", OP_LPAREN},
    {")", OP_RPAREN},    {"{", OP_LBRACE}, {"}", OP_RBRACE},   {">", OP_GT},       {"<", OP_LT},
    {"=", OP_ASSIGN},    {".", OP_DOT},    {":", OP_COLON},    {"|", OP_PIPE},     {",", OP_COMMA},
    {";", OP_SEMICOLON},
};

static int lex_operator(struct lexer *L)
{
    const char *p = L->s + L->pos;
    size_t left = L->n - L->pos;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        size_t len = strlen(ops[k].s);
        if (len > left || memcmp(p, ops[k].s, len))
            continue;
        char c = ops[k].s[0];
        if (len == 1 && (c == '(' || c == '[' || c == '{')) {
            if (L->nbal >= TMPL_MAX_PARSE_DEPTH)
                return lex_err(L, "%s", "brackets nested too deeply");
            L->bal[L->nbal++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
            char tmp[2] = {c, 0};
            if (!L->nbal)
                return lex_err(L, "unexpected '%s'", tmp);
            char want = L->bal[--L->nbal];
            if (want != c) {
                char msg[64];
                snprintf(msg, sizeof msg, "unexpected '%c', expected '%c'", c, want);
                return lex_err(L, "%s", msg);
            }
        }
        push(L, TK_OP)->op = (uint8_t)ops[k].op;
        L->pos += len;
        return 0;
    }
    char tmp[8] = {0};
    size_t j = L->pos;
    utf8_next(L->s, L->n, &j);
    memcpy(tmp, L->s + L->pos, j - L->pos < 7 ? j - L->pos : 7);
    return lex_err(L, "unexpected char '%s'", tmp);
}

/* Tokens inside {{ }} or {% %}. end_kind: '}' or '%'. Returns 0 at the tag's end. */
static int lex_tag(struct lexer *L, char end_kind)
{
    const char *s = L->s;
    size_t n = L->n;
    for (;;) {
        size_t p = L->pos;
        if (p >= n)
            return lex_err(L, "unexpected end of template, expected '%s'", end_kind == '%' ? "%}" : "}}");
        if (!L->nbal) {
            size_t end = 0;
            int trim_after = 0;
            if (end_kind == '%' && p + 2 < n && s[p] == '+' && s[p + 1] == '%' && s[p + 2] == '}') {
                end = p + 3;
            } else if (p + 2 < n && s[p] == '-' && s[p + 1] == end_kind && s[p + 2] == '}') {
                end = p + 3;
                trim_after = 1;
            } else if (p + 1 < n && s[p] == end_kind && s[p + 1] == '}') {
                end = p + 2;
                if (end_kind == '%' && end < n && s[end] == '\n')
                    end++;
            }
            if (end) {
                if (trim_after)
                    end += ws_len(s, n, end);
                push(L, end_kind == '%' ? TK_BLOCK_END : TK_VAR_END);
                L->line += count_nl(s + p, end - p);
                L->line_starting = s[end - 1] == '\n';
                L->pos = end;
                return 0;
            }
        }
        size_t w = ws_len(s, n, p);
        if (w) {
            L->line += count_nl(s + p, w);
            L->pos += w;
            continue;
        }
        size_t len;
        int base;
        if ((len = scan_float(s, n, p)) > 0) {
            char *num = xmalloc(len + 1);
            size_t k = 0;
            for (size_t i = p; i < p + len; i++)
                if (s[i] != '_')
                    num[k++] = s[i];
            num[k] = 0;
            push(L, TK_FLOAT)->f = strtod(num, NULL);
            free(num);
            L->pos += len;
        } else if ((len = scan_int(s, n, p, &base)) > 0) {
            size_t start = base == 10 ? p : p + 2;
            int64_t v = 0;
            for (size_t i = start; i < p + len; i++) {
                if (s[i] == '_')
                    continue;
                int d = is_digit(s[i]) ? s[i] - '0' : (s[i] | 32) - 'a' + 10;
                if (v > (INT64_MAX - d) / base)
                    return lex_err(L, "%s", "integer literal too large");
                v = v * base + d;
            }
            push(L, TK_INT)->i = v;
            L->pos += len;
        } else if ((len = scan_name(s, n, p)) > 0) {
            struct token *t = push(L, TK_NAME);
            t->s = dup_bytes(s + p, len);
            t->len = len;
            L->pos += len;
        } else if (s[p] == '\'' || s[p] == '"') {
            char q = s[p];
            size_t i = p + 1;
            while (i < n && s[i] != q)
                i += s[i] == '\\' ? 2 : 1;
            if (i >= n)
                return lex_err(L, "unexpected char '%s'", q == '"' ? "\"" : "'");
            struct token *t = push(L, TK_STRING);
            if (decode_string(L, s + p + 1, i - p - 1, t))
                return -1;
            L->line += count_nl(s + p, i + 1 - p);
            L->pos = i + 1;
        } else if (lex_operator(L)) {
            return -1;
        }
        L->line_starting = 0;
    }
}

static void emit_data(struct lexer *L, const char *s, size_t n)
{
    if (!n)
        return;
    struct token *t = push(L, TK_DATA);
    t->s = dup_bytes(s, n);
    t->len = n;
}

/* Strips the text before a tag per jinja2's rules; returns its new length. */
static size_t strip_before(struct lexer *L, const char *text, size_t n, char sign, int is_var,
                           int *nl_stripped)
{
    *nl_stripped = 0;
    if (sign == '-') {
        size_t a, z;
        tmpl_strip(text, n, NULL, 0, 2, &a, &z);
        *nl_stripped = count_nl(text + z, n - z);
        return z;
    }
    if (sign != '+' && !is_var) {
        size_t l_pos = 0;
        for (size_t i = n; i > 0; i--)
            if (text[i - 1] == '\n') {
                l_pos = i;
                break;
            }
        if ((l_pos > 0 || L->line_starting) && all_ws(text + l_pos, n - l_pos))
            return l_pos;
    }
    return n;
}

/* {% raw %} at s[q]: returns the length of the opening tag, 0 if not raw. */
static size_t match_raw_open(const char *s, size_t n, size_t q)
{
    size_t i = q + 2;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    i += ws_len(s, n, i);
    if (i + 3 > n || memcmp(s + i, "raw", 3))
        return 0;
    i += 3;
    i += ws_len(s, n, i);
    if (i + 2 < n && s[i] == '-' && s[i + 1] == '%' && s[i + 2] == '}')
        return i + 3 + ws_len(s, n, i + 3) - q;
    if (i + 1 < n && s[i] == '%' && s[i + 1] == '}')
        return i + 2 - q;
    return 0;
}

static int lex_raw_body(struct lexer *L)
{
    const char *s = L->s;
    size_t n = L->n;
    for (size_t q = L->pos; q + 1 < n; q++) {
        if (s[q] != '{' || s[q + 1] != '%')
            continue;
        size_t i = q + 2;
        char sign = 0;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            sign = s[i++];
        i += ws_len(s, n, i);
        if (i + 6 > n || memcmp(s + i, "endraw", 6))
            continue;
        i += 6;
        i += ws_len(s, n, i);
        size_t end = 0;
        if (i + 2 < n && s[i] == '+' && s[i + 1] == '%' && s[i + 2] == '}')
            end = i + 3;
        else if (i + 2 < n && s[i] == '-' && s[i + 1] == '%' && s[i + 2] == '}')
            end = i + 3 + ws_len(s, n, i + 3);
        else if (i + 1 < n && s[i] == '%' && s[i + 1] == '}')
            end = i + 2 + (i + 2 < n && s[i + 2] == '\n');
        if (!end)
            continue;
        int nl;
        size_t keep = strip_before(L, s + L->pos, q - L->pos, sign, 0, &nl);
        emit_data(L, s + L->pos, keep);
        L->line += count_nl(s + L->pos, keep) + nl;
        L->line += count_nl(s + q, end - q);
        L->line_starting = s[end - 1] == '\n';
        L->pos = end;
        return 0;
    }
    return lex_err(L, "%s", "missing end of raw directive");
}

static int lex_comment(struct lexer *L)
{
    const char *s = L->s;
    size_t n = L->n;
    for (size_t q = L->pos; q + 1 < n; q++) {
        if (s[q] != '#' || s[q + 1] != '}')
            continue;
        size_t end = q + 2;
        if (q > L->pos && s[q - 1] == '-')
            end += ws_len(s, n, end);
        else if (!(q > L->pos && s[q - 1] == '+') && end < n && s[end] == '\n')
            end++;
        L->line += count_nl(s + L->pos, end - L->pos);
        L->line_starting = s[end - 1] == '\n';
        L->pos = end;
        return 0;
    }
    return lex_err(L, "%s", "missing end of comment tag");
}

static int lex_all(struct lexer *L)
{
    const char *s = L->s;
    size_t n = L->n;
    while (L->pos < n) {
        size_t q = L->pos;
        while (q + 1 < n && !(s[q] == '{' && (s[q + 1] == '{' || s[q + 1] == '%' || s[q + 1] == '#')))
            q++;
        if (q + 1 >= n) {
            emit_data(L, s + L->pos, n - L->pos);
            L->line += count_nl(s + L->pos, n - L->pos);
            L->pos = n;
            break;
        }
        char kind = s[q + 1];
        char sign = q + 2 < n && (s[q + 2] == '-' || s[q + 2] == '+') ? s[q + 2] : 0;
        size_t raw = kind == '%' ? match_raw_open(s, n, q) : 0;
        int nl;
        size_t keep = strip_before(L, s + L->pos, q - L->pos, sign, kind == '{', &nl);
        emit_data(L, s + L->pos, keep);
        L->line += count_nl(s + L->pos, keep) + nl;
        if (raw) {
            L->line += count_nl(s + q, raw);
            L->line_starting = s[q + raw - 1] == '\n';
            L->pos = q + raw;
            if (lex_raw_body(L))
                return -1;
            continue;
        }
        L->line_starting = 0;
        L->pos = q + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            if (lex_comment(L))
                return -1;
        } else {
            push(L, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN);
            if (lex_tag(L, kind == '{' ? '}' : '%'))
                return -1;
        }
    }
    push(L, TK_EOF);
    return 0;
}

int tmpl_lex(const char *src, size_t len, struct token **toks, int *ntoks, struct err *e)
{
    /* normalise newlines; drop one trailing newline */
    char *norm = xmalloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            norm[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else {
            norm[n++] = src[i];
        }
    }
    if (n && norm[n - 1] == '\n')
        n--;
    norm[n] = 0;
    struct lexer L = {.s = norm, .n = n, .line = 1, .line_starting = 1, .e = e};
    int rc = lex_all(&L);
    free(norm);
    if (rc) {
        tmpl_tokens_free(L.t, L.nt);
        return -1;
    }
    *toks = L.t;
    *ntoks = L.nt;
    return 0;
}

void tmpl_tokens_free(struct token *toks, int n)
{
    for (int i = 0; i < n; i++)
        free(toks[i].s);
    free(toks);
}
