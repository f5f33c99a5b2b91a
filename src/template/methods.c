/* Method lookup on values (x.name): the str methods of str_methods*.c,
 * dict.get/items/keys/values/copy and the read-only list/tuple methods. As
 * in jinja2's ImmutableSandboxedEnvironment, methods that would modify a list
 * or dict are unsafe: looking one up gives an Undefined that fails when
 * called. */
#include <string.h>

#include "template/internal.h"

/* ----------------------------------------------------------- dict, list */

static int d_get(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    if (a->nkw || a->npos < 1 || a->npos > 2)
        return tmpl_err(c, line, "get expected 1 or 2 arguments, got %d", a->npos);
    const struct tval *v = tmpl_value_hashable(a->pos[0]) ? tmpl_dict_get(self.u.d, a->pos[0]) : NULL;
    if (!tmpl_value_hashable(a->pos[0]))
        return tmpl_err(c, line, "unhashable type: '%s'", tmpl_value_type_name(a->pos[0]));
    *out = v ? *v : a->npos == 2 ? a->pos[1] : tmpl_value_none();
    tmpl_value_retain(*out);
    return 0;
}

static int d_view(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out,
                  int sub)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "dict view methods take no arguments");
    const struct tdict *d = self.u.d;
    struct tval l = tmpl_value_list_new((uint8_t)sub, d->n);
    for (size_t i = 0; i < d->n; i++) {
        struct tval item;
        if (sub == TL_KEYS) {
            item = d->k[i];
            tmpl_value_retain(item);
        } else if (sub == TL_VALUES) {
            item = d->v[i];
            tmpl_value_retain(item);
        } else {
            item = tmpl_value_list_new(TL_TUPLE, 2);
            tmpl_value_retain(d->k[i]);
            tmpl_value_retain(d->v[i]);
            tmpl_list_push(item.u.l, d->k[i]);
            tmpl_list_push(item.u.l, d->v[i]);
        }
        tmpl_list_push(l.u.l, item);
    }
    *out = l;
    return 0;
}

static int d_items(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return d_view(c, line, self, a, out, TL_ITEMS);
}

static int d_keys(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return d_view(c, line, self, a, out, TL_KEYS);
}

static int d_values(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    return d_view(c, line, self, a, out, TL_VALUES);
}

static int d_copy(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "copy() takes no arguments");
    struct tval d = tmpl_value_dict_new(self.u.d->n);
    for (size_t i = 0; i < self.u.d->n; i++) {
        tmpl_value_retain(self.u.d->k[i]);
        tmpl_value_retain(self.u.d->v[i]);
        tmpl_dict_set(d.u.d, self.u.d->k[i], self.u.d->v[i]);
    }
    *out = d;
    return 0;
}

static int l_index(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    if (a->nkw || a->npos != 1)
        return tmpl_err(c, line, "index() takes exactly one argument");
    for (size_t i = 0; i < self.u.l->n; i++)
        if (tmpl_value_equal(self.u.l->v[i], a->pos[0])) {
            *out = tmpl_value_int((int64_t)i);
            return 0;
        }
    return tmpl_err(c, line, "value is not in list");
}

static int l_count(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    if (a->nkw || a->npos != 1)
        return tmpl_err(c, line, "count() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < self.u.l->n; i++)
        n += tmpl_value_equal(self.u.l->v[i], a->pos[0]);
    *out = tmpl_value_int(n);
    return 0;
}

static int l_copy(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "copy() takes no arguments");
    struct tval l = tmpl_value_list_new(TL_LIST, self.u.l->n);
    for (size_t i = 0; i < self.u.l->n; i++) {
        tmpl_value_retain(self.u.l->v[i]);
        tmpl_list_push(l.u.l, self.u.l->v[i]);
    }
    *out = l;
    return 0;
}

static const struct method_def dict_methods[] = {
    {"get", d_get}, {"items", d_items}, {"keys", d_keys}, {"values", d_values}, {"copy", d_copy},
};

static const struct method_def list_methods[] = {
    {"index", l_index},
    {"count", l_count},
    {"copy", l_copy},
};

static const char *const dict_mutators[] = {"clear", "pop", "popitem", "setdefault", "update", NULL};
static const char *const list_mutators[] = {"append", "clear",  "pop",    "reverse", "insert",
                                            "sort",   "extend", "remove", NULL};

static int find_method(const struct method_def *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name))
            return (int)i;
    return -1;
}

static int is_in(const char *const *set, const char *name)
{
    for (; *set; set++)
        if (!strcmp(*set, name))
            return 1;
    return 0;
}

int tmpl_method_lookup(struct rctx *c, int line, struct tval obj, const char *name, struct tval *out)
{
    (void)c;
    (void)line;
    const struct method_def *t = NULL;
    size_t n = 0;
    const char *owner = tmpl_value_type_name(obj);
    const char *const *mutators = NULL;
    if (obj.k == TV_STR) {
        t = tmpl_str_methods;
        n = tmpl_n_str_methods;
        if (find_method(t, n, name) < 0) {
            t = tmpl_str_format_methods;
            n = tmpl_n_str_format_methods;
        }
    } else if (obj.k == TV_DICT) {
        t = dict_methods;
        n = sizeof dict_methods / sizeof dict_methods[0];
        mutators = dict_mutators;
    } else if (obj.k == TV_LIST &&
               (obj.u.l->sub == TL_LIST || obj.u.l->sub == TL_TUPLE || obj.u.l->sub == TL_RANGE)) {
        t = list_methods;
        n = obj.u.l->sub == TL_LIST ? 3 : 2;
        mutators = obj.u.l->sub == TL_LIST ? list_mutators : NULL;
    } else {
        return 0;
    }
    int i = find_method(t, n, name);
    if (i >= 0) {
        *out = tmpl_value_func_builtin(t[i].name, owner, t[i].fn, obj);
        return 1;
    }
    if (mutators && is_in(mutators, name)) {
        *out = tmpl_value_undef_hint("access to attribute '%s' of '%s' object is unsafe.", name, owner);
        return 1;
    }
    return 0;
}
