/* Python string formatting reachable from templates: `"%s" % x` (and the
 * format filter) and str.format(). Conversions s r a d i u x X o c e E f F
 * g G with flags, width and precision; str.format fields by position, auto
 * number or name, with .attr/[key] lookups, !r/!s conversions and
 * [[fill]align][sign][#][0][width][,][.precision][type] specs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"

struct fspec {
    uint32_t fill;
    char align; /* '<', '>', '^', '=' or 0 (default) */
    char sign;  /* '+', ' ', '-' */
    int alt, zero, comma;
    int64_t width, prec; /* prec -1: none */
    char type;           /* 0: none */
};

/* The decimal count at s[*i..] (a width or precision), or -1 past
 * TMPL_MAX_WIDTH (a template asking for gigabytes of padding). */
static int64_t read_count(const char *s, size_t n, size_t *i)
{
    int64_t v = 0;
    for (; *i < n && s[*i] >= '0' && s[*i] <= '9'; (*i)++)
        if ((v = v * 10 + (s[*i] - '0')) > TMPL_MAX_WIDTH)
            return -1;
    return v;
}

static void pad_to(struct sbuf *out, const char *s, size_t n, const struct fspec *f, int numeric)
{
    size_t len = utf8_count(s, n);
    if (f->width <= 0 || (int64_t)len >= f->width) {
        tmpl_strbuf_put(out, s, n);
        return;
    }
    size_t padn = (size_t)f->width - len;
    char align = f->align ? f->align : numeric ? '>' : '<';
    uint32_t fill = f->fill ? f->fill : ' ';
    if (f->zero && numeric && !f->align) {
        align = '=';
        fill = '0';
    }
    size_t left = align == '>' ? padn : align == '^' ? padn / 2 : 0, right = padn - left;
    if (align == '=') {
        size_t signlen = n && (s[0] == '-' || s[0] == '+' || s[0] == ' ') ? 1 : 0;
        tmpl_strbuf_put(out, s, signlen);
        for (size_t i = 0; i < padn; i++)
            tmpl_strbuf_put_cp(out, fill);
        tmpl_strbuf_put(out, s + signlen, n - signlen);
        return;
    }
    for (size_t i = 0; i < left; i++)
        tmpl_strbuf_put_cp(out, fill);
    tmpl_strbuf_put(out, s, n);
    for (size_t i = 0; i < right; i++)
        tmpl_strbuf_put_cp(out, fill);
}

static void group_thousands(struct sbuf *b, const char *digits)
{
    const char *s = digits;
    if (*s == '-' || *s == '+' || *s == ' ')
        tmpl_strbuf_putc(b, *s++);
    size_t nd = strspn(s, "0123456789");
    for (size_t i = 0; i < nd; i++) {
        if (i && (nd - i) % 3 == 0)
            tmpl_strbuf_putc(b, ',');
        tmpl_strbuf_putc(b, s[i]);
    }
    tmpl_strbuf_puts(b, s + nd);
}

/* Formats one value per spec; percent selects %-format rules for ints from floats. */
static int format_one(struct rctx *c, int line, struct sbuf *out, struct tval v, const struct fspec *f,
                      int percent)
{
    char tmp[512];
    struct sbuf s = {0};
    int numeric = 0;
    char t = f->type;
    if (v.k == TV_UNDEF && t != 's' && t != 'r' && t != 'a' && t != 0)
        return tmpl_eval_undefined_error(c, line, v);
    if (t == 0 || t == 's' || t == 'r' || t == 'a') {
        if (t == 0 && tmpl_value_is_num(v) && v.k != TV_BOOL && !percent) {
            struct fspec g = *f;
            g.type = v.k == TV_INT ? 'd' : f->prec >= 0 ? 'g' : 0;
            if (g.type)
                return format_one(c, line, out, v, &g, percent);
            numeric = 1;
        }
        if (t == 'r' || t == 'a')
            tmpl_value_write_repr(&s, v);
        else
            tmpl_value_write_str(&s, v);
        if (f->prec >= 0 && s.n) {
            size_t cut = utf8_offset(s.p, s.n, (size_t)f->prec);
            s.n = cut;
        }
        if (numeric && (f->sign == '+' || f->sign == ' ') && s.n && s.p[0] != '-') {
            struct sbuf t2 = {0};
            tmpl_strbuf_putc(&t2, f->sign);
            tmpl_strbuf_put(&t2, s.p, s.n);
            tmpl_strbuf_free(&s);
            s = t2;
        }
    } else if (strchr("diuxXobc", t)) {
        int64_t i;
        if (v.k == TV_INT || v.k == TV_BOOL) {
            i = v.k == TV_INT ? v.u.i : v.u.b;
        } else if (v.k == TV_FLOAT && percent && strchr("diu", t) && isfinite(v.u.f)) {
            i = (int64_t)v.u.f;
        } else if (t == 'c' && v.k == TV_STR && v.u.s->ncp == 1) {
            pad_to(out, v.u.s->s, v.u.s->len, f, 0);
            return 0;
        } else {
            return tmpl_err(c, line, "%%%c format: an integer is required, not %s", t,
                            tmpl_value_type_name(v));
        }
        numeric = 1;
        if (t == 'c') {
            tmpl_strbuf_put_cp(&s, (uint32_t)i);
            numeric = 0;
        } else {
            const char *sg = i < 0 ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
            uint64_t u = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
            if (t == 'x' || t == 'X' || t == 'o') {
                const char *pre = !f->alt ? "" : t == 'x' ? "0x" : t == 'X' ? "0X" : "0o";
                snprintf(tmp, sizeof tmp,
                         t == 'x'   ? "%s%s%llx"
                         : t == 'X' ? "%s%s%llX"
                                    : "%s%s%llo",
                         sg, pre, (unsigned long long)u);
            } else if (t == 'b') {
                char bits[72];
                int nb = 0;
                do {
                    bits[nb++] = (char)('0' + (u & 1));
                    u >>= 1;
                } while (u);
                size_t k = (size_t)snprintf(tmp, sizeof tmp, "%s%s", sg, f->alt ? "0b" : "");
                while (nb)
                    tmp[k++] = bits[--nb];
                tmp[k] = 0;
            } else {
                snprintf(tmp, sizeof tmp, "%s%llu", sg, (unsigned long long)u);
            }
            if (f->comma)
                group_thousands(&s, tmp);
            else
                tmpl_strbuf_puts(&s, tmp);
        }
    } else if (strchr("eEfFgG%", t)) {
        if (!tmpl_value_is_num(v))
            return tmpl_err(c, line, "must be real number, not %s", tmpl_value_type_name(v));
        double x = tmpl_value_num(v);
        int prec = f->prec >= 0 ? (int)(f->prec > 100 ? 100 : f->prec) : 6;
        char fmt[16];
        if (t == '%')
            x *= 100;
        snprintf(fmt, sizeof fmt, "%%%s%s.*%c",
                 f->sign == '+'   ? "+"
                 : f->sign == ' ' ? " "
                                  : "",
                 f->alt ? "#" : "", t == '%' ? 'f' : t);
        snprintf(tmp, sizeof tmp, fmt, prec, x);
        if (t == '%')
            strncat(tmp, "%", sizeof tmp - strlen(tmp) - 1);
        if (f->comma)
            group_thousands(&s, tmp);
        else
            tmpl_strbuf_puts(&s, tmp);
        numeric = 1;
    } else {
        return tmpl_err(c, line, "unsupported format character '%c'", t);
    }
    pad_to(out, s.p ? s.p : "", s.n, f, numeric);
    tmpl_strbuf_free(&s);
    return 0;
}

/* ------------------------------------------------------------ percent */

int tmpl_percent_format(struct rctx *c, int line, struct tval fmt, struct tval args, struct tval *out)
{
    const struct tval *items = &args;
    size_t nitems = 1, next = 0;
    int is_map = args.k == TV_DICT;
    if (args.k == TV_LIST && args.u.l->sub == TL_TUPLE) {
        items = args.u.l->v;
        nitems = args.u.l->n;
    }
    const char *s = fmt.u.s->s;
    size_t n = fmt.u.s->len;
    struct sbuf b = {0};
    for (size_t i = 0; i < n;) {
        if (s[i] != '%') {
            tmpl_strbuf_putc(&b, s[i++]);
            continue;
        }
        i++;
        if (i < n && s[i] == '%') {
            tmpl_strbuf_putc(&b, '%');
            i++;
            continue;
        }
        struct fspec f = {.prec = -1};
        struct tval val;
        int have = 0;
        if (i < n && s[i] == '(') {
            size_t k = i + 1;
            while (k < n && s[k] != ')')
                k++;
            if (k >= n || !is_map) {
                tmpl_strbuf_free(&b);
                return tmpl_err(c, line, k >= n ? "incomplete format key" : "format requires a mapping");
            }
            struct tval key = tmpl_value_str(s + i + 1, k - i - 1);
            const struct tval *p = tmpl_dict_get(args.u.d, key);
            tmpl_value_release(key);
            if (!p) {
                tmpl_strbuf_free(&b);
                return tmpl_err(c, line, "format key not found");
            }
            val = *p;
            have = 1;
            i = k + 1;
        }
        for (; i < n && strchr("-+ #0", s[i]); i++) {
            if (s[i] == '-')
                f.align = '<';
            else if (s[i] == '0')
                f.zero = 1;
            else if (s[i] == '#')
                f.alt = 1;
            else
                f.sign = s[i];
        }
        f.width = read_count(s, n, &i);
        int too_big = f.width < 0;
        if (i < n && s[i] == '.') {
            i++;
            f.prec = read_count(s, n, &i);
            too_big |= f.prec < 0;
        }
        if (too_big) {
            tmpl_strbuf_free(&b);
            return tmpl_err(c, line, "format width or precision too large (at most %lld)",
                            (long long)TMPL_MAX_WIDTH);
        }
        if (i >= n) {
            tmpl_strbuf_free(&b);
            return tmpl_err(c, line, "incomplete format");
        }
        f.type = s[i++];
        if (f.align == '<')
            f.zero = 0;
        if (!have) {
            if (is_map) {
                val = args;
            } else if (next >= nitems) {
                tmpl_strbuf_free(&b);
                return tmpl_err(c, line, "not enough arguments for format string");
            } else {
                val = items[next++];
            }
        }
        if (f.zero && !f.align && strchr("sr", f.type))
            f.zero = 0;
        if (!f.align && !f.zero) /* %-format pads on the left whatever the type ('%5s' % 'ab': '   ab') */
            f.align = '>';
        if (format_one(c, line, &b, val, &f, 1)) {
            tmpl_strbuf_free(&b);
            return -1;
        }
    }
    /* Python skips this check when args supports [] (PyMapping_Check): lists, dicts */
    int subscriptable = args.k == TV_DICT || args.k == TV_UNDEF ||
                        (args.k == TV_LIST && args.u.l->sub != TL_TUPLE && args.u.l->sub != TL_ITER);
    if (!subscriptable && next < nitems) {
        tmpl_strbuf_free(&b);
        return tmpl_err(c, line, "not all arguments converted during string formatting");
    }
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

/* ------------------------------------------------------------ str.format */

static int parse_spec(const char *s, size_t n, struct fspec *f)
{
    size_t i = 0;
    memset(f, 0, sizeof *f);
    f->prec = -1;
    if (n >= 2) {
        size_t j = 0;
        uint32_t cp = utf8_next(s, n, &j);
        if (j < n && strchr("<>=^", s[j])) {
            f->fill = cp;
            f->align = s[j];
            i = j + 1;
        }
    }
    if (!f->align && i < n && strchr("<>=^", s[i]))
        f->align = s[i++];
    if (i < n && strchr("+- ", s[i]))
        f->sign = s[i++];
    if (i < n && s[i] == '#') {
        f->alt = 1;
        i++;
    }
    if (i < n && s[i] == '0') {
        f->zero = 1;
        i++;
    }
    if ((f->width = read_count(s, n, &i)) < 0)
        return -1;
    if (i < n && (s[i] == ',' || s[i] == '_')) {
        f->comma = 1;
        i++;
    }
    if (i < n && s[i] == '.') {
        i++;
        if ((f->prec = read_count(s, n, &i)) < 0)
            return -1;
    }
    if (i < n)
        f->type = s[i++];
    return i == n ? 0 : -1;
}

int tmpl_str_format(struct rctx *c, int line, struct tval fmt, const struct targs *a, struct tval *out)
{
    const char *s = fmt.u.s->s;
    size_t n = fmt.u.s->len;
    struct sbuf b = {0};
    int auto_idx = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '}') {
            if (i + 1 < n && s[i + 1] == '}') {
                tmpl_strbuf_putc(&b, '}');
                i += 2;
                continue;
            }
            tmpl_strbuf_free(&b);
            return tmpl_err(c, line, "Single '}' encountered in format string");
        }
        if (s[i] != '{') {
            tmpl_strbuf_putc(&b, s[i++]);
            continue;
        }
        if (i + 1 < n && s[i + 1] == '{') {
            tmpl_strbuf_putc(&b, '{');
            i += 2;
            continue;
        }
        size_t k = i + 1;
        while (k < n && s[k] != '}')
            k++;
        if (k >= n) {
            tmpl_strbuf_free(&b);
            return tmpl_err(c, line, "expected '}' before end of string");
        }
        const char *field = s + i + 1;
        size_t flen = k - i - 1;
        i = k + 1;
        const char *colon = memchr(field, ':', flen);
        size_t namelen = colon ? (size_t)(colon - field) : flen;
        const char *bang = memchr(field, '!', namelen);
        char conv = 0;
        if (bang) {
            conv = bang + 1 < field + namelen ? bang[1] : 0;
            namelen = (size_t)(bang - field);
        }
        size_t head = 0;
        while (head < namelen && field[head] != '.' && field[head] != '[')
            head++;
        struct tval v;
        int err = 0;
        if (head == 0) {
            if (auto_idx >= a->npos)
                err = tmpl_err(c, line, "Replacement index %d out of range for positional args tuple",
                               auto_idx);
            else
                v = a->pos[auto_idx++];
        } else if (field[0] >= '0' && field[0] <= '9') {
            int idx = atoi(field);
            if (idx >= a->npos)
                err = tmpl_err(c, line, "Replacement index %d out of range for positional args tuple", idx);
            else
                v = a->pos[idx];
        } else {
            int kk = 0;
            while (kk < a->nkw && (strlen(a->kwn[kk]) != head || memcmp(a->kwn[kk], field, head)))
                kk++;
            if (kk == a->nkw)
                err = tmpl_err(c, line, "format key '%.*s' not found", (int)head, field);
            else
                v = a->kw[kk];
        }
        if (err) {
            tmpl_strbuf_free(&b);
            return -1;
        }
        tmpl_value_retain(v);
        /* .attr and [key] chains */
        for (size_t p = head; p < namelen && !err;) {
            struct tval nv;
            if (field[p] == '.') {
                size_t q = p + 1;
                while (q < namelen && field[q] != '.' && field[q] != '[')
                    q++;
                char *attr = xmalloc(q - p);
                memcpy(attr, field + p + 1, q - p - 1);
                attr[q - p - 1] = 0;
                err = tmpl_eval_getattr(c, line, v, attr, &nv);
                free(attr);
                p = q;
            } else {
                size_t q = p + 1;
                while (q < namelen && field[q] != ']')
                    q++;
                struct tval key;
                int digits = q > p + 1 && strspn(field + p + 1, "0123456789") == q - p - 1;
                key = digits ? tmpl_value_int(atoll(field + p + 1))
                             : tmpl_value_str(field + p + 1, q - p - 1);
                err = tmpl_eval_getitem(c, line, v, key, &nv);
                tmpl_value_release(key);
                p = q + 1;
            }
            tmpl_value_release(v);
            if (err)
                break;
            v = nv;
        }
        if (err) {
            tmpl_strbuf_free(&b);
            return -1;
        }
        struct fspec f;
        if (parse_spec(colon ? colon + 1 : "", colon ? (size_t)(field + flen - (colon + 1)) : 0, &f)) {
            tmpl_value_release(v);
            tmpl_strbuf_free(&b);
            return tmpl_err(c, line, "Invalid format specifier");
        }
        if (conv == 'r' || conv == 'a' || conv == 's') {
            struct sbuf t = {0};
            if (conv == 's')
                tmpl_value_write_str(&t, v);
            else
                tmpl_value_write_repr(&t, v);
            tmpl_value_release(v);
            v = tmpl_strbuf_take_str(&t);
        }
        err = format_one(c, line, &b, v, &f, 0);
        tmpl_value_release(v);
        if (err) {
            tmpl_strbuf_free(&b);
            return -1;
        }
    }
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}
