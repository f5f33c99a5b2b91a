/* Filters over sequences: first/last/length/list/join, map/select/reject
 * (and the *attr forms), reverse, items, batch, slice (sorting and
 * aggregates are in filters_sort.c). Like jinja2, map/select/reject/unique/items
 * return one-shot generators (always true, no length, consumed by the
 * first loop or filter that reads them); reverse returns an iterator.
 * Attribute paths ("a.b.0") are looked up item-first, as jinja2's
 * make_attrgetter does. */
#include <string.h>

#include "template/filters.h"

struct tval tmpl_list_val(struct tlist *l)
{
    struct tval v = {.k = TV_LIST};
    v.u.l = l;
    return v;
}

struct tval tmpl_new_iter(const char *what, size_t cap)
{
    struct tval v = tmpl_value_list_new(TL_ITER, cap);
    v.u.l->what = what;
    return v;
}

/* ------------------------------------------------------- attribute paths */

void tmpl_path_free(struct attrpath *p)
{
    for (int i = 0; i < p->n; i++)
        tmpl_value_release(p->part[i]);
    p->n = 0;
}

/* "a.b.0" -> ["a", "b", 0]; an int attribute is one part; MISSING/None: no parts */
int tmpl_path_parse(struct rctx *c, int line, struct tval attr, const char *s, size_t n, struct attrpath *p)
{
    p->n = 0;
    if (s) {
        size_t i = 0;
        for (;;) {
            size_t j = i;
            while (j < n && s[j] != '.')
                j++;
            if (p->n == MAX_PATH) {
                tmpl_path_free(p);
                return tmpl_err(c, line, "attribute path too long");
            }
            int digits = j > i && strspn(s + i, "0123456789") >= j - i;
            int64_t val = 0;
            for (size_t k = i; digits && k < j; k++)
                val = val * 10 + (s[k] - '0');
            p->part[p->n++] =
                digits && j - i < 18 ? tmpl_value_int(val) : tmpl_value_str(s + i, j - i);
            if (j >= n)
                break;
            i = j + 1;
        }
        return 0;
    }
    if (attr.k == TV_MISSING || attr.k == TV_NONE)
        return 0;
    if (attr.k == TV_STR)
        return tmpl_path_parse(c, line, attr, attr.u.s->s, attr.u.s->len, p);
    tmpl_value_retain(attr);
    p->part[p->n++] = attr;
    return 0;
}

int tmpl_path_get(struct rctx *c, int line, struct tval item, const struct attrpath *p, struct tval dflt,
                  int lower, struct tval *out)
{
    struct tval cur = item;
    tmpl_value_retain(cur);
    for (int i = 0; i < p->n; i++) {
        struct tval nx;
        int rc = tmpl_eval_getitem(c, line, cur, p->part[i], &nx);
        tmpl_value_release(cur);
        if (rc)
            return -1;
        cur = nx;
        if (dflt.k != TV_MISSING && dflt.k != TV_NONE && cur.k == TV_UNDEF) {
            tmpl_value_release(cur);
            cur = dflt;
            tmpl_value_retain(cur);
        }
    }
    if (lower && cur.k == TV_STR) {
        struct tval l;
        tmpl_str_case(cur, CASE_LOWER, &l);
        tmpl_value_release(cur);
        cur = l;
    }
    *out = cur;
    return 0;
}

/* ---------------------------------------------------------------- basics */

FILTER(tfilt_first)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "first() takes no arguments");
    if (v.k == TV_LIST && v.u.l->sub == TL_ITER) {
        if (v.u.l->pos < v.u.l->n) {
            *out = v.u.l->v[v.u.l->pos++];
            tmpl_value_retain(*out);
        } else {
            *out = tmpl_value_undef_hint("No first item, sequence was empty.");
        }
        return 0;
    }
    struct tlist *items;
    if (tmpl_eval_iterate(c, line, v, &items))
        return -1;
    if (items->n) {
        *out = items->v[0];
        tmpl_value_retain(*out);
    } else {
        *out = tmpl_value_undef_hint("No first item, sequence was empty.");
    }
    tmpl_value_release(tmpl_list_val(items));
    return 0;
}

FILTER(tfilt_last)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "last() takes no arguments");
    if ((v.k == TV_LIST && v.u.l->sub == TL_ITER) ||
        (v.k != TV_LIST && v.k != TV_STR && v.k != TV_DICT && v.k != TV_UNDEF))
        return tmpl_err(c, line, "'%s' object is not reversible", tmpl_value_type_name(v));
    struct tlist *items;
    if (tmpl_eval_iterate(c, line, v, &items))
        return -1;
    if (items->n) {
        *out = items->v[items->n - 1];
        tmpl_value_retain(*out);
    } else {
        *out = tmpl_value_undef_hint("No last item, sequence was empty.");
    }
    tmpl_value_release(tmpl_list_val(items));
    return 0;
}

FILTER(tfilt_length)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "length() takes no arguments");
    if (v.k == TV_STR)
        *out = tmpl_value_int((int64_t)v.u.s->ncp);
    else if (v.k == TV_LIST && v.u.l->sub != TL_ITER)
        *out = tmpl_value_int((int64_t)v.u.l->n);
    else if (v.k == TV_DICT)
        *out = tmpl_value_int((int64_t)v.u.d->n);
    else if (v.k == TV_NS)
        *out = tmpl_value_int((int64_t)v.u.ns->d->n);
    else if (v.k == TV_UNDEF)
        *out = tmpl_value_int(0);
    else if (v.k == TV_LOOP)
        *out = tmpl_value_int((int64_t)v.u.loop->items->n);
    else
        return tmpl_err(c, line, "object of type '%s' has no len()", tmpl_value_type_name(v));
    return 0;
}

static int to_list(struct rctx *c, int line, struct tval v, struct tval *out)
{
    struct tlist *items;
    if (tmpl_eval_iterate(c, line, v, &items))
        return -1;
    if (items->sub == TL_LIST && items != (v.k == TV_LIST ? v.u.l : NULL)) {
        *out = tmpl_list_val(items);
        return 0;
    }
    struct tval l = tmpl_value_list_new(TL_LIST, items->n);
    for (size_t i = 0; i < items->n; i++) {
        tmpl_value_retain(items->v[i]);
        tmpl_list_push(l.u.l, items->v[i]);
    }
    tmpl_value_release(tmpl_list_val(items));
    *out = l;
    return 0;
}

FILTER(tfilt_list)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "list() takes no arguments");
    return to_list(c, line, v, out);
}

FILTER(tfilt_join)
{
    static const char *const names[] = {"d", "attribute"};
    struct tval s[2];
    struct attrpath p;
    struct tlist *items;
    if (tmpl_args_bind(c, line, "join", a, names, 2, s) || tmpl_path_parse(c, line, s[1], NULL, 0, &p))
        return -1;
    if (tmpl_eval_iterate(c, line, v, &items)) {
        tmpl_path_free(&p);
        return -1;
    }
    struct tval sep = s[0].k == TV_MISSING ? tmpl_value_str("", 0) : tmpl_soft_str(s[0]);
    struct sbuf b = {0};
    int rc = 0;
    for (size_t i = 0; i < items->n && !rc; i++) {
        struct tval item = items->v[i];
        tmpl_value_retain(item);
        if (p.n) {
            struct tval x;
            rc = tmpl_path_get(c, line, item, &p, tmpl_value_none(), 0, &x);
            tmpl_value_release(item);
            item = x;
        }
        if (!rc) {
            if (i)
                tmpl_strbuf_put(&b, sep.u.s->s, sep.u.s->len);
            tmpl_value_write_str(&b, item);
            tmpl_value_release(item);
        }
    }
    tmpl_value_release(sep);
    tmpl_path_free(&p);
    tmpl_value_release(tmpl_list_val(items));
    if (rc) {
        tmpl_strbuf_free(&b);
        return -1;
    }
    *out = tmpl_strbuf_take_str(&b);
    return 0;
}

/* ------------------------------------------------- map, select, reject */

static int call_filter_by_name(struct rctx *c, int line, struct tval name, struct tval item,
                               const struct targs *a, struct tval *out)
{
    if (name.k != TV_STR)
        return tmpl_err(c, line, "No filter named %s.", name.k == TV_UNDEF ? "Undefined" : "?");
    const struct filter_def *fd = tmpl_filter_find(name.u.s->s);
    if (!fd)
        return tmpl_err(c, line, "No filter named '%s'.", name.u.s->s);
    return fd->fn(c, line, item, a, out);
}

static int call_test_by_name(struct rctx *c, int line, struct tval name, struct tval item,
                             const struct targs *a, int *res)
{
    if (name.k != TV_STR)
        return tmpl_err(c, line, "No test named %s.", name.k == TV_UNDEF ? "Undefined" : "?");
    const struct test_def *td = tmpl_test_find(name.u.s->s);
    if (!td)
        return tmpl_err(c, line, "No test named '%s'.", name.u.s->s);
    return td->fn(c, line, item, a, res);
}

FILTER(tfilt_map)
{
    struct tval r = tmpl_new_iter("generator", 0);
    if (!tmpl_value_truthy(v)) {
        *out = r;
        return 0;
    }
    struct tlist *items;
    if (tmpl_eval_iterate(c, line, v, &items)) {
        tmpl_value_release(r);
        return -1;
    }
    int rc = 0;
    struct attrpath p = {0};
    struct tval dflt = {.k = TV_MISSING};
    int by_attr = !a->npos && a->nkw;
    if (by_attr) {
        struct tval attr = {.k = TV_MISSING};
        for (int k = 0; k < a->nkw && !rc; k++) {
            if (!strcmp(a->kwn[k], "attribute"))
                attr = a->kw[k];
            else if (!strcmp(a->kwn[k], "default"))
                dflt = a->kw[k];
            else
                rc = tmpl_err(c, line, "Unexpected keyword argument '%s'", a->kwn[k]);
        }
        if (!rc && attr.k == TV_MISSING)
            by_attr = 0;
        else if (!rc)
            rc = tmpl_path_parse(c, line, attr, NULL, 0, &p);
    }
    if (!rc && !by_attr && !a->npos)
        rc = tmpl_err(c, line, "map requires a filter argument");
    struct targs sub = {0};
    if (!by_attr && a->npos) {
        sub.npos = a->npos - 1;
        sub.pos = a->pos + 1;
        sub.nkw = a->nkw;
        sub.kwn = a->kwn;
        sub.kw = a->kw;
    }
    for (size_t i = 0; i < items->n && !rc; i++) {
        struct tval x;
        if (by_attr)
            rc = tmpl_path_get(c, line, items->v[i], &p, dflt, 0, &x);
        else
            rc = call_filter_by_name(c, line, a->pos[0], items->v[i], &sub, &x);
        if (!rc)
            tmpl_list_push(r.u.l, x);
    }
    tmpl_path_free(&p);
    tmpl_value_release(tmpl_list_val(items));
    if (rc) {
        tmpl_value_release(r);
        return -1;
    }
    *out = r;
    return 0;
}

static int select_common(struct rctx *c, int line, struct tval v, const struct targs *a, struct tval *out,
                         int by_attr, int reject)
{
    struct tval r = tmpl_new_iter("generator", 0);
    if (!tmpl_value_truthy(v)) {
        *out = r;
        return 0;
    }
    int off = by_attr ? 1 : 0;
    if (by_attr && a->npos < 1) {
        tmpl_value_release(r);
        return tmpl_err(c, line, "Missing parameter for attribute name");
    }
    struct attrpath p = {0};
    struct tlist *items;
    if ((by_attr && tmpl_path_parse(c, line, a->pos[0], NULL, 0, &p)) ||
        tmpl_eval_iterate(c, line, v, &items)) {
        tmpl_path_free(&p);
        tmpl_value_release(r);
        return -1;
    }
    struct targs sub = {0};
    int has_test = a->npos > off;
    if (has_test) {
        sub.npos = a->npos - off - 1;
        sub.pos = a->pos + off + 1;
        sub.nkw = a->nkw;
        sub.kwn = a->kwn;
        sub.kw = a->kw;
    }
    int rc = 0;
    for (size_t i = 0; i < items->n && !rc; i++) {
        struct tval x = items->v[i];
        tmpl_value_retain(x);
        if (by_attr) {
            struct tval y;
            rc = tmpl_path_get(c, line, x, &p, tmpl_value_none(), 0, &y);
            tmpl_value_release(x);
            x = y;
            if (rc)
                break;
        }
        int ok;
        if (has_test)
            rc = call_test_by_name(c, line, a->pos[off], x, &sub, &ok);
        else
            ok = tmpl_value_truthy(x);
        tmpl_value_release(x);
        if (!rc && ok != reject) {
            tmpl_value_retain(items->v[i]);
            tmpl_list_push(r.u.l, items->v[i]);
        }
    }
    tmpl_path_free(&p);
    tmpl_value_release(tmpl_list_val(items));
    if (rc) {
        tmpl_value_release(r);
        return -1;
    }
    *out = r;
    return 0;
}

FILTER(tfilt_select) { return select_common(c, line, v, a, out, 0, 0); }

FILTER(tfilt_reject) { return select_common(c, line, v, a, out, 0, 1); }

FILTER(tfilt_selectattr) { return select_common(c, line, v, a, out, 1, 0); }

FILTER(tfilt_rejectattr) { return select_common(c, line, v, a, out, 1, 1); }

/* ------------------------------------------------------------ the rest */

FILTER(tfilt_reverse)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "reverse() takes no arguments");
    if (v.k == TV_STR) {
        struct sbuf b = {0};
        size_t n = v.u.s->len, end = n;
        while (end > 0) {
            const size_t start = utf8_prev(v.u.s->s, end);
            tmpl_strbuf_put(&b, v.u.s->s + start, end - start);
            end = start;
        }
        *out = tmpl_strbuf_take_str(&b);
        return 0;
    }
    int iter = v.k == TV_LIST && v.u.l->sub == TL_ITER;
    if (!iter && v.k != TV_LIST && v.k != TV_DICT && v.k != TV_UNDEF)
        return tmpl_err(c, line, "argument must be iterable");
    struct tlist *items;
    if (tmpl_eval_iterate(c, line, v, &items))
        return -1;
    struct tval r =
        iter ? tmpl_value_list_new(TL_LIST, items->n) : tmpl_new_iter("list_reverseiterator", items->n);
    for (size_t i = items->n; i-- > 0;) {
        tmpl_value_retain(items->v[i]);
        tmpl_list_push(r.u.l, items->v[i]);
    }
    tmpl_value_release(tmpl_list_val(items));
    *out = r;
    return 0;
}

FILTER(tfilt_items)
{
    if (a->npos || a->nkw)
        return tmpl_err(c, line, "items() takes no arguments");
    struct tval r = tmpl_new_iter("generator", 0);
    if (v.k == TV_UNDEF) {
        *out = r;
        return 0;
    }
    if (v.k != TV_DICT) {
        tmpl_value_release(r);
        return tmpl_err(c, line, "Can only get item pairs from a mapping.");
    }
    for (size_t i = 0; i < v.u.d->n; i++) {
        struct tval t = tmpl_value_list_new(TL_TUPLE, 2);
        tmpl_value_retain(v.u.d->k[i]);
        tmpl_value_retain(v.u.d->v[i]);
        tmpl_list_push(t.u.l, v.u.d->k[i]);
        tmpl_list_push(t.u.l, v.u.d->v[i]);
        tmpl_list_push(r.u.l, t);
    }
    *out = r;
    return 0;
}

FILTER(tfilt_batch)
{
    static const char *const names[] = {"linecount", "fill_with"};
    struct tval s[2];
    int64_t count;
    struct tlist *items;
    if (tmpl_args_bind(c, line, "batch", a, names, 2, s) || tmpl_arg_int(c, line, "batch", s[0], &count))
        return -1;
    if (count <= 0)
        return tmpl_err(c, line, "batch(): linecount must be positive");
    if (tmpl_eval_iterate(c, line, v, &items))
        return -1;
    struct tval r = tmpl_new_iter("generator", 0), cur = {.k = TV_MISSING};
    for (size_t i = 0; i < items->n; i++) {
        if (cur.k == TV_MISSING)
            cur = tmpl_value_list_new(TL_LIST, (size_t)count);
        tmpl_value_retain(items->v[i]);
        tmpl_list_push(cur.u.l, items->v[i]);
        if ((int64_t)cur.u.l->n == count) {
            tmpl_list_push(r.u.l, cur);
            cur.k = TV_MISSING;
        }
    }
    if (cur.k != TV_MISSING) {
        if (s[1].k != TV_MISSING && s[1].k != TV_NONE)
            while ((int64_t)cur.u.l->n < count) {
                tmpl_value_retain(s[1]);
                tmpl_list_push(cur.u.l, s[1]);
            }
        tmpl_list_push(r.u.l, cur);
    }
    tmpl_value_release(tmpl_list_val(items));
    *out = r;
    return 0;
}

FILTER(tfilt_slice)
{
    static const char *const names[] = {"slices", "fill_with"};
    struct tval s[2];
    int64_t slices;
    struct tlist *items;
    if (tmpl_args_bind(c, line, "slice", a, names, 2, s) || tmpl_arg_int(c, line, "slice", s[0], &slices))
        return -1;
    if (slices <= 0)
        return tmpl_err(c, line, "slice(): slices must be positive");
    if (tmpl_eval_iterate(c, line, v, &items))
        return -1;
    int64_t n = (int64_t)items->n, per = n / slices, extra = n % slices, offset = 0;
    struct tval r = tmpl_new_iter("generator", (size_t)slices);
    for (int64_t k = 0; k < slices; k++) {
        int64_t start = offset + k * per;
        if (k < extra)
            offset++;
        int64_t end = offset + (k + 1) * per;
        struct tval part = tmpl_value_list_new(TL_LIST, (size_t)(end - start + 1));
        for (int64_t i = start; i < end; i++) {
            tmpl_value_retain(items->v[i]);
            tmpl_list_push(part.u.l, items->v[i]);
        }
        if (s[1].k != TV_MISSING && s[1].k != TV_NONE && k >= extra) {
            tmpl_value_retain(s[1]);
            tmpl_list_push(part.u.l, s[1]);
        }
        tmpl_list_push(r.u.l, part);
    }
    tmpl_value_release(tmpl_list_val(items));
    *out = r;
    return 0;
}
