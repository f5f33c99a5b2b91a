/* The grammar of the values an intersection's folded description (struct
 * sch) accepts, type by type: enum and const values as the texts equal to
 * them; strings by length, pattern (regex.h) or format; objects as a chain
 * of rules; arrays as nested prefix items and a bounded repetition.
 *
 * Objects: properties come in the order of "properties", then the
 * required names "properties" lacks, then any additional properties. A
 * chain of rules rest[i] ("what follows once something was written,
 * from property i on") keeps n optional properties at O(n) expressions
 * with the commas right whichever are skipped; the first member written
 * is one alternative per leading optional property. Additional keys are
 * any string but the listed names (json_schema_string.c), so a text never
 * repeats a key with a value its schema would refuse. */
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"
#include "grammar/regex.h"

/* --- enum and const -------------------------------------------------------------------- */

/* The JSON texts equal to v. */
static int literal(struct js *js, const json_t *v)
{
    struct gir *g = js->g;
    switch (json_typeof(v)) {
    case JSON_NULL:
        return js_lit(js, "null");
    case JSON_TRUE:
        return js_lit(js, "true");
    case JSON_FALSE:
        return js_lit(js, "false");
    case JSON_INTEGER:
    case JSON_REAL:
        return js_number_literal(js, v);
    case JSON_STRING:
        return js_string_literal(js, json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        int *items = xmalloc((2 * n + 2) * sizeof(int)), k = 0;
        items[k++] = js_tok(js, "[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                items[k++] = js_tok(js, ",");
            items[k++] = gx_seq2(g, literal(js, json_array_get(v, i)), js_ws(js));
        }
        items[k++] = js_lit(js, "]");
        int x = gx_seq(g, items, k);
        free(items);
        return x;
    }
    case JSON_OBJECT: { /* in the order written (a subset of the orders equal to it) */
        size_t n = json_object_size(v);
        int *items = xmalloc((2 * n + 2) * sizeof(int)), k = 0;
        items[k++] = js_tok(js, "{");
        const char *key;
        const json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            if (k > 1)
                items[k++] = js_tok(js, ",");
            int m = js_member(js, js_string_literal(js, key, strlen(key)), literal(js, val));
            items[k++] = gx_seq2(g, m, js_ws(js));
        }
        items[k++] = js_lit(js, "}");
        int x = gx_seq(g, items, k);
        free(items);
        return x;
    }
    }
    return gx_nothing(g);
}

static int gen_enum(struct js *js, const struct sch *s)
{
    size_t n = json_array_size(s->enums);
    int *alts = xmalloc((n + 1) * sizeof(int)), k = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(s->enums, i);
        int ok = js_check_sch(js, s, v);
        if (ok < 0) {
            free(alts);
            return -1;
        }
        if (ok)
            alts[k++] = literal(js, v);
    }
    int x = gx_alt(js->g, alts, k);
    free(alts);
    return x;
}

/* --- strings ------------------------------------------------------------------------ */

static int gen_string(struct js *js, const struct sch *s)
{
    long long min = s->min_len, max = s->max_len;
    if (s->format) {
        if (s->pattern && js_refuse(js, "pattern", s->pattern_path, "not supported together with format") < 0)
            return -1;
        long long fmin, fmax;
        int x = js_format_expr(js, s->format, &fmin, &fmax);
        int trivial = min <= fmin && (max < 0 || (fmax >= 0 && fmax <= max));
        if (!trivial &&
            js_refuse(js, "minLength/maxLength", s->len_path, "not supported together with format") < 0)
            return -1;
        return x;
    }
    if (s->pattern) {
        if (min > 0 || max >= 0)
            return js_pattern_with_length(js, s->pattern, s->pattern_len, min, max, s->pattern_path, s->len_path);
        struct err re = {{0}};
        int x = regex_to_gx(js->g, s->pattern, s->pattern_len, REGEX_JSON_STRING | REGEX_SEARCH, &re);
        if (x < 0) {
            if (gir_failed(js->g))
                return -1;
            if (js_refuse(js, "pattern", s->pattern_path, "%s", re.msg) < 0)
                return -1;
            return js_string_any(js);
        }
        return gx_seq3(js->g, gx_byte(js->g, '"'), x, gx_byte(js->g, '"'));
    }
    return js_string_length(js, min, max, s->len_path);
}

/* --- objects ---------------------------------------------------------------------------- */

struct prop {
    const char *name;
    size_t len;
    int required, implied; /* implied: named by required only */
    int value;             /* expression, or -1 */
    const char *path;
};

static void props_add(struct prop **p, int *n, const char *name, int implied, const char *path)
{
    for (int i = 0; i < *n; i++)
        if (strcmp((*p)[i].name, name) == 0)
            return;
    *p = xrealloc(*p, (size_t)(*n + 1) * sizeof(**p));
    (*p)[(*n)++] = (struct prop){name, strlen(name), 0, implied, -1, path};
}

/* The members after property i, something having been written before:
 * rules rest[i..n] (rest[n]: the additional properties). */
static int object_body(struct js *js, struct prop *p, int n, int extra_rule)
{
    struct gir *g = js->g;
    int *rest = xmalloc((size_t)(n + 1) * sizeof(int));
    for (int i = n ? 1 : 0; i <= n; i++) /* rest[0] would follow nothing */
        rest[i] = js_fresh(js, "object_rest");
    int first_req = n;
    for (int i = n - 1; i >= 0; i--)
        if (p[i].required)
            first_req = i;
    /* a value written both where it comes first and where it follows a comma gets a rule */
    int *value_rule = xmalloc((size_t)(n + 1) * sizeof(int));
    for (int i = 0; i < n; i++)
        value_rule[i] = (i >= 1 && i <= first_req) ? js_rule_of(js, p[i].value, "property") : -1;
#define VALUE(i) (value_rule[i] >= 0 ? gx_ref(g, value_rule[i]) : p[i].value)
#define MEMBER(i) gx_seq2(g, js_member(js, js_string_literal(js, p[i].name, p[i].len), VALUE(i)), js_ws(js))
    int extras = extra_rule >= 0 ? gx_star(g, gx_seq3(g, js_tok(js, ","), gx_ref(g, extra_rule), js_ws(js)))
                                 : gx_empty(g);
    gir_define(g, rest[n], extras);
    for (int i = n - 1; i >= 1; i--) {
        int one = gx_seq2(g, js_tok(js, ","), MEMBER(i));
        gir_define(g, rest[i], gx_seq2(g, p[i].required ? one : gx_opt(g, one), gx_ref(g, rest[i + 1])));
    }
    /* the first member written: property i (all before it skipped), or an additional one */
    int start;
    if (first_req == n)
        start = extra_rule >= 0 ? gx_opt(g, gx_seq3(g, gx_ref(g, extra_rule), js_ws(js), gx_ref(g, rest[n])))
                                : gx_empty(g);
    else
        start = gx_seq2(g, MEMBER(first_req), gx_ref(g, rest[first_req + 1]));
    for (int i = (first_req == n ? n : first_req) - 1; i >= 0; i--)
        start = gx_alt2(g, gx_seq2(g, MEMBER(i), gx_ref(g, rest[i + 1])), start);
#undef MEMBER
#undef VALUE
    free(rest);
    free(value_rule);
    return start;
}

static int gen_object(struct js *js, const struct sch *s)
{
    struct gir *g = js->g;
    const struct vlist *l = s->l;
    if (!(s->constrained & T_OBJ))
        return js_object_any(js);
    struct prop *p = NULL;
    int n = 0;
    for (int i = 0; i < l->n; i++) {
        const json_t *props = json_object_get(l->v[i].s, "properties");
        const char *key;
        const json_t *val;
        if (json_is_object(props))
            json_object_foreach((json_t *)props, key, val)
                props_add(&p, &n, key, 0, js_path(js, js_path(js, l->v[i].path, "properties"), key));
    }
    for (int i = 0; i < l->n; i++) {
        const json_t *req = json_object_get(l->v[i].s, "required");
        for (size_t k = 0; json_is_array(req) && k < json_array_size(req); k++)
            props_add(&p, &n, json_string_value(json_array_get(req, k)), 1,
                      js_path(js, l->v[i].path, "required"));
    }
    int x = -1, kept = 0, n_req = 0;
    const char **names = xmalloc((size_t)(n + 1) * sizeof(char *));
    size_t *lens = xmalloc((size_t)(n + 1) * sizeof(size_t));
    for (int i = 0; i < n; i++) {
        names[i] = p[i].name;
        lens[i] = p[i].len;
        struct vlist pl = {0};
        int forbidden = js_prop_list(js, l, p[i].name, &pl);
        int v = forbidden ? gx_nothing(g) : js_compile_list(js, &pl);
        vl_free(&pl);
        if (v < 0)
            goto out;
        int req = js_required_has(l, p[i].name);
        if (js_is_nothing(g, v)) {
            if (!req)
                continue; /* may not appear: only its name stays excluded from the extras */
            if (p[i].implied)
                js_fail(js, "'required' at %s: '%s' is not allowed by additionalProperties",
                        js_show(js, p[i].path), p[i].name);
            else
                js_fail(js, "schema at %s accepts nothing, and the property is required",
                        js_show(js, p[i].path));
            goto out;
        }
        struct prop q = p[i];
        q.value = v;
        q.required = req;
        n_req += req;
        p[kept++] = q;
    }
    struct vlist el = {0};
    int forbid = js_extra_list(js, l, &el);
    int extra_value = forbid ? gx_nothing(g) : js_compile_list(js, &el);
    vl_free(&el);
    if (extra_value < 0)
        goto out;
    int extras = !js_is_nothing(g, extra_value);
    if (s->max_props == 0 && n_req == 0) { /* only {} */
        x = gx_seq2(g, js_tok(js, "{"), js_lit(js, "}"));
        goto out;
    }
    if (s->min_props > n_req && js_refuse(js, "minProperties", s->props_path,
                                          "only supported when the required properties satisfy it") < 0)
        goto out;
    if (s->max_props >= 0 && (extras || kept > s->max_props) &&
        js_refuse(js, "maxProperties", s->props_path,
                  "only supported when every property allowed fits in it") < 0)
        goto out;
    int extra_rule = -1;
    if (extras) {
        int key = js_string_not_in(js, names, lens, n);
        extra_rule = js_rule_of(js, js_member(js, key, extra_value), "extra_property");
        if (extra_rule < 0)
            goto out;
    }
    x = gx_seq3(g, js_tok(js, "{"), object_body(js, p, kept, extra_rule), js_lit(js, "}"));
out:
    free(names);
    free(lens);
    free(p);
    return js->failed ? -1 : x;
}

/* --- arrays ------------------------------------------------------------------------------- */

static int gen_array(struct js *js, const struct sch *s)
{
    struct gir *g = js->g;
    const struct vlist *l = s->l;
    if (!(s->constrained & T_ARR))
        return js_array_any(js);
    long long min = s->min_items, max = s->max_items;
    if (min > JSON_SCHEMA_MAX_BOUND || max > JSON_SCHEMA_MAX_BOUND)
        return js_fail(js, "%s at %s: %lld is above the supported %d",
                       min > JSON_SCHEMA_MAX_BOUND ? "minItems" : "maxItems", js_show(js, s->items_path),
                       min > JSON_SCHEMA_MAX_BOUND ? min : max, JSON_SCHEMA_MAX_BOUND);
    size_t k_pre = js_prefix_len(l);
    int *pre = xmalloc((k_pre + 1) * sizeof(int)), x = -1;
    size_t k = 0; /* the prefix items that can be written */
    for (; k < k_pre && (max < 0 || (long long)k < max); k++) {
        struct vlist il = {0};
        int forbidden = js_item_list(js, l, k, &il);
        pre[k] = forbidden ? gx_nothing(g) : js_compile_list(js, &il);
        vl_free(&il);
        if (pre[k] < 0)
            goto out;
        if (js_is_nothing(g, pre[k])) {
            max = (long long)k;
            break;
        }
    }
    int tail = gx_nothing(g);
    if (k == k_pre && (max < 0 || (long long)k_pre < max)) {
        struct vlist il = {0};
        int forbidden = js_item_list(js, l, k_pre, &il);
        tail = forbidden ? gx_nothing(g) : js_compile_list(js, &il);
        vl_free(&il);
        if (tail < 0)
            goto out;
        if (js_is_nothing(g, tail))
            max = (long long)k_pre;
    }
    if (max >= 0 && min > max) {
        x = gx_nothing(g);
        goto out;
    }
    if (s->unique && (max < 0 || max > 1) &&
        js_refuse(js, "uniqueItems", s->unique_path, "only supported when at most one item is allowed") < 0)
        goto out;
    int body;
    if (k == 0) { /* items only: T W ("," W T W){min-1, max-1} */
        if (max == 0 || js_is_nothing(g, tail)) {
            body = gx_empty(g);
        } else {
            int r = js_rule_of(js, tail, "item");
            int more =
                js_repeat(js, gx_seq3(g, js_tok(js, ","), gx_ref(g, r), js_ws(js)), min > 1 ? min - 1 : 0,
                          max < 0 ? -1 : max - 1, "minItems/maxItems", s->items_path);
            body = gx_seq3(g, gx_ref(g, r), js_ws(js), more);
            if (min == 0)
                body = gx_opt(g, body);
        }
    } else {
        /* the prefix items nested, item j optional once min is reached, then the rest */
        body = gx_empty(g);
        if (k == k_pre && !js_is_nothing(g, tail)) {
            long long lo = min > (long long)k_pre ? min - (long long)k_pre : 0;
            body = js_repeat(js, gx_seq3(g, js_tok(js, ","), tail, js_ws(js)), lo,
                             max < 0 ? -1 : max - (long long)k_pre, "minItems/maxItems", s->items_path);
        }
        for (size_t j = k; j-- > 0;) {
            int item = gx_seq3(g, j ? js_tok(js, ",") : gx_empty(g), gx_seq2(g, pre[j], js_ws(js)), body);
            body = (long long)j >= min ? gx_opt(g, item) : item;
        }
    }
    x = gx_seq3(g, js_tok(js, "["), body, js_lit(js, "]"));
out:
    free(pre);
    return js->failed ? -1 : x;
}

/* --- one intersection --------------------------------------------------------------------- */

int js_gen(struct js *js, const struct sch *s)
{
    struct gir *g = js->g;
    if (s->unsat)
        return gx_nothing(g);
    if (s->enums)
        return gen_enum(js, s);
    if (s->types == T_ALL && !s->constrained)
        return js_any_value(js);
    int alts[6], k = 0;
    if (s->types & T_NULL)
        alts[k++] = js_lit(js, "null");
    if (s->types & T_BOOL)
        alts[k++] = gx_alt2(g, js_lit(js, "true"), js_lit(js, "false"));
    if (s->types & (T_INT | T_NUM))
        alts[k++] = s->multiple ? js_multiple_expr(js, &s->lo, &s->hi, s->multiple, s->multiple_path)
                                : js_number_expr(js, &s->lo, &s->hi, !(s->types & T_NUM));
    if (s->types & T_STR)
        alts[k++] = gen_string(js, s);
    if (s->types & T_OBJ)
        alts[k++] = gen_object(js, s);
    if (s->types & T_ARR)
        alts[k++] = gen_array(js, s);
    for (int i = 0; i < k; i++)
        if (alts[i] < 0)
            return -1;
    return gx_alt(g, alts, k);
}
