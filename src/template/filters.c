/* Filters on scalars and strings, and the filter table (add a filter by
 * writing its function and one line in `filters` below). Semantics are
 * jinja2's (jinja2/filters.py) except tojson, which is transformers'
 * json.dumps(x, ensure_ascii=False, indent=None, separators=None,
 * sort_keys=False). `safe` returns a plain string: templates run without
 * autoescaping, so Markup only matters when it meets `+`, which chat
 * templates do not do. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/filters.h"

struct tval tmpl_soft_str(struct tval v)
{
    if (v.k == TV_STR) {
        tmpl_value_retain(v);
        return v;
    }
    struct sbuf b = {0};
    tmpl_value_write_str(&b, v);
    return tmpl_strbuf_take_str(&b);
}

static int no_args(struct rctx *c, int line, const char *name, const struct targs *a)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "filter '%s' takes no arguments", name);
    return 0;
}

static int case_filter(struct rctx *c, int line, struct tval v, const struct targs *a, struct tval *out,
                       int mode, const char *name)
{
    if (no_args(c, line, name, a))
        return -1;
    struct tval s = tmpl_soft_str(v);
    tmpl_str_case(s, mode, out);
    tmpl_value_release(s);
    return 0;
}

static FILTER(f_upper) { return case_filter(c, line, v, a, out, CASE_UPPER, "upper"); }

static FILTER(f_lower) { return case_filter(c, line, v, a, out, CASE_LOWER, "lower"); }

static FILTER(f_capitalize) { return case_filter(c, line, v, a, out, CASE_CAPITALIZE, "capitalize"); }

/* jinja2's title: words start after runs of -, whitespace, (, {, [ or < */
static FILTER(f_title)
{
    if (no_args(c, line, "title", a))
        return -1;
    struct tval s = tmpl_soft_str(v);
    struct sbuf b = {0};
    int start = 1;
    for (size_t i = 0; i < s.u.s->len;) {
        uint32_t cp = utf8_next(s.u.s->s, s.u.s->len, &i);
        if (cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || tmpl_isspace(cp)) {
            tmpl_strbuf_put_cp(&b, cp);
            start = 1;
        } else {
            if (start)
                tmpl_put_upper(&b, cp);
            else
                tmpl_put_lower(&b, cp);
            start = 0;
        }
    }
    tmpl_value_release(s);
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

static FILTER(f_trim)
{
    static const char *const names[] = {"chars"};
    struct tval s[1];
    if (tmpl_args_bind(c, line, "trim", a, names, 1, s))
        return -1;
    const char *chars = NULL;
    size_t nchars = 0, lo, hi;
    if (s[0].k == TV_STR) {
        chars = s[0].u.s->s;
        nchars = s[0].u.s->len;
    } else if (s[0].k != TV_MISSING && s[0].k != TV_NONE) {
        return tmpl_err(c, line, "strip arg must be None or str");
    }
    struct tval str = tmpl_soft_str(v);
    tmpl_strip(str.u.s->s, str.u.s->len, chars, nchars, 3, &lo, &hi);
    *out = tmpl_value_str(str.u.s->s + lo, hi - lo);
    tmpl_value_release(str);
    return 0;
}

static FILTER(f_string)
{
    if (no_args(c, line, "string", a))
        return -1;
    *out = tmpl_soft_str(v);
    return 0;
}

static FILTER(f_escape)
{
    if (no_args(c, line, "escape", a))
        return -1;
    struct tval s = tmpl_soft_str(v);
    struct sbuf b = {0};
    for (size_t i = 0; i < s.u.s->len; i++) {
        char ch = s.u.s->s[i];
        if (ch == '&')
            tmpl_strbuf_puts(&b, "&amp;");
        else if (ch == '<')
            tmpl_strbuf_puts(&b, "&lt;");
        else if (ch == '>')
            tmpl_strbuf_puts(&b, "&gt;");
        else if (ch == '"')
            tmpl_strbuf_puts(&b, "&#34;");
        else if (ch == '\'')
            tmpl_strbuf_puts(&b, "&#39;");
        else
            tmpl_strbuf_putc(&b, ch);
    }
    tmpl_value_release(s);
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

static FILTER(f_replace)
{
    static const char *const names[] = {"old", "new", "count"};
    struct tval s[3];
    int64_t count = -1;
    if (tmpl_args_bind(c, line, "replace", a, names, 3, s))
        return -1;
    if (s[0].k == TV_MISSING || s[1].k == TV_MISSING)
        return tmpl_err(c, line, "replace() missing required argument");
    if (s[2].k != TV_MISSING && s[2].k != TV_NONE && tmpl_arg_int(c, line, "replace", s[2], &count))
        return -1;
    struct tval str = tmpl_soft_str(v), o = tmpl_soft_str(s[0]), n = tmpl_soft_str(s[1]);
    int rc = tmpl_str_replace(c, line, str, o, n, count, out);
    tmpl_value_release(str);
    tmpl_value_release(o);
    tmpl_value_release(n);
    return rc;
}

struct indent_ctx {
    struct sbuf *b;
    const char *ind;
    size_t nind;
    int first_line, blank;
};

static void indent_line(void *p, const char *s, size_t n)
{
    struct indent_ctx *ic = p;
    if (!ic->first_line) {
        tmpl_strbuf_putc(ic->b, '\n');
        if (n || ic->blank)
            tmpl_strbuf_put(ic->b, ic->ind, ic->nind);
    }
    ic->first_line = 0;
    tmpl_strbuf_put(ic->b, s, n);
}

static FILTER(f_indent)
{
    static const char *const names[] = {"width", "first", "blank"};
    struct tval s[3];
    if (tmpl_args_bind(c, line, "indent", a, names, 3, s))
        return -1;
    struct sbuf ind = {0};
    if (s[0].k == TV_STR) {
        tmpl_strbuf_put(&ind, s[0].u.s->s, s[0].u.s->len);
    } else {
        int64_t w = 4;
        if (s[0].k != TV_MISSING && tmpl_arg_int(c, line, "indent", s[0], &w))
            return -1;
        for (int64_t i = 0; i < w && i < 4096; i++)
            tmpl_strbuf_putc(&ind, ' ');
    }
    if (v.k == TV_UNDEF) {
        tmpl_strbuf_free(&ind);
        return tmpl_eval_undefined_error(c, line, v);
    }
    if (v.k != TV_STR) {
        tmpl_strbuf_free(&ind);
        return tmpl_err(c, line, "unsupported operand type(s) for +=: '%s' and 'str'",
                        tmpl_value_type_name(v));
    }
    struct sbuf text = {0}, b = {0};
    tmpl_strbuf_put(&text, v.u.s->s, v.u.s->len);
    tmpl_strbuf_putc(&text, '\n'); /* jinja2's quirk for splitlines */
    struct indent_ctx ic = {&b, ind.p ? ind.p : "", ind.n, 1,
                            s[2].k != TV_MISSING && tmpl_value_truthy(s[2])};
    tmpl_splitlines(text.p, text.n, indent_line, &ic);
    if (ic.first_line) /* no lines at all */
        tmpl_strbuf_put(&b, "", 0);
    struct sbuf r = {0};
    if (s[1].k != TV_MISSING && tmpl_value_truthy(s[1]))
        tmpl_strbuf_put(&r, ind.p ? ind.p : "", ind.n);
    tmpl_strbuf_put(&r, b.p ? b.p : "", b.n);
    tmpl_strbuf_free(&text);
    tmpl_strbuf_free(&b);
    tmpl_strbuf_free(&ind);
    *out = tmpl_strbuf_take_str(&r);
    return 0;
}

static FILTER(f_center)
{
    static const char *const names[] = {"width"};
    struct tval s[1];
    int64_t w = 80;
    if (tmpl_args_bind(c, line, "center", a, names, 1, s) ||
        (s[0].k != TV_MISSING && tmpl_arg_int(c, line, "center", s[0], &w)))
        return -1;
    struct tval str = tmpl_soft_str(v);
    int64_t len = (int64_t)str.u.s->ncp;
    if (w <= len || w > (int64_t)TMPL_MAX_STR) {
        *out = str;
        return 0;
    }
    int64_t pad = w - len, left = pad / 2 + (pad & w & 1);
    struct sbuf b = {0};
    for (int64_t i = 0; i < left; i++)
        tmpl_strbuf_putc(&b, ' ');
    tmpl_strbuf_put(&b, str.u.s->s, str.u.s->len);
    for (int64_t i = left; i < pad; i++)
        tmpl_strbuf_putc(&b, ' ');
    tmpl_value_release(str);
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

/* truncate(length=255, killwords=False, end='...', leeway=5) */
static FILTER(f_truncate)
{
    static const char *const names[] = {"length", "killwords", "end", "leeway"};
    struct tval s[4];
    int64_t length = 255, leeway = 5;
    if (tmpl_args_bind(c, line, "truncate", a, names, 4, s) ||
        (s[0].k != TV_MISSING && tmpl_arg_int(c, line, "truncate", s[0], &length)) ||
        (s[3].k != TV_MISSING && s[3].k != TV_NONE && tmpl_arg_int(c, line, "truncate", s[3], &leeway)))
        return -1;
    struct tval str = tmpl_soft_str(v),
                end = s[2].k == TV_MISSING ? tmpl_value_str("...", 3) : tmpl_soft_str(s[2]);
    int64_t n = (int64_t)str.u.s->ncp, nend = (int64_t)end.u.s->ncp;
    if (length < nend) {
        tmpl_value_release(str);
        tmpl_value_release(end);
        return tmpl_err(c, line, "expected length >= %lld, got %lld", (long long)nend, (long long)length);
    }
    if (n <= length + leeway) {
        tmpl_value_release(end);
        *out = str;
        return 0;
    }
    size_t cut = utf8_offset(str.u.s->s, str.u.s->len, (size_t)(length - nend));
    if (!(s[1].k != TV_MISSING && tmpl_value_truthy(s[1]))) { /* drop the last, partial word */
        const char *sp = NULL;
        for (size_t i = cut; i-- > 0;)
            if (str.u.s->s[i] == ' ') {
                sp = str.u.s->s + i;
                break;
            }
        if (sp)
            cut = (size_t)(sp - str.u.s->s);
    }
    struct sbuf b = {0};
    tmpl_strbuf_put(&b, str.u.s->s, cut);
    tmpl_strbuf_put(&b, end.u.s->s, end.u.s->len);
    tmpl_value_release(str);
    tmpl_value_release(end);
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

static FILTER(f_wordcount)
{
    if (no_args(c, line, "wordcount", a))
        return -1;
    struct tval s = tmpl_soft_str(v);
    int64_t n = 0;
    int in_word = 0;
    for (size_t i = 0; i < s.u.s->len;) {
        uint32_t cp = utf8_next(s.u.s->s, s.u.s->len, &i);
        int w = cp == '_' || tmpl_isalpha(cp) || tmpl_isdigit(cp);
        n += w && !in_word;
        in_word = w;
    }
    tmpl_value_release(s);
    *out = tmpl_value_int(n);
    return 0;
}

static FILTER(f_format)
{
    if (a->npos && a->nkw)
        return tmpl_err(c, line, "can't handle positional and keyword arguments at the same time");
    struct tval fmt = tmpl_soft_str(v), args;
    if (a->nkw) {
        args = tmpl_value_dict_new((size_t)a->nkw);
        for (int i = 0; i < a->nkw; i++) {
            tmpl_value_retain(a->kw[i]);
            tmpl_dict_set(args.u.d, tmpl_value_cstr(a->kwn[i]), a->kw[i]);
        }
    } else {
        args = tmpl_value_list_new(TL_TUPLE, (size_t)a->npos);
        for (int i = 0; i < a->npos; i++) {
            tmpl_value_retain(a->pos[i]);
            tmpl_list_push(args.u.l, a->pos[i]);
        }
    }
    int rc = tmpl_percent_format(c, line, fmt, args, out);
    tmpl_value_release(fmt);
    tmpl_value_release(args);
    return rc;
}

/* ------------------------------------------------------------- numbers */

/* Python float(str): optional sign, digits with single underscores, inf/nan. */
static int parse_py_float(const char *s, size_t n, double *out)
{
    size_t lo, hi;
    tmpl_strip(s, n, NULL, 0, 3, &lo, &hi);
    if (lo == hi || hi - lo > 400)
        return -1;
    char buf[512];
    size_t k = 0;
    for (size_t i = lo; i < hi; i++) {
        char ch = s[i];
        if (ch == '_') {
            if (i == lo || i + 1 >= hi || !(s[i - 1] >= '0' && s[i - 1] <= '9') ||
                !(s[i + 1] >= '0' && s[i + 1] <= '9'))
                return -1;
            continue;
        }
        if (!strchr("0123456789+-.eEinfatyINFATY", ch))
            return -1;
        buf[k++] = ch;
    }
    buf[k] = 0;
    const char *p = buf + (buf[0] == '+' || buf[0] == '-');
    if (strncasecmp(p, "inf", 3) && strncasecmp(p, "nan", 3)) {
        /* digits[.digits][e[+-]digits] with at least one digit in the mantissa */
        const char *q = p;
        int digits = 0;
        while (*q >= '0' && *q <= '9')
            q++, digits++;
        if (*q == '.')
            for (q++; *q >= '0' && *q <= '9'; q++)
                digits++;
        if (!digits)
            return -1;
        if (*q == 'e' || *q == 'E') {
            q++;
            if (*q == '+' || *q == '-')
                q++;
            if (!(*q >= '0' && *q <= '9'))
                return -1;
            while (*q >= '0' && *q <= '9')
                q++;
        }
        if (*q)
            return -1;
    } else if (strcasecmp(p, "inf") && strcasecmp(p, "infinity") && strcasecmp(p, "nan")) {
        return -1;
    }
    *out = strtod(buf, NULL);
    return 0;
}

/* Python int(str, base) */
static int parse_py_int(const char *s, size_t n, int base, int64_t *out)
{
    size_t lo, hi;
    tmpl_strip(s, n, NULL, 0, 3, &lo, &hi);
    int neg = 0;
    if (lo < hi && (s[lo] == '+' || s[lo] == '-'))
        neg = s[lo++] == '-';
    if (hi - lo >= 2 && s[lo] == '0') {
        char p = (char)(s[lo + 1] | 32);
        int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (pb && (base == pb || base == 0)) {
            base = pb;
            lo += 2;
            if (lo < hi && s[lo] == '_')
                lo++;
        }
    }
    if (base == 0)
        base = 10;
    if (lo >= hi)
        return -1;
    int64_t v = 0;
    for (size_t i = lo; i < hi; i++) {
        char ch = s[i];
        if (ch == '_' && i > lo && i + 1 < hi && s[i + 1] != '_')
            continue;
        int d = ch >= '0' && ch <= '9'                 ? ch - '0'
                : (ch | 32) >= 'a' && (ch | 32) <= 'z' ? (ch | 32) - 'a' + 10
                                                       : 99;
        if (d >= base)
            return -1;
        if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
            return -1;
    }
    *out = neg ? -v : v;
    return 0;
}

static FILTER(f_int)
{
    static const char *const names[] = {"default", "base"};
    struct tval s[2];
    int64_t base = 10, i;
    double f;
    if (tmpl_args_bind(c, line, "int", a, names, 2, s) ||
        (s[1].k != TV_MISSING && tmpl_arg_int(c, line, "int", s[1], &base)))
        return -1;
    switch (v.k) {
    case TV_UNDEF:
        return tmpl_eval_undefined_error(c, line, v);
    case TV_INT:
    case TV_BOOL:
        *out = tmpl_value_int(v.k == TV_INT ? v.u.i : v.u.b);
        return 0;
    case TV_FLOAT:
        if (isfinite(v.u.f) && fabs(v.u.f) < 9.2e18) {
            *out = tmpl_value_int((int64_t)v.u.f);
            return 0;
        }
        break;
    case TV_STR:
        if (!parse_py_int(v.u.s->s, v.u.s->len, (int)base, &i)) {
            *out = tmpl_value_int(i);
            return 0;
        }
        if (!parse_py_float(v.u.s->s, v.u.s->len, &f) && isfinite(f) && fabs(f) < 9.2e18) {
            *out = tmpl_value_int((int64_t)f);
            return 0;
        }
        break;
    default:
        break;
    }
    if (s[0].k == TV_MISSING) {
        *out = tmpl_value_int(0);
    } else {
        *out = s[0];
        tmpl_value_retain(*out);
    }
    return 0;
}

static FILTER(f_float)
{
    static const char *const names[] = {"default"};
    struct tval s[1];
    double f;
    if (tmpl_args_bind(c, line, "float", a, names, 1, s))
        return -1;
    if (v.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, v);
    if (tmpl_value_is_num(v)) {
        *out = tmpl_value_float(tmpl_value_num(v));
        return 0;
    }
    if (v.k == TV_STR && !parse_py_float(v.u.s->s, v.u.s->len, &f)) {
        *out = tmpl_value_float(f);
        return 0;
    }
    if (s[0].k == TV_MISSING) {
        *out = tmpl_value_float(0.0);
    } else {
        *out = s[0];
        tmpl_value_retain(*out);
    }
    return 0;
}

static FILTER(f_abs)
{
    if (no_args(c, line, "abs", a))
        return -1;
    if (v.k == TV_INT || v.k == TV_BOOL) {
        int64_t i = v.k == TV_INT ? v.u.i : v.u.b;
        if (i == INT64_MIN)
            return tmpl_err(c, line, "integer overflow");
        *out = tmpl_value_int(i < 0 ? -i : i);
        return 0;
    }
    if (v.k == TV_FLOAT) {
        *out = tmpl_value_float(fabs(v.u.f));
        return 0;
    }
    return tmpl_err(c, line, "bad operand type for abs(): '%s'", tmpl_value_type_name(v));
}

static double round_half_even(double x, int64_t prec)
{
    if (!isfinite(x) || prec > 300)
        return x;
    if (prec < 0) {
        double p = pow(10.0, (double)-prec);
        return nearbyint(x / p) * p;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
    return strtod(buf, NULL);
}

static FILTER(f_round)
{
    static const char *const names[] = {"precision", "method"};
    struct tval s[2];
    int64_t prec = 0;
    if (tmpl_args_bind(c, line, "round", a, names, 2, s) ||
        (s[0].k != TV_MISSING && tmpl_arg_int(c, line, "round", s[0], &prec)))
        return -1;
    const char *method = s[1].k == TV_STR ? s[1].u.s->s : "common";
    if (strcmp(method, "common") && strcmp(method, "ceil") && strcmp(method, "floor"))
        return tmpl_err(c, line, "method must be common, ceil or floor");
    if (v.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, v);
    if (!tmpl_value_is_num(v))
        return tmpl_err(c, line, "type %s doesn't define __round__ method", tmpl_value_type_name(v));
    if (!strcmp(method, "common")) {
        if (v.k != TV_FLOAT && prec >= 0) {
            *out = tmpl_value_int(v.k == TV_INT ? v.u.i : v.u.b);
            return 0;
        }
        *out = tmpl_value_float(round_half_even(tmpl_value_num(v), prec));
        return 0;
    }
    double p = pow(10.0, (double)prec), x = tmpl_value_num(v) * p;
    *out = tmpl_value_float((method[0] == 'c' ? ceil(x) : floor(x)) / p);
    return 0;
}

static FILTER(f_default)
{
    static const char *const names[] = {"default_value", "boolean"};
    struct tval s[2];
    if (tmpl_args_bind(c, line, "default", a, names, 2, s))
        return -1;
    int boolean = s[1].k != TV_MISSING && tmpl_value_truthy(s[1]);
    if (v.k == TV_UNDEF || (boolean && !tmpl_value_truthy(v))) {
        if (s[0].k == TV_MISSING) {
            *out = tmpl_value_str("", 0);
            return 0;
        }
        *out = s[0];
    } else {
        *out = v;
    }
    tmpl_value_retain(*out);
    return 0;
}

static FILTER(f_safe)
{
    if (no_args(c, line, "safe", a))
        return -1;
    *out = tmpl_soft_str(v);
    return 0;
}

static FILTER(f_attr)
{
    if (a->npos != 1 || a->nkw || a->pos[0].k != TV_STR)
        return tmpl_err(c, line, "attr() takes one attribute name");
    const char *name = a->pos[0].u.s->s;
    if (v.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, v);
    if (v.k == TV_NS || v.k == TV_LOOP)
        return tmpl_eval_getattr(c, line, v, name, out);
    if (tmpl_method_lookup(c, line, v, name, out))
        return 0;
    *out = tmpl_value_undef_hint("'%s object' has no attribute '%s'", tmpl_value_type_name(v), name);
    return 0;
}

static FILTER(f_tojson)
{
    static const char *const names[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
    struct tval s[4];
    if (tmpl_args_bind(c, line, "tojson", a, names, 4, s))
        return -1;
    struct json_opts o = {.indent = -1};
    o.ensure_ascii = s[0].k != TV_MISSING && tmpl_value_truthy(s[0]);
    o.sort_keys = s[3].k != TV_MISSING && tmpl_value_truthy(s[3]);
    if (s[1].k == TV_STR) {
        o.indent_s = s[1].u.s->s;
    } else if (s[1].k != TV_MISSING && s[1].k != TV_NONE) {
        int64_t ind;
        if (tmpl_arg_int(c, line, "tojson", s[1], &ind))
            return -1;
        o.indent = ind < 0 ? 0 : ind > 1024 ? 1024 : (int)ind;
    }
    int pretty = o.indent >= 0 || o.indent_s;
    o.item_sep = pretty ? "," : ", ";
    o.key_sep = ": ";
    if (s[2].k != TV_MISSING && s[2].k != TV_NONE) {
        if (s[2].k != TV_LIST || s[2].u.l->n != 2 || s[2].u.l->v[0].k != TV_STR || s[2].u.l->v[1].k != TV_STR)
            return tmpl_err(c, line, "tojson(): separators must be a pair of strings");
        o.item_sep = s[2].u.l->v[0].u.s->s;
        o.key_sep = s[2].u.l->v[1].u.s->s;
    }
    struct sbuf b = {0};
    char msg[256];
    if (tmpl_value_write_json(&b, v, &o, msg, sizeof msg)) {
        tmpl_strbuf_free(&b);
        return tmpl_err(c, line, "%s", msg);
    }
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

static const struct filter_def filters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", tfilt_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", tfilt_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", tfilt_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", tfilt_first},
    {"float", f_float},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"items", tfilt_items},
    {"join", tfilt_join},
    {"last", tfilt_last},
    {"length", tfilt_length},
    {"list", tfilt_list},
    {"lower", f_lower},
    {"map", tfilt_map},
    {"max", tfilt_max},
    {"min", tfilt_min},
    {"reject", tfilt_reject},
    {"rejectattr", tfilt_rejectattr},
    {"replace", f_replace},
    {"reverse", tfilt_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", tfilt_select},
    {"selectattr", tfilt_selectattr},
    {"slice", tfilt_slice},
    {"sort", tfilt_sort},
    {"string", f_string},
    {"sum", tfilt_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", tfilt_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

const struct filter_def *tmpl_filter_find(const char *name)
{
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (!strcmp(filters[i].name, name))
            return &filters[i];
    return NULL;
}
