/* Sorting and aggregating filters: sort (stable, reverse keeps the order of
 * equal items, case-insensitive by default, attribute paths, "a,b" keys),
 * dictsort, unique, min, max, sum. Comparisons are Python's. */
#include <string.h>

#include "template/filters.h"

/* --------------------------------------------------------------- sorting */

struct sorter {
    struct rctx *c;
    int line, reverse, failed;
    const struct tval *keys;
};

/* 1 if item i must come before item j (strictly), as Python's sort compares */
static int before(struct sorter *s, size_t i, size_t j)
{
    char msg[256];
    int lt;
    if (s->failed)
        return 0;
    if (tmpl_value_less(s->reverse ? s->keys[j] : s->keys[i], s->reverse ? s->keys[i] : s->keys[j], &lt,
                            msg, sizeof msg)) {
        tmpl_err(s->c, s->line, "%s", msg);
        s->failed = 1;
        return 0;
    }
    return lt;
}

static void merge_sort(struct sorter *s, size_t *idx, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    merge_sort(s, idx, tmp, h);
    merge_sort(s, idx + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = before(s, idx[j], idx[i]) ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
}

/* Sorts items by keys; returns a new list of items (sub-kind TL_LIST). */
static int sort_by_keys(struct rctx *c, int line, const struct tlist *items, const struct tval *keys,
                        int reverse, struct tval *out)
{
    size_t n = items->n;
    size_t *idx = xmalloc((n + 1) * sizeof *idx), *tmp = xmalloc((n + 1) * sizeof *tmp);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    struct sorter s = {c, line, reverse, 0, keys};
    merge_sort(&s, idx, tmp, n);
    if (!s.failed) {
        struct tval l = tmpl_value_list_new(TL_LIST, n);
        for (size_t i = 0; i < n; i++) {
            tmpl_value_retain(items->v[idx[i]]);
            tmpl_list_push(l.u.l, items->v[idx[i]]);
        }
        *out = l;
    }
    free(idx);
    free(tmp);
    return s.failed ? -1 : 0;
}

/* keys[i] = attribute paths of items[i] (a tuple when several, comma-separated) */
static int make_keys(struct rctx *c, int line, const struct tlist *items, struct tval attr, int lower,
                     int multi, struct tval **keys_out)
{
    struct attrpath paths[8];
    int np = 0, rc = 0;
    if (attr.k == TV_STR && multi) {
        const char *s = attr.u.s->s;
        size_t n = attr.u.s->len, i = 0;
        for (;;) {
            size_t j = i;
            while (j < n && s[j] != ',')
                j++;
            if (np == 8 || tmpl_path_parse(c, line, attr, s + i, j - i, &paths[np])) {
                rc = np == 8 ? tmpl_err(c, line, "too many sort attributes") : -1;
                break;
            }
            np++;
            if (j >= n)
                break;
            i = j + 1;
        }
    } else {
        rc = tmpl_path_parse(c, line, attr, NULL, 0, &paths[0]);
        np = rc ? 0 : 1;
    }
    struct tval *keys = xcalloc(items->n + 1, sizeof *keys);
    for (size_t i = 0; i < items->n && !rc; i++) {
        if (np == 1) {
            rc = tmpl_path_get(c, line, items->v[i], &paths[0], tmpl_value_none(), lower, &keys[i]);
        } else {
            struct tval t = tmpl_value_list_new(TL_TUPLE, (size_t)np);
            for (int k = 0; k < np && !rc; k++) {
                struct tval x;
                rc = tmpl_path_get(c, line, items->v[i], &paths[k], tmpl_value_none(), lower, &x);
                if (!rc)
                    tmpl_list_push(t.u.l, x);
            }
            keys[i] = t;
        }
    }
    for (int k = 0; k < np; k++)
        tmpl_path_free(&paths[k]);
    if (rc) {
        for (size_t i = 0; i < items->n; i++)
            tmpl_value_release(keys[i]);
        free(keys);
        return -1;
    }
    *keys_out = keys;
    return 0;
}

static void free_keys(struct tval *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tmpl_value_release(keys[i]);
    free(keys);
}

FILTER(tfilt_sort)
{
    static const char *const names[] = {"reverse", "case_sensitive", "attribute"};
    struct tval s[3];
    struct tlist *items;
    struct tval *keys;
    if (tmpl_args_bind(c, line, "sort", a, names, 3, s) || tmpl_eval_iterate(c, line, v, &items))
        return -1;
    int lower = !(s[1].k != TV_MISSING && tmpl_value_truthy(s[1]));
    int rc = make_keys(c, line, items, s[2], lower, 1, &keys);
    if (!rc) {
        rc = sort_by_keys(c, line, items, keys, s[0].k != TV_MISSING && tmpl_value_truthy(s[0]), out);
        free_keys(keys, items->n);
    }
    tmpl_value_release(tmpl_list_val(items));
    return rc;
}

FILTER(tfilt_dictsort)
{
    static const char *const names[] = {"case_sensitive", "by", "reverse"};
    struct tval s[3];
    if (tmpl_args_bind(c, line, "dictsort", a, names, 3, s))
        return -1;
    if (v.k != TV_DICT)
        return tmpl_err(c, line, "dictsort expects a mapping, got %s", tmpl_value_type_name(v));
    int pos = 0;
    if (s[1].k == TV_STR && !strcmp(s[1].u.s->s, "value"))
        pos = 1;
    else if (s[1].k != TV_MISSING && !(s[1].k == TV_STR && !strcmp(s[1].u.s->s, "key")))
        return tmpl_err(c, line, "You can only sort by either \"key\" or \"value\"");
    int lower = !(s[0].k != TV_MISSING && tmpl_value_truthy(s[0]));
    const struct tdict *d = v.u.d;
    struct tval items = tmpl_value_list_new(TL_LIST, d->n);
    struct tval *keys = xcalloc(d->n + 1, sizeof *keys);
    for (size_t i = 0; i < d->n; i++) {
        struct tval t = tmpl_value_list_new(TL_TUPLE, 2);
        tmpl_value_retain(d->k[i]);
        tmpl_value_retain(d->v[i]);
        tmpl_list_push(t.u.l, d->k[i]);
        tmpl_list_push(t.u.l, d->v[i]);
        tmpl_list_push(items.u.l, t);
        struct tval k = pos ? d->v[i] : d->k[i];
        if (lower && k.k == TV_STR)
            tmpl_str_case(k, CASE_LOWER, &keys[i]);
        else {
            keys[i] = k;
            tmpl_value_retain(k);
        }
    }
    int rc = sort_by_keys(c, line, items.u.l, keys, s[2].k != TV_MISSING && tmpl_value_truthy(s[2]), out);
    free_keys(keys, d->n);
    tmpl_value_release(items);
    return rc;
}

FILTER(tfilt_unique)
{
    static const char *const names[] = {"case_sensitive", "attribute"};
    struct tval s[2];
    struct tlist *items;
    struct tval *keys;
    if (tmpl_args_bind(c, line, "unique", a, names, 2, s) || tmpl_eval_iterate(c, line, v, &items))
        return -1;
    int lower = !(s[0].k != TV_MISSING && tmpl_value_truthy(s[0]));
    int rc = make_keys(c, line, items, s[1], lower, 0, &keys);
    if (rc) {
        tmpl_value_release(tmpl_list_val(items));
        return -1;
    }
    struct tval r = tmpl_new_iter("generator", items->n);
    for (size_t i = 0; i < items->n && !rc; i++) {
        if (!tmpl_value_hashable(keys[i])) {
            rc = tmpl_err(c, line, "unhashable type: '%s'", tmpl_value_type_name(keys[i]));
            break;
        }
        size_t j = 0;
        while (j < i && !tmpl_value_equal(keys[j], keys[i]))
            j++;
        if (j == i) {
            tmpl_value_retain(items->v[i]);
            tmpl_list_push(r.u.l, items->v[i]);
        }
    }
    free_keys(keys, items->n);
    tmpl_value_release(tmpl_list_val(items));
    if (rc) {
        tmpl_value_release(r);
        return -1;
    }
    *out = r;
    return 0;
}

static int min_max(struct rctx *c, int line, struct tval v, const struct targs *a, struct tval *out,
                   int is_max)
{
    static const char *const names[] = {"case_sensitive", "attribute"};
    struct tval s[2];
    struct tlist *items;
    struct tval *keys;
    char msg[256];
    if (tmpl_args_bind(c, line, is_max ? "max" : "min", a, names, 2, s) ||
        tmpl_eval_iterate(c, line, v, &items))
        return -1;
    if (!items->n) {
        tmpl_value_release(tmpl_list_val(items));
        *out = tmpl_value_undef_hint("No aggregated item, sequence was empty.");
        return 0;
    }
    int lower = !(s[0].k != TV_MISSING && tmpl_value_truthy(s[0]));
    if (make_keys(c, line, items, s[1], lower, 0, &keys)) {
        tmpl_value_release(tmpl_list_val(items));
        return -1;
    }
    size_t best = 0;
    int rc = 0;
    for (size_t i = 1; i < items->n; i++) {
        int lt;
        if (tmpl_value_less(is_max ? keys[best] : keys[i], is_max ? keys[i] : keys[best], &lt, msg,
                                sizeof msg)) {
            rc = tmpl_err(c, line, "%s", msg);
            break;
        }
        if (lt)
            best = i;
    }
    if (!rc) {
        *out = items->v[best];
        tmpl_value_retain(*out);
    }
    free_keys(keys, items->n);
    tmpl_value_release(tmpl_list_val(items));
    return rc;
}

FILTER(tfilt_min) { return min_max(c, line, v, a, out, 0); }

FILTER(tfilt_max) { return min_max(c, line, v, a, out, 1); }

FILTER(tfilt_sum)
{
    static const char *const names[] = {"attribute", "start"};
    struct tval s[2];
    struct tlist *items;
    struct attrpath p;
    if (tmpl_args_bind(c, line, "sum", a, names, 2, s) || tmpl_path_parse(c, line, s[0], NULL, 0, &p))
        return -1;
    if (tmpl_eval_iterate(c, line, v, &items)) {
        tmpl_path_free(&p);
        return -1;
    }
    struct tval acc = s[1].k == TV_MISSING ? tmpl_value_int(0) : s[1];
    tmpl_value_retain(acc);
    int rc = 0;
    for (size_t i = 0; i < items->n && !rc; i++) {
        struct tval x = items->v[i], r;
        tmpl_value_retain(x);
        if (p.n) {
            struct tval y;
            rc = tmpl_path_get(c, line, x, &p, tmpl_value_none(), 0, &y);
            tmpl_value_release(x);
            x = y;
            if (rc)
                break;
        }
        rc = tmpl_eval_binop(c, line, OP_ADD, acc, x, &r);
        tmpl_value_release(x);
        if (!rc) {
            tmpl_value_release(acc);
            acc = r;
        }
    }
    tmpl_path_free(&p);
    tmpl_value_release(tmpl_list_val(items));
    if (rc) {
        tmpl_value_release(acc);
        return -1;
    }
    *out = acc;
    return 0;
}
