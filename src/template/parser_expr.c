/* Template parser, expressions: jinja2's grammar and operator precedence
 * (jinja2/parser.py): condexpr < or < and < not < compare (==, !=, <, <=, >,
 * >=, in, not in) < + - < ~ < * / // % < ** < unary -/+ < postfix (.attr,
 * [item], call) and filters/tests (| name, is name). Filters and tests are
 * resolved here, so an unknown one is a compile error naming its line, as in
 * jinja2. */
#include <stdlib.h>
#include <string.h>

#include "template/parser.h"

static struct node *parse_postfix(struct parser *P, struct node *n);
static struct node *parse_unary(struct parser *P, int with_filter);

/* ----------------------------------------------------------- calls */

int tp_parse_call_args(struct parser *P, struct node *n)
{
    int line = tp_cur(P)->line;
    if (tp_expect_op(P, OP_LPAREN, "'('"))
        return -1;
    int need_comma = 0;
    while (!tp_is_op(tp_cur(P), OP_RPAREN)) {
        if (need_comma) {
            if (tp_expect_op(P, OP_COMMA, "','"))
                return -1;
            if (tp_is_op(tp_cur(P), OP_RPAREN))
                break;
        }
        if (tp_is_op(tp_cur(P), OP_MUL) || tp_is_op(tp_cur(P), OP_POW)) {
            int star2 = tp_is_op(tp_cur(P), OP_POW);
            if ((star2 && n->c) || (!star2 && (n->b || n->c))) {
                tp_fail(P, line, "invalid syntax for function call expression");
                return -1;
            }
            tp_next(P);
            struct node *x = tp_parse_expression(P, 1);
            if (!x)
                return -1;
            if (star2)
                n->c = x;
            else
                n->b = x;
        } else if (tp_cur(P)->type == TK_NAME && tp_is_op(tp_peek(P), OP_ASSIGN)) {
            if (n->c) {
                tp_fail(P, line, "invalid syntax for function call expression");
                return -1;
            }
            char *key = xstrdup(tp_cur(P)->s);
            tp_next(P);
            tp_next(P);
            struct node *x = tp_parse_expression(P, 1);
            if (!x) {
                free(key);
                return -1;
            }
            n->kwn = xrealloc(n->kwn, (size_t)(n->l2.n + 1) * sizeof *n->kwn);
            n->kwn[n->l2.n] = key;
            tp_nl_push(&n->l2, x);
        } else {
            if (n->b || n->c || n->l2.n) {
                tp_fail(P, line, "invalid syntax for function call expression");
                return -1;
            }
            struct node *x = tp_parse_expression(P, 1);
            if (!x)
                return -1;
            tp_nl_push(&n->l1, x);
        }
        need_comma = 1;
    }
    tp_next(P);
    return 0;
}

/* dotted names: foo.bar */
static char *parse_dotted_name(struct parser *P)
{
    if (tp_cur(P)->type != TK_NAME)
        return tp_fail_expect(P, "name");
    struct sbuf b = {0};
    tmpl_strbuf_puts(&b, tp_cur(P)->s);
    tp_next(P);
    while (tp_is_op(tp_cur(P), OP_DOT)) {
        tp_next(P);
        if (tp_cur(P)->type != TK_NAME) {
            tmpl_strbuf_free(&b);
            return tp_fail_expect(P, "name");
        }
        tmpl_strbuf_putc(&b, '.');
        tmpl_strbuf_puts(&b, tp_cur(P)->s);
        tp_next(P);
    }
    return b.p;
}

struct node *tp_parse_filter(struct parser *P, struct node *n, int start_inline)
{
    while (tp_is_op(tp_cur(P), OP_PIPE) || start_inline) {
        if (!start_inline)
            tp_next(P);
        int line = tp_cur(P)->line;
        char *name = parse_dotted_name(P);
        if (!name) {
            tmpl_node_free(n);
            return NULL;
        }
        struct node *f = tp_nnew(E_FILTER, line);
        f->str = name;
        f->a = n;
        f->filter = tmpl_filter_find(name);
        if (!f->filter) {
            tp_fail(P, line, "unknown filter '%s'", name);
            tmpl_node_free(f);
            return NULL;
        }
        if (tp_is_op(tp_cur(P), OP_LPAREN) && tp_parse_call_args(P, f)) {
            tmpl_node_free(f);
            return NULL;
        }
        n = f;
        start_inline = 0;
    }
    return n;
}

static struct node *parse_test(struct parser *P, struct node *n)
{
    int line = tp_cur(P)->line;
    tp_next(P); /* is */
    int negated = 0;
    if (tp_is_name(tp_cur(P), "not")) {
        tp_next(P);
        negated = 1;
    }
    char *name = parse_dotted_name(P);
    if (!name) {
        tmpl_node_free(n);
        return NULL;
    }
    struct node *t = tp_nnew(E_TEST, line);
    t->str = name;
    t->a = n;
    t->test = tmpl_test_find(name);
    if (!t->test) {
        tp_fail(P, line, "unknown test '%s'", name);
        tmpl_node_free(t);
        return NULL;
    }
    const struct token *c = tp_cur(P);
    if (tp_is_op(c, OP_LPAREN)) {
        if (tp_parse_call_args(P, t)) {
            tmpl_node_free(t);
            return NULL;
        }
    } else if ((c->type == TK_NAME || c->type == TK_STRING || c->type == TK_INT || c->type == TK_FLOAT ||
                tp_is_op(c, OP_LPAREN) || tp_is_op(c, OP_LBRACKET) || tp_is_op(c, OP_LBRACE)) &&
               !tp_is_name(c, "else") && !tp_is_name(c, "or") && !tp_is_name(c, "and")) {
        if (tp_is_name(c, "is")) {
            tmpl_node_free(t);
            return tp_fail(P, c->line, "You cannot chain multiple tests with is");
        }
        struct node *arg = tp_parse_primary(P, 0);
        if (arg)
            arg = parse_postfix(P, arg);
        if (!arg) {
            tmpl_node_free(t);
            return NULL;
        }
        tp_nl_push(&t->l1, arg);
    }
    if (negated) {
        struct node *x = tp_nnew(E_NOT, line);
        x->a = t;
        return x;
    }
    return t;
}

/* ------------------------------------------------------ expressions */

static struct node *parse_subscribed(struct parser *P)
{
    int line = tp_cur(P)->line;
    struct node *parts[3] = {NULL, NULL, NULL};
    if (tp_is_op(tp_cur(P), OP_COLON)) {
        tp_next(P);
    } else {
        struct node *x = tp_parse_expression(P, 1);
        if (!x || !tp_is_op(tp_cur(P), OP_COLON))
            return x;
        tp_next(P);
        parts[0] = x;
    }
    if (!tp_is_op(tp_cur(P), OP_COLON) && !tp_is_op(tp_cur(P), OP_RBRACKET) &&
        !tp_is_op(tp_cur(P), OP_COMMA)) {
        if (!(parts[1] = tp_parse_expression(P, 1)))
            goto bad;
    }
    if (tp_is_op(tp_cur(P), OP_COLON)) {
        tp_next(P);
        if (!tp_is_op(tp_cur(P), OP_RBRACKET) && !tp_is_op(tp_cur(P), OP_COMMA) &&
            !(parts[2] = tp_parse_expression(P, 1)))
            goto bad;
    }
    struct node *s = tp_nnew(E_SLICE, line);
    s->a = parts[0];
    s->b = parts[1];
    s->c = parts[2];
    return s;
bad:
    tmpl_node_free(parts[0]);
    tmpl_node_free(parts[1]);
    return NULL;
}

static struct node *parse_subscript(struct parser *P, struct node *n)
{
    const struct token *t = tp_cur(P);
    int line = t->line;
    tp_next(P);
    if (t->type == TK_OP && t->op == OP_DOT) {
        const struct token *a = tp_cur(P);
        if (a->type == TK_NAME) {
            tp_next(P);
            struct node *g = tp_nnew(E_GETATTR, line);
            g->a = n;
            g->str = xstrdup(a->s);
            return g;
        }
        if (a->type != TK_INT) {
            tmpl_node_free(n);
            return tp_fail(P, a->line, "expected name or number");
        }
        tp_next(P);
        struct node *g = tp_nnew(E_GETITEM, line);
        g->a = n;
        g->b = tp_const_node(tmpl_value_int(a->i), a->line);
        return g;
    }
    /* [ ... ] */
    struct nlist args = {0};
    while (!tp_is_op(tp_cur(P), OP_RBRACKET)) {
        if (args.n && tp_expect_op(P, OP_COMMA, "','"))
            goto bad;
        struct node *x = parse_subscribed(P);
        if (!x)
            goto bad;
        tp_nl_push(&args, x);
    }
    tp_next(P);
    struct node *g = tp_nnew(E_GETITEM, line);
    g->a = n;
    if (args.n == 1) {
        g->b = args.v[0];
        free(args.v);
    } else {
        struct node *tup = tp_nnew(E_TUPLE, line);
        tup->l1 = args;
        g->b = tup;
    }
    return g;
bad:
    tp_nl_free(&args);
    tmpl_node_free(n);
    return NULL;
}

static struct node *parse_postfix(struct parser *P, struct node *n)
{
    while (n) {
        if (tp_is_op(tp_cur(P), OP_DOT) || tp_is_op(tp_cur(P), OP_LBRACKET)) {
            n = parse_subscript(P, n);
        } else if (tp_is_op(tp_cur(P), OP_LPAREN)) {
            struct node *c = tp_nnew(E_CALL, tp_cur(P)->line);
            c->a = n;
            if (tp_parse_call_args(P, c)) {
                tmpl_node_free(c);
                return NULL;
            }
            n = c;
        } else {
            break;
        }
    }
    return n;
}

static struct node *parse_filter_expr(struct parser *P, struct node *n)
{
    while (n) {
        if (tp_is_op(tp_cur(P), OP_PIPE)) {
            n = tp_parse_filter(P, n, 0);
        } else if (tp_is_name(tp_cur(P), "is")) {
            n = parse_test(P, n);
        } else if (tp_is_op(tp_cur(P), OP_LPAREN)) {
            struct node *c = tp_nnew(E_CALL, tp_cur(P)->line);
            c->a = n;
            if (tp_parse_call_args(P, c)) {
                tmpl_node_free(c);
                return NULL;
            }
            n = c;
        } else {
            break;
        }
    }
    return n;
}

static struct node *parse_list_or_dict(struct parser *P, int dict)
{
    int line = tp_cur(P)->line;
    int close = dict ? OP_RBRACE : OP_RBRACKET;
    tp_next(P);
    struct node *n = tp_nnew(dict ? E_DICT : E_LIST, line);
    while (!tp_is_op(tp_cur(P), close)) {
        if (n->l1.n && tp_expect_op(P, OP_COMMA, "','"))
            goto bad;
        if (tp_is_op(tp_cur(P), close))
            break;
        struct node *k = tp_parse_expression(P, 1);
        if (!k)
            goto bad;
        tp_nl_push(&n->l1, k);
        if (dict) {
            if (tp_expect_op(P, OP_COLON, "':'"))
                goto bad;
            struct node *v = tp_parse_expression(P, 1);
            if (!v)
                goto bad;
            tp_nl_push(&n->l2, v);
        }
    }
    tp_next(P);
    return n;
bad:
    tmpl_node_free(n);
    return NULL;
}

struct node *tp_parse_primary(struct parser *P, int with_namespace)
{
    const struct token *t = tp_cur(P);
    char buf[64];
    if (tp_enter(P))
        return NULL;
    struct node *n = NULL;
    if (t->type == TK_NAME) {
        tp_next(P);
        if (!strcmp(t->s, "true") || !strcmp(t->s, "True"))
            n = tp_const_node(tmpl_value_bool(1), t->line);
        else if (!strcmp(t->s, "false") || !strcmp(t->s, "False"))
            n = tp_const_node(tmpl_value_bool(0), t->line);
        else if (!strcmp(t->s, "none") || !strcmp(t->s, "None"))
            n = tp_const_node(tmpl_value_none(), t->line);
        else if (with_namespace && tp_is_op(tp_cur(P), OP_DOT)) {
            tp_next(P);
            if (tp_cur(P)->type != TK_NAME) {
                tp_fail_expect(P, "name");
            } else {
                n = tp_nnew(E_NSREF, t->line);
                n->str = xstrdup(t->s);
                n->str2 = xstrdup(tp_cur(P)->s);
                tp_next(P);
            }
        } else {
            n = tp_nnew(E_NAME, t->line);
            n->str = xstrdup(t->s);
        }
    } else if (t->type == TK_STRING) {
        struct sbuf b = {0};
        int line = t->line;
        while (tp_cur(P)->type == TK_STRING) {
            tmpl_strbuf_put(&b, tp_cur(P)->s, tp_cur(P)->len);
            tp_next(P);
        }
        n = tp_const_node(tmpl_strbuf_take_str(&b), line);
    } else if (t->type == TK_INT) {
        tp_next(P);
        n = tp_const_node(tmpl_value_int(t->i), t->line);
    } else if (t->type == TK_FLOAT) {
        tp_next(P);
        n = tp_const_node(tmpl_value_float(t->f), t->line);
    } else if (tp_is_op(t, OP_LPAREN)) {
        tp_next(P);
        n = tp_parse_tuple(P, 0, 1, NULL, 1, 0);
        if (n && tp_expect_op(P, OP_RPAREN, "')'")) {
            tmpl_node_free(n);
            n = NULL;
        }
    } else if (tp_is_op(t, OP_LBRACKET) || tp_is_op(t, OP_LBRACE)) {
        n = parse_list_or_dict(P, tp_is_op(t, OP_LBRACE));
    } else {
        tp_fail(P, t->line, "unexpected '%s'", tp_describe(t, buf, sizeof buf));
    }
    P->depth--;
    return n;
}

static struct node *parse_unary(struct parser *P, int with_filter)
{
    const struct token *t = tp_cur(P);
    struct node *n;
    if (tp_enter(P))
        return NULL;
    if (tp_is_op(t, OP_SUB) || tp_is_op(t, OP_ADD)) {
        tp_next(P);
        struct node *x = parse_unary(P, 0);
        if (!x) {
            P->depth--;
            return NULL;
        }
        n = tp_nnew(t->op == OP_SUB ? E_NEG : E_POS, t->line);
        n->a = x;
    } else {
        n = tp_parse_primary(P, 0);
    }
    n = parse_postfix(P, n);
    if (with_filter)
        n = parse_filter_expr(P, n);
    P->depth--;
    return n;
}

static struct node *binop(int op, int line, struct node *a, struct node *b)
{
    struct node *n = tp_nnew(E_BIN, line);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static struct node *parse_pow(struct parser *P)
{
    int line = tp_cur(P)->line;
    struct node *l = parse_unary(P, 1);
    while (l && tp_is_op(tp_cur(P), OP_POW)) {
        tp_next(P);
        struct node *r = parse_unary(P, 1);
        if (!r) {
            tmpl_node_free(l);
            return NULL;
        }
        l = binop(OP_POW, line, l, r);
        line = tp_cur(P)->line;
    }
    return l;
}

/* A left-associative level: operand (op operand)* for the operators in ops
 * (terminated by -1), operands parsed by next. */
static struct node *parse_left_assoc(struct parser *P, struct node *(*next)(struct parser *), const int *ops)
{
    int line = tp_cur(P)->line;
    struct node *l = next(P);
    for (;;) {
        int found = 0;
        for (const int *o = ops; *o >= 0 && !found; o++)
            found = tp_is_op(tp_cur(P), *o);
        if (!l || !found)
            return l;
        int op = tp_cur(P)->op;
        tp_next(P);
        struct node *r = next(P);
        if (!r) {
            tmpl_node_free(l);
            return NULL;
        }
        l = binop(op, line, l, r);
        line = tp_cur(P)->line;
    }
}

static struct node *parse_math2(struct parser *P)
{
    static const int ops[] = {OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, -1};
    return parse_left_assoc(P, parse_pow, ops);
}

static struct node *parse_concat(struct parser *P)
{
    int line = tp_cur(P)->line;
    struct node *first = parse_math2(P);
    if (!first || !tp_is_op(tp_cur(P), OP_TILDE))
        return first;
    struct node *n = tp_nnew(E_CONCAT, line);
    tp_nl_push(&n->l1, first);
    while (tp_is_op(tp_cur(P), OP_TILDE)) {
        tp_next(P);
        struct node *x = parse_math2(P);
        if (!x) {
            tmpl_node_free(n);
            return NULL;
        }
        tp_nl_push(&n->l1, x);
    }
    return n;
}

static struct node *parse_math1(struct parser *P)
{
    static const int ops[] = {OP_ADD, OP_SUB, -1};
    return parse_left_assoc(P, parse_concat, ops);
}

static struct node *parse_compare(struct parser *P)
{
    int line = tp_cur(P)->line;
    struct node *expr = parse_math1(P);
    if (!expr)
        return NULL;
    struct node *cmp = NULL;
    for (;;) {
        const struct token *t = tp_cur(P);
        int op = -1;
        if (t->type == TK_OP && (t->op == OP_EQ || t->op == OP_NE || t->op == OP_LT || t->op == OP_LTEQ ||
                                 t->op == OP_GT || t->op == OP_GTEQ)) {
            op = t->op == OP_EQ     ? CMP_EQ
                 : t->op == OP_NE   ? CMP_NE
                 : t->op == OP_LT   ? CMP_LT
                 : t->op == OP_LTEQ ? CMP_LTEQ
                 : t->op == OP_GT   ? CMP_GT
                                    : CMP_GTEQ;
            tp_next(P);
        } else if (tp_is_name(t, "in")) {
            op = CMP_IN;
            tp_next(P);
        } else if (tp_is_name(t, "not") && tp_is_name(tp_peek(P), "in")) {
            op = CMP_NOTIN;
            tp_next(P);
            tp_next(P);
        } else {
            break;
        }
        struct node *r = parse_math1(P);
        if (!r) {
            tmpl_node_free(cmp ? cmp : expr);
            return NULL;
        }
        if (!cmp) {
            cmp = tp_nnew(E_COMPARE, line);
            cmp->a = expr;
        }
        struct node *o = tp_nnew(E_OPERAND, r->line);
        o->op = op;
        o->a = r;
        tp_nl_push(&cmp->l1, o);
    }
    return cmp ? cmp : expr;
}

static struct node *parse_not(struct parser *P)
{
    if (tp_is_name(tp_cur(P), "not")) {
        int line = tp_cur(P)->line;
        tp_next(P);
        if (tp_enter(P))
            return NULL;
        struct node *x = parse_not(P);
        P->depth--;
        if (!x)
            return NULL;
        struct node *n = tp_nnew(E_NOT, line);
        n->a = x;
        return n;
    }
    return parse_compare(P);
}

static struct node *parse_andor(struct parser *P, int is_or)
{
    int line = tp_cur(P)->line;
    struct node *l = is_or ? parse_andor(P, 0) : parse_not(P);
    while (l && tp_is_name(tp_cur(P), is_or ? "or" : "and")) {
        tp_next(P);
        struct node *r = is_or ? parse_andor(P, 0) : parse_not(P);
        if (!r) {
            tmpl_node_free(l);
            return NULL;
        }
        struct node *n = tp_nnew(is_or ? E_OR : E_AND, line);
        n->a = l;
        n->b = r;
        l = n;
        line = tp_cur(P)->line;
    }
    return l;
}

static struct node *parse_condexpr(struct parser *P)
{
    int line = tp_cur(P)->line;
    struct node *e1 = parse_andor(P, 1);
    while (e1 && tp_is_name(tp_cur(P), "if")) {
        tp_next(P);
        struct node *e2 = parse_andor(P, 1), *e3 = NULL;
        if (!e2) {
            tmpl_node_free(e1);
            return NULL;
        }
        if (tp_is_name(tp_cur(P), "else")) {
            tp_next(P);
            if (tp_enter(P) || !(e3 = parse_condexpr(P))) {
                tmpl_node_free(e1);
                tmpl_node_free(e2);
                return NULL;
            }
            P->depth--;
        }
        struct node *c = tp_nnew(E_COND, line);
        c->a = e2;
        c->b = e1;
        c->c = e3;
        e1 = c;
        line = tp_cur(P)->line;
    }
    return e1;
}

struct node *tp_parse_expression(struct parser *P, int with_condexpr)
{
    if (tp_enter(P))
        return NULL;
    struct node *n = with_condexpr ? parse_condexpr(P) : parse_andor(P, 1);
    P->depth--;
    return n;
}

static int is_tuple_end(struct parser *P, const char *const *extra_end)
{
    const struct token *t = tp_cur(P);
    if (t->type == TK_VAR_END || t->type == TK_BLOCK_END || tp_is_op(t, OP_RPAREN))
        return 1;
    for (; extra_end && *extra_end; extra_end++)
        if (tp_is_name(t, *extra_end))
            return 1;
    return 0;
}

struct node *tp_parse_tuple(struct parser *P, int simplified, int with_condexpr, const char *const *extra_end,
                            int explicit_parens, int with_namespace)
{
    int line = tp_cur(P)->line;
    struct nlist args = {0};
    int is_tuple = 0;
    char buf[64];
    for (;;) {
        if (args.n && tp_expect_op(P, OP_COMMA, "','"))
            goto bad;
        if (is_tuple_end(P, extra_end))
            break;
        struct node *x =
            simplified ? tp_parse_primary(P, with_namespace) : tp_parse_expression(P, with_condexpr);
        if (!x)
            goto bad;
        tp_nl_push(&args, x);
        if (tp_is_op(tp_cur(P), OP_COMMA))
            is_tuple = 1;
        else
            break;
    }
    if (!is_tuple) {
        if (args.n) {
            struct node *x = args.v[0];
            free(args.v);
            return x;
        }
        if (!explicit_parens) {
            tp_fail(P, tp_cur(P)->line, "Expected an expression, got '%s'",
                    tp_describe(tp_cur(P), buf, sizeof buf));
            goto bad;
        }
    }
    struct node *t = tp_nnew(E_TUPLE, line);
    t->l1 = args;
    return t;
bad:
    tp_nl_free(&args);
    return NULL;
}
