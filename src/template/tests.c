/* Jinja tests (`x is defined`, `x is string`, `x is divisibleby 3`, ...),
 * with jinja2's definitions (jinja2/tests.py): `number` includes booleans,
 * `integer` excludes them, `sequence` is "has len() and [ ]" (so strings,
 * dicts and Undefined qualify), `iterable` includes generators and
 * Undefined. Add a test with a function and one line in `tests`. */
#include <math.h>
#include <string.h>

#include "template/internal.h"

#define TEST(name) static int name(struct rctx *c, int line, struct tval v, const struct targs *a, int *out)

static int want_args(struct rctx *c, int line, const char *name, const struct targs *a, int n)
{
    if (a->npos != n || a->nkw)
        return tmpl_err(c, line, "test '%s' takes %d argument(s)", name, n);
    return 0;
}

#define SIMPLE_TEST(fname, expr)                                                                             \
    TEST(fname)                                                                                              \
    {                                                                                                        \
        if (want_args(c, line, &(#fname)[2], a, 0))                                                          \
            return -1;                                                                                       \
        *out = (expr);                                                                                       \
        return 0;                                                                                            \
    }

SIMPLE_TEST(t_defined, v.k != TV_UNDEF)
SIMPLE_TEST(t_undefined, v.k == TV_UNDEF)
SIMPLE_TEST(t_none, v.k == TV_NONE)
SIMPLE_TEST(t_boolean, v.k == TV_BOOL)
SIMPLE_TEST(t_false, v.k == TV_BOOL && !v.u.b)
SIMPLE_TEST(t_true, v.k == TV_BOOL && v.u.b)
SIMPLE_TEST(t_integer, v.k == TV_INT)
SIMPLE_TEST(t_float, v.k == TV_FLOAT)
SIMPLE_TEST(t_string, v.k == TV_STR)
SIMPLE_TEST(t_mapping, v.k == TV_DICT)
SIMPLE_TEST(t_number, tmpl_value_is_num(v))
SIMPLE_TEST(t_sequence, v.k == TV_STR || v.k == TV_DICT || v.k == TV_UNDEF ||
                            (v.k == TV_LIST &&
                             (v.u.l->sub == TL_LIST || v.u.l->sub == TL_TUPLE || v.u.l->sub == TL_RANGE)))
SIMPLE_TEST(t_iterable,
            v.k == TV_STR || v.k == TV_DICT || v.k == TV_UNDEF || v.k == TV_LIST || v.k == TV_LOOP)
SIMPLE_TEST(t_callable, v.k == TV_FUNC || v.k == TV_UNDEF || v.k == TV_LOOP)
SIMPLE_TEST(t_escaped, v.k == TV_MISSING)

static int int_arg(struct rctx *c, int line, struct tval v, int64_t *i, const char *what)
{
    if (v.k == TV_INT || v.k == TV_BOOL) {
        *i = v.k == TV_INT ? v.u.i : v.u.b;
        return 0;
    }
    if (v.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, v);
    return tmpl_err(c, line, "test '%s' needs an integer, got %s", what, tmpl_value_type_name(v));
}

static int py_mod_zero(struct rctx *c, int line, struct tval v, struct tval d, int64_t rem, int *out,
                       const char *what)
{
    if (v.k == TV_FLOAT || d.k == TV_FLOAT) {
        if (!tmpl_value_is_num(v) || !tmpl_value_is_num(d))
            return tmpl_err(c, line, "test '%s' needs numbers", what);
        double y = tmpl_value_num(d);
        if (y == 0)
            return tmpl_err(c, line, "float modulo");
        double m = fmod(tmpl_value_num(v), y);
        if (m && ((y < 0) != (m < 0)))
            m += y;
        *out = m == (double)rem;
        return 0;
    }
    int64_t x, y;
    if (int_arg(c, line, v, &x, what) || int_arg(c, line, d, &y, what))
        return -1;
    if (y == 0)
        return tmpl_err(c, line, "integer division or modulo by zero");
    int64_t m = x % y;
    if (m && ((m < 0) != (y < 0)))
        m += y;
    *out = m == rem;
    return 0;
}

TEST(t_odd)
{
    return want_args(c, line, "odd", a, 0) ? -1
                                           : py_mod_zero(c, line, v, tmpl_value_int(2), 1, out, "odd");
}

TEST(t_even)
{
    return want_args(c, line, "even", a, 0) ? -1
                                            : py_mod_zero(c, line, v, tmpl_value_int(2), 0, out, "even");
}

TEST(t_divisibleby)
{
    return want_args(c, line, "divisibleby", a, 1)
               ? -1
               : py_mod_zero(c, line, v, a->pos[0], 0, out, "divisibleby");
}

TEST(t_lower)
{
    if (want_args(c, line, "lower", a, 0))
        return -1;
    struct sbuf b = {0};
    tmpl_value_write_str(&b, v);
    struct tval s = tmpl_strbuf_take_str(&b);
    *out = tmpl_str_is_lower(s);
    tmpl_value_release(s);
    return 0;
}

TEST(t_upper)
{
    if (want_args(c, line, "upper", a, 0))
        return -1;
    struct sbuf b = {0};
    tmpl_value_write_str(&b, v);
    struct tval s = tmpl_strbuf_take_str(&b);
    *out = tmpl_str_is_upper(s);
    tmpl_value_release(s);
    return 0;
}

TEST(t_sameas)
{
    if (want_args(c, line, "sameas", a, 1))
        return -1;
    struct tval o = a->pos[0];
    if (v.k != o.k)
        *out = 0;
    else if (v.k == TV_NONE || v.k == TV_UNDEF)
        *out = v.k == TV_NONE;
    else if (v.k == TV_BOOL)
        *out = v.u.b == o.u.b;
    else if (v.k == TV_INT)
        *out = v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256; /* CPython's small-int cache */
    else if (v.k == TV_FLOAT)
        *out = 0;
    else
        *out = v.u.s == o.u.s; /* same heap object */
    return 0;
}

TEST(t_in)
{
    if (want_args(c, line, "in", a, 1))
        return -1;
    struct tval seq = a->pos[0];
    if (seq.k == TV_STR) {
        if (v.k != TV_STR)
            return tmpl_err(c, line, "'in <string>' requires string as left operand, not %s",
                            tmpl_value_type_name(v));
        *out = !v.u.s->len || memmem(seq.u.s->s, seq.u.s->len, v.u.s->s, v.u.s->len) != NULL;
        return 0;
    }
    if (seq.k == TV_DICT) {
        *out = tmpl_value_hashable(v) && tmpl_dict_get(seq.u.d, v) != NULL;
        return 0;
    }
    if (seq.k == TV_UNDEF) {
        *out = 0;
        return 0;
    }
    if (seq.k != TV_LIST)
        return tmpl_err(c, line, "argument of type '%s' is not iterable", tmpl_value_type_name(seq));
    *out = 0;
    for (size_t i = seq.u.l->sub == TL_ITER ? seq.u.l->pos : 0; i < seq.u.l->n && !*out; i++)
        *out = tmpl_value_equal(seq.u.l->v[i], v);
    return 0;
}

static int cmp_test(struct rctx *c, int line, struct tval v, const struct targs *a, int *out, int op)
{
    char msg[256];
    if (want_args(c, line, "comparison", a, 1))
        return -1;
    struct tval o = a->pos[0];
    if (op == 0 || op == 1) {
        *out = tmpl_value_equal(v, o) == (op == 0);
        return 0;
    }
    if (v.k == TV_UNDEF || o.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, v.k == TV_UNDEF ? v : o);
    int lt;
    int swap = op == 4 || op == 5; /* gt, le */
    if (tmpl_value_less(swap ? o : v, swap ? v : o, &lt, msg, sizeof msg))
        return tmpl_err(c, line, "%s", msg);
    *out = op == 2 || op == 4 ? lt : !lt;
    return 0;
}

TEST(t_eq) { return cmp_test(c, line, v, a, out, 0); }
TEST(t_ne) { return cmp_test(c, line, v, a, out, 1); }
TEST(t_lt) { return cmp_test(c, line, v, a, out, 2); }
TEST(t_ge) { return cmp_test(c, line, v, a, out, 3); }
TEST(t_gt) { return cmp_test(c, line, v, a, out, 4); }
TEST(t_le) { return cmp_test(c, line, v, a, out, 5); }

TEST(t_filter)
{
    if (want_args(c, line, "filter", a, 0))
        return -1;
    *out = v.k == TV_STR && tmpl_filter_find(v.u.s->s) != NULL;
    return 0;
}

TEST(t_test)
{
    if (want_args(c, line, "test", a, 0))
        return -1;
    *out = v.k == TV_STR && tmpl_test_find(v.u.s->s) != NULL;
    return 0;
}

static const struct test_def tests[] = {
    {"odd", t_odd},
    {"even", t_even},
    {"divisibleby", t_divisibleby},
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"filter", t_filter},
    {"test", t_test},
    {"none", t_none},
    {"boolean", t_boolean},
    {"false", t_false},
    {"true", t_true},
    {"integer", t_integer},
    {"float", t_float},
    {"lower", t_lower},
    {"upper", t_upper},
    {"string", t_string},
    {"mapping", t_mapping},
    {"number", t_number},
    {"sequence", t_sequence},
    {"iterable", t_iterable},
    {"callable", t_callable},
    {"sameas", t_sameas},
    {"escaped", t_escaped},
    {"in", t_in},
    {"==", t_eq},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"!=", t_ne},
    {"ne", t_ne},
    {">", t_gt},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">=", t_ge},
    {"ge", t_ge},
    {"<", t_lt},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<=", t_le},
    {"le", t_le},
};

const struct test_def *tmpl_test_find(const char *name)
{
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!strcmp(tests[i].name, name))
            return &tests[i];
    return NULL;
}
