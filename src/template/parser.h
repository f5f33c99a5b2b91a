/* Shared by the template parser's two halves: parser_expr.c (token helpers,
 * AST nodes, expressions) and parser.c (statements). */
#ifndef INFER_TEMPLATE_PARSER_H
#define INFER_TEMPLATE_PARSER_H

#include "template/internal.h"

struct parser {
    const struct token *t;
    int n, i;
    int depth;
    int loops; /* enclosing for loops in the current macro body */
    struct err *e;
};

const struct token *tp_cur(struct parser *P);
const struct token *tp_peek(struct parser *P);
void tp_next(struct parser *P);
int tp_is_name(const struct token *t, const char *kw);
int tp_is_op(const struct token *t, int op);
const char *tp_describe(const struct token *t, char *buf, size_t len);
/* Sets "template line N: message" and returns NULL. */
void *tp_fail(struct parser *P, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void *tp_fail_expect(struct parser *P, const char *what);
int tp_expect_op(struct parser *P, int op, const char *what);
int tp_expect_type(struct parser *P, int type, const char *what);
/* Counts nesting; fails past TMPL_MAX_PARSE_DEPTH (the caller decrements P->depth). */
int tp_enter(struct parser *P);

struct node *tp_nnew(int kind, int line);
void tp_nl_push(struct nlist *l, struct node *n);
void tp_nl_free(struct nlist *l);
struct node *tp_const_node(struct tval v, int line); /* makes v immortal */

struct node *tp_parse_expression(struct parser *P, int with_condexpr);
struct node *tp_parse_tuple(struct parser *P, int simplified, int with_condexpr, const char *const *extra_end,
                            int explicit_parens, int with_namespace);
struct node *tp_parse_primary(struct parser *P, int with_namespace);
/* Filters after `|` (or inline, for {% filter %} and {% set x | f %}); n may be NULL. */
struct node *tp_parse_filter(struct parser *P, struct node *n, int start_inline);
int tp_parse_call_args(struct parser *P, struct node *n);

#endif
