/* The JSON Schema front end (json_schema.h): the driver. A schema is
 * compiled as an intersection of schemas (a "view list"): $ref targets
 * and allOf members are expanded into the list, an anyOf / oneOf is
 * distributed over its alternatives (each alternative intersected with
 * its siblings, as Draft 2020-12 applies them all), and what remains is
 * folded into one description (json_schema_merge.c) from which the
 * grammar of each accepted type is built (json_schema_value.c).
 *
 * Every intersection reached through $ref or allOf, and every schema
 * something refers to, becomes a rule of its own, memoized by the set of
 * schemas intersected, so recursion terminates and each target is built
 * once. Limits on nesting, on the size of an intersection and on the
 * total work keep a hostile schema from hanging the compile.
 *
 * Whitespace: every token of a value is followed by the bounded blanks
 * (none when compact) and the text starts with them, so there is exactly
 * one place for blanks between any two tokens. */
#include "grammar/json_schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/chars.h"
#include "grammar/json_schema_internal.h"

/* --- errors, notes, paths ----------------------------------------------------- */

int js_fail(struct js *js, const char *fmt, ...)
{
    if (!js->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(js->e->msg, sizeof(js->e->msg), fmt, ap);
        va_end(ap);
        js->failed = 1;
    }
    return -1;
}

static void note_add(struct js *js, const char *text)
{
    struct json_schema_notes *n = js->notes;
    if (!n)
        return;
    for (int i = 0; i < n->n_ignored; i++)
        if (strcmp(n->ignored[i], text) == 0)
            return;
    n->ignored = xrealloc(n->ignored, (size_t)(n->n_ignored + 1) * sizeof(char *));
    n->ignored[n->n_ignored++] = xstrdup(text);
}

static int refuse_as(struct js *js, int unknown, const char *kw, const char *path, const char *why)
{
    if (unknown && js->quiet) /* asserts nothing, so it changes no language */
        return 0;
    if (js->quiet) {
        js->unsure = 1;
        return 0;
    }
    if (js->strict && !unknown) {
        if (!why)
            return js_fail(js, "unsupported keyword '%s' at %s", kw, js_show(js, path));
        return js_fail(js, "%s at %s: %s", kw, js_show(js, path), why);
    }
    /* an unknown keyword is an annotation (JSON Schema 2020-12, 4.3.1): ignored even when strict, and noted */
    char text[1024];
    if (unknown || !why)
        snprintf(text, sizeof(text), "%s at %s%s", kw, js_show(js, path),
                 unknown ? " (unknown keyword: an annotation, ignored)" : "");
    else
        snprintf(text, sizeof(text), "%s at %s (%s)", kw, js_show(js, path), why);
    note_add(js, text);
    return 0;
}

int js_refuse(struct js *js, const char *kw, const char *path, const char *fmt, ...)
{
    char why[512];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
    }
    return refuse_as(js, 0, kw, path, fmt ? why : NULL);
}

int js_note_unknown(struct js *js, const char *kw, const char *path)
{
    return refuse_as(js, 1, kw, path, NULL);
}

void json_schema_notes_free(struct json_schema_notes *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->n_ignored; i++)
        free(n->ignored[i]);
    free(n->ignored);
    n->ignored = NULL;
    n->n_ignored = 0;
}

const char *js_strdup(struct js *js, const char *s, size_t n)
{
    if (js->n_arena == js->cap_arena) {
        js->cap_arena = js->cap_arena ? js->cap_arena * 2 : 64;
        js->arena = xrealloc(js->arena, (size_t)js->cap_arena * sizeof(char *));
    }
    char *c = xmalloc(n + 1);
    memcpy(c, s, n);
    c[n] = '\0';
    js->arena[js->n_arena++] = c;
    return c;
}

const char *js_path(struct js *js, const char *base, const char *key)
{
    size_t bl = strlen(base), kl = strlen(key), n = bl + 1;
    char *buf = xmalloc(bl + 2 * kl + 2);
    memcpy(buf, base, bl);
    buf[bl] = '/';
    for (size_t i = 0; i < kl; i++) { /* JSON pointer escapes */
        if (key[i] == '~' || key[i] == '/') {
            buf[n++] = '~';
            buf[n++] = key[i] == '~' ? '0' : '1';
        } else {
            buf[n++] = key[i];
        }
    }
    const char *r = js_strdup(js, buf, n);
    free(buf);
    return r;
}

const char *js_path_i(struct js *js, const char *base, const char *key, size_t i)
{
    char idx[32];
    snprintf(idx, sizeof(idx), "%zu", i);
    return js_path(js, js_path(js, base, key), idx);
}

const char *js_show(struct js *js, const char *path)
{
    size_t n = strlen(path);
    if (n == 0)
        return "/";
    if (n <= 240)
        return path;
    /* a deep path keeps its start and end, so the message stays readable */
    char buf[256];
    snprintf(buf, sizeof(buf), "%.100s/.../%s", path, path + n - 120);
    return js_strdup(js, buf, strlen(buf));
}

/* --- shared expressions ------------------------------------------------------------ */

int js_ws(struct js *js)
{
    if (js->ws_max <= 0)
        return gx_empty(js->g);
    if (js->ws_lines) { /* "" | " " | "\r"? "\n" [ \t]{0,ws_max} */
        struct byteset indent = {{0}};
        byteset_add(&indent, ' ');
        byteset_add(&indent, '\t');
        int line = gx_seq3(js->g, gx_opt(js->g, gx_byte(js->g, '\r')), gx_byte(js->g, '\n'),
                           gx_repeat(js->g, gx_bytes(js->g, &indent), 0, js->ws_max));
        return gx_opt(js->g, gx_alt2(js->g, gx_byte(js->g, ' '), line));
    }
    struct byteset b = {{0}};
    byteset_add(&b, ' ');
    byteset_add(&b, '\t');
    byteset_add(&b, '\n');
    byteset_add(&b, '\r');
    return gx_repeat(js->g, gx_bytes(js->g, &b), 0, js->ws_max);
}

int js_lit(struct js *js, const char *s) { return gx_str(js->g, s); }

int js_tok(struct js *js, const char *s) { return gx_seq2(js->g, js_lit(js, s), js_ws(js)); }

int js_fresh(struct js *js, const char *hint)
{
    char name[96];
    snprintf(name, sizeof(name), "%.60s_%d", hint, ++js->n_fresh);
    return gir_rule_fresh(js->g, name);
}

int js_rule_of(struct js *js, int expr, const char *hint)
{
    if (expr >= 0 && js->g->nodes[expr].kind == GX_REF) /* already one */
        return js->g->nodes[expr].arg;
    int r = js_fresh(js, hint);
    gir_define(js->g, r, expr);
    return gir_failed(js->g) ? -1 : r;
}

/* x W ("," W x W)*: a non-empty list; x built by the caller twice. */
static int list_of(struct js *js, int first, int more)
{
    int ws = js_ws(js);
    int rest = gx_star(js->g, gx_seq3(js->g, js_tok(js, ","), more, js_ws(js)));
    return gx_seq3(js->g, first, ws, rest);
}

int js_array_any(struct js *js)
{
    if (js->r_array < 0) {
        js->r_array = gir_rule_fresh(js->g, "json_array");
        int body = gx_opt(js->g, list_of(js, js_any_value(js), js_any_value(js)));
        gir_define(js->g, js->r_array, gx_seq3(js->g, js_tok(js, "["), body, js_lit(js, "]")));
    }
    return gx_ref(js->g, js->r_array);
}

int js_member(struct js *js, int key, int value)
{
    return gx_seq3(js->g, key, gx_seq2(js->g, js_ws(js), js_tok(js, ":")), value);
}

int js_object_any(struct js *js)
{
    if (js->r_object < 0) {
        js->r_object = gir_rule_fresh(js->g, "json_object");
        int m1 = js_member(js, js_string_any(js), js_any_value(js)),
            m2 = js_member(js, js_string_any(js), js_any_value(js));
        int body = gx_opt(js->g, list_of(js, m1, m2));
        gir_define(js->g, js->r_object, gx_seq3(js->g, js_tok(js, "{"), body, js_lit(js, "}")));
    }
    return gx_ref(js->g, js->r_object);
}

int js_any_value(struct js *js)
{
    if (js->r_value < 0) {
        js->r_value = gir_rule_fresh(js->g, "json_value");
        struct bound none = {0};
        int alts[7] = {
            js_lit(js, "null"), js_lit(js, "true"), js_lit(js, "false"), js_number_expr(js, &none, &none, 0),
            js_string_any(js),  js_array_any(js),   js_object_any(js)};
        gir_define(js->g, js->r_value, gx_alt(js->g, alts, 7));
    }
    return gx_ref(js->g, js->r_value);
}

int js_repeat(struct js *js, int x, long long min, long long max, const char *what, const char *path)
{
    struct gir *g = js->g;
    if (max >= 0 && max < min)
        return gx_nothing(g);
    if (min > JSON_SCHEMA_MAX_BOUND || max > JSON_SCHEMA_MAX_BOUND)
        return js_fail(js, "%s at %s: %lld is above the supported %d", what, js_show(js, path),
                       max > min ? max : min, JSON_SCHEMA_MAX_BOUND);
    if (min <= GIR_MAX_REPEAT && max <= GIR_MAX_REPEAT)
        return gx_repeat(g, x, (int)min, (int)max);
    /* x{B} blocks: x{min} is (x{B}){min/B} x{min%B}, and x{0,M} splits M
     * into full blocks and a remainder */
    int r = js_rule_of(js, x, "repeated");
    if (r < 0)
        return -1;
    const long long B = GIR_MAX_REPEAT;
#define X gx_ref(g, r)
#define BLOCKS(lo, hi) gx_repeat(g, gx_repeat(g, X, (int)B, (int)B), (int)(lo), (int)(hi))
    int head = gx_seq2(g, BLOCKS(min / B, min / B), gx_repeat(g, X, (int)(min % B), (int)(min % B)));
    int tail;
    if (max < 0) {
        tail = gx_star(g, X);
    } else if (max - min <= B) {
        tail = gx_repeat(g, X, 0, (int)(max - min));
    } else {
        long long m = max - min, q = m / B, rem = m % B;
        int below = gx_seq2(g, BLOCKS(0, q - 1), gx_repeat(g, X, 0, (int)(B - 1)));
        int top = gx_seq2(g, BLOCKS(q, q), gx_repeat(g, X, 0, (int)rem));
        tail = gx_alt2(g, below, top);
    }
#undef BLOCKS
#undef X
    return gx_seq2(g, head, tail);
}

int js_is_nothing(const struct gir *g, int x) { return x >= 0 && g->nodes[x].kind == GX_NOTHING; }

/* --- views ------------------------------------------------------------------- */

void vl_push(struct vlist *l, const json_t *s, unsigned skip, const char *path)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = xrealloc(l->v, (size_t)l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = (struct view){s, skip, path};
}

void vl_copy(struct vlist *dst, const struct vlist *src)
{
    memset(dst, 0, sizeof(*dst));
    for (int i = 0; i < src->n; i++)
        vl_push(dst, src->v[i].s, src->v[i].skip, src->v[i].path);
}

void vl_free(struct vlist *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* --- $ref ------------------------------------------------------------------------ */

/* A URI fragment's percent escapes decoded; NULL when malformed. */
static char *pct_decode(const char *s)
{
    size_t n = strlen(s), k = 0;
    char *r = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            r[k++] = s[i];
            continue;
        }
        int a = i + 2 < n ? chars_hex_value((unsigned char)s[i + 1]) : -1, b = a >= 0 ? chars_hex_value((unsigned char)s[i + 2]) : -1;
        if (a < 0 || b < 0) {
            free(r);
            return NULL;
        }
        r[k++] = (char)(a * 16 + b);
        i += 2;
    }
    r[k] = '\0';
    return r;
}

static const char *const not_schemas[] = {"enum", "const", "default", "examples", NULL};

static int in_list(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return 1;
    return 0;
}

/* The subschema with "$anchor": name (depth-first), its path into *path. */
static const json_t *find_anchor(struct js *js, const json_t *j, const char *name, const char *at,
                                 const char **path)
{
    if (json_is_object(j)) {
        const json_t *a = json_object_get(j, "$anchor"), *d = json_object_get(j, "$dynamicAnchor");
        if ((json_is_string(a) && strcmp(json_string_value(a), name) == 0) ||
            (json_is_string(d) && strcmp(json_string_value(d), name) == 0)) {
            *path = at;
            return j;
        }
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)j, key, v)
        {
            if (in_list(not_schemas, key))
                continue;
            const json_t *r = find_anchor(js, v, name, js_path(js, at, key), path);
            if (r)
                return r;
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            char idx[32];
            snprintf(idx, sizeof(idx), "%zu", i);
            const json_t *r = find_anchor(js, json_array_get(j, i), name, js_path(js, at, idx), path);
            if (r)
                return r;
        }
    }
    return NULL;
}

static const json_t *resolve(struct js *js, const char *ref, const char *at, const char **tpath, int quiet)
{
    const char *frag = NULL;
    size_t bl = js->base ? strlen(js->base) : 0;
    if (ref[0] == '#')
        frag = ref + 1;
    else if (js->base && bl > 0 && strncmp(ref, js->base, bl) == 0 && (ref[bl] == '#' || ref[bl] == '\0'))
        frag = ref[bl] ? ref + bl + 1 : "";
    if (!frag) {
        if (!quiet)
            js_fail(js, "'$ref' at %s: remote reference '%s' is not supported", js_show(js, at), ref);
        return NULL;
    }
    char *f = pct_decode(frag);
    const json_t *cur = js->root;
    const char *path = "";
    if (!f) {
        cur = NULL;
    } else if (f[0] == '/') {
        for (char *p = f + 1; cur;) {
            char *end = strchr(p, '/');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            char *tokn = xmalloc(n + 1);
            size_t k = 0;
            for (size_t i = 0; i < n; i++) { /* ~1 is '/', ~0 is '~' */
                if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
                    tokn[k++] = p[i + 1] == '0' ? '~' : '/';
                    i++;
                } else if (p[i] == '~') {
                    cur = NULL;
                } else {
                    tokn[k++] = p[i];
                }
            }
            tokn[k] = '\0';
            if (cur && json_is_object(cur)) {
                cur = json_object_get(cur, tokn);
            } else if (cur && json_is_array(cur)) {
                char *e;
                unsigned long i = strtoul(tokn, &e, 10);
                int ok =
                    k > 0 && *e == '\0' && (tokn[0] != '0' || k == 1) && tokn[0] != '-' && tokn[0] != '+';
                cur = ok ? json_array_get(cur, i) : NULL;
            } else {
                cur = NULL;
            }
            if (cur)
                path = js_path(js, path, tokn);
            free(tokn);
            if (!end)
                break;
            p = end + 1;
        }
    } else if (f[0]) {
        cur = find_anchor(js, js->root, f, "", &path);
    }
    free(f);
    if (!cur) {
        if (!quiet)
            js_fail(js, "'$ref' at %s: '%s' is not defined", js_show(js, at), ref);
        return NULL;
    }
    if (!json_is_object(cur) && !json_is_boolean(cur)) {
        if (!quiet)
            js_fail(js, "'$ref' at %s: '%s' is not a schema", js_show(js, at), ref);
        return NULL;
    }
    *tpath = path;
    return cur;
}

const json_t *js_resolve(struct js *js, const char *ref, const char *at, const char **tpath)
{
    return resolve(js, ref, at, tpath, 0);
}

static int is_target(const struct js *js, const json_t *s)
{
    for (int i = 0; i < js->n_targets; i++)
        if (js->targets[i] == s)
            return 1;
    return 0;
}

/* Every schema some $ref names, so it gets a rule however it is reached. */
static void find_targets(struct js *js, const json_t *j)
{
    if (json_is_object(j)) {
        const json_t *r = json_object_get(j, "$ref");
        const char *tp;
        const json_t *t = json_is_string(r) ? resolve(js, json_string_value(r), "", &tp, 1) : NULL;
        if (t && !is_target(js, t)) {
            if (js->n_targets == js->cap_targets) {
                js->cap_targets = js->cap_targets ? js->cap_targets * 2 : 16;
                js->targets = xrealloc(js->targets, (size_t)js->cap_targets * sizeof(*js->targets));
            }
            js->targets[js->n_targets++] = t;
        }
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)j, key, v) if (!in_list(not_schemas, key)) find_targets(js, v);
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            find_targets(js, json_array_get(j, i));
    }
}

/* --- flattening -------------------------------------------------------------------- */

static const char *const annotations[] = {
    "title",         "description", "default",     "examples",        "$comment",
    "$schema",       "$id",         "$anchor",     "$dynamicAnchor",  "$recursiveAnchor",
    "deprecated",    "readOnly",    "writeOnly",   "contentEncoding", "contentMediaType",
    "contentSchema", "$defs",       "definitions", "$vocabulary",     NULL};

int js_is_annotation(const char *kw) { return in_list(annotations, kw); }

static int skipped(unsigned skip, const char *kw)
{
    return ((skip & SKIP_REF) && strcmp(kw, "$ref") == 0) ||
           ((skip & SKIP_ALLOF) && strcmp(kw, "allOf") == 0) ||
           ((skip & SKIP_ANYOF) && strcmp(kw, "anyOf") == 0) ||
           ((skip & SKIP_ONEOF) && strcmp(kw, "oneOf") == 0);
}

/* Whether a view still constrains anything. */
static int constrains(const struct view *v)
{
    if (!json_is_object(v->s))
        return !json_is_true(v->s);
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v->s, key,
                        val) if (!skipped(v->skip, key) && !js_is_annotation(key)) return 1;
    return 0;
}

/* Adds s to l unless it is there: a schema intersected with itself adds
 * nothing, but one that reaches itself through its own $ref / allOf chain
 * (from member `from`, whose chain parent[] records) has no meaning. */
static int push_unique(struct js *js, struct vlist *l, int **parent, int from, const json_t *s,
                       const char *path, const char *kw)
{
    for (int i = 0; i < l->n; i++) {
        if (l->v[i].s != s)
            continue;
        for (int a = from; a >= 0; a = (*parent)[a])
            if (a == i)
                return js_fail(js, "'%s' at %s: circular reference (the schema includes itself)", kw,
                               js_show(js, l->v[from].path));
        return 0;
    }
    vl_push(l, s, 0, path);
    *parent = xrealloc(*parent, (size_t)l->cap * sizeof(int));
    (*parent)[l->n - 1] = from;
    return 0;
}

int js_flatten(struct js *js, struct vlist *l, int *expanded)
{
    *expanded = 0;
    int *parent = xmalloc((size_t)(l->cap > 0 ? l->cap : 1) * sizeof(int)), rc = 0;
    for (int i = 0; i < l->n; i++)
        parent[i] = -1;
    for (int i = 0; i < l->n && rc == 0; i++) {
        const json_t *s = l->v[i].s;
        const char *path = l->v[i].path;
        if (json_is_false(s)) {
            rc = 1;
            break;
        }
        if (json_is_true(s))
            continue;
        if (!json_is_object(s)) {
            rc = js_fail(js, "schema at %s must be an object or a boolean", js_show(js, path));
            break;
        }
        const json_t *r = (l->v[i].skip & SKIP_REF) ? NULL : json_object_get(s, "$ref");
        if (r) {
            const char *tpath;
            const json_t *t = json_is_string(r) ? js_resolve(js, json_string_value(r), path, &tpath) : NULL;
            if (!json_is_string(r))
                js_fail(js, "'$ref' at %s must be a string", js_show(js, path));
            l->v[i].skip |= SKIP_REF;
            *expanded = 1;
            if (!t || push_unique(js, l, &parent, i, t, tpath, "$ref") < 0) {
                rc = -1;
                break;
            }
        }
        const json_t *a = (l->v[i].skip & SKIP_ALLOF) ? NULL : json_object_get(s, "allOf");
        if (a) {
            if (!json_is_array(a) || json_array_size(a) == 0) {
                rc = js_fail(js, "'allOf' at %s must be a non-empty array", js_show(js, path));
                break;
            }
            l->v[i].skip |= SKIP_ALLOF;
            *expanded = 1;
            for (size_t k = 0; k < json_array_size(a) && rc == 0; k++)
                rc = push_unique(js, l, &parent, i, json_array_get(a, k), js_path_i(js, path, "allOf", k),
                                 "allOf");
        }
        if (rc == 0 && l->n > JS_MAX_VIEWS)
            rc = js_fail(js, "schema at %s: more than %d schemas in one intersection (allOf / $ref)",
                         js_show(js, path), JS_MAX_VIEWS);
    }
    free(parent);
    if (rc != 0)
        return rc;
    int k = 0;
    for (int i = 0; i < l->n; i++)
        if (constrains(&l->v[i]))
            l->v[k++] = l->v[i];
    l->n = k;
    return 0;
}

/* --- the memo ------------------------------------------------------------------------ */

struct js_memo {
    struct view *key; /* sorted by (s, skip); paths unused */
    int n;
    unsigned hash;
    int rule;    /* -2: never built; -1: built inline once; else its rule */
    int nothing; /* the rule accepts nothing */
};

static int cmp_view(const void *a, const void *b)
{
    const struct view *x = a, *y = b;
    if (x->s != y->s)
        return (uintptr_t)x->s < (uintptr_t)y->s ? -1 : 1;
    return x->skip < y->skip ? -1 : x->skip > y->skip;
}

static unsigned key_hash(const struct view *k, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(uintptr_t)k[i].s) * 1099511628211ull;
        h = (h ^ k[i].skip) * 1099511628211ull;
    }
    return (unsigned)(h ^ (h >> 32));
}

static int key_eq(const struct js_memo *m, const struct view *k, int n, unsigned h)
{
    if (m->hash != h || m->n != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (m->key[i].s != k[i].s || m->key[i].skip != k[i].skip)
            return 0;
    return 1;
}

static void memo_grow(struct js *js)
{
    int old = js->cap_memo;
    struct js_memo *prev = js->memo;
    js->cap_memo = old ? old * 2 : 256;
    js->memo = xcalloc((size_t)js->cap_memo, sizeof(*js->memo));
    for (int i = 0; i < old; i++) {
        if (!prev[i].key)
            continue;
        unsigned h = prev[i].hash & (unsigned)(js->cap_memo - 1);
        while (js->memo[h].key)
            h = (h + 1) & (unsigned)(js->cap_memo - 1);
        js->memo[h] = prev[i];
    }
    free(prev);
}

/* The memo slot of l's key (inserted as never built); an index, stable
 * until the next insertion. */
static int memo_slot(struct js *js, const struct vlist *l)
{
    if (js->n_memo * 2 >= js->cap_memo)
        memo_grow(js);
    struct view *k = xmalloc((size_t)l->n * sizeof(*k));
    memcpy(k, l->v, (size_t)l->n * sizeof(*k));
    qsort(k, (size_t)l->n, sizeof(*k), cmp_view);
    unsigned h = key_hash(k, l->n), at = h & (unsigned)(js->cap_memo - 1);
    while (js->memo[at].key) {
        if (key_eq(&js->memo[at], k, l->n, h)) {
            free(k);
            return (int)at;
        }
        at = (at + 1) & (unsigned)(js->cap_memo - 1);
    }
    js->memo[at] = (struct js_memo){k, l->n, h, -2, 0};
    js->n_memo++;
    return (int)at;
}

/* A rule name from a path ("/$defs/node" gives "defs_node"). */
static void rule_hint(const char *path, char *out, size_t cap)
{
    const char *p = path;
    size_t n = strlen(p);
    if (n > 40)
        p += n - 40;
    size_t k = 0;
    for (; *p && k + 1 < cap; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (ok)
            out[k++] = c;
        else if (k > 0 && out[k - 1] != '_')
            out[k++] = '_';
    }
    while (k > 0 && out[k - 1] == '_')
        k--;
    out[k] = '\0';
    if (k == 0)
        snprintf(out, cap, "schema");
}

/* --- compiling -------------------------------------------------------------------------- */

static int build(struct js *js, struct vlist *l);

int js_compile_list(struct js *js, const struct vlist *in)
{
    if (js->failed || gir_failed(js->g))
        return -1;
    if (js->depth >= JS_MAX_DEPTH)
        return js_fail(js, "schema at %s is nested more than %d deep",
                       js_show(js, in->n ? in->v[0].path : ""), JS_MAX_DEPTH);
    struct vlist l;
    vl_copy(&l, in);
    int expanded, x;
    int rc = js_flatten(js, &l, &expanded);
    if (rc < 0) {
        x = -1;
    } else if (rc == 1) {
        x = gx_nothing(js->g);
    } else if (l.n == 0) {
        x = js_any_value(js);
    } else {
        int at = memo_slot(js, &l);
        int want_rule = expanded || l.n > 1 || is_target(js, l.v[0].s);
        js->depth++;
        if (js->memo[at].nothing) {
            x = gx_nothing(js->g);
        } else if (js->memo[at].rule >= 0) {
            x = gx_ref(js->g, js->memo[at].rule);
        } else if (js->memo[at].rule == -1 || want_rule) {
            char hint[64];
            rule_hint(l.v[0].path, hint, sizeof(hint));
            int r = js_fresh(js, hint);
            js->memo[at].rule = r;
            const struct view *key = js->memo[at].key;
            int body = r < 0 ? -1 : build(js, &l);
            gir_define(js->g, r, body);
            x = body < 0 ? -1 : gx_ref(js->g, r);
            if (js_is_nothing(js->g, body)) { /* the memo moved if it grew: find the entry again */
                for (int i = 0; i < js->cap_memo; i++)
                    if (js->memo[i].key == key)
                        js->memo[i].nothing = 1;
                x = gx_nothing(js->g);
            }
        } else {
            js->memo[at].rule = -1;
            x = build(js, &l);
        }
        js->depth--;
    }
    vl_free(&l);
    return js->failed ? -1 : x;
}

int js_compile(struct js *js, const json_t *s, const char *path)
{
    struct vlist l = {0};
    vl_push(&l, s, 0, path);
    int x = js_compile_list(js, &l);
    vl_free(&l);
    return x;
}

/* anyOf / oneOf of member i: each alternative intersected with the rest. */
static int distribute(struct js *js, struct vlist *l, int i, const char *kw, unsigned bit)
{
    const json_t *arr = json_object_get(l->v[i].s, kw);
    const char *path = l->v[i].path;
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return js_fail(js, "'%s' at %s must be a non-empty array", kw, js_show(js, path));
    size_t n = json_array_size(arr);
    struct vlist *alt = xcalloc(n, sizeof(*alt));
    for (size_t k = 0; k < n; k++) {
        vl_copy(&alt[k], l);
        alt[k].v[i].skip |= bit;
        vl_push(&alt[k], json_array_get(arr, k), 0, js_path_i(js, path, kw, k));
    }
    int x = 0;
    if (bit == SKIP_ONEOF) {
        int proved = js_exclusive_all(js, alt, n);
        if (proved < 0)
            x = -1;
        else if (!proved && js_refuse(js, "oneOf", path, "cannot prove the alternatives exclusive%s",
                                      js->strict ? "" : "; read as anyOf") < 0)
            x = -1;
    }
    int *exprs = xmalloc(n * sizeof(int));
    for (size_t k = 0; k < n && x >= 0; k++) {
        exprs[k] = js_compile_list(js, &alt[k]);
        if (exprs[k] < 0)
            x = -1;
    }
    if (x >= 0)
        x = gx_alt(js->g, exprs, (int)n);
    for (size_t k = 0; k < n; k++)
        vl_free(&alt[k]);
    free(alt);
    free(exprs);
    return x;
}

/* The alternatives' product an intersection's anyOfs / oneOfs expand to,
 * bounded before anything is built. */
static int check_combinations(struct js *js, const struct vlist *l)
{
    double product = 1;
    for (int i = 0; i < l->n; i++) {
        const json_t *a = (l->v[i].skip & SKIP_ANYOF) ? NULL : json_object_get(l->v[i].s, "anyOf");
        const json_t *o = (l->v[i].skip & SKIP_ONEOF) ? NULL : json_object_get(l->v[i].s, "oneOf");
        product *= json_is_array(a) && json_array_size(a) ? (double)json_array_size(a) : 1;
        product *= json_is_array(o) && json_array_size(o) ? (double)json_array_size(o) : 1;
        if (product > JS_MAX_COMBINATIONS)
            return js_fail(js, "schema at %s: its anyOf / oneOf alternatives combine in more than %d ways",
                           js_show(js, l->v[0].path), JS_MAX_COMBINATIONS);
    }
    return 0;
}

static int build(struct js *js, struct vlist *l)
{
    if (check_combinations(js, l) < 0)
        return -1;
    for (int i = 0; i < l->n; i++) {
        const json_t *s = l->v[i].s;
        if (!(l->v[i].skip & SKIP_ANYOF) && json_object_get(s, "anyOf"))
            return distribute(js, l, i, "anyOf", SKIP_ANYOF);
        if (!(l->v[i].skip & SKIP_ONEOF) && json_object_get(s, "oneOf"))
            return distribute(js, l, i, "oneOf", SKIP_ONEOF);
    }
    struct sch s;
    if (js_fold(js, l, &s) < 0) {
        js_sch_free(&s);
        return -1;
    }
    int x = js_gen(js, &s);
    js_sch_free(&s);
    return x;
}

/* --- entry points ---------------------------------------------------------------------------- */

static void js_init(struct js *js, struct gir *g, const json_t *root, const struct json_schema_opts *o,
                    struct json_schema_notes *notes, struct err *e)
{
    memset(js, 0, sizeof(*js));
    js->g = g;
    js->root = root;
    js->strict = o ? o->strict : 1;
    js->ws_max = o ? o->ws_max : -1;
    js->ws_lines = o ? o->ws_lines : 0;
    js->notes = notes;
    js->e = e;
    js->r_value = js->r_object = js->r_array = js->r_string = js->r_char = js->r_number = js->r_integer = -1;
    for (size_t i = 0; i < sizeof(js->r_format) / sizeof(js->r_format[0]); i++)
        js->r_format[i] = -1;
}

static void js_done(struct js *js)
{
    for (int i = 0; i < js->cap_memo; i++)
        free(js->memo[i].key);
    free(js->memo);
    free(js->cps);
    free(js->targets);
    for (int i = 0; i < js->n_arena; i++)
        free(js->arena[i]);
    free(js->arena);
}

/* Sets the root rule to W x W; the result of the whole build. */
static int finish(struct js *js, int x)
{
    struct gir *g = js->g;
    if (x >= 0 && !js->failed && js_is_nothing(g, x))
        js_fail(js, "schema at / accepts nothing");
    if (x >= 0 && !js->failed) {
        int root = gir_rule_fresh(g, "root");
        int outer = js->ws_lines ? gx_empty(g) : js_ws(js);
        gir_define(g, root, gx_seq3(g, outer, x, outer));
        gir_set_root(g, root);
    }
    if (!js->failed && gir_failed(g))
        js_fail(js, "%s", g->error.msg);
    int rc = js->failed ? -1 : 0;
    js_done(js);
    return rc;
}

static int check_opts(struct js *js)
{
    if (js->ws_max > GIR_MAX_REPEAT)
        return js_fail(js, "ws_max %d is above the supported %d", js->ws_max, GIR_MAX_REPEAT);
    if (gir_failed(js->g))
        return js_fail(js, "%s", js->g->error.msg);
    return 0;
}

int json_schema_to_gir(struct gir *g, const json_t *schema, const struct json_schema_opts *o,
                       struct json_schema_notes *notes, struct err *e)
{
    struct err local;
    struct js js;
    js_init(&js, g, schema, o, notes, e ? e : &local);
    if (check_opts(&js) < 0)
        return finish(&js, -1);
    if (!schema) {
        js_fail(&js, "no schema given");
        return finish(&js, -1);
    }
    const json_t *id = json_is_object(schema) ? json_object_get(schema, "$id") : NULL;
    if (json_is_string(id)) {
        const char *s = json_string_value(id), *hash = strchr(s, '#');
        js.base = js_strdup(&js, s, hash ? (size_t)(hash - s) : strlen(s));
    }
    find_targets(&js, schema);
    return finish(&js, js_compile(&js, schema, ""));
}

int json_object_to_gir(struct gir *g, const struct json_schema_opts *o, struct err *e)
{
    struct err local;
    struct js js;
    js_init(&js, g, NULL, o, NULL, e ? e : &local);
    if (check_opts(&js) < 0)
        return finish(&js, -1);
    return finish(&js, js_object_any(&js));
}

int json_schema_from_text(const char *text, size_t len, const struct json_schema_opts *o,
                          struct json_schema_notes *notes, struct gir *g, struct err *e)
{
    json_error_t jerr;
    json_t *schema = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!schema)
        return err_set(e, "schema: JSON syntax error at %d:%d: %s", jerr.line, jerr.column, jerr.text);
    int rc = json_schema_to_gir(g, schema, o, notes, e);
    json_decref(schema);
    return rc;
}
