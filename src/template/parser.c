/* Template parser, statements: if/elif/else, for (targets, `if` filter,
 * else), set (plain, namespace attribute, block form with filters), macro,
 * call, filter, with, break/continue (only inside loops), print, and
 * transformers' {% generation %}. Expressions are in parser_expr.c. */
#include <stdlib.h>
#include <string.h>

#include "template/parser.h"

static int parse_statements(struct parser *P, const char *const *ends, struct nlist *body);

/* ------------------------------------------------------- statements */

static int can_assign(const struct node *n)
{
    if (n->kind == E_NAME || n->kind == E_NSREF)
        return 1;
    if (n->kind == E_TUPLE) {
        for (int i = 0; i < n->l1.n; i++)
            if (n->l1.v[i]->kind != E_NAME)
                return 0;
        return 1;
    }
    return 0;
}

static struct node *parse_assign_target(struct parser *P, const char *const *extra_end, int with_namespace)
{
    int line = tp_cur(P)->line;
    struct node *t = tp_parse_tuple(P, 1, 1, extra_end, 0, with_namespace);
    if (t && !can_assign(t)) {
        tmpl_node_free(t);
        return tp_fail(P, line, "can't assign to this expression");
    }
    return t;
}

static int parse_signature(struct parser *P, struct node *n)
{
    if (tp_expect_op(P, OP_LPAREN, "'('"))
        return -1;
    while (!tp_is_op(tp_cur(P), OP_RPAREN)) {
        if (n->l2.n && tp_expect_op(P, OP_COMMA, "','"))
            return -1;
        if (tp_cur(P)->type != TK_NAME) {
            tp_fail_expect(P, "name");
            return -1;
        }
        struct node *arg = tp_nnew(E_NAME, tp_cur(P)->line);
        arg->str = xstrdup(tp_cur(P)->s);
        tp_next(P);
        tp_nl_push(&n->l2, arg);
        if (tp_is_op(tp_cur(P), OP_ASSIGN)) {
            tp_next(P);
            struct node *d = tp_parse_expression(P, 1);
            if (!d)
                return -1;
            tp_nl_push(&n->l3, d);
        } else if (n->l3.n) {
            tp_fail(P, tp_cur(P)->line, "non-default argument follows default argument");
            return -1;
        }
    }
    tp_next(P);
    return 0;
}

static void scan_names(const struct node *n, int *flags)
{
    if (!n)
        return;
    if (n->kind == E_NAME && n->str) {
        if (!strcmp(n->str, "varargs"))
            *flags |= MACRO_USES_VARARGS;
        else if (!strcmp(n->str, "kwargs"))
            *flags |= MACRO_USES_KWARGS;
        else if (!strcmp(n->str, "caller"))
            *flags |= MACRO_USES_CALLER;
    }
    scan_names(n->a, flags);
    scan_names(n->b, flags);
    scan_names(n->c, flags);
    const struct nlist *ls[3] = {&n->l1, &n->l2, &n->l3};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ls[k]->n; i++)
            scan_names(ls[k]->v[i], flags);
}

/* The body of a macro or call block: loop controls do not reach outside it. */
static int parse_macro_body(struct parser *P, struct node *n, const char *end)
{
    int loops = P->loops;
    P->loops = 0;
    const char *ends[] = {end, NULL};
    int rc = parse_statements(P, ends, &n->l1);
    P->loops = loops;
    if (rc)
        return -1;
    tp_next(P); /* the end tag's name */
    for (int i = 0; i < n->l1.n; i++)
        scan_names(n->l1.v[i], &n->flags);
    return 0;
}

static struct node *parse_statement(struct parser *P);

static struct node *parse_for(struct parser *P, int line)
{
    static const char *const in_end[] = {"in", NULL};
    static const char *const rec_end[] = {"recursive", NULL};
    static const char *const body_end[] = {"endfor", "else", NULL};
    static const char *const else_end[] = {"endfor", NULL};
    struct node *n = tp_nnew(N_FOR, line);
    if (!(n->a = parse_assign_target(P, in_end, 0)))
        goto bad;
    if (!tp_is_name(tp_cur(P), "in")) {
        tp_fail_expect(P, "'in'");
        goto bad;
    }
    tp_next(P);
    if (!(n->b = tp_parse_tuple(P, 0, 0, rec_end, 0, 0)))
        goto bad;
    if (tp_is_name(tp_cur(P), "if")) {
        tp_next(P);
        if (!(n->c = tp_parse_expression(P, 1)))
            goto bad;
    }
    if (tp_is_name(tp_cur(P), "recursive")) {
        tp_fail(P, tp_cur(P)->line, "recursive for loops are not supported");
        goto bad;
    }
    P->loops++;
    int rc = parse_statements(P, body_end, &n->l1);
    P->loops--;
    if (rc)
        goto bad;
    int has_else = tp_is_name(tp_cur(P), "else");
    tp_next(P);
    if (has_else) {
        if (parse_statements(P, else_end, &n->l2))
            goto bad;
        tp_next(P);
    }
    return n;
bad:
    tmpl_node_free(n);
    return NULL;
}

static struct node *parse_if(struct parser *P, int line)
{
    static const char *const body_end[] = {"elif", "else", "endif", NULL};
    static const char *const else_end[] = {"endif", NULL};
    struct node *root = tp_nnew(N_IF, line), *n = root;
    for (;;) {
        if (!(n->a = tp_parse_tuple(P, 0, 0, NULL, 0, 0)) || parse_statements(P, body_end, &n->l1))
            goto bad;
        const struct token *t = tp_cur(P);
        tp_next(P);
        if (tp_is_name(t, "elif")) {
            struct node *e = tp_nnew(N_IF, tp_cur(P)->line);
            tp_nl_push(&n->l2, e);
            n = e;
            continue;
        }
        if (tp_is_name(t, "else")) {
            if (parse_statements(P, else_end, &n->l2))
                goto bad;
            tp_next(P);
        }
        break;
    }
    return root;
bad:
    tmpl_node_free(root);
    return NULL;
}

static struct node *parse_set(struct parser *P, int line)
{
    static const char *const ends[] = {"endset", NULL};
    struct node *target = parse_assign_target(P, NULL, 1);
    if (!target)
        return NULL;
    if (tp_is_op(tp_cur(P), OP_ASSIGN)) {
        tp_next(P);
        struct node *n = tp_nnew(N_SET, line);
        n->a = target;
        if (!(n->b = tp_parse_tuple(P, 0, 1, NULL, 0, 0))) {
            tmpl_node_free(n);
            return NULL;
        }
        return n;
    }
    struct node *n = tp_nnew(N_SET_BLOCK, line);
    n->a = target;
    if (tp_is_op(tp_cur(P), OP_PIPE)) {
        tp_next(P);
        if (!(n->c = tp_parse_filter(P, NULL, 1))) {
            tmpl_node_free(n);
            return NULL;
        }
    }
    if (parse_statements(P, ends, &n->l1)) {
        tmpl_node_free(n);
        return NULL;
    }
    tp_next(P);
    return n;
}

static struct node *parse_statement(struct parser *P)
{
    const struct token *t = tp_cur(P);
    if (t->type != TK_NAME)
        return tp_fail(P, t->line, "tag name expected");
    int line = t->line;
    const char *name = t->s;
    if (tp_enter(P))
        return NULL;
    tp_next(P);
    struct node *n = NULL;
    if (!strcmp(name, "for")) {
        n = parse_for(P, line);
    } else if (!strcmp(name, "if")) {
        n = parse_if(P, line);
    } else if (!strcmp(name, "set")) {
        n = parse_set(P, line);
    } else if (!strcmp(name, "macro")) {
        if (tp_cur(P)->type != TK_NAME) {
            tp_fail_expect(P, "name");
        } else {
            n = tp_nnew(N_MACRO, line);
            n->str = xstrdup(tp_cur(P)->s);
            tp_next(P);
            if (parse_signature(P, n) || parse_macro_body(P, n, "endmacro")) {
                tmpl_node_free(n);
                n = NULL;
            }
        }
    } else if (!strcmp(name, "call")) {
        n = tp_nnew(N_CALLBLOCK, line);
        n->str = xstrdup("caller");
        if ((tp_is_op(tp_cur(P), OP_LPAREN) && parse_signature(P, n)) ||
            !(n->a = tp_parse_expression(P, 1)) ||
            (n->a->kind != E_CALL && !tp_fail(P, line, "expected call")) ||
            parse_macro_body(P, n, "endcall")) {
            tmpl_node_free(n);
            n = NULL;
        }
    } else if (!strcmp(name, "filter")) {
        static const char *const ends[] = {"endfilter", NULL};
        n = tp_nnew(N_FILTER_BLOCK, line);
        if (!(n->a = tp_parse_filter(P, NULL, 1)) || parse_statements(P, ends, &n->l1)) {
            tmpl_node_free(n);
            n = NULL;
        } else {
            tp_next(P);
        }
    } else if (!strcmp(name, "with")) {
        static const char *const ends[] = {"endwith", NULL};
        n = tp_nnew(N_WITH, line);
        while (n && tp_cur(P)->type != TK_BLOCK_END) {
            struct node *tg = NULL, *v = NULL;
            if ((n->l2.n && tp_expect_op(P, OP_COMMA, "','")) || !(tg = parse_assign_target(P, NULL, 0)) ||
                tp_expect_op(P, OP_ASSIGN, "'='") || !(v = tp_parse_expression(P, 1))) {
                tmpl_node_free(tg);
                tmpl_node_free(n);
                n = NULL;
                break;
            }
            tp_nl_push(&n->l2, tg);
            tp_nl_push(&n->l3, v);
        }
        if (n && parse_statements(P, ends, &n->l1)) {
            tmpl_node_free(n);
            n = NULL;
        } else if (n) {
            tp_next(P);
        }
    } else if (!strcmp(name, "generation")) {
        static const char *const ends[] = {"endgeneration", NULL};
        n = tp_nnew(N_SCOPE, line);
        if (parse_statements(P, ends, &n->l1)) {
            tmpl_node_free(n);
            n = NULL;
        } else {
            tp_next(P);
        }
    } else if (!strcmp(name, "break") || !strcmp(name, "continue")) {
        if (!P->loops)
            tp_fail(P, line, "'%s' outside loop", name);
        else
            n = tp_nnew(name[0] == 'b' ? N_BREAK : N_CONTINUE, line);
    } else if (!strcmp(name, "print")) {
        n = tp_nnew(N_OUTPUT, line);
        while (tp_cur(P)->type != TK_BLOCK_END) {
            struct node *x = NULL;
            if ((n->l1.n && tp_expect_op(P, OP_COMMA, "','")) || !(x = tp_parse_expression(P, 1))) {
                tmpl_node_free(n);
                n = NULL;
                break;
            }
            tp_nl_push(&n->l1, x);
        }
    } else if (!strcmp(name, "block") || !strcmp(name, "extends") || !strcmp(name, "include") ||
               !strcmp(name, "import") || !strcmp(name, "from") || !strcmp(name, "autoescape")) {
        tp_fail(P, line, "tag '%s' is not supported in chat templates", name);
    } else {
        tp_fail(P, line, "Encountered unknown tag '%s'", name);
    }
    P->depth--;
    return n;
}

/* Parses statements until a {% name %} with name in ends; stops on that name. */
static int parse_body(struct parser *P, const char *const *ends, struct nlist *body)
{
    for (;;) {
        const struct token *t = tp_cur(P);
        if (t->type == TK_DATA) {
            struct node *d = tp_nnew(N_DATA, t->line);
            d->str = xmalloc(t->len + 1);
            memcpy(d->str, t->s, t->len + 1);
            d->len = t->len;
            tp_nl_push(body, d);
            tp_next(P);
        } else if (t->type == TK_VAR_BEGIN) {
            tp_next(P);
            struct node *x = tp_parse_tuple(P, 0, 1, NULL, 0, 0);
            if (!x)
                return -1;
            struct node *o = tp_nnew(N_OUTPUT, x->line);
            tp_nl_push(&o->l1, x);
            tp_nl_push(body, o);
            if (tp_expect_type(P, TK_VAR_END, "'}}'"))
                return -1;
        } else if (t->type == TK_BLOCK_BEGIN) {
            tp_next(P);
            for (const char *const *e = ends; e && *e; e++)
                if (tp_is_name(tp_cur(P), *e))
                    return 0;
            struct node *s = parse_statement(P);
            if (!s)
                return -1;
            tp_nl_push(body, s);
            if (tp_expect_type(P, TK_BLOCK_END, "end of statement block"))
                return -1;
        } else {
            if (!ends)
                return 0;
            struct sbuf b = {0};
            for (const char *const *e = ends; *e; e++)
                tmpl_strbuf_printf(&b, "%s'%s'", e == ends ? "" : " or ", *e);
            tp_fail(P, t->line, "unexpected end of template, expected %s", b.p);
            tmpl_strbuf_free(&b);
            return -1;
        }
    }
}

static int parse_statements(struct parser *P, const char *const *ends, struct nlist *body)
{
    if (tp_is_op(tp_cur(P), OP_COLON))
        tp_next(P);
    if (tp_expect_type(P, TK_BLOCK_END, "end of statement block"))
        return -1;
    return parse_body(P, ends, body);
}

struct node *tmpl_parse(const struct token *toks, int ntoks, struct err *e)
{
    struct parser P = {.t = toks, .n = ntoks, .e = e};
    struct node *root = tp_nnew(N_SCOPE, 1);
    if (parse_body(&P, NULL, &root->l1)) {
        tmpl_node_free(root);
        return NULL;
    }
    return root;
}
