/* Global functions a chat template can call (jinja2's sandbox globals plus
 * the ones transformers adds): range, namespace, dict, raise_exception,
 * strftime_now. Also the argument binding helpers shared by filters,
 * tests and methods. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "template/internal.h"

int tmpl_args_bind(struct rctx *c, int line, const char *fname, const struct targs *a,
                   const char *const *names, int nnames, struct tval *slots)
{
    if (a->npos > nnames)
        return tmpl_err(c, line, "%s() takes at most %d argument(s) (%d given)", fname, nnames, a->npos);
    for (int i = 0; i < nnames; i++)
        slots[i].k = TV_MISSING;
    for (int i = 0; i < a->npos; i++)
        slots[i] = a->pos[i];
    for (int k = 0; k < a->nkw; k++) {
        int i = 0;
        while (i < nnames && strcmp(names[i], a->kwn[k]))
            i++;
        if (i == nnames)
            return tmpl_err(c, line, "%s() got an unexpected keyword argument '%s'", fname, a->kwn[k]);
        if (slots[i].k != TV_MISSING)
            return tmpl_err(c, line, "%s() got multiple values for argument '%s'", fname, a->kwn[k]);
        slots[i] = a->kw[k];
    }
    return 0;
}

int tmpl_arg_int(struct rctx *c, int line, const char *fname, struct tval v, int64_t *out)
{
    if (v.k == TV_INT) {
        *out = v.u.i;
        return 0;
    }
    if (v.k == TV_BOOL) {
        *out = v.u.b;
        return 0;
    }
    if (v.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, v);
    return tmpl_err(c, line, "%s(): '%s' object cannot be interpreted as an integer", fname,
                    tmpl_value_type_name(v));
}

static int g_range(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    (void)self;
    int64_t p[3] = {0, 0, 1};
    if (a->nkw || a->npos < 1 || a->npos > 3)
        return tmpl_err(c, line, "range expected 1 to 3 positional arguments, got %d", a->npos);
    for (int i = 0; i < a->npos; i++)
        if (tmpl_arg_int(c, line, "range", a->pos[i], &p[a->npos == 1 ? 1 : i]))
            return -1;
    int64_t start = p[0], stop = p[1], step = p[2];
    if (step == 0)
        return tmpl_err(c, line, "range() arg 3 must not be zero");
    int64_t n = 0;
    if (step > 0 && start < stop)
        n = (stop - start - 1) / step + 1;
    else if (step < 0 && start > stop)
        n = (start - stop - 1) / (-step) + 1;
    if (n > TMPL_MAX_RANGE)
        return tmpl_err(c, line, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
                        TMPL_MAX_RANGE);
    struct tval r = tmpl_value_list_new(TL_RANGE, (size_t)n);
    for (int64_t i = 0; i < n; i++)
        tmpl_list_push(r.u.l, tmpl_value_int(start + i * step));
    r.u.l->r_start = start;
    r.u.l->r_stop = stop;
    r.u.l->r_step = step;
    *out = r;
    return 0;
}

/* dict(*args, **kwargs) into d: one optional mapping (or iterable of pairs), then keywords. */
static int fill_dict(struct rctx *c, int line, const char *fname, struct tdict *d, const struct targs *a,
                     int no_underscore)
{
    if (a->npos > 1)
        return tmpl_err(c, line, "%s expected at most 1 argument, got %d", fname, a->npos);
    if (a->npos == 1) {
        struct tval src = a->pos[0];
        if (src.k == TV_DICT) {
            for (size_t i = 0; i < src.u.d->n; i++) {
                tmpl_value_retain(src.u.d->k[i]);
                tmpl_value_retain(src.u.d->v[i]);
                tmpl_dict_set(d, src.u.d->k[i], src.u.d->v[i]);
            }
        } else {
            struct tlist *items;
            if (tmpl_eval_iterate(c, line, src, &items))
                return -1;
            struct tval il = {.k = TV_LIST};
            il.u.l = items;
            for (size_t i = 0; i < items->n; i++) {
                struct tval p = items->v[i];
                if (p.k != TV_LIST || p.u.l->n != 2 || p.u.l->sub == TL_ITER) {
                    tmpl_value_release(il);
                    return tmpl_err(c, line, "dictionary update sequence element #%zu has the wrong shape",
                                    i);
                }
                tmpl_value_retain(p.u.l->v[0]);
                tmpl_value_retain(p.u.l->v[1]);
                tmpl_dict_set(d, p.u.l->v[0], p.u.l->v[1]);
            }
            tmpl_value_release(il);
        }
    }
    for (int k = 0; k < a->nkw; k++) {
        tmpl_value_retain(a->kw[k]);
        tmpl_dict_set(d, tmpl_value_cstr(a->kwn[k]), a->kw[k]);
    }
    if (no_underscore)
        for (size_t i = 0; i < d->n; i++)
            if (d->k[i].k == TV_STR && d->k[i].u.s->s[0] == '_')
                return tmpl_err(
                    c, line,
                    "Chat templates cannot store underscore-prefixed attributes on a namespace, but "
                    "got '%s'",
                    d->k[i].u.s->s);
    return 0;
}

static int g_namespace(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    (void)self;
    struct tval ns = tmpl_value_ns_new();
    if (fill_dict(c, line, "namespace", ns.u.ns->d, a, 1)) {
        tmpl_value_release(ns);
        return -1;
    }
    tmpl_track_ns(c, ns.u.ns);
    *out = ns;
    return 0;
}

static int g_dict(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    (void)self;
    struct tval d = tmpl_value_dict_new(0);
    if (fill_dict(c, line, "dict", d.u.d, a, 0)) {
        tmpl_value_release(d);
        return -1;
    }
    *out = d;
    return 0;
}

static int g_raise_exception(struct rctx *c, int line, struct tval self, const struct targs *a,
                             struct tval *out)
{
    (void)self;
    (void)out;
    struct sbuf b = {0};
    if (a->npos >= 1)
        tmpl_value_write_str(&b, a->pos[0]);
    else
        tmpl_strbuf_printf(&b, "template line %d: raise_exception() called without a message", line);
    err_set(c->e, "%s", b.p ? b.p : "");
    tmpl_strbuf_free(&b);
    return -1;
}

static int g_strftime_now(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    (void)self;
    if (a->npos != 1 || a->pos[0].k != TV_STR)
        return tmpl_err(c, line, "strftime_now() takes one format string");
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char buf[512];
    size_t n = a->pos[0].u.s->len ? strftime(buf, sizeof buf, a->pos[0].u.s->s, &tm) : 0;
    *out = tmpl_value_str(buf, n);
    return 0;
}

static const struct {
    const char *name;
    tbuiltin_fn fn;
} globals[] = {
    {"range", g_range},
    {"namespace", g_namespace},
    {"dict", g_dict},
    {"raise_exception", g_raise_exception},
    {"strftime_now", g_strftime_now},
};

int tmpl_builtin_global(const char *name, struct tval *out)
{
    for (size_t i = 0; i < sizeof globals / sizeof globals[0]; i++)
        if (!strcmp(globals[i].name, name)) {
            *out = tmpl_value_func_builtin(globals[i].name, NULL, globals[i].fn, tmpl_value_undef());
            return 1;
        }
    return 0;
}
