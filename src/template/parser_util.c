/* Template parser helpers: the token cursor, error reporting with the
 * template line, and AST node construction and freeing. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "template/parser.h"

const struct token *tp_cur(struct parser *P) { return &P->t[P->i]; }

const struct token *tp_peek(struct parser *P) { return &P->t[P->i + 1 < P->n ? P->i + 1 : P->i]; }

void tp_next(struct parser *P)
{
    if (P->i + 1 < P->n)
        P->i++;
}

int tp_is_name(const struct token *t, const char *kw) { return t->type == TK_NAME && !strcmp(t->s, kw); }

int tp_is_op(const struct token *t, int op) { return t->type == TK_OP && t->op == op; }

const char *tp_describe(const struct token *t, char *buf, size_t len)
{
    static const char *opnames[] = {"+", "-",  "/",  "//", "*",  "%", "**", "~", "[", "]", "(", ")", "{",
                                    "}", "==", "!=", ">",  ">=", "<", "<=", "=", ".", ":", "|", ",", ";"};
    switch (t->type) {
    case TK_NAME:
        snprintf(buf, len, "%s", t->s);
        return buf;
    case TK_OP:
        snprintf(buf, len, "%s", opnames[t->op]);
        return buf;
    case TK_STRING:
        return "string";
    case TK_INT:
        return "integer";
    case TK_FLOAT:
        return "float";
    case TK_DATA:
        return "template data / text";
    case TK_VAR_BEGIN:
        return "begin of print statement";
    case TK_VAR_END:
        return "end of print statement";
    case TK_BLOCK_BEGIN:
        return "begin of statement block";
    case TK_BLOCK_END:
        return "end of statement block";
    default:
        return "end of template";
    }
}

void *tp_fail(struct parser *P, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    err_set(P->e, "template line %d: %s", line, msg);
    return NULL;
}

void *tp_fail_expect(struct parser *P, const char *what)
{
    char buf[64];
    return tp_fail(P, tp_cur(P)->line, "expected %s, got '%s'", what,
                   tp_describe(tp_cur(P), buf, sizeof buf));
}

int tp_expect_op(struct parser *P, int op, const char *what)
{
    if (!tp_is_op(tp_cur(P), op)) {
        tp_fail_expect(P, what);
        return -1;
    }
    tp_next(P);
    return 0;
}

int tp_expect_type(struct parser *P, int type, const char *what)
{
    if (tp_cur(P)->type != type) {
        tp_fail_expect(P, what);
        return -1;
    }
    tp_next(P);
    return 0;
}

struct node *tp_nnew(int kind, int line)
{
    struct node *n = xcalloc(1, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = line;
    n->cval.k = TV_UNDEF;
    return n;
}

void tp_nl_push(struct nlist *l, struct node *n)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = n;
}

void tp_nl_free(struct nlist *l)
{
    for (int i = 0; i < l->n; i++)
        tmpl_node_free(l->v[i]);
    free(l->v);
}

void tmpl_node_free(struct node *n)
{
    if (!n)
        return;
    free(n->str);
    free(n->str2);
    if (n->kind == E_CONST)
        tmpl_value_free_immortal(n->cval);
    tmpl_node_free(n->a);
    tmpl_node_free(n->b);
    tmpl_node_free(n->c);
    if (n->kwn)
        for (int i = 0; i < n->l2.n; i++)
            free(n->kwn[i]);
    free(n->kwn);
    tp_nl_free(&n->l1);
    tp_nl_free(&n->l2);
    tp_nl_free(&n->l3);
    free(n);
}

struct node *tp_const_node(struct tval v, int line)
{
    struct node *n = tp_nnew(E_CONST, line);
    tmpl_value_make_immortal(v);
    n->cval = v;
    return n;
}

int tp_enter(struct parser *P)
{
    if (++P->depth > TMPL_MAX_PARSE_DEPTH) {
        tp_fail(P, tp_cur(P)->line, "template nested too deeply");
        return -1;
    }
    return 0;
}
