/* What the JSON Schema front end's files share (json_schema.c: the
 * context, paths, errors, $ref and the compile driver with its memo;
 * json_schema_value.c: the grammar of each type; json_schema_merge.c: intersections of schemas, oneOf proofs,
 * checks of const values; json_schema_number.c: decimals and numeric ranges; json_schema_string.c: JSON
 * strings and their spellings; json_schema_format.c: the formats). Not for use outside them. */
#ifndef INFER_GRAMMAR_JSON_SCHEMA_INTERNAL_H
#define INFER_GRAMMAR_JSON_SCHEMA_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "grammar/ir.h"
#include "grammar/json_schema.h"

/* JSON types as a mask; T_INT is the integral numbers (1 and 1.0 alike,
 * as jsonschema's "integer"), T_NUM the others. */
enum { T_NULL = 1, T_BOOL = 2, T_INT = 4, T_NUM = 8, T_STR = 16, T_OBJ = 32, T_ARR = 64, T_ALL = 127 };

/* --- the context ---------------------------------------------------------- */

struct js_memo;

struct js {
    struct gir *g;
    const json_t *root;
    const char *base; /* the root's $id without its fragment, or NULL */
    int strict, ws_max, ws_lines;
    struct json_schema_notes *notes;
    struct err *e;
    int failed; /* e holds the first error */
    int quiet;  /* > 0: refusals are only counted in unsure (checks made to prove, not to build) */
    int unsure;
    /* shared rules, -1 until first used */
    int r_value, r_object, r_array, r_string, r_char, r_number, r_integer;
    int r_format[16]; /* by the format table's index */
    /* the spellings of single code points, as rules */
    struct js_cp {
        uint32_t cp;
        int rule;
    } * cps; /* open addressing, rule -1: free */
    int n_cps, cap_cps;
    /* compiled intersections of schemas */
    struct js_memo *memo;
    int n_memo, cap_memo;
    /* $ref targets (every schema something refers to gets a rule) */
    const json_t **targets;
    int n_targets, cap_targets;
    long work;    /* schemas folded so far: the compile budget */
    int n_fresh;  /* rules named by js_fresh */
    int depth;    /* nested compiles */
    char **arena; /* paths and other strings freed at the end */
    int n_arena, cap_arena;
};

enum {
    JS_MAX_DEPTH = 200,         /* nested subschemas being compiled at once */
    JS_MAX_VIEWS = 256,         /* schemas in one intersection (allOf / $ref chains) */
    JS_MAX_WORK = 50000,        /* schemas folded in all: merges and anyOf products stay bounded */
    JS_MAX_COMBINATIONS = 4096, /* alternatives of the anyOfs / oneOfs of one intersection, multiplied */
    JS_MAX_PROVE_DEPTH = 4,     /* nesting of the oneOf exclusivity proof */
};

int js_fail(struct js *js, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A keyword that cannot be enforced: strict, an error ("unsupported
 * keyword 'kw' at path" when fmt is NULL, else "kw at path: reason");
 * otherwise a note ("kw at path", and " (reason)") and 0, so the caller
 * goes on without it. */
int js_refuse(struct js *js, const char *kw, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int js_note_unknown(struct js *js, const char *kw, const char *path); /* ignored, noted "kw at path (unknown keyword...)" */
int js_is_annotation(const char *kw);                                  /* a keyword that constrains nothing */
const char *js_strdup(struct js *js, const char *s, size_t n);         /* into the arena */
const char *js_path(struct js *js, const char *base, const char *key); /* base + "/" + key, ~-escaped */
const char *js_path_i(struct js *js, const char *base, const char *key, size_t i); /* base/key/i */
const char *js_show(struct js *js,
                    const char *path); /* a path for messages: the root is "/", a deep one cut */

/* Expressions shared by the builders. */
int js_ws(struct js *js);                 /* the bounded whitespace (empty when compact) */
int js_lit(struct js *js, const char *s); /* bytes */
/* expr as the body of a new rule; the rule */
int js_rule_of(struct js *js, int expr, const char *hint);
/* A new rule named hint_N: unique names, since gir_rule_fresh's retries cost a scan each. */
int js_fresh(struct js *js, const char *hint);
int js_any_value(struct js *js);
int js_object_any(struct js *js);
int js_array_any(struct js *js);
int js_tok(struct js *js, const char *s);         /* a punctuation token and the blanks after it */
int js_member(struct js *js, int key, int value); /* key W ":" W value */
int js_is_nothing(const struct gir *g, int x);
/* x{min,max} (max < 0: unbounded), a nested form past GIR_MAX_REPEAT, an
 * error naming what/path past JSON_SCHEMA_MAX_BOUND. x is used once. */
int js_repeat(struct js *js, int x, long long min, long long max, const char *what, const char *path);

/* --- schemas as intersections --------------------------------------------- */

/* One member of an intersection: the schema s with the keywords in skip
 * already expanded into other members (its $ref target, its allOf, the
 * chosen alternative of its anyOf / oneOf). */
enum { SKIP_REF = 1, SKIP_ALLOF = 2, SKIP_ANYOF = 4, SKIP_ONEOF = 8 };
struct view {
    const json_t *s;
    unsigned skip;
    const char *path;
};
struct vlist {
    struct view *v;
    int n, cap;
};

void vl_push(struct vlist *l, const json_t *s, unsigned skip, const char *path);
void vl_copy(struct vlist *dst, const struct vlist *src);
void vl_free(struct vlist *l);

/* Expands $ref and allOf members into l (each schema once). Returns 0,
 * 1 when some member is false (l accepts nothing), -1 on error. *expanded
 * tells whether anything was. Members left without constraints are
 * dropped, so an empty l accepts any value. */
int js_flatten(struct js *js, struct vlist *l, int *expanded);
/* The target of a $ref string (a schema of the document), its path into
 * *tpath; NULL after an error naming at (the path of the $ref). */
const json_t *js_resolve(struct js *js, const char *ref, const char *at, const char **tpath);

/* The expression of the JSON values valid against every member of l, or
 * of one schema. */
int js_compile_list(struct js *js, const struct vlist *l);
int js_compile(struct js *js, const json_t *s, const char *path);

/* An exact decimal: integer digits without leading zeros ("0" for zero)
 * and fraction digits without trailing zeros, both malloc'ed. */
struct dec {
    int neg;
    char *ip, *fp;
};
struct bound {
    int set, strict;
    struct dec v;
};

/* What the keywords of an intersection (its anyOf / oneOf aside) say,
 * folded: the accepted types, values, bounds. Objects and arrays keep
 * the views (l) and are read from them by the builders. */
struct sch {
    const struct vlist *l;
    unsigned types;
    int unsat;
    json_t *enums;            /* the allowed values, or NULL for any */
    struct js_vset *enum_set; /* enums hashed, for membership */
    const char *enum_path;
    struct bound lo, hi;
    const char *num_path;
    long long multiple; /* integers only, divisible by it (0: no multipleOf above 1) */
    const char *multiple_path;
    long long min_len, max_len; /* max_len < 0: none */
    const char *len_path;
    const char *pattern, *pattern_path;
    size_t pattern_len;
    const char *format, *format_path;
    long long min_items, max_items, min_props, max_props;
    const char *items_path, *props_path;
    int unique;
    const char *unique_path;
    unsigned constrained; /* the types some keyword restricts (so not "any value of the type") */
};

int js_fold(struct js *js, const struct vlist *l, struct sch *s);
/* The grammar of the values s accepts (json_schema_value.c). */
int js_gen(struct js *js, const struct sch *s);
void js_sch_free(struct sch *s);
/* The members of l that constrain the property name (its schema under
 * properties, else additionalProperties), into out. Returns 0, or 1 when
 * some member forbids the name (additionalProperties false). */
int js_prop_list(struct js *js, const struct vlist *l, const char *name, struct vlist *out);
/* additionalProperties of every member; 1 when one of them is false. */
int js_extra_list(struct js *js, const struct vlist *l, struct vlist *out);
/* Array element j's schemas (prefixItems / items / additionalItems); 1 when one member forbids it. */
int js_item_list(struct js *js, const struct vlist *l, size_t j, struct vlist *out);
/* The longest prefixItems of the members. */
size_t js_prefix_len(const struct vlist *l);
/* Whether a required list of some member names name. */
int js_required_has(const struct vlist *l, const char *name);

/* Whether v is valid against every member of l (1), not (0), or -1 on
 * error. Checks what the builders can build; a keyword that cannot be
 * checked (pattern, format) is refused. */
int js_check_list(struct js *js, const struct vlist *l, const json_t *v);
int js_check_sch(struct js *js, const struct sch *s, const json_t *v);
/* 1 when no JSON value is valid against both a and b (proved), 0 when
 * not proved, -1 on error. */
int js_exclusive(struct js *js, const struct vlist *a, const struct vlist *b, int depth);
/* Whether the n alternatives of a oneOf exclude each other pairwise. */
int js_exclusive_all(struct js *js, const struct vlist *alts, size_t n);
/* JSON value equality as jsonschema has it: 1 == 1.0, true != 1, objects unordered. */
int js_json_equal(const json_t *a, const json_t *b);
/* A set of JSON values under js_json_equal (hashed): membership in O(1). */
struct js_vset;
struct js_vset *js_vset_new(const json_t *array);
int js_vset_has(const struct js_vset *s, const json_t *v);
void js_vset_free(struct js_vset *s);
unsigned js_type_of(const json_t *v);

/* --- numbers (json_schema_number.c) --------------------------------------- */

/* The decimal of a JSON number: an integer exactly, a real as its shortest
 * round-trip form. */
void js_dec_of(const json_t *n, struct dec *d);
void js_dec_free(struct dec *d);
void js_dec_copy(struct dec *dst, const struct dec *src);
int js_dec_cmp(const struct dec *a, const struct dec *b);
/* Tightens a lower (lower = 1) or upper bound by v (strict: exclusive). */
void js_bound_tighten(struct bound *b, const struct dec *v, int strict, int lower);
void js_bound_free(struct bound *b);
int js_dec_in(const struct dec *v, const struct bound *lo, const struct bound *hi);
/* The numbers (integer: plain integers only) within the bounds as JSON
 * texts; no exponent when a bound is set. */
int js_number_expr(struct js *js, const struct bound *lo, const struct bound *hi, int integer);
/* Integers divisible by k (2..JS_MAX_MULTIPLE), lo / hi unset or 0 (a sign only): else refused at path. */
enum { JS_MAX_MULTIPLE = 1000 };
int js_multiple_expr(struct js *js, const struct bound *lo, const struct bound *hi, long long k, const char *path);
/* Whether the integer v is divisible by k. */
int js_dec_divisible(const struct dec *v, long long k);
/* The texts of numbers equal to n (plain and ".0" forms). */
int js_number_literal(struct js *js, const json_t *n);

/* --- strings (json_schema_string.c) --------------------------------------- */

int js_string_any(struct js *js); /* any JSON string */
int js_char_any(struct js *js);   /* one character of a JSON string's content, any spelling */
/* A JSON string of min..max characters (max < 0: unbounded). */
int js_string_length(struct js *js, long long min, long long max, const char *path);
/* A string matching pattern (searched) with min..max characters (max < 0: none), json_schema_pattern_length.c. */
int js_pattern_with_length(struct js *js, const char *pattern, size_t len, long long min, long long max,
                           const char *pattern_path, const char *len_path);
/* The JSON string whose content is s[0..n) (UTF-8), in every spelling. */
int js_string_literal(struct js *js, const char *s, size_t n);
/* A JSON string equal to none of names (UTF-8, n of them), in every spelling. */
int js_string_not_in(struct js *js, const char *const *names, const size_t *lens, int n);

/* --- formats (json_schema_format.c) --------------------------------------- */

/* Whether name is a format this front end builds. */
int js_format_known(const char *name);
/* The JSON strings (quotes included) of format name, and the range of
 * their lengths in characters (max -1: unbounded). */
int js_format_expr(struct js *js, const char *name, long long *min_len, long long *max_len);

#endif
