/* Reading from values: iteration (what a for loop or list() sees),
 * attribute access (methods first, then items, as jinja2's sandbox
 * getattr does), subscription (items first, then methods), slicing
 * (Python's index rules; code points for strings) and the `loop` object. */
#include <string.h>

#include "template/internal.h"

/* ------------------------------------------------------------ iteration */

int tmpl_eval_iterate(struct rctx *c, int line, struct tval v, struct tlist **out)
{
    struct tval r;
    switch (v.k) {
    case TV_UNDEF:
        r = tmpl_value_list_new(TL_LIST, 0);
        break;
    case TV_STR: {
        r = tmpl_value_list_new(TL_LIST, v.u.s->ncp);
        for (size_t i = 0; i < v.u.s->len;) {
            size_t at = i;
            utf8_next(v.u.s->s, v.u.s->len, &i);
            tmpl_list_push(r.u.l, tmpl_value_str(v.u.s->s + at, i - at));
        }
        break;
    }
    case TV_LIST:
        if (v.u.l->sub != TL_ITER) {
            tmpl_value_retain(v);
            *out = v.u.l;
            return 0;
        }
        r = tmpl_value_list_new(TL_LIST, v.u.l->n - v.u.l->pos);
        for (; v.u.l->pos < v.u.l->n; v.u.l->pos++) {
            tmpl_value_retain(v.u.l->v[v.u.l->pos]);
            tmpl_list_push(r.u.l, v.u.l->v[v.u.l->pos]);
        }
        break;
    case TV_DICT:
        r = tmpl_value_list_new(TL_LIST, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) {
            tmpl_value_retain(v.u.d->k[i]);
            tmpl_list_push(r.u.l, v.u.d->k[i]);
        }
        break;
    default:
        return tmpl_err(c, line, "'%s' object is not iterable", tmpl_value_type_name(v));
    }
    *out = r.u.l;
    return 0;
}

/* ------------------------------------------------------ attribute access */

static const char *obj_desc(struct tval v) { return tmpl_value_type_name(v); }

static int loop_attr(struct rctx *c, int line, struct tval lv, const char *a, struct tval *out);

int tmpl_eval_getattr(struct rctx *c, int line, struct tval obj, const char *attr, struct tval *out)
{
    if (obj.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, obj);
    if (obj.k == TV_LOOP)
        return loop_attr(c, line, obj, attr, out);
    if (tmpl_method_lookup(c, line, obj, attr, out))
        return 0;
    if (obj.k == TV_DICT || obj.k == TV_NS) {
        const struct tval *v = tmpl_dict_get_str(obj.k == TV_DICT ? obj.u.d : obj.u.ns->d, attr);
        if (v) {
            tmpl_value_retain(*v);
            *out = *v;
            return 0;
        }
    }
    *out = tmpl_value_undef_hint("'%s object' has no attribute '%s'", obj_desc(obj), attr);
    return 0;
}

static int index_of(struct tval key, size_t n, size_t *idx)
{
    int64_t i;
    if (!tval_int_of(key, &i))
        return 0;
    if (i < 0)
        i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n)
        return 0;
    *idx = (size_t)i;
    return 1;
}

int tmpl_eval_getitem(struct rctx *c, int line, struct tval obj, struct tval key, struct tval *out)
{
    size_t idx;
    if (obj.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, obj);
    switch (obj.k) {
    case TV_DICT: {
        const struct tval *v = tmpl_value_hashable(key) ? tmpl_dict_get(obj.u.d, key) : NULL;
        if (v) {
            tmpl_value_retain(*v);
            *out = *v;
            return 0;
        }
        break;
    }
    case TV_LIST:
        if (obj.u.l->sub == TL_LIST || obj.u.l->sub == TL_TUPLE || obj.u.l->sub == TL_RANGE) {
            if (index_of(key, obj.u.l->n, &idx)) {
                tmpl_value_retain(obj.u.l->v[idx]);
                *out = obj.u.l->v[idx];
                return 0;
            }
            int64_t i;
            if (tval_int_of(key, &i)) {
                *out = tmpl_value_undef_hint("%s object has no element %lld",
                                                 tmpl_value_type_name(obj), (long long)i);
                return 0;
            }
        }
        break;
    case TV_STR:
        if (index_of(key, obj.u.s->ncp, &idx)) {
            size_t a = utf8_offset(obj.u.s->s, obj.u.s->len, idx), b = a;
            utf8_next(obj.u.s->s, obj.u.s->len, &b);
            *out = tmpl_value_str(obj.u.s->s + a, b - a);
            return 0;
        }
        break;
    default:
        break;
    }
    if (key.k == TV_STR) {
        if (obj.k == TV_NS || obj.k == TV_LOOP)
            return tmpl_eval_getattr(c, line, obj, key.u.s->s, out);
        if (tmpl_method_lookup(c, line, obj, key.u.s->s, out))
            return 0;
    }
    struct sbuf b = {0};
    tmpl_value_write_repr(&b, key);
    *out = tmpl_value_undef_hint("'%s object' has no attribute %s", obj_desc(obj), b.p ? b.p : "");
    tmpl_strbuf_free(&b);
    return 0;
}

/* Python slice index rules (PySlice_AdjustIndices): first index, adjusted
 * stop and item count. */
static void slice_indices(int64_t len, const int64_t *start, const int64_t *stop, int64_t step, int64_t *s0,
                          int64_t *stop_out, int64_t *count)
{
    int64_t a, b;
    if (!start) {
        a = step < 0 ? len - 1 : 0;
    } else {
        a = *start;
        if (a < 0) {
            a += len;
            if (a < 0)
                a = step < 0 ? -1 : 0;
        } else if (a >= len) {
            a = step < 0 ? len - 1 : len;
        }
    }
    if (!stop) {
        b = step < 0 ? -1 : len;
    } else {
        b = *stop;
        if (b < 0) {
            b += len;
            if (b < 0)
                b = step < 0 ? -1 : 0;
        } else if (b >= len) {
            b = step < 0 ? len - 1 : len;
        }
    }
    if (step > 0)
        *count = a < b ? (b - a - 1) / step + 1 : 0;
    else
        *count = a > b ? (a - b - 1) / (-step) + 1 : 0;
    *s0 = a;
    *stop_out = b;
}

/* obj[a:b:c] is plain Python subscription in jinja2 (no sandbox fallback):
 * bad indices and unsliceable objects are errors. Absent parts are
 * TV_MISSING (or None). */
int tmpl_eval_slice(struct rctx *c, int line, struct tval obj, const struct tval parts[3],
                        struct tval *out)
{
    int64_t vals[3];
    int given[3] = {0, 0, 0}, bad = 0;
    for (int k = 0; k < 3; k++) {
        if (parts[k].k == TV_MISSING || parts[k].k == TV_NONE)
            continue;
        if (tval_int_of(parts[k], &vals[k]))
            given[k] = 1;
        else
            bad = 1;
    }
    if (obj.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, obj);
    int seq = obj.k == TV_STR || (obj.k == TV_LIST && (obj.u.l->sub == TL_LIST || obj.u.l->sub == TL_TUPLE ||
                                                       obj.u.l->sub == TL_RANGE));
    if (!seq)
        return tmpl_err(c, line, "'%s' object is not subscriptable", tmpl_value_type_name(obj));
    if (bad)
        return tmpl_err(c, line, "slice indices must be integers or None or have an __index__ method");
    int64_t step = given[2] ? vals[2] : 1;
    if (step == 0)
        return tmpl_err(c, line, "slice step cannot be zero");
    int64_t len = obj.k == TV_STR ? (int64_t)obj.u.s->ncp : (int64_t)obj.u.l->n, s0, stop, cnt;
    slice_indices(len, given[0] ? &vals[0] : NULL, given[1] ? &vals[1] : NULL, step, &s0, &stop, &cnt);
    if (obj.k == TV_STR) {
        struct sbuf b = {0};
        const char *s = obj.u.s->s;
        size_t sl = obj.u.s->len;
        if (step == 1) {
            size_t a = utf8_offset(s, sl, (size_t)s0);
            size_t z = a + utf8_offset(s + a, sl - a, (size_t)cnt);
            tmpl_strbuf_put(&b, s + a, z - a);
        } else {
            /* index the code points once */
            size_t *offs = xmalloc(((size_t)len + 1) * sizeof *offs);
            size_t i = 0;
            for (int64_t k = 0; k < len; k++) {
                offs[k] = i;
                utf8_next(s, sl, &i);
            }
            offs[len] = sl;
            for (int64_t k = 0, p = s0; k < cnt; k++, p += step)
                tmpl_strbuf_put(&b, s + offs[p], offs[p + 1] - offs[p]);
            free(offs);
        }
        *out = tmpl_strbuf_take_str(&b);
        return 0;
    }
    const struct tlist *l = obj.u.l;
    struct tval r = tmpl_value_list_new(l->sub == TL_LIST ? TL_LIST : l->sub, (size_t)cnt);
    for (int64_t k = 0, p = s0; k < cnt; k++, p += step) {
        tmpl_value_retain(l->v[p]);
        tmpl_list_push(r.u.l, l->v[p]);
    }
    if (l->sub == TL_RANGE) {
        r.u.l->r_start = l->r_start + s0 * l->r_step;
        r.u.l->r_stop = l->r_start + stop * l->r_step;
        r.u.l->r_step = l->r_step * step;
    }
    *out = r;
    return 0;
}

/* ---------------------------------------------------------------- loop */

static int loop_cycle(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    if (!a->npos)
        return tmpl_err(c, line, "no items for cycling given");
    *out = a->pos[self.u.loop->idx % (size_t)a->npos];
    tmpl_value_retain(*out);
    return 0;
}

static int loop_changed(struct rctx *c, int line, struct tval self, const struct targs *a, struct tval *out)
{
    (void)c;
    (void)line;
    struct tval t = tmpl_value_list_new(TL_TUPLE, (size_t)a->npos);
    for (int i = 0; i < a->npos; i++) {
        tmpl_value_retain(a->pos[i]);
        tmpl_list_push(t.u.l, a->pos[i]);
    }
    struct tloop *l = self.u.loop;
    int changed = l->last_changed.k == TV_MISSING || !tmpl_value_equal(l->last_changed, t);
    tmpl_value_release(l->last_changed);
    l->last_changed = t;
    *out = tmpl_value_bool(changed);
    return 0;
}

static int loop_attr(struct rctx *c, int line, struct tval lv, const char *a, struct tval *out)
{
    (void)c;
    (void)line;
    const struct tloop *l = lv.u.loop;
    int64_t i = (int64_t)l->idx, n = (int64_t)l->items->n;
    if (!strcmp(a, "index"))
        *out = tmpl_value_int(i + 1);
    else if (!strcmp(a, "index0"))
        *out = tmpl_value_int(i);
    else if (!strcmp(a, "revindex"))
        *out = tmpl_value_int(n - i);
    else if (!strcmp(a, "revindex0"))
        *out = tmpl_value_int(n - i - 1);
    else if (!strcmp(a, "first"))
        *out = tmpl_value_bool(i == 0);
    else if (!strcmp(a, "last"))
        *out = tmpl_value_bool(i == n - 1);
    else if (!strcmp(a, "length"))
        *out = tmpl_value_int(n);
    else if (!strcmp(a, "depth"))
        *out = tmpl_value_int(1);
    else if (!strcmp(a, "depth0"))
        *out = tmpl_value_int(0);
    else if (!strcmp(a, "previtem") || !strcmp(a, "nextitem")) {
        int64_t j = a[0] == 'p' ? i - 1 : i + 1;
        if (j < 0 || j >= n) {
            *out = tmpl_value_undef_hint("there is no %s item", a[0] == 'p' ? "previous" : "next");
        } else {
            *out = l->items->v[j];
            tmpl_value_retain(*out);
        }
    } else if (!strcmp(a, "cycle"))
        *out = tmpl_value_func_builtin("cycle", "LoopContext", loop_cycle, lv);
    else if (!strcmp(a, "changed"))
        *out = tmpl_value_func_builtin("changed", "LoopContext", loop_changed, lv);
    else
        *out = tmpl_value_undef_hint("'LoopContext object' has no attribute '%s'", a);
    return 0;
}
