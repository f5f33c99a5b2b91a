/* Template values: reference counting, containers and the Python semantics
 * of truth, equality and ordering that chat templates rely on. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "template/internal.h"

/* ------------------------------------------------------------ sbuf */

static void tmpl_strbuf_reserve(struct sbuf *b, size_t extra)
{
    if (b->n + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

void tmpl_strbuf_put(struct sbuf *b, const char *s, size_t n)
{
    tmpl_strbuf_reserve(b, n);
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void tmpl_strbuf_puts(struct sbuf *b, const char *s) { tmpl_strbuf_put(b, s, strlen(s)); }

void tmpl_strbuf_putc(struct sbuf *b, char c) { tmpl_strbuf_put(b, &c, 1); }

void tmpl_strbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        tmpl_strbuf_put(b, tmp, (size_t)n);
        return;
    }
    tmpl_strbuf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void tmpl_strbuf_put_cp(struct sbuf *b, uint32_t cp)
{
    char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        o[0] = (char)(0xF0 | (cp >> 18));
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    tmpl_strbuf_put(b, o, n);
}

struct tval tmpl_strbuf_take_str(struct sbuf *b)
{
    struct tval v = tmpl_value_str(b->p ? b->p : "", b->n);
    tmpl_strbuf_free(b);
    return v;
}

void tmpl_strbuf_free(struct sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ------------------------------------------------------- construction */

struct tstr *tstr_new(const char *s, size_t len)
{
    struct tstr *t = xmalloc(sizeof *t + len + 1);
    t->h.rc = 1;
    t->len = len;
    if (len)
        memcpy(t->s, s, len);
    t->s[len] = 0;
    t->ncp = utf8_count(t->s, len);
    return t;
}

struct tval tmpl_value_undef(void)
{
    struct tval v = {.k = TV_UNDEF};
    v.u.s = NULL;
    return v;
}

struct tval tmpl_value_undef_hint(const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    struct tval v = {.k = TV_UNDEF};
    v.u.s = tstr_new(tmp, strlen(tmp));
    return v;
}

struct tval tmpl_value_none(void)
{
    struct tval v = {.k = TV_NONE};
    return v;
}

struct tval tmpl_value_bool(int b)
{
    struct tval v = {.k = TV_BOOL};
    v.u.b = !!b;
    return v;
}

struct tval tmpl_value_int(int64_t i)
{
    struct tval v = {.k = TV_INT};
    v.u.i = i;
    return v;
}

struct tval tmpl_value_float(double f)
{
    struct tval v = {.k = TV_FLOAT};
    v.u.f = f;
    return v;
}

struct tval tmpl_value_str(const char *s, size_t len)
{
    return tmpl_value_str_take(tstr_new(s, len));
}

struct tval tmpl_value_cstr(const char *s) { return tmpl_value_str(s, strlen(s)); }

struct tval tmpl_value_str_take(struct tstr *s)
{
    struct tval v = {.k = TV_STR};
    v.u.s = s;
    return v;
}

struct tval tmpl_value_list_new(uint8_t sub, size_t cap)
{
    struct tlist *l = xcalloc(1, sizeof *l);
    l->h.rc = 1;
    l->sub = sub;
    l->what = "generator";
    l->cap = cap;
    l->v = cap ? xmalloc(cap * sizeof *l->v) : NULL;
    struct tval v = {.k = TV_LIST};
    v.u.l = l;
    return v;
}

void tmpl_list_push(struct tlist *l, struct tval v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = v;
}

struct tval tmpl_value_dict_new(size_t cap)
{
    struct tdict *d = xcalloc(1, sizeof *d);
    d->h.rc = 1;
    d->cap = cap;
    if (cap) {
        d->k = xmalloc(cap * sizeof *d->k);
        d->v = xmalloc(cap * sizeof *d->v);
    }
    struct tval v = {.k = TV_DICT};
    v.u.d = d;
    return v;
}

struct tval *tmpl_dict_get(const struct tdict *d, struct tval k)
{
    for (size_t i = 0; i < d->n; i++)
        if (tmpl_value_equal(d->k[i], k))
            return &d->v[i];
    return NULL;
}

struct tval *tmpl_dict_get_str(const struct tdict *d, const char *key)
{
    size_t len = strlen(key);
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].k == TV_STR && d->k[i].u.s->len == len && !memcmp(d->k[i].u.s->s, key, len))
            return &d->v[i];
    return NULL;
}

void tmpl_dict_set(struct tdict *d, struct tval k, struct tval v)
{
    struct tval *old = tmpl_dict_get(d, k);
    if (old) {
        tmpl_value_release(*old);
        *old = v;
        tmpl_value_release(k);
        return;
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 4;
        d->k = xrealloc(d->k, d->cap * sizeof *d->k);
        d->v = xrealloc(d->v, d->cap * sizeof *d->v);
    }
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
}

struct tval tmpl_value_ns_new(void)
{
    struct tns *ns = xcalloc(1, sizeof *ns);
    ns->h.rc = 1;
    struct tval d = tmpl_value_dict_new(0);
    ns->d = d.u.d;
    struct tval v = {.k = TV_NS};
    v.u.ns = ns;
    return v;
}

struct tval tmpl_value_func_builtin(const char *name, const char *owner, tbuiltin_fn fn, struct tval self)
{
    struct tfunc *f = xcalloc(1, sizeof *f);
    f->h.rc = 1;
    f->kind = FN_BUILTIN;
    f->name = name;
    f->owner = owner;
    f->fn = fn;
    f->self = self;
    tmpl_value_retain(self);
    struct tval v = {.k = TV_FUNC};
    v.u.fn = f;
    return v;
}

/* --------------------------------------------------------- lifecycle */

static struct tobj *heap_of(struct tval v)
{
    switch (v.k) {
    case TV_UNDEF:
    case TV_STR:
        return v.u.s ? &v.u.s->h : NULL;
    case TV_LIST:
        return &v.u.l->h;
    case TV_DICT:
        return &v.u.d->h;
    case TV_NS:
        return &v.u.ns->h;
    case TV_FUNC:
        return &v.u.fn->h;
    case TV_LOOP:
        return &v.u.loop->h;
    default:
        return NULL;
    }
}

void tmpl_value_retain(struct tval v)
{
    struct tobj *h = heap_of(v);
    if (h && h->rc >= 0)
        h->rc++;
}

static void dict_free(struct tdict *d)
{
    for (size_t i = 0; i < d->n; i++) {
        tmpl_value_release(d->k[i]);
        tmpl_value_release(d->v[i]);
    }
    free(d->k);
    free(d->v);
    free(d);
}

void tmpl_value_release(struct tval v)
{
    struct tobj *h = heap_of(v);
    if (!h || h->rc < 0 || --h->rc > 0)
        return;
    switch (v.k) {
    case TV_UNDEF:
    case TV_STR:
        free(v.u.s);
        break;
    case TV_LIST:
        for (size_t i = 0; i < v.u.l->n; i++)
            tmpl_value_release(v.u.l->v[i]);
        free(v.u.l->v);
        free(v.u.l);
        break;
    case TV_DICT:
        dict_free(v.u.d);
        break;
    case TV_NS:
        dict_free(v.u.ns->d);
        free(v.u.ns);
        break;
    case TV_FUNC:
        tmpl_value_release(v.u.fn->self);
        if (v.u.fn->closure)
            tmpl_frame_release(v.u.fn->closure);
        free(v.u.fn);
        break;
    case TV_LOOP: {
        struct tval items = {.k = TV_LIST};
        items.u.l = v.u.loop->items;
        tmpl_value_release(items);
        tmpl_value_release(v.u.loop->last_changed);
        free(v.u.loop);
        break;
    }
    default:
        break;
    }
}

void tmpl_value_make_immortal(struct tval v)
{
    struct tobj *h = heap_of(v);
    if (h)
        h->rc = -1;
}

void tmpl_value_free_immortal(struct tval v)
{
    struct tobj *h = heap_of(v);
    if (h) {
        h->rc = 1;
        tmpl_value_release(v);
    }
}

/* ------------------------------------------------------ Python semantics */

int tmpl_value_truthy(struct tval v)
{
    switch (v.k) {
    case TV_UNDEF:
    case TV_NONE:
    case TV_MISSING:
        return 0;
    case TV_BOOL:
        return v.u.b;
    case TV_INT:
        return v.u.i != 0;
    case TV_FLOAT:
        return v.u.f != 0.0;
    case TV_STR:
        return v.u.s->len > 0;
    case TV_LIST:
        return v.u.l->sub == TL_ITER ? 1 : v.u.l->n > 0;
    case TV_DICT:
        return v.u.d->n > 0;
    default:
        return 1;
    }
}

int tmpl_value_is_str(struct tval v) { return v.k == TV_STR; }

int tmpl_value_is_num(struct tval v) { return v.k == TV_INT || v.k == TV_FLOAT || v.k == TV_BOOL; }

double tmpl_value_num(struct tval v)
{
    return v.k == TV_FLOAT ? v.u.f : v.k == TV_INT ? (double)v.u.i : v.k == TV_BOOL ? v.u.b : 0;
}

const char *tmpl_value_type_name(struct tval v)
{
    switch (v.k) {
    case TV_UNDEF:
        return "Undefined";
    case TV_NONE:
        return "NoneType";
    case TV_BOOL:
        return "bool";
    case TV_INT:
        return "int";
    case TV_FLOAT:
        return "float";
    case TV_STR:
        return "str";
    case TV_LIST:
        switch (v.u.l->sub) {
        case TL_TUPLE:
            return "tuple";
        case TL_ITER:
            return v.u.l->what;
        case TL_ITEMS:
            return "dict_items";
        case TL_KEYS:
            return "dict_keys";
        case TL_VALUES:
            return "dict_values";
        case TL_RANGE:
            return "range";
        default:
            return "list";
        }
    case TV_DICT:
        return "dict";
    case TV_NS:
        return "Namespace";
    case TV_FUNC:
        return v.u.fn->kind == FN_MACRO ? "Macro" : "builtin_function_or_method";
    case TV_LOOP:
        return "LoopContext";
    default:
        return "object";
    }
}

static int num_equal(struct tval a, struct tval b)
{
    int64_t x, y;
    if (tval_int_of(a, &x) && tval_int_of(b, &y))
        return x == y;
    return tmpl_value_num(a) == tmpl_value_num(b);
}

/* list and tuple never compare equal to each other; views and ranges
 * compare within their own kind. */
static int seq_class(const struct tlist *l)
{
    return l->sub == TL_KEYS || l->sub == TL_ITEMS ? TL_ITEMS : l->sub;
}

int tmpl_value_equal(struct tval a, struct tval b)
{
    if (tmpl_value_is_num(a) && tmpl_value_is_num(b))
        return num_equal(a, b);
    if (a.k != b.k)
        return 0;
    switch (a.k) {
    case TV_UNDEF:
    case TV_NONE:
    case TV_MISSING:
        return 1;
    case TV_STR:
        return a.u.s == b.u.s || (a.u.s->len == b.u.s->len && !memcmp(a.u.s->s, b.u.s->s, a.u.s->len));
    case TV_LIST: {
        const struct tlist *x = a.u.l, *y = b.u.l;
        if (x == y)
            return 1;
        if (x->sub == TL_ITER || x->sub == TL_VALUES || seq_class(x) != seq_class(y) || x->n != y->n)
            return 0;
        for (size_t i = 0; i < x->n; i++)
            if (!tmpl_value_equal(x->v[i], y->v[i]))
                return 0;
        return 1;
    }
    case TV_DICT: {
        const struct tdict *x = a.u.d, *y = b.u.d;
        if (x == y)
            return 1;
        if (x->n != y->n)
            return 0;
        for (size_t i = 0; i < x->n; i++) {
            const struct tval *o = tmpl_dict_get(y, x->k[i]);
            if (!o || !tmpl_value_equal(x->v[i], *o))
                return 0;
        }
        return 1;
    }
    case TV_NS:
        return a.u.ns == b.u.ns;
    case TV_FUNC:
        return a.u.fn == b.u.fn;
    case TV_LOOP:
        return a.u.loop == b.u.loop;
    default:
        return 0;
    }
}

int tmpl_value_less(struct tval a, struct tval b, int *lt, char *msg, size_t msg_len)
{
    if (tmpl_value_is_num(a) && tmpl_value_is_num(b)) {
        int64_t x, y;
        if (tval_int_of(a, &x) && tval_int_of(b, &y))
            *lt = x < y;
        else
            *lt = tmpl_value_num(a) < tmpl_value_num(b);
        return 0;
    }
    if (a.k == TV_STR && b.k == TV_STR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = memcmp(a.u.s->s, b.u.s->s, n);
        *lt = c < 0 || (c == 0 && a.u.s->len < b.u.s->len);
        return 0;
    }
    if (a.k == TV_LIST && b.k == TV_LIST && a.u.l->sub == b.u.l->sub &&
        (a.u.l->sub == TL_LIST || a.u.l->sub == TL_TUPLE)) {
        const struct tlist *x = a.u.l, *y = b.u.l;
        size_t n = x->n < y->n ? x->n : y->n;
        for (size_t i = 0; i < n; i++)
            if (!tmpl_value_equal(x->v[i], y->v[i]))
                return tmpl_value_less(x->v[i], y->v[i], lt, msg, msg_len);
        *lt = x->n < y->n;
        return 0;
    }
    snprintf(msg, msg_len, "'<' not supported between instances of '%s' and '%s'",
             tmpl_value_type_name(a), tmpl_value_type_name(b));
    return -1;
}

int tmpl_value_hashable(struct tval v)
{
    if (v.k == TV_DICT)
        return 0;
    if (v.k == TV_LIST) {
        if (v.u.l->sub == TL_TUPLE) {
            for (size_t i = 0; i < v.u.l->n; i++)
                if (!tmpl_value_hashable(v.u.l->v[i]))
                    return 0;
            return 1;
        }
        return v.u.l->sub == TL_ITER || v.u.l->sub == TL_RANGE;
    }
    return 1;
}
