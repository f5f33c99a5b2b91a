/* Python operators on template values: + - * / // % ** (int/float
 * promotion, floor division and modulo signs, str and list concatenation and
 * repetition, str % args), `in`, and the comparisons of a chain. Undefined
 * operands are errors except for == and != and `in`. */
#include <math.h>
#include <string.h>

#include "template/internal.h"

/* ------------------------------------------------------------ operators */

static int undef_operand(struct rctx *c, int line, struct tval a, struct tval b)
{
    return tmpl_eval_undefined_error(c, line, a.k == TV_UNDEF ? a : b);
}

static const char *op_sym(int op)
{
    switch (op) {
    case OP_ADD:
        return "+";
    case OP_SUB:
        return "-";
    case OP_MUL:
        return "*";
    case OP_DIV:
        return "/";
    case OP_FLOORDIV:
        return "//";
    case OP_MOD:
        return "%";
    default:
        return "**";
    }
}

static int repeat(struct rctx *c, int line, struct tval seq, int64_t times, struct tval *out)
{
    if (times < 0)
        times = 0;
    if (seq.k == TV_STR) {
        if (seq.u.s->len && (uint64_t)times > TMPL_MAX_STR / seq.u.s->len)
            return tmpl_err(c, line, "string repetition too large");
        struct sbuf b = {0};
        for (int64_t i = 0; i < times; i++)
            tmpl_strbuf_put(&b, seq.u.s->s, seq.u.s->len);
        *out = tmpl_strbuf_take_str(&b);
        return 0;
    }
    const struct tlist *l = seq.u.l;
    if (l->n && (uint64_t)times > (TMPL_MAX_STR / 16) / l->n)
        return tmpl_err(c, line, "list repetition too large");
    struct tval r = tmpl_value_list_new(l->sub, l->n * (size_t)times);
    for (int64_t i = 0; i < times; i++)
        for (size_t j = 0; j < l->n; j++) {
            tmpl_value_retain(l->v[j]);
            tmpl_list_push(r.u.l, l->v[j]);
        }
    *out = r;
    return 0;
}

static int is_seq(struct tval v)
{
    return v.k == TV_STR || (v.k == TV_LIST && (v.u.l->sub == TL_LIST || v.u.l->sub == TL_TUPLE));
}

static double py_fmod(double x, double y)
{
    double m = fmod(x, y);
    if (m) {
        if ((y < 0) != (m < 0))
            m += y;
    } else {
        m = copysign(0.0, y);
    }
    return m;
}

static double py_floordiv(double x, double y)
{
    double m = fmod(x, y), d = (x - m) / y;
    if (m && ((y < 0) != (m < 0)))
        d -= 1.0;
    if (d) {
        double fl = floor(d);
        if (d - fl > 0.5)
            fl += 1.0;
        return fl;
    }
    return copysign(0.0, x / y);
}

int tmpl_eval_binop(struct rctx *c, int line, int op, struct tval a, struct tval b, struct tval *out)
{
    if (op == OP_MOD && a.k == TV_STR) /* str % Undefined is formatting, not arithmetic */
        return tmpl_percent_format(c, line, a, b, out);
    if (a.k == TV_UNDEF || b.k == TV_UNDEF)
        return undef_operand(c, line, a, b);
    int64_t x = 0, y = 0, r;
    int ints = tval_int_of(a, &x) && tval_int_of(b, &y);
    int nums = tmpl_value_is_num(a) && tmpl_value_is_num(b);
    switch (op) {
    case OP_ADD:
        if (ints) {
            if (__builtin_add_overflow(x, y, &r))
                return tmpl_err(c, line, "integer overflow");
            *out = tmpl_value_int(r);
            return 0;
        }
        if (nums) {
            *out = tmpl_value_float(tmpl_value_num(a) + tmpl_value_num(b));
            return 0;
        }
        if (a.k == TV_STR && b.k == TV_STR) {
            struct sbuf s = {0};
            tmpl_strbuf_put(&s, a.u.s->s, a.u.s->len);
            tmpl_strbuf_put(&s, b.u.s->s, b.u.s->len);
            *out = tmpl_strbuf_take_str(&s);
            return 0;
        }
        if (a.k == TV_LIST && b.k == TV_LIST && a.u.l->sub == b.u.l->sub &&
            (a.u.l->sub == TL_LIST || a.u.l->sub == TL_TUPLE)) {
            struct tval l = tmpl_value_list_new(a.u.l->sub, a.u.l->n + b.u.l->n);
            for (size_t i = 0; i < a.u.l->n; i++) {
                tmpl_value_retain(a.u.l->v[i]);
                tmpl_list_push(l.u.l, a.u.l->v[i]);
            }
            for (size_t i = 0; i < b.u.l->n; i++) {
                tmpl_value_retain(b.u.l->v[i]);
                tmpl_list_push(l.u.l, b.u.l->v[i]);
            }
            *out = l;
            return 0;
        }
        if (a.k == TV_STR || (a.k == TV_LIST && (a.u.l->sub == TL_LIST || a.u.l->sub == TL_TUPLE)))
            return tmpl_err(c, line, "can only concatenate %s (not \"%s\") to %s",
                            tmpl_value_type_name(a), tmpl_value_type_name(b),
                            tmpl_value_type_name(a));
        break;
    case OP_SUB:
        if (ints) {
            if (__builtin_sub_overflow(x, y, &r))
                return tmpl_err(c, line, "integer overflow");
            *out = tmpl_value_int(r);
            return 0;
        }
        if (nums) {
            *out = tmpl_value_float(tmpl_value_num(a) - tmpl_value_num(b));
            return 0;
        }
        break;
    case OP_MUL:
        if (ints) {
            if (__builtin_mul_overflow(x, y, &r))
                return tmpl_err(c, line, "integer overflow");
            *out = tmpl_value_int(r);
            return 0;
        }
        if (nums) {
            *out = tmpl_value_float(tmpl_value_num(a) * tmpl_value_num(b));
            return 0;
        }
        if (is_seq(a) && tval_int_of(b, &y))
            return repeat(c, line, a, y, out);
        if (is_seq(b) && tval_int_of(a, &x))
            return repeat(c, line, b, x, out);
        break;
    case OP_DIV:
        if (nums) {
            if (tmpl_value_num(b) == 0)
                return tmpl_err(c, line, "division by zero");
            *out = tmpl_value_float(tmpl_value_num(a) / tmpl_value_num(b));
            return 0;
        }
        break;
    case OP_FLOORDIV:
    case OP_MOD:
        if (ints) {
            if (y == 0)
                return tmpl_err(c, line, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1)
                return tmpl_err(c, line, "integer overflow");
            int64_t q = x / y, m = x % y;
            if (m && ((m < 0) != (y < 0))) {
                q--;
                m += y;
            }
            *out = tmpl_value_int(op == OP_MOD ? m : q);
            return 0;
        }
        if (nums) {
            if (tmpl_value_num(b) == 0)
                return tmpl_err(c, line, op == OP_MOD ? "float modulo" : "float floor division by zero");
            *out = tmpl_value_float(op == OP_MOD
                                            ? py_fmod(tmpl_value_num(a), tmpl_value_num(b))
                                            : py_floordiv(tmpl_value_num(a), tmpl_value_num(b)));
            return 0;
        }
        if (op == OP_MOD && a.k == TV_STR)
            return tmpl_percent_format(c, line, a, b, out);
        break;
    case OP_POW:
        if (ints && y >= 0) {
            int64_t acc = 1, base = x;
            for (int64_t e = y; e > 0; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(acc, base, &acc))
                    return tmpl_err(c, line, "integer overflow");
                if (e > 1 && __builtin_mul_overflow(base, base, &base))
                    return tmpl_err(c, line, "integer overflow");
            }
            *out = tmpl_value_int(acc);
            return 0;
        }
        if (nums) {
            double fa = tmpl_value_num(a), fb = tmpl_value_num(b);
            if (fa == 0 && fb < 0)
                return tmpl_err(c, line, "0.0 cannot be raised to a negative power");
            if (fa < 0 && fb != floor(fb))
                return tmpl_err(c, line, "complex results are not supported");
            *out = tmpl_value_float(pow(fa, fb));
            return 0;
        }
        break;
    }
    return tmpl_err(c, line, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym(op),
                    tmpl_value_type_name(a), tmpl_value_type_name(b));
}

int tmpl_eval_contains(struct rctx *c, int line, struct tval item, struct tval seq, int *res)
{
    *res = 0;
    switch (seq.k) {
    case TV_UNDEF:
        return 0;
    case TV_STR:
        if (item.k != TV_STR)
            return tmpl_err(c, line, "'in <string>' requires string as left operand, not %s",
                            tmpl_value_type_name(item));
        *res = item.u.s->len == 0 || memmem(seq.u.s->s, seq.u.s->len, item.u.s->s, item.u.s->len) != NULL;
        return 0;
    case TV_LIST: {
        struct tlist *l = seq.u.l;
        size_t i = l->sub == TL_ITER ? l->pos : 0;
        for (; i < l->n; i++)
            if (tmpl_value_equal(l->v[i], item)) {
                *res = 1;
                break;
            }
        if (l->sub == TL_ITER)
            l->pos = i < l->n ? i + 1 : l->n;
        return 0;
    }
    case TV_DICT:
        if (!tmpl_value_hashable(item))
            return tmpl_err(c, line, "unhashable type: '%s'", tmpl_value_type_name(item));
        *res = tmpl_dict_get(seq.u.d, item) != NULL;
        return 0;
    default:
        return tmpl_err(c, line, "argument of type '%s' is not iterable", tmpl_value_type_name(seq));
    }
}

int tmpl_eval_compare(struct rctx *c, int line, int op, struct tval a, struct tval b, int *res)
{
    char msg[256];
    int lt;
    switch (op) {
    case CMP_EQ:
        *res = tmpl_value_equal(a, b);
        return 0;
    case CMP_NE:
        *res = !tmpl_value_equal(a, b);
        return 0;
    case CMP_IN:
    case CMP_NOTIN:
        if (tmpl_eval_contains(c, line, a, b, res))
            return -1;
        if (op == CMP_NOTIN)
            *res = !*res;
        return 0;
    default:
        break;
    }
    if (a.k == TV_UNDEF || b.k == TV_UNDEF)
        return undef_operand(c, line, a, b);
    int swap = op == CMP_GT || op == CMP_LTEQ;
    if (tmpl_value_less(swap ? b : a, swap ? a : b, &lt, msg, sizeof msg))
        return tmpl_err(c, line, "%s", msg);
    if (op == CMP_LT || op == CMP_GT)
        *res = lt;
    else /* a <= b is not (b < a), except that NaN compares false */
        *res = !lt && !(tmpl_value_is_num(a) && tmpl_value_is_num(b) &&
                        (isnan(tmpl_value_num(a)) || isnan(tmpl_value_num(b))));
    return 0;
}
