/* Printing values the way Python does: str(), repr(), float repr (shortest
 * round-trip, Python's switch to exponent notation) and json.dumps with the
 * options transformers' tojson filter exposes (ensure_ascii, indent,
 * separators, sort_keys). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"

void tmpl_float_repr(double f, char *buf, size_t len)
{
    if (isnan(f)) {
        snprintf(buf, len, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, len, f < 0 ? "-inf" : "inf");
        return;
    }
    if (f == 0) {
        snprintf(buf, len, signbit(f) ? "-0.0" : "0.0");
        return;
    }
    char tmp[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    /* tmp: [-]d[.ddd]e[+-]XX */
    const char *s = tmp;
    int neg = *s == '-';
    if (neg)
        s++;
    char digits[32];
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            digits[nd++] = *s;
    int exp = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    int decpt = exp + 1;
    char out[64];
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -decpt; i++)
                out[o++] = '0';
            for (int i = 0; i < nd; i++)
                out[o++] = digits[i];
        } else if (decpt >= nd) {
            for (int i = 0; i < nd; i++)
                out[o++] = digits[i];
            for (int i = nd; i < decpt; i++)
                out[o++] = '0';
            out[o++] = '.';
            out[o++] = '0';
        } else {
            for (int i = 0; i < nd; i++) {
                if (i == decpt)
                    out[o++] = '.';
                out[o++] = digits[i];
            }
        }
        out[o] = 0;
    } else {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++)
                out[o++] = digits[i];
        }
        int e = decpt - 1;
        snprintf(out + o, sizeof out - o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    snprintf(buf, len, "%s", out);
}

static void write_str_repr(struct sbuf *b, const struct tstr *s)
{
    int has_sq = memchr(s->s, '\'', s->len) != NULL, has_dq = memchr(s->s, '"', s->len) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    tmpl_strbuf_putc(b, q);
    for (size_t i = 0; i < s->len;) {
        size_t at = i;
        uint32_t c = utf8_next(s->s, s->len, &i);
        if (c == (uint32_t)q || c == '\\') {
            tmpl_strbuf_putc(b, '\\');
            tmpl_strbuf_putc(b, (char)c);
        } else if (c == '\t') {
            tmpl_strbuf_puts(b, "\\t");
        } else if (c == '\n') {
            tmpl_strbuf_puts(b, "\\n");
        } else if (c == '\r') {
            tmpl_strbuf_puts(b, "\\r");
        } else if (c < 0x20 || c == 0x7F) {
            tmpl_strbuf_printf(b, "\\x%02x", c);
        } else if (c < 0x7F || tmpl_isprintable(c)) {
            tmpl_strbuf_put(b, s->s + at, i - at);
        } else if (c <= 0xFF) {
            tmpl_strbuf_printf(b, "\\x%02x", c);
        } else if (c <= 0xFFFF) {
            tmpl_strbuf_printf(b, "\\u%04x", c);
        } else {
            tmpl_strbuf_printf(b, "\\U%08x", c);
        }
    }
    tmpl_strbuf_putc(b, q);
}

/* The containers being written, innermost first: a container met again
 * inside itself prints as Python prints it ([...], {...}) instead of
 * recursing forever (a namespace can hold itself). */
struct repr_path {
    const void *container;
    int depth;
    const struct repr_path *up;
};

enum { REPR_MAX_DEPTH = 1000 }; /* Python's recursion limit: deeper values print as ... */

static void write_repr(struct sbuf *b, struct tval v, const struct repr_path *up);

/* Enters container c (open/close: its brackets); 0 when it is already being
 * written (or too deep), having written the placeholder. */
static int enter(struct sbuf *b, const void *c, const char *seen, const struct repr_path *up, struct repr_path *at)
{
    for (const struct repr_path *p = up; p; p = p->up)
        if (p->container == c) {
            tmpl_strbuf_puts(b, seen);
            return 0;
        }
    *at = (struct repr_path){c, up ? up->depth + 1 : 1, up};
    if (at->depth > REPR_MAX_DEPTH) {
        tmpl_strbuf_puts(b, "...");
        return 0;
    }
    return 1;
}

static void write_items(struct sbuf *b, const struct tlist *l, const struct repr_path *at)
{
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            tmpl_strbuf_puts(b, ", ");
        write_repr(b, l->v[i], at);
    }
}

static void write_dict(struct sbuf *b, const struct tdict *d, const struct repr_path *up)
{
    struct repr_path at;
    if (!enter(b, d, "{...}", up, &at))
        return;
    tmpl_strbuf_putc(b, '{');
    for (size_t i = 0; i < d->n; i++) {
        if (i)
            tmpl_strbuf_puts(b, ", ");
        write_repr(b, d->k[i], &at);
        tmpl_strbuf_puts(b, ": ");
        write_repr(b, d->v[i], &at);
    }
    tmpl_strbuf_putc(b, '}');
}

/* A list-like value between its brackets (open, close). */
static void write_list(struct sbuf *b, const struct tlist *l, const char *open, const char *close,
                       const char *seen, const struct repr_path *up)
{
    struct repr_path at;
    if (!enter(b, l, seen, up, &at))
        return;
    tmpl_strbuf_puts(b, open);
    write_items(b, l, &at);
    tmpl_strbuf_puts(b, close);
}

void tmpl_value_write_repr(struct sbuf *b, struct tval v) { write_repr(b, v, NULL); }

static void write_repr(struct sbuf *b, struct tval v, const struct repr_path *up)
{
    char num[64];
    switch (v.k) {
    case TV_UNDEF:
    case TV_MISSING:
        tmpl_strbuf_puts(b, "Undefined");
        return;
    case TV_NONE:
        tmpl_strbuf_puts(b, "None");
        return;
    case TV_BOOL:
        tmpl_strbuf_puts(b, v.u.b ? "True" : "False");
        return;
    case TV_INT:
        tmpl_strbuf_printf(b, "%lld", (long long)v.u.i);
        return;
    case TV_FLOAT:
        tmpl_float_repr(v.u.f, num, sizeof num);
        tmpl_strbuf_puts(b, num);
        return;
    case TV_STR:
        write_str_repr(b, v.u.s);
        return;
    case TV_LIST: {
        const struct tlist *l = v.u.l;
        switch (l->sub) {
        case TL_TUPLE:
            write_list(b, l, "(", l->n == 1 ? ",)" : ")", "(...)", up);
            return;
        case TL_ITER:
            tmpl_strbuf_printf(b, "<%s object>", l->what);
            return;
        case TL_ITEMS:
        case TL_KEYS:
        case TL_VALUES:
            write_list(b, l,
                       l->sub == TL_ITEMS  ? "dict_items(["
                       : l->sub == TL_KEYS ? "dict_keys(["
                                           : "dict_values([",
                       "])", "[...]", up);
            return;
        case TL_RANGE:
            if (l->r_step == 1)
                tmpl_strbuf_printf(b, "range(%lld, %lld)", (long long)l->r_start, (long long)l->r_stop);
            else
                tmpl_strbuf_printf(b, "range(%lld, %lld, %lld)", (long long)l->r_start,
                                       (long long)l->r_stop, (long long)l->r_step);
            return;
        default:
            write_list(b, l, "[", "]", "[...]", up);
            return;
        }
    }
    case TV_DICT:
        write_dict(b, v.u.d, up);
        return;
    case TV_NS:
        tmpl_strbuf_puts(b, "<Namespace ");
        write_dict(b, v.u.ns->d, up);
        tmpl_strbuf_putc(b, '>');
        return;
    case TV_FUNC:
        if (v.u.fn->kind == FN_MACRO)
            tmpl_strbuf_printf(b, "<Macro '%s'>", v.u.fn->name);
        else if (v.u.fn->owner)
            tmpl_strbuf_printf(b, "<built-in method %s of %s object>", v.u.fn->name, v.u.fn->owner);
        else
            tmpl_strbuf_printf(b, "<built-in function %s>", v.u.fn->name);
        return;
    case TV_LOOP:
        tmpl_strbuf_printf(b, "<LoopContext %zu/%zu>", v.u.loop->idx + 1, v.u.loop->items->n);
        return;
    }
}

void tmpl_value_write_str(struct sbuf *b, struct tval v)
{
    if (v.k == TV_STR)
        tmpl_strbuf_put(b, v.u.s->s, v.u.s->len);
    else if (v.k == TV_UNDEF || v.k == TV_MISSING)
        return;
    else
        tmpl_value_write_repr(b, v);
}

/* ------------------------------------------------------------- JSON */

static void json_string(struct sbuf *b, const char *s, size_t n, int ensure_ascii)
{
    tmpl_strbuf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        size_t at = i;
        uint32_t c = utf8_next(s, n, &i);
        switch (c) {
        case '"':
            tmpl_strbuf_puts(b, "\\\"");
            break;
        case '\\':
            tmpl_strbuf_puts(b, "\\\\");
            break;
        case '\n':
            tmpl_strbuf_puts(b, "\\n");
            break;
        case '\r':
            tmpl_strbuf_puts(b, "\\r");
            break;
        case '\t':
            tmpl_strbuf_puts(b, "\\t");
            break;
        case '\b':
            tmpl_strbuf_puts(b, "\\b");
            break;
        case '\f':
            tmpl_strbuf_puts(b, "\\f");
            break;
        default:
            if (c < 0x20) {
                tmpl_strbuf_printf(b, "\\u%04x", c);
            } else if (ensure_ascii && c > 0x7E) {
                if (c >= 0x10000) {
                    uint32_t v = c - 0x10000;
                    tmpl_strbuf_printf(b, "\\u%04x\\u%04x", 0xD800 | (v >> 10), 0xDC00 | (v & 0x3FF));
                } else {
                    tmpl_strbuf_printf(b, "\\u%04x", c);
                }
            } else {
                tmpl_strbuf_put(b, s + at, i - at);
            }
        }
    }
    tmpl_strbuf_putc(b, '"');
}

static void json_newline(struct sbuf *b, const struct json_opts *o, int level)
{
    tmpl_strbuf_putc(b, '\n');
    for (int i = 0; i < level; i++) {
        if (o->indent_s)
            tmpl_strbuf_puts(b, o->indent_s);
        else
            for (int j = 0; j < o->indent; j++)
                tmpl_strbuf_putc(b, ' ');
    }
}

static int json_key(struct sbuf *b, struct tval k, const struct json_opts *o, char *msg, size_t msg_len)
{
    char num[64];
    switch (k.k) {
    case TV_STR:
        json_string(b, k.u.s->s, k.u.s->len, o->ensure_ascii);
        return 0;
    case TV_INT:
        tmpl_strbuf_printf(b, "\"%lld\"", (long long)k.u.i);
        return 0;
    case TV_BOOL:
        tmpl_strbuf_puts(b, k.u.b ? "\"true\"" : "\"false\"");
        return 0;
    case TV_NONE:
        tmpl_strbuf_puts(b, "\"null\"");
        return 0;
    case TV_FLOAT:
        if (isnan(k.u.f))
            snprintf(num, sizeof num, "NaN");
        else if (isinf(k.u.f))
            snprintf(num, sizeof num, k.u.f < 0 ? "-Infinity" : "Infinity");
        else
            tmpl_float_repr(k.u.f, num, sizeof num);
        tmpl_strbuf_printf(b, "\"%s\"", num);
        return 0;
    default:
        snprintf(msg, msg_len, "keys must be str, int, float, bool or None, not %s",
                 tmpl_value_type_name(k));
        return -1;
    }
}

static int json_write(struct sbuf *b, struct tval v, const struct json_opts *o, int level, char *msg,
                      size_t msg_len);

static int sort_dict_order(const struct tdict *d, size_t *order, char *msg, size_t msg_len)
{
    /* insertion sort: stable, dictionaries in templates are small */
    for (size_t i = 0; i < d->n; i++)
        order[i] = i;
    for (size_t i = 1; i < d->n; i++) {
        size_t cur = order[i], j = i;
        while (j > 0) {
            int lt;
            if (tmpl_value_less(d->k[cur], d->k[order[j - 1]], &lt, msg, msg_len))
                return -1;
            if (!lt)
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = cur;
    }
    return 0;
}

static int json_write(struct sbuf *b, struct tval v, const struct json_opts *o, int level, char *msg,
                      size_t msg_len)
{
    char num[64];
    int pretty = o->indent >= 0 || o->indent_s;
    if (level > 500) {
        snprintf(msg, msg_len, "maximum recursion depth exceeded while encoding a JSON object");
        return -1;
    }
    switch (v.k) {
    case TV_NONE:
        tmpl_strbuf_puts(b, "null");
        return 0;
    case TV_BOOL:
        tmpl_strbuf_puts(b, v.u.b ? "true" : "false");
        return 0;
    case TV_INT:
        tmpl_strbuf_printf(b, "%lld", (long long)v.u.i);
        return 0;
    case TV_FLOAT:
        if (isnan(v.u.f))
            tmpl_strbuf_puts(b, "NaN");
        else if (isinf(v.u.f))
            tmpl_strbuf_puts(b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else {
            tmpl_float_repr(v.u.f, num, sizeof num);
            tmpl_strbuf_puts(b, num);
        }
        return 0;
    case TV_STR:
        json_string(b, v.u.s->s, v.u.s->len, o->ensure_ascii);
        return 0;
    case TV_LIST:
        if (v.u.l->sub == TL_LIST || v.u.l->sub == TL_TUPLE) {
            const struct tlist *l = v.u.l;
            if (!l->n) {
                tmpl_strbuf_puts(b, "[]");
                return 0;
            }
            tmpl_strbuf_putc(b, '[');
            for (size_t i = 0; i < l->n; i++) {
                if (i)
                    tmpl_strbuf_puts(b, o->item_sep);
                if (pretty)
                    json_newline(b, o, level + 1);
                if (json_write(b, l->v[i], o, level + 1, msg, msg_len))
                    return -1;
            }
            if (pretty)
                json_newline(b, o, level);
            tmpl_strbuf_putc(b, ']');
            return 0;
        }
        break;
    case TV_DICT: {
        const struct tdict *d = v.u.d;
        if (!d->n) {
            tmpl_strbuf_puts(b, "{}");
            return 0;
        }
        size_t *order = xmalloc(d->n * sizeof *order);
        for (size_t i = 0; i < d->n; i++)
            order[i] = i;
        if (o->sort_keys && sort_dict_order(d, order, msg, msg_len)) {
            free(order);
            return -1;
        }
        tmpl_strbuf_putc(b, '{');
        for (size_t j = 0; j < d->n; j++) {
            size_t i = order[j];
            if (j)
                tmpl_strbuf_puts(b, o->item_sep);
            if (pretty)
                json_newline(b, o, level + 1);
            if (json_key(b, d->k[i], o, msg, msg_len) || (tmpl_strbuf_puts(b, o->key_sep), 0) ||
                json_write(b, d->v[i], o, level + 1, msg, msg_len)) {
                free(order);
                return -1;
            }
        }
        free(order);
        if (pretty)
            json_newline(b, o, level);
        tmpl_strbuf_putc(b, '}');
        return 0;
    }
    default:
        break;
    }
    snprintf(msg, msg_len, "Object of type %s is not JSON serializable", tmpl_value_type_name(v));
    return -1;
}

int tmpl_value_write_json(struct sbuf *b, struct tval v, const struct json_opts *o, char *msg,
                              size_t msg_len)
{
    return json_write(b, v, o, 0, msg, msg_len);
}
