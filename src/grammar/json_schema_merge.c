/* Intersections of schemas for the JSON Schema front end: the fold of an
 * intersection's keywords into one description (types intersected,
 * bounds tightened, enums filtered; objects and arrays read member by
 * member later), the check of a JSON value against an intersection (what
 * enum and const values are filtered with), and the proof that the
 * alternatives of a oneOf exclude each other.
 *
 * The proof works on supersets: an alternative's description without its
 * own anyOf / oneOf accepts at least what the alternative accepts, so two
 * disjoint descriptions prove two disjoint alternatives. Disjoint means:
 * no common type, or for every common type its values differ: enum values
 * the other side rejects, number ranges or string lengths that do not
 * meet, a property both require whose schemas are (recursively) exclusive
 * (the usual "discriminator" const), array lengths that do not meet. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "grammar/json_schema_internal.h"

/* --- JSON values ----------------------------------------------------------------- */

unsigned js_type_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_NULL:
        return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE:
        return T_BOOL;
    case JSON_INTEGER:
        return T_INT;
    case JSON_REAL: {
        double x = json_real_value(v);
        return x == floor(x) ? T_INT : T_NUM;
    }
    case JSON_STRING:
        return T_STR;
    case JSON_ARRAY:
        return T_ARR;
    case JSON_OBJECT:
        return T_OBJ;
    }
    return 0;
}

int js_json_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        struct dec x, y;
        js_dec_of(a, &x);
        js_dec_of(b, &y);
        int eq = js_dec_cmp(&x, &y) == 0;
        js_dec_free(&x);
        js_dec_free(&y);
        return eq;
    }
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!js_json_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)a, key, v)
        {
            const json_t *w = json_object_get(b, key);
            if (!w || !js_json_equal(v, w))
                return 0;
        }
        return 1;
    }
    default:
        return 1;
    }
}

/* A hash consistent with js_json_equal: numbers by their decimal, objects
 * independent of key order. */
static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static uint64_t value_hash(const json_t *v)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)json_typeof(v);
    switch (json_typeof(v)) {
    case JSON_INTEGER:
    case JSON_REAL: {
        struct dec d;
        js_dec_of(v, &d);
        h = fnv(fnv(fnv(7, d.neg ? "-" : "+", 1), d.ip, strlen(d.ip)), d.fp, strlen(d.fp));
        js_dec_free(&d);
        return h;
    }
    case JSON_STRING:
        return fnv(h, json_string_value(v), json_string_length(v));
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(v); i++)
            h = (h ^ value_hash(json_array_get(v, i))) * 1099511628211ull;
        return h;
    case JSON_OBJECT: {
        const char *key;
        const json_t *val;
        uint64_t sum = 0;
        json_object_foreach((json_t *)v, key, val) sum +=
            fnv(1469598103934665603ull, key, strlen(key)) * 31 + value_hash(val);
        return h ^ sum;
    }
    default:
        return h;
    }
}

struct js_vset {
    const json_t *values; /* borrowed array */
    size_t *slot;         /* index + 1, 0: empty */
    uint64_t *hash;
    size_t cap;
};

struct js_vset *js_vset_new(const json_t *array)
{
    struct js_vset *s = xcalloc(1, sizeof(*s));
    size_t n = json_array_size(array);
    s->values = array;
    s->cap = 16;
    while (s->cap < 2 * n)
        s->cap *= 2;
    s->slot = xcalloc(s->cap, sizeof(size_t));
    s->hash = xcalloc(s->cap, sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) {
        uint64_t h = value_hash(json_array_get(array, i));
        size_t at = (size_t)h & (s->cap - 1);
        while (s->slot[at])
            at = (at + 1) & (s->cap - 1);
        s->slot[at] = i + 1;
        s->hash[at] = h;
    }
    return s;
}

int js_vset_has(const struct js_vset *s, const json_t *v)
{
    uint64_t h = value_hash(v);
    for (size_t at = (size_t)h & (s->cap - 1); s->slot[at]; at = (at + 1) & (s->cap - 1))
        if (s->hash[at] == h && js_json_equal(json_array_get(s->values, s->slot[at] - 1), v))
            return 1;
    return 0;
}

void js_vset_free(struct js_vset *s)
{
    if (!s)
        return;
    free(s->slot);
    free(s->hash);
    free(s);
}

/* --- keyword values ---------------------------------------------------------------- */

/* A non-negative integer (1.0 counts as 1), or -1. */
static long long nonneg_int(const json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) >= 0 ? (long long)json_integer_value(v) : -1;
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x >= 0 && x == floor(x))
            return x > 9e18 ? (long long)9e18 : (long long)x;
    }
    return -1;
}

static int want_nonneg(struct js *js, const char *kw, const json_t *v, const char *path, long long *out)
{
    *out = nonneg_int(v);
    if (*out < 0)
        return js_fail(js, "'%s' at %s must be a non-negative integer", kw, js_show(js, path));
    return 0;
}

static int is_schema(const json_t *v) { return json_is_object(v) || json_is_boolean(v); }

static int want_schema(struct js *js, const char *kw, const json_t *v, const char *path)
{
    if (!is_schema(v))
        return js_fail(js, "'%s' at %s must be a schema (an object or a boolean)", kw, js_show(js, path));
    return 0;
}

static int want_schemas(struct js *js, const char *kw, const json_t *v, const char *path)
{
    if (!json_is_array(v))
        return js_fail(js, "'%s' at %s must be an array of schemas", kw, js_show(js, path));
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!is_schema(json_array_get(v, i)))
            return js_fail(js, "'%s' at %s must be an array of schemas", kw, js_show(js, path));
    return 0;
}

static const struct {
    const char *name;
    unsigned mask;
} type_names[] = {{"null", T_NULL},  {"boolean", T_BOOL}, {"integer", T_INT}, {"number", T_INT | T_NUM},
                  {"string", T_STR}, {"object", T_OBJ},   {"array", T_ARR}};

static int type_mask(struct js *js, const json_t *v, const char *path, unsigned *out)
{
    *out = 0;
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(t))
            return js_fail(js, "'type' at %s must be a type name or an array of them", js_show(js, path));
        size_t k = 0;
        while (k < sizeof(type_names) / sizeof(type_names[0]) &&
               strcmp(type_names[k].name, json_string_value(t)))
            k++;
        if (k == sizeof(type_names) / sizeof(type_names[0]))
            return js_fail(js, "'type' at %s: unknown type '%s'", js_show(js, path), json_string_value(t));
        *out |= type_names[k].mask;
    }
    return 0;
}

/* s->enums intersected with vals (an array). */
static void enum_intersect(struct sch *s, const json_t *vals, const char *path)
{
    json_t *keep = json_array();
    if (!s->enums) {
        for (size_t i = 0; i < json_array_size(vals); i++)
            json_array_append(keep, json_array_get(vals, i));
        s->enum_path = path;
    } else {
        struct js_vset *in = js_vset_new(vals);
        for (size_t i = 0; i < json_array_size(s->enums); i++)
            if (js_vset_has(in, json_array_get(s->enums, i)))
                json_array_append(keep, json_array_get(s->enums, i));
        js_vset_free(in);
        json_decref(s->enums);
    }
    s->enums = keep;
}

/* --- the fold --------------------------------------------------------------------- */

static const char *const refused[] = {"patternProperties", "propertyNames", "dependentRequired",
                                      "dependentSchemas",  "dependencies",  "unevaluatedProperties",
                                      "unevaluatedItems",  "contains",      "not",
                                      "$dynamicRef",       "$recursiveRef", NULL};

static int listed(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return 1;
    return 0;
}

/* $ref and allOf are expanded by js_flatten, anyOf and oneOf distributed
 * before a fold (or left out of a proof's superset). */
static int expanded_kw(const char *kw)
{
    return strcmp(kw, "$ref") == 0 || strcmp(kw, "allOf") == 0 || strcmp(kw, "anyOf") == 0 ||
           strcmp(kw, "oneOf") == 0;
}

static int fold_bound(struct js *js, struct sch *s, const json_t *obj, const char *kw, const json_t *v,
                      const char *path)
{
    int lower = kw[0] == 'm' ? strcmp(kw, "minimum") == 0 : strcmp(kw, "exclusiveMinimum") == 0;
    int exclusive = kw[0] == 'e';
    if (exclusive && json_is_boolean(v))
        return 0; /* draft 4: read with minimum / maximum */
    if (!json_is_number(v))
        return js_fail(js, "'%s' at %s must be a number", kw, js_show(js, path));
    if (!exclusive) { /* draft 4's boolean exclusiveMinimum / exclusiveMaximum */
        const json_t *ex = json_object_get(obj, lower ? "exclusiveMinimum" : "exclusiveMaximum");
        exclusive = json_is_true(ex);
    }
    struct dec d;
    js_dec_of(v, &d);
    js_bound_tighten(lower ? &s->lo : &s->hi, &d, exclusive, lower);
    js_dec_free(&d);
    s->num_path = path;
    s->constrained |= T_INT | T_NUM;
    return 0;
}

static int fold_string_kw(struct js *js, struct sch *s, const char *kw, const json_t *v, const char *path)
{
    s->constrained |= T_STR;
    if (strcmp(kw, "minLength") == 0 || strcmp(kw, "maxLength") == 0) {
        long long n;
        if (want_nonneg(js, kw, v, path, &n) < 0)
            return -1;
        if (kw[1] == 'i' && n > s->min_len)
            s->min_len = n;
        if (kw[1] == 'a' && (s->max_len < 0 || n < s->max_len))
            s->max_len = n;
        s->len_path = path;
        return 0;
    }
    if (!json_is_string(v))
        return js_fail(js, "'%s' at %s must be a string", kw, js_show(js, path));
    const char *str = json_string_value(v);
    if (strcmp(kw, "pattern") == 0) {
        if (s->pattern && strcmp(s->pattern, str) != 0)
            return js_refuse(js, "pattern", path, "two different patterns cannot be intersected");
        s->pattern = str;
        s->pattern_len = json_string_length(v);
        s->pattern_path = path;
        return 0;
    }
    if (!js_format_known(str))
        return js_refuse(js, "format", path, "unknown format '%s'", str);
    if (s->format && strcmp(s->format, str) != 0)
        return js_refuse(js, "format", path, "two different formats cannot be intersected");
    s->format = str;
    s->format_path = path;
    return 0;
}

static int fold_array_kw(struct js *js, struct sch *s, const char *kw, const json_t *v, const char *path)
{
    s->constrained |= T_ARR;
    if (strcmp(kw, "items") == 0)
        return json_is_array(v) ? want_schemas(js, kw, v, path) : want_schema(js, kw, v, path);
    if (strcmp(kw, "prefixItems") == 0)
        return want_schemas(js, kw, v, path);
    if (strcmp(kw, "additionalItems") == 0)
        return want_schema(js, kw, v, path);
    if (strcmp(kw, "uniqueItems") == 0) {
        if (!json_is_boolean(v))
            return js_fail(js, "'uniqueItems' at %s must be a boolean", js_show(js, path));
        if (json_is_true(v)) {
            s->unique = 1;
            s->unique_path = path;
        }
        return 0;
    }
    long long n;
    if (want_nonneg(js, kw, v, path, &n) < 0)
        return -1;
    if (kw[1] == 'i' && n > s->min_items)
        s->min_items = n;
    if (kw[1] == 'a' && (s->max_items < 0 || n < s->max_items))
        s->max_items = n;
    s->items_path = path;
    return 0;
}

static int fold_object_kw(struct js *js, struct sch *s, const char *kw, const json_t *v, const char *path)
{
    s->constrained |= T_OBJ;
    if (strcmp(kw, "properties") == 0) {
        const char *key;
        const json_t *p;
        if (!json_is_object(v))
            return js_fail(js, "'properties' at %s must be an object", js_show(js, path));
        json_object_foreach((json_t *)v, key, p) if (!is_schema(p)) return want_schema(
            js, "properties", p, js_path(js, js_path(js, path, "properties"), key));
        return 0;
    }
    if (strcmp(kw, "required") == 0) {
        for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
            if (!json_is_string(json_array_get(v, i)))
                return js_fail(js, "'required' at %s must be an array of strings", js_show(js, path));
        return json_is_array(v)
                   ? 0
                   : js_fail(js, "'required' at %s must be an array of strings", js_show(js, path));
    }
    if (strcmp(kw, "additionalProperties") == 0)
        return want_schema(js, kw, v, path);
    long long n;
    if (want_nonneg(js, kw, v, path, &n) < 0)
        return -1;
    if (kw[1] == 'i' && n > s->min_props)
        s->min_props = n;
    if (kw[1] == 'a' && (s->max_props < 0 || n < s->max_props))
        s->max_props = n;
    s->props_path = path;
    return 0;
}

static int fold_keyword(struct js *js, struct sch *s, const struct view *v, const char *kw, const json_t *val,
                        unsigned *vtypes, int *nullable)
{
    if (expanded_kw(kw) || js_is_annotation(kw))
        return 0;
    const char *path = v->path; /* messages name the schema the keyword is in */
    if (strcmp(kw, "type") == 0)
        return type_mask(js, val, path, vtypes);
    if (strcmp(kw, "nullable") == 0) {
        if (!json_is_boolean(val))
            return js_fail(js, "'nullable' at %s must be a boolean", js_show(js, path));
        *nullable = json_is_true(val);
        return 0;
    }
    if (strcmp(kw, "enum") == 0 || strcmp(kw, "const") == 0) {
        if (kw[0] == 'e' && !json_is_array(val))
            return js_fail(js, "'enum' at %s must be an array", js_show(js, path));
        json_t *one = kw[0] == 'c' ? json_pack("[O]", val) : NULL;
        enum_intersect(s, one ? one : val, path);
        json_decref(one);
        return 0;
    }
    if (strcmp(kw, "minimum") == 0 || strcmp(kw, "maximum") == 0 || strcmp(kw, "exclusiveMinimum") == 0 ||
        strcmp(kw, "exclusiveMaximum") == 0)
        return fold_bound(js, s, v->s, kw, val, path);
    if (strcmp(kw, "multipleOf") == 0) {
        if (!json_is_number(val) || json_number_value(val) <= 0)
            return js_fail(js, "'multipleOf' at %s must be a number above 0", js_show(js, path));
        double m = json_number_value(val);
        if (m != 1 && (m != (double)(long long)m || m > JS_MAX_MULTIPLE))
            return js_refuse(js, "multipleOf", path, "only whole multipleOf up to %d is supported",
                             JS_MAX_MULTIPLE);
        s->types &= ~(unsigned)T_NUM; /* numbers must be integral */
        if (m > 1) { /* every multipleOf must divide: their least common multiple */
            long long k = (long long)m, have = s->multiple ? s->multiple : 1, a = have, b = k;
            while (b) {
                long long t = a % b;
                a = b;
                b = t;
            }
            long long lcm = have / a * k;
            if (lcm > JS_MAX_MULTIPLE)
                return js_refuse(js, "multipleOf", path, "the multipleOf values' common multiple %lld is above %d",
                                 lcm, JS_MAX_MULTIPLE);
            s->multiple = lcm;
            s->multiple_path = path;
        }
        return 0;
    }
    if (strcmp(kw, "format") == 0) {
        /* format constrains strings only: on a schema typed without them (OpenAPI's number
         * formats "float", "int64"...) it constrains nothing */
        const json_t *ty = json_object_get(v->s, "type");
        unsigned t = T_ALL;
        if (ty && type_mask(js, ty, path, &t) == 0 && !(t & T_STR))
            return 0;
    }
    if (strcmp(kw, "minLength") == 0 || strcmp(kw, "maxLength") == 0 || strcmp(kw, "pattern") == 0 ||
        strcmp(kw, "format") == 0)
        return fold_string_kw(js, s, kw, val, path);
    if (strcmp(kw, "items") == 0 || strcmp(kw, "prefixItems") == 0 || strcmp(kw, "additionalItems") == 0 ||
        strcmp(kw, "minItems") == 0 || strcmp(kw, "maxItems") == 0 || strcmp(kw, "uniqueItems") == 0)
        return fold_array_kw(js, s, kw, val, path);
    if (strcmp(kw, "properties") == 0 || strcmp(kw, "required") == 0 ||
        strcmp(kw, "additionalProperties") == 0 || strcmp(kw, "minProperties") == 0 ||
        strcmp(kw, "maxProperties") == 0)
        return fold_object_kw(js, s, kw, val, path);
    if (strcmp(kw, "if") == 0) /* without then / else it constrains nothing */
        return json_object_get(v->s, "then") || json_object_get(v->s, "else") ? js_refuse(js, kw, path, NULL)
                                                                              : 0;
    if (strcmp(kw, "then") == 0 || strcmp(kw, "else") == 0 || strcmp(kw, "minContains") == 0 ||
        strcmp(kw, "maxContains") == 0)
        return 0; /* refused with if / contains, or meaningless without them */
    if (listed(refused, kw))
        return js_refuse(js, kw, path, NULL);
    return js_note_unknown(js, kw, path);
}

static int fold_view(struct js *js, struct sch *s, const struct view *v)
{
    unsigned vtypes = T_ALL;
    int nullable = 0;
    const char *kw;
    const json_t *val;
    json_object_foreach((json_t *)v->s, kw,
                        val) if (fold_keyword(js, s, v, kw, val, &vtypes, &nullable) < 0) return -1;
    if (nullable)
        vtypes |= T_NULL;
    s->types &= vtypes;
    return 0;
}

int js_fold(struct js *js, const struct vlist *l, struct sch *s)
{
    memset(s, 0, sizeof(*s));
    s->l = l;
    s->types = T_ALL;
    s->max_len = s->max_items = s->max_props = -1;
    s->len_path = s->items_path = s->props_path = s->num_path = "";
    js->work += l->n + 1;
    if (js->work > JS_MAX_WORK)
        return js_fail(js, "schema at %s is too complex to compile (more than %d merges)",
                       js_show(js, l->n ? l->v[0].path : ""), JS_MAX_WORK);
    for (int i = 0; i < l->n; i++)
        if (fold_view(js, s, &l->v[i]) < 0)
            return -1;
    if (s->types & (T_INT | T_NUM)) { /* an empty numeric range */
        if (s->lo.set && s->hi.set) {
            int c = js_dec_cmp(&s->lo.v, &s->hi.v);
            if (c > 0 || (c == 0 && (s->lo.strict || s->hi.strict)))
                s->types &= ~(unsigned)(T_INT | T_NUM);
        }
    }
    if (s->max_len >= 0 && s->min_len > s->max_len)
        s->types &= ~(unsigned)T_STR;
    if (s->types == 0)
        s->unsat = 1;
    if (s->enums)
        s->enum_set = js_vset_new(s->enums);
    return 0;
}

void js_sch_free(struct sch *s)
{
    js_vset_free(s->enum_set);
    s->enum_set = NULL;
    json_decref(s->enums);
    s->enums = NULL;
    js_bound_free(&s->lo);
    js_bound_free(&s->hi);
}

/* --- members of objects and arrays ---------------------------------------------- */

int js_prop_list(struct js *js, const struct vlist *l, const char *name, struct vlist *out)
{
    for (int i = 0; i < l->n; i++) {
        const json_t *props = json_object_get(l->v[i].s, "properties");
        const json_t *extra = json_object_get(l->v[i].s, "additionalProperties");
        const json_t *p = json_is_object(props) ? json_object_get(props, name) : NULL;
        if (p) {
            vl_push(out, p, 0, js_path(js, js_path(js, l->v[i].path, "properties"), name));
        } else if (extra) {
            if (json_is_false(extra))
                return 1;
            vl_push(out, extra, 0, js_path(js, l->v[i].path, "additionalProperties"));
        }
    }
    return 0;
}

int js_extra_list(struct js *js, const struct vlist *l, struct vlist *out)
{
    for (int i = 0; i < l->n; i++) {
        const json_t *extra = json_object_get(l->v[i].s, "additionalProperties");
        if (!extra)
            continue;
        if (json_is_false(extra))
            return 1;
        vl_push(out, extra, 0, js_path(js, l->v[i].path, "additionalProperties"));
    }
    return 0;
}

/* A member's item schemas: prefixItems (or the pre-2020 array form of
 * items) and what applies after them (items, or additionalItems). */
static void item_keywords(const json_t *s, const json_t **prefix, const char **pkw, const json_t **rest,
                          const char **rkw)
{
    const json_t *items = json_object_get(s, "items");
    if (json_is_array(items)) {
        *prefix = items, *pkw = "items";
        *rest = json_object_get(s, "additionalItems"), *rkw = "additionalItems";
    } else {
        *prefix = json_object_get(s, "prefixItems"), *pkw = "prefixItems";
        *rest = items, *rkw = "items";
    }
}

int js_item_list(struct js *js, const struct vlist *l, size_t j, struct vlist *out)
{
    for (int i = 0; i < l->n; i++) {
        const json_t *prefix, *rest;
        const char *pkw, *rkw;
        item_keywords(l->v[i].s, &prefix, &pkw, &rest, &rkw);
        if (json_is_array(prefix) && j < json_array_size(prefix)) {
            vl_push(out, json_array_get(prefix, j), 0, js_path_i(js, l->v[i].path, pkw, j));
        } else if (rest) {
            if (json_is_false(rest))
                return 1;
            vl_push(out, rest, 0, js_path(js, l->v[i].path, rkw));
        }
    }
    return 0;
}

size_t js_prefix_len(const struct vlist *l)
{
    size_t n = 0;
    for (int i = 0; i < l->n; i++) {
        const json_t *prefix, *rest;
        const char *pkw, *rkw;
        item_keywords(l->v[i].s, &prefix, &pkw, &rest, &rkw);
        if (json_is_array(prefix) && json_array_size(prefix) > n)
            n = json_array_size(prefix);
    }
    return n;
}

int js_required_has(const struct vlist *l, const char *name)
{
    for (int i = 0; i < l->n; i++) {
        const json_t *req = json_object_get(l->v[i].s, "required");
        for (size_t k = 0; json_is_array(req) && k < json_array_size(req); k++) {
            const json_t *r = json_array_get(req, k);
            if (json_is_string(r) && strcmp(json_string_value(r), name) == 0)
                return 1;
        }
    }
    return 0;
}

/* --- checking values ------------------------------------------------------------ */

static int first_choice(const struct vlist *l, const char **kw, unsigned *bit)
{
    for (int i = 0; i < l->n; i++) {
        if (!(l->v[i].skip & SKIP_ANYOF) && json_object_get(l->v[i].s, "anyOf")) {
            *kw = "anyOf", *bit = SKIP_ANYOF;
            return i;
        }
        if (!(l->v[i].skip & SKIP_ONEOF) && json_object_get(l->v[i].s, "oneOf")) {
            *kw = "oneOf", *bit = SKIP_ONEOF;
            return i;
        }
    }
    return -1;
}

int js_check_list(struct js *js, const struct vlist *in, const json_t *v)
{
    struct vlist l;
    vl_copy(&l, in);
    int expanded, rc = js_flatten(js, &l, &expanded);
    if (rc != 0) {
        vl_free(&l);
        return rc < 0 ? -1 : 0;
    }
    const char *kw;
    unsigned bit;
    int i = first_choice(&l, &kw, &bit);
    if (i >= 0) {
        const json_t *arr = json_object_get(l.v[i].s, kw);
        if (!json_is_array(arr) || json_array_size(arr) == 0) {
            vl_free(&l);
            return js_fail(js, "'%s' at %s must be a non-empty array", kw, js_show(js, l.v[i].path));
        }
        int passed = 0;
        for (size_t k = 0; k < json_array_size(arr) && rc >= 0; k++) {
            struct vlist a;
            vl_copy(&a, &l);
            a.v[i].skip |= bit;
            vl_push(&a, json_array_get(arr, k), 0, js_path_i(js, l.v[i].path, kw, k));
            rc = js_check_list(js, &a, v);
            passed += rc == 1;
            vl_free(&a);
        }
        vl_free(&l);
        return rc < 0 ? -1 : bit == SKIP_ANYOF ? passed > 0 : passed == 1;
    }
    struct sch s;
    rc = js_fold(js, &l, &s);
    if (rc == 0)
        rc = js_check_sch(js, &s, v);
    js_sch_free(&s);
    vl_free(&l);
    return rc;
}

static int check_array(struct js *js, const struct sch *s, const json_t *v)
{
    long long n = (long long)json_array_size(v);
    if (n < s->min_items || (s->max_items >= 0 && n > s->max_items))
        return 0;
    if (s->unique)
        for (size_t i = 0; i < json_array_size(v); i++)
            for (size_t k = i + 1; k < json_array_size(v); k++)
                if (js_json_equal(json_array_get(v, i), json_array_get(v, k)))
                    return 0;
    for (size_t j = 0; j < json_array_size(v); j++) {
        struct vlist il = {0};
        int rc = js_item_list(js, s->l, j, &il) ? 0 : js_check_list(js, &il, json_array_get(v, j));
        vl_free(&il);
        if (rc != 1)
            return rc;
    }
    return 1;
}

static int check_object(struct js *js, const struct sch *s, const json_t *v)
{
    long long n = (long long)json_object_size(v);
    if (n < s->min_props || (s->max_props >= 0 && n > s->max_props))
        return 0;
    for (int i = 0; i < s->l->n; i++) {
        const json_t *req = json_object_get(s->l->v[i].s, "required");
        for (size_t k = 0; json_is_array(req) && k < json_array_size(req); k++)
            if (!json_object_get(v, json_string_value(json_array_get(req, k))))
                return 0;
    }
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        struct vlist pl = {0};
        int rc = js_prop_list(js, s->l, key, &pl) ? 0 : js_check_list(js, &pl, val);
        vl_free(&pl);
        if (rc != 1)
            return rc;
    }
    return 1;
}

int js_check_sch(struct js *js, const struct sch *s, const json_t *v)
{
    unsigned t = js_type_of(v);
    if (s->unsat || !(s->types & t))
        return 0;
    if (s->enum_set && !js_vset_has(s->enum_set, v))
        return 0;
    if (t & (T_INT | T_NUM)) {
        struct dec d;
        js_dec_of(v, &d);
        int in = js_dec_in(&d, &s->lo, &s->hi) && (!s->multiple || js_dec_divisible(&d, s->multiple));
        js_dec_free(&d);
        return in;
    }
    if (t == T_STR) {
        long long n = (long long)utf8_count(json_string_value(v), json_string_length(v));
        if (n < s->min_len || (s->max_len >= 0 && n > s->max_len))
            return 0;
        if (s->pattern &&
            js_refuse(js, "pattern", s->pattern_path, "not checked against const/enum values") < 0)
            return -1;
        if (s->format && js_refuse(js, "format", s->format_path, "not checked against const/enum values") < 0)
            return -1;
        return 1;
    }
    if (t == T_ARR)
        return check_array(js, s, v);
    if (t == T_OBJ)
        return check_object(js, s, v);
    return 1;
}

/* --- oneOf --------------------------------------------------------------------- */

/* The types s accepts, narrowed by its enum. */
static unsigned eff_types(const struct sch *s)
{
    if (s->unsat)
        return 0;
    if (!s->enums)
        return s->types;
    unsigned t = 0;
    for (size_t i = 0; i < json_array_size(s->enums); i++)
        t |= js_type_of(json_array_get(s->enums, i));
    return t & s->types;
}

/* hi below lo (as bounds of one value) */
static int apart(const struct bound *hi, const struct bound *lo)
{
    if (!hi->set || !lo->set)
        return 0;
    int c = js_dec_cmp(&hi->v, &lo->v);
    return c < 0 || (c == 0 && (hi->strict || lo->strict));
}

/* A value of e's enum that o might accept makes them not provably apart. */
static int enum_apart(struct js *js, const struct sch *e, const struct sch *o, unsigned common)
{
    for (size_t i = 0; i < json_array_size(e->enums); i++) {
        const json_t *v = json_array_get(e->enums, i);
        if (!(js_type_of(v) & common))
            continue;
        js->quiet++;
        js->unsure = 0;
        int in_e = js_check_sch(js, e, v), in_o = in_e == 1 ? js_check_sch(js, o, v) : 0;
        int unsure = js->unsure;
        js->quiet--;
        js->unsure = 0;
        if (in_e < 0 || in_o < 0)
            return -1;
        if (in_e == 1 && (in_o == 1 || unsure))
            return 0;
    }
    return 1;
}

static int objects_apart(struct js *js, const struct sch *a, const struct sch *b, int depth)
{
    if (depth >= JS_MAX_PROVE_DEPTH)
        return 0;
    for (int i = 0; i < a->l->n; i++) {
        const json_t *req = json_object_get(a->l->v[i].s, "required");
        for (size_t k = 0; json_is_array(req) && k < json_array_size(req); k++) {
            const char *name = json_string_value(json_array_get(req, k));
            if (!name || !js_required_has(b->l, name))
                continue;
            struct vlist pa = {0}, pb = {0};
            int fa = js_prop_list(js, a->l, name, &pa), fb = js_prop_list(js, b->l, name, &pb);
            int r = fa || fb ? 1 : js_exclusive(js, &pa, &pb, depth + 1);
            vl_free(&pa);
            vl_free(&pb);
            if (r != 0)
                return r;
        }
    }
    return 0;
}

static int arrays_apart(struct js *js, const struct sch *a, const struct sch *b, int depth)
{
    if ((a->max_items >= 0 && a->max_items < b->min_items) ||
        (b->max_items >= 0 && b->max_items < a->min_items))
        return 1;
    if (depth >= JS_MAX_PROVE_DEPTH)
        return 0;
    long long both = a->min_items < b->min_items ? a->min_items : b->min_items;
    for (long long j = 0; j < both && j < 64; j++) {
        struct vlist ia = {0}, ib = {0};
        int fa = js_item_list(js, a->l, (size_t)j, &ia), fb = js_item_list(js, b->l, (size_t)j, &ib);
        int r = fa || fb ? 1 : js_exclusive(js, &ia, &ib, depth + 1);
        vl_free(&ia);
        vl_free(&ib);
        if (r != 0)
            return r;
    }
    return 0;
}

static int sch_apart(struct js *js, const struct sch *a, const struct sch *b, int depth)
{
    unsigned common = eff_types(a) & eff_types(b);
    if (!common)
        return 1;
    if (a->enums || b->enums) {
        int r = a->enums ? enum_apart(js, a, b, common) : 1;
        if (r == 1 && b->enums)
            r = enum_apart(js, b, a, common);
        return r;
    }
    if (common & (T_NULL | T_BOOL))
        return 0;
    if ((common & (T_INT | T_NUM)) && !apart(&a->hi, &b->lo) && !apart(&b->hi, &a->lo))
        return 0;
    if ((common & T_STR) &&
        !((a->max_len >= 0 && a->max_len < b->min_len) || (b->max_len >= 0 && b->max_len < a->min_len)))
        return 0;
    if (common & T_OBJ) {
        int r = objects_apart(js, a, b, depth);
        if (r != 1)
            return r;
    }
    if (common & T_ARR) {
        int r = arrays_apart(js, a, b, depth);
        if (r != 1)
            return r;
    }
    return 1;
}

/* The flattened description of l, for a proof (anyOf / oneOf left out). */
static int summary(struct js *js, const struct vlist *in, struct vlist *l, struct sch *s)
{
    vl_copy(l, in);
    int expanded, rc = js_flatten(js, l, &expanded);
    memset(s, 0, sizeof(*s));
    if (rc < 0)
        return -1;
    if (rc == 1) {
        s->l = l;
        s->unsat = 1;
        return 0;
    }
    return js_fold(js, l, s);
}

int js_exclusive(struct js *js, const struct vlist *a, const struct vlist *b, int depth)
{
    struct vlist la, lb;
    struct sch sa, sb;
    int r = summary(js, a, &la, &sa);
    if (r == 0)
        r = summary(js, b, &lb, &sb);
    else
        memset(&sb, 0, sizeof(sb)), memset(&lb, 0, sizeof(lb));
    if (r == 0)
        r = sch_apart(js, &sa, &sb, depth);
    js_sch_free(&sa);
    js_sch_free(&sb);
    vl_free(&la);
    vl_free(&lb);
    return r;
}

/* Whether values of different owners are all unequal; else *a and *b are
 * two owners sharing a value. Hashed: linear in the number of values. */
static int owners_disjoint(json_t *vals, const int *owner, int *a, int *b)
{
    size_t n = json_array_size(vals), cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *slot = xcalloc(cap, sizeof(size_t));
    uint64_t *hash = xcalloc(cap, sizeof(uint64_t));
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        const json_t *v = json_array_get(vals, i);
        uint64_t h = value_hash(v);
        size_t at = (size_t)h & (cap - 1);
        for (; slot[at]; at = (at + 1) & (cap - 1)) {
            size_t k = slot[at] - 1;
            if (hash[at] == h && owner[k] != owner[i] && js_json_equal(json_array_get(vals, k), v)) {
                *a = owner[k], *b = owner[i], ok = 0;
                break;
            }
        }
        slot[at] = i + 1;
        hash[at] = h;
    }
    free(slot);
    free(hash);
    return ok;
}

/* Fast proofs for many alternatives: every alternative finite (enum /
 * const) with no value shared, or one property all of them require with
 * enum values no two share (the discriminated union). 1: proved, 0: not
 * this way, -1: error. */
static int enums_disjoint(struct js *js, const struct sch *s, size_t n)
{
    json_t *vals = json_array();
    int *owner = NULL, a, b, r = 1;
    for (size_t i = 0; i < n && r == 1; i++) {
        if (s[i].unsat)
            continue;
        if (!s[i].enums) {
            r = 0;
            break;
        }
        owner = xrealloc(owner, (json_array_size(vals) + json_array_size(s[i].enums) + 1) * sizeof(int));
        for (size_t k = 0; k < json_array_size(s[i].enums); k++) {
            owner[json_array_size(vals)] = (int)i;
            json_array_append(vals, json_array_get(s[i].enums, k));
        }
    }
    if (r == 1 && !owners_disjoint(vals, owner, &a, &b)) {
        int p = sch_apart(js, &s[a], &s[b], 0);
        r = p < 0 ? -1 : p == 1 ? 0 : -2; /* -2: two alternatives that meet; 0: the pairs decide */
    }
    free(owner);
    json_decref(vals);
    return r;
}

static int discriminated(struct js *js, const struct sch *s, size_t n)
{
    for (size_t i = 0; i < n; i++) /* required says nothing of other types */
        if (eff_types(&s[i]) & ~(unsigned)T_OBJ)
            return 0;
    const struct vlist *l0 = s[0].l;
    for (int v = 0; v < l0->n; v++) {
        const json_t *req = json_object_get(l0->v[v].s, "required");
        for (size_t k = 0; json_is_array(req) && k < json_array_size(req); k++) {
            const char *name = json_string_value(json_array_get(req, k));
            size_t i = 1;
            while (name && i < n && js_required_has(s[i].l, name))
                i++;
            if (!name || i < n)
                continue;
            struct vlist *pl = xcalloc(n, sizeof(*pl)), *fl = xcalloc(n, sizeof(*fl));
            struct sch *ps = xcalloc(n, sizeof(*ps));
            int r = 1;
            for (i = 0; i < n && r == 1; i++) {
                if (js_prop_list(js, s[i].l, name, &pl[i]))
                    ps[i].unsat = 1;
                else if (summary(js, &pl[i], &fl[i], &ps[i]) < 0)
                    r = -1;
            }
            if (r == 1) {
                r = enums_disjoint(js, ps, n);
                if (r == -2) /* the property's schemas meet; the alternatives still may not */
                    r = 0;
            }
            for (i = 0; i < n; i++) {
                js_sch_free(&ps[i]);
                vl_free(&pl[i]);
                vl_free(&fl[i]);
            }
            free(pl);
            free(fl);
            free(ps);
            if (r == 1 || r == -1)
                return r;
        }
    }
    return 0;
}

int js_exclusive_all(struct js *js, const struct vlist *alts, size_t n)
{
    struct vlist *l = xcalloc(n, sizeof(*l));
    struct sch *s = xcalloc(n, sizeof(*s));
    int r = 1, proved = 0;
    for (size_t i = 0; i < n && r == 1; i++)
        if (summary(js, &alts[i], &l[i], &s[i]) < 0)
            r = -1;
    if (r == 1 && n > 2) { /* many alternatives: try the linear proofs before the pairs */
        int fast = enums_disjoint(js, s, n);
        if (fast == 0)
            fast = discriminated(js, s, n);
        if (fast == -2)
            r = 0;
        else if (fast == -1)
            r = -1;
        proved = fast == 1;
    }
    for (size_t i = 0; i < n && r == 1 && !proved; i++)
        for (size_t k = i + 1; k < n && r == 1; k++)
            r = sch_apart(js, &s[i], &s[k], 0);
    for (size_t i = 0; i < n; i++) {
        js_sch_free(&s[i]);
        vl_free(&l[i]);
    }
    free(l);
    free(s);
    return r;
}
