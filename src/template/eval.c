/* Expression evaluation with jinja2's runtime semantics in its sandbox: a
 * missing name, attribute, key or index gives Undefined, and any further use
 * of an Undefined other than printing, testing, iterating or comparing for
 * equality is an error (access.c, operators.c). Names resolve through the
 * frames, then the render variables, then the globals (builtins.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "template/internal.h"

int tmpl_err(struct rctx *c, int line, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(c->e, "template line %d: %s", line, msg);
}

int tmpl_eval_undefined_error(struct rctx *c, int line, struct tval u)
{
    return tmpl_err(c, line, "%s", u.k == TV_UNDEF && u.u.s ? u.u.s->s : "value is undefined");
}

/* ---------------------------------------------------------------- calls */

int tmpl_eval_call(struct rctx *c, int line, struct tval fn, const struct targs *a, struct tval *out)
{
    if (fn.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, line, fn);
    if (fn.k != TV_FUNC)
        return tmpl_err(c, line, "'%s' object is not callable", tmpl_value_type_name(fn));
    if (fn.u.fn->kind == FN_MACRO)
        return tmpl_exec_macro_call(c, line, fn.u.fn, a, out);
    return fn.u.fn->fn(c, line, fn.u.fn->self, a, out);
}

struct argvals {
    struct tval *pos, *kw;
    int npos, nkw;
};

static void argvals_free(struct argvals *v)
{
    for (int i = 0; i < v->npos; i++)
        tmpl_value_release(v->pos[i]);
    for (int i = 0; i < v->nkw; i++)
        tmpl_value_release(v->kw[i]);
    free(v->pos);
    free(v->kw);
}

/* Evaluates a call node's arguments (l1 positional, l2/kwn keywords, b *args, c **kwargs). */
static int eval_args(struct rctx *c, struct frame *f, const struct node *n, struct argvals *v,
                     const char ***kwn, struct targs *a)
{
    memset(v, 0, sizeof *v);
    *kwn = NULL;
    int cap_pos = n->l1.n, cap_kw = n->l2.n;
    v->pos = xcalloc((size_t)cap_pos + 1, sizeof *v->pos);
    v->kw = xcalloc((size_t)cap_kw + 1, sizeof *v->kw);
    *kwn = xcalloc((size_t)cap_kw + 1, sizeof **kwn);
    for (int i = 0; i < n->l1.n; i++) {
        if (tmpl_eval_expr(c, f, n->l1.v[i], &v->pos[v->npos]))
            return -1;
        v->npos++;
    }
    for (int i = 0; i < n->l2.n; i++) {
        if (tmpl_eval_expr(c, f, n->l2.v[i], &v->kw[v->nkw]))
            return -1;
        (*kwn)[v->nkw++] = n->kwn[i];
    }
    if (n->b) { /* *args */
        struct tval x;
        struct tlist *items;
        if (tmpl_eval_expr(c, f, n->b, &x))
            return -1;
        int rc = tmpl_eval_iterate(c, n->line, x, &items);
        tmpl_value_release(x);
        if (rc)
            return -1;
        v->pos = xrealloc(v->pos, ((size_t)v->npos + items->n + 1) * sizeof *v->pos);
        for (size_t i = 0; i < items->n; i++) {
            tmpl_value_retain(items->v[i]);
            v->pos[v->npos++] = items->v[i];
        }
        struct tval l = {.k = TV_LIST};
        l.u.l = items;
        tmpl_value_release(l);
    }
    if (n->c) { /* **kwargs */
        struct tval x;
        if (tmpl_eval_expr(c, f, n->c, &x))
            return -1;
        if (x.k != TV_DICT) {
            tmpl_value_release(x);
            return tmpl_err(c, n->line, "argument after ** must be a mapping");
        }
        v->kw = xrealloc(v->kw, ((size_t)v->nkw + x.u.d->n + 1) * sizeof *v->kw);
        *kwn = xrealloc(*kwn, ((size_t)v->nkw + x.u.d->n + 1) * sizeof **kwn);
        for (size_t i = 0; i < x.u.d->n; i++) {
            if (x.u.d->k[i].k != TV_STR)
                continue;
            tmpl_value_retain(x.u.d->v[i]);
            (*kwn)[v->nkw] = x.u.d->k[i].u.s->s;
            v->kw[v->nkw++] = x.u.d->v[i];
        }
        /* the names stay valid: keep the dict alive until the call ends */
        v->pos = xrealloc(v->pos, ((size_t)v->npos + 2) * sizeof *v->pos);
        v->pos[v->npos] = x; /* parked after the positional arguments */
        a->npos = v->npos;
        v->npos++;
        a->pos = v->pos;
        a->nkw = v->nkw;
        a->kwn = *kwn;
        a->kw = v->kw;
        return 0;
    }
    a->npos = v->npos;
    a->pos = v->pos;
    a->nkw = v->nkw;
    a->kwn = *kwn;
    a->kw = v->kw;
    return 0;
}

static int eval_call_like(struct rctx *c, struct frame *f, const struct node *n, struct targs *a,
                          struct argvals *v, const char ***kwn)
{
    int rc = eval_args(c, f, n, v, kwn, a);
    if (rc) {
        argvals_free(v);
        free(*kwn);
    }
    return rc;
}

int tmpl_eval_filter_apply(struct rctx *c, struct frame *f, const struct node *n, struct tval subject,
                               struct tval *out)
{
    struct tval v;
    if (n->a) {
        if (n->a->kind == E_FILTER) {
            if (tmpl_eval_filter_apply(c, f, n->a, subject, &v))
                return -1;
        } else if (tmpl_eval_expr(c, f, n->a, &v)) {
            return -1;
        }
    } else {
        v = subject;
        tmpl_value_retain(v);
    }
    struct targs a;
    struct argvals av;
    const char **kwn;
    if (eval_call_like(c, f, n, &a, &av, &kwn)) {
        tmpl_value_release(v);
        return -1;
    }
    int rc = n->filter->fn(c, n->line, v, &a, out);
    argvals_free(&av);
    free(kwn);
    tmpl_value_release(v);
    return rc;
}

/* --------------------------------------------------------------- names */

static int eval_slice(struct rctx *c, struct frame *f, const struct node *n, struct tval obj,
                      struct tval *out)
{
    const struct node *p[3] = {n->a, n->b, n->c};
    struct tval v[3];
    int rc = 0;
    for (int k = 0; k < 3; k++)
        v[k].k = TV_MISSING;
    for (int k = 0; k < 3 && !rc; k++)
        if (p[k])
            rc = tmpl_eval_expr(c, f, p[k], &v[k]);
    if (!rc)
        rc = tmpl_eval_slice(c, n->line, obj, v, out);
    for (int k = 0; k < 3; k++)
        tmpl_value_release(v[k]);
    return rc;
}

static int lookup_name(struct rctx *c, struct frame *f, const char *name, struct tval *out)
{
    const struct tval *v = tmpl_frame_lookup(f, name);
    if (!v)
        v = tmpl_dict_get_str(c->vars, name);
    if (v) {
        *out = *v;
        tmpl_value_retain(*out);
        return 0;
    }
    if (tmpl_builtin_global(name, out))
        return 0;
    *out = tmpl_value_undef_hint("'%s' is undefined", name);
    return 0;
}

static int ev_seq(struct rctx *c, struct frame *f, const struct node *n, uint8_t sub, struct tval *out)
{
    struct tval l = tmpl_value_list_new(sub, (size_t)n->l1.n);
    for (int i = 0; i < n->l1.n; i++) {
        struct tval v;
        if (tmpl_eval_expr(c, f, n->l1.v[i], &v)) {
            tmpl_value_release(l);
            return -1;
        }
        tmpl_list_push(l.u.l, v);
    }
    *out = l;
    return 0;
}

static int ev_dict(struct rctx *c, struct frame *f, const struct node *n, struct tval *out)
{
    struct tval d = tmpl_value_dict_new((size_t)n->l1.n);
    for (int i = 0; i < n->l1.n; i++) {
        struct tval k, v;
        if (tmpl_eval_expr(c, f, n->l1.v[i], &k)) {
            tmpl_value_release(d);
            return -1;
        }
        if (!tmpl_value_hashable(k)) {
            tmpl_err(c, n->line, "unhashable type: '%s'", tmpl_value_type_name(k));
            tmpl_value_release(k);
            tmpl_value_release(d);
            return -1;
        }
        if (tmpl_eval_expr(c, f, n->l2.v[i], &v)) {
            tmpl_value_release(k);
            tmpl_value_release(d);
            return -1;
        }
        tmpl_dict_set(d.u.d, k, v);
    }
    *out = d;
    return 0;
}

static int ev_unary(struct rctx *c, const struct node *n, struct tval v, struct tval *out)
{
    if (v.k == TV_UNDEF)
        return tmpl_eval_undefined_error(c, n->line, v);
    int64_t i;
    if (tval_int_of(v, &i)) {
        if (n->kind == E_NEG && i == INT64_MIN)
            return tmpl_err(c, n->line, "integer overflow");
        *out = tmpl_value_int(n->kind == E_NEG ? -i : i);
        return 0;
    }
    if (v.k == TV_FLOAT) {
        *out = tmpl_value_float(n->kind == E_NEG ? -v.u.f : v.u.f);
        return 0;
    }
    return tmpl_err(c, n->line, "bad operand type for unary %s: '%s'", n->kind == E_NEG ? "-" : "+",
                    tmpl_value_type_name(v));
}

int tmpl_eval_expr(struct rctx *c, struct frame *f, const struct node *n, struct tval *out)
{
    struct tval a, b;
    int rc = 0;
    switch (n->kind) {
    case E_CONST:
        *out = n->cval;
        tmpl_value_retain(*out);
        return 0;
    case E_NAME:
        return lookup_name(c, f, n->str, out);
    case E_NSREF:
        return tmpl_err(c, n->line, "namespace attribute reference outside an assignment");
    case E_TUPLE:
        return ev_seq(c, f, n, TL_TUPLE, out);
    case E_LIST:
        return ev_seq(c, f, n, TL_LIST, out);
    case E_DICT:
        return ev_dict(c, f, n, out);
    case E_GETATTR:
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        rc = tmpl_eval_getattr(c, n->line, a, n->str, out);
        tmpl_value_release(a);
        return rc;
    case E_GETITEM:
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        if (n->b->kind == E_SLICE) {
            rc = eval_slice(c, f, n->b, a, out);
        } else if (tmpl_eval_expr(c, f, n->b, &b)) {
            rc = -1;
        } else {
            rc = tmpl_eval_getitem(c, n->line, a, b, out);
            tmpl_value_release(b);
        }
        tmpl_value_release(a);
        return rc;
    case E_SLICE:
        return tmpl_err(c, n->line, "slice outside a subscript");
    case E_CALL: {
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        struct targs ta;
        struct argvals av;
        const char **kwn;
        if (eval_call_like(c, f, n, &ta, &av, &kwn)) {
            tmpl_value_release(a);
            return -1;
        }
        rc = tmpl_eval_call(c, n->line, a, &ta, out);
        argvals_free(&av);
        free(kwn);
        tmpl_value_release(a);
        return rc;
    }
    case E_FILTER:
        return tmpl_eval_filter_apply(c, f, n, tmpl_value_undef(), out);
    case E_TEST: {
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        struct targs ta;
        struct argvals av;
        const char **kwn;
        if (eval_call_like(c, f, n, &ta, &av, &kwn)) {
            tmpl_value_release(a);
            return -1;
        }
        int res = 0;
        rc = n->test->fn(c, n->line, a, &ta, &res);
        argvals_free(&av);
        free(kwn);
        tmpl_value_release(a);
        if (!rc)
            *out = tmpl_value_bool(res);
        return rc;
    }
    case E_COND:
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        rc = tmpl_value_truthy(a);
        tmpl_value_release(a);
        if (rc)
            return tmpl_eval_expr(c, f, n->b, out);
        if (n->c)
            return tmpl_eval_expr(c, f, n->c, out);
        *out = tmpl_value_undef_hint(
            "the inline if-expression on line %d evaluated to false and no else section was "
            "defined.",
            n->line);
        return 0;
    case E_AND:
    case E_OR:
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        if (tmpl_value_truthy(a) == (n->kind == E_OR)) {
            *out = a;
            return 0;
        }
        tmpl_value_release(a);
        return tmpl_eval_expr(c, f, n->b, out);
    case E_NOT:
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        *out = tmpl_value_bool(!tmpl_value_truthy(a));
        tmpl_value_release(a);
        return 0;
    case E_NEG:
    case E_POS:
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        rc = ev_unary(c, n, a, out);
        tmpl_value_release(a);
        return rc;
    case E_BIN:
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        if (tmpl_eval_expr(c, f, n->b, &b)) {
            tmpl_value_release(a);
            return -1;
        }
        rc = tmpl_eval_binop(c, n->line, n->op, a, b, out);
        tmpl_value_release(a);
        tmpl_value_release(b);
        return rc;
    case E_CONCAT: {
        struct sbuf s = {0};
        for (int i = 0; i < n->l1.n; i++) {
            if (tmpl_eval_expr(c, f, n->l1.v[i], &a)) {
                tmpl_strbuf_free(&s);
                return -1;
            }
            tmpl_value_write_str(&s, a);
            tmpl_value_release(a);
        }
        *out = tmpl_strbuf_take_str(&s);
        return 0;
    }
    case E_COMPARE: {
        if (tmpl_eval_expr(c, f, n->a, &a))
            return -1;
        int res = 1;
        for (int i = 0; i < n->l1.n && res; i++) {
            const struct node *o = n->l1.v[i];
            if (tmpl_eval_expr(c, f, o->a, &b)) {
                tmpl_value_release(a);
                return -1;
            }
            rc = tmpl_eval_compare(c, o->line, o->op, a, b, &res);
            tmpl_value_release(a);
            a = b;
            if (rc) {
                tmpl_value_release(a);
                return -1;
            }
        }
        tmpl_value_release(a);
        *out = tmpl_value_bool(res);
        return 0;
    }
    default:
        return tmpl_err(c, n->line, "statement used as an expression");
    }
}
