/* Internals of the template module (the Jinja2 subset of chat templates),
 * shared by its files: values, tokens, the AST and the render context.
 *
 * Values are Python-like and reference counted (struct tval is passed by
 * value; heap kinds carry a count). Counts below zero mark immortal values,
 * the constants owned by a compiled template, which several threads may read
 * at once. The only mutable containers are namespaces and frames, so the only
 * cycles go through them; the render context remembers both and clears them
 * when a render ends. */
#ifndef INFER_TEMPLATE_INTERNAL_H
#define INFER_TEMPLATE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/utf8.h"

/* ---------------------------------------------------------------- values */

enum tmpl_value_kind {
    TV_UNDEF, /* jinja2 Undefined; u.s is an optional hint (may be NULL) */
    TV_NONE,
    TV_BOOL,
    TV_INT,
    TV_FLOAT,
    TV_STR,
    TV_LIST, /* list, tuple, generator, dict views, range: see enum tmpl_list_sub */
    TV_DICT,
    TV_NS,      /* namespace(): a mutable attribute bag */
    TV_FUNC,    /* builtin function, bound method or macro */
    TV_LOOP,    /* the `loop` variable of a for loop */
    TV_MISSING, /* internal: an argument slot that was not passed */
};

struct tobj {
    int32_t rc; /* < 0: immortal */
};

struct tstr {
    struct tobj h;
    size_t len; /* bytes, excluding the NUL that always follows */
    size_t ncp; /* code points */
    char s[];
};

enum tmpl_list_sub {
    TL_LIST,
    TL_TUPLE,
    TL_ITER,  /* one-shot iterator (generator, reversed()); pos = next item */
    TL_ITEMS, /* dict_items / dict_keys / dict_values views */
    TL_KEYS,
    TL_VALUES,
    TL_RANGE, /* range(start, stop, step), materialised */
};

struct tval {
    uint8_t k; /* enum tmpl_value_kind */
    union {
        int b;
        int64_t i;
        double f;
        struct tstr *s;
        struct tlist *l;
        struct tdict *d;
        struct tns *ns;
        struct tfunc *fn;
        struct tloop *loop;
    } u;
};

struct tlist {
    struct tobj h;
    uint8_t sub;      /* enum tmpl_list_sub */
    const char *what; /* TL_ITER: "generator", "list_reverseiterator", ... */
    size_t n, cap, pos;
    struct tval *v;
    int64_t r_start, r_stop, r_step; /* TL_RANGE */
};

/* Insertion-ordered dictionary (Python 3.7+ semantics), linear lookup. */
struct tdict {
    struct tobj h;
    size_t n, cap;
    struct tval *k, *v;
};

struct tns {
    struct tobj h;
    struct tdict *d;
};

struct rctx;
struct targs;
struct node;
struct frame;

typedef int (*tbuiltin_fn)(struct rctx *c, int line, struct tval self, const struct targs *a,
                           struct tval *out);

enum tfunc_kind { FN_BUILTIN, FN_MACRO };

struct tfunc {
    struct tobj h;
    uint8_t kind;
    const char *name;         /* for messages */
    const char *owner;        /* bound methods: "str", "dict", ... (NULL: global) */
    tbuiltin_fn fn;           /* FN_BUILTIN */
    struct tval self;         /* bound receiver (TV_UNDEF if none) */
    const struct node *macro; /* FN_MACRO: N_MACRO or N_CALLBLOCK node */
    struct frame *closure;    /* FN_MACRO: frame the macro was defined in */
};

struct tloop {
    struct tobj h;
    struct tlist *items; /* the (filtered) items being iterated */
    size_t idx;
    struct tval last_changed; /* loop.changed() state (TV_MISSING at start) */
};

/* Arguments of a call: borrowed values. */
struct targs {
    int npos;
    const struct tval *pos;
    int nkw;
    const char *const *kwn;
    const struct tval *kw;
};

/* value.c: lifecycle and containers */
void tmpl_value_retain(struct tval v);
void tmpl_value_release(struct tval v);
struct tval tmpl_value_undef(void);
struct tval tmpl_value_undef_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct tval tmpl_value_none(void);
struct tval tmpl_value_bool(int b);
struct tval tmpl_value_int(int64_t i);
struct tval tmpl_value_float(double f);
struct tval tmpl_value_str(const char *s, size_t len); /* copies */
struct tval tmpl_value_cstr(const char *s);            /* copies */
struct tval tmpl_value_str_take(struct tstr *s);       /* takes the reference */
struct tstr *tstr_new(const char *s, size_t len);          /* rc 1 */
struct tval tmpl_value_list_new(uint8_t sub, size_t cap);
void tmpl_list_push(struct tlist *l, struct tval v); /* takes the reference */
struct tval tmpl_value_dict_new(size_t cap);
/* Sets d[k] = v, taking both references (replaces in place if k exists). */
void tmpl_dict_set(struct tdict *d, struct tval k, struct tval v);
/* Borrowed lookup; NULL if absent. */
struct tval *tmpl_dict_get(const struct tdict *d, struct tval k);
struct tval *tmpl_dict_get_str(const struct tdict *d, const char *key);
struct tval tmpl_value_ns_new(void);
struct tval tmpl_value_func_builtin(const char *name, const char *owner, tbuiltin_fn fn,
                                        struct tval self);
void tmpl_value_make_immortal(struct tval v);
void tmpl_value_free_immortal(struct tval v);

/* value.c: Python semantics */
int tmpl_value_truthy(struct tval v);
int tmpl_value_is_str(struct tval v);
int tmpl_value_is_num(struct tval v); /* int, float or bool */
double tmpl_value_num(struct tval v);
const char *tmpl_value_type_name(struct tval v); /* Python's type(x).__name__ */
/* Python ==, for ints/floats/bools across types, deep for containers. */
int tmpl_value_equal(struct tval a, struct tval b);
/* Python <: returns -1 (TypeError, message in buf), else 0 with *lt set. */
int tmpl_value_less(struct tval a, struct tval b, int *lt, char *msg, size_t msg_len);
int tmpl_value_hashable(struct tval v);

/* ------------------------------------------------------------- text */

struct sbuf {
    char *p;
    size_t n, cap;
};

void tmpl_strbuf_put(struct sbuf *b, const char *s, size_t n);
void tmpl_strbuf_puts(struct sbuf *b, const char *s);
void tmpl_strbuf_putc(struct sbuf *b, char c);
void tmpl_strbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tmpl_strbuf_put_cp(struct sbuf *b, uint32_t cp);
/* Moves the buffer into a string value and resets b. */
struct tval tmpl_strbuf_take_str(struct sbuf *b);
void tmpl_strbuf_free(struct sbuf *b);

/* ustr.c: Python's view of characters (decoding: core/utf8.h) */
int tmpl_isspace(uint32_t cp);
int tmpl_isupper(uint32_t cp);
int tmpl_islower(uint32_t cp);
int tmpl_isalpha(uint32_t cp);
int tmpl_isdigit(uint32_t cp);
int tmpl_isprintable(uint32_t cp);
/* Appends the Python upper/lower form of cp (may be several characters). */
void tmpl_put_upper(struct sbuf *b, uint32_t cp);
void tmpl_put_lower(struct sbuf *b, uint32_t cp);
/* Python str.strip/lstrip/rstrip: chars NULL = whitespace. which: 1 left, 2 right, 3 both */
void tmpl_strip(const char *s, size_t n, const char *chars, size_t nchars, int which, size_t *start,
              size_t *end);
/* Python str.splitlines() (keepends false): calls fn for each line. */
void tmpl_splitlines(const char *s, size_t n, void (*fn)(void *ctx, const char *line, size_t len), void *ctx);

/* repr.c: Python str()/repr() and json.dumps */
void tmpl_value_write_str(struct sbuf *b, struct tval v);  /* str(v) */
void tmpl_value_write_repr(struct sbuf *b, struct tval v); /* repr(v) */
void tmpl_float_repr(double f, char *buf, size_t len);
struct json_opts {
    int ensure_ascii;
    int indent;           /* -1: none */
    const char *indent_s; /* indent given as a string (overrides indent) */
    const char *item_sep, *key_sep;
    int sort_keys;
};
/* json.dumps; returns -1 with a Python-like message in msg on TypeError. */
int tmpl_value_write_json(struct sbuf *b, struct tval v, const struct json_opts *o, char *msg,
                              size_t msg_len);

/* ------------------------------------------------------------ lexer */

enum tok_type {
    TK_DATA,
    TK_VAR_BEGIN,
    TK_VAR_END,
    TK_BLOCK_BEGIN,
    TK_BLOCK_END,
    TK_NAME,
    TK_STRING,
    TK_INT,
    TK_FLOAT,
    TK_OP,
    TK_EOF,
};

enum tok_op {
    OP_ADD,
    OP_SUB,
    OP_DIV,
    OP_FLOORDIV,
    OP_MUL,
    OP_MOD,
    OP_POW,
    OP_TILDE,
    OP_LBRACKET,
    OP_RBRACKET,
    OP_LPAREN,
    OP_RPAREN,
    OP_LBRACE,
    OP_RBRACE,
    OP_EQ,
    OP_NE,
    OP_GT,
    OP_GTEQ,
    OP_LT,
    OP_LTEQ,
    OP_ASSIGN,
    OP_DOT,
    OP_COLON,
    OP_PIPE,
    OP_COMMA,
    OP_SEMICOLON,
};

struct token {
    uint8_t type; /* enum tok_type */
    uint8_t op;   /* enum tok_op for TK_OP */
    int line;
    char *s; /* TK_DATA, TK_NAME, TK_STRING: malloc'ed, NUL-terminated */
    size_t len;
    int64_t i;
    double f;
};

/* Tokenises a template (newlines normalised, trailing newline dropped, trim_blocks and
 * lstrip_blocks on, as transformers configures jinja2). Caller frees with tmpl_tokens_free. */
int tmpl_lex(const char *src, size_t len, struct token **toks, int *ntoks, struct err *e);
void tmpl_tokens_free(struct token *toks, int n);

/* -------------------------------------------------------------- AST */

enum node_kind {
    /* statements */
    N_DATA,
    N_OUTPUT,
    N_IF,
    N_FOR,
    N_SET,
    N_SET_BLOCK,
    N_MACRO,
    N_CALLBLOCK,
    N_FILTER_BLOCK,
    N_WITH,
    N_BREAK,
    N_CONTINUE,
    N_SCOPE,
    /* expressions */
    E_CONST,
    E_NAME,
    E_NSREF,
    E_TUPLE,
    E_LIST,
    E_DICT,
    E_GETATTR,
    E_GETITEM,
    E_SLICE,
    E_CALL,
    E_FILTER,
    E_TEST,
    E_COND,
    E_AND,
    E_OR,
    E_NOT,
    E_NEG,
    E_POS,
    E_BIN,
    E_CONCAT,
    E_COMPARE,
    E_OPERAND,
};

enum cmp_op { CMP_EQ, CMP_NE, CMP_LT, CMP_LTEQ, CMP_GT, CMP_GTEQ, CMP_IN, CMP_NOTIN };

struct nlist {
    struct node **v;
    int n, cap;
};

struct filter_def;
struct test_def;

struct node {
    uint8_t kind; /* enum node_kind */
    int op;       /* E_BIN: enum tok_op; E_OPERAND: enum cmp_op; N_MACRO: uses flags */
    int line;
    char *str; /* name, attribute, filter/test name, data text */
    size_t len;
    char *str2;       /* E_NSREF attribute */
    struct tval cval; /* E_CONST (immortal) */
    struct node *a, *b, *c;
    struct nlist l1, l2, l3;
    char **kwn;                      /* call-like nodes: keyword names, parallel to l2 */
    const struct filter_def *filter; /* E_FILTER */
    const struct test_def *test;     /* E_TEST */
    int flags;                       /* N_MACRO: MACRO_USES_* bits */
};

enum { MACRO_USES_VARARGS = 1, MACRO_USES_KWARGS = 2, MACRO_USES_CALLER = 4 };

/* Parses tokens into a statement list (N_SCOPE root). */
struct node *tmpl_parse(const struct token *toks, int ntoks, struct err *e);
void tmpl_node_free(struct node *n);

/* ------------------------------------------------------- render context */

struct frame {
    struct tobj h;
    struct frame *parent; /* owned reference */
    int n, cap;
    const char **names; /* borrowed: AST strings or static names */
    struct tval *vals;
};

struct rctx {
    struct err *e;
    struct tdict *vars; /* render variables (the template context) */
    struct sbuf *out;   /* current output */
    int depth;          /* macro call depth */
    /* frames captured by macros and namespaces, cleared at the end (cycles) */
    struct frame **captured;
    int ncaptured, capcap;
    struct tns **nss;
    int nnss, nscap;
};

/* errors: "template line N: message"; returns -1 */
int tmpl_err(struct rctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* eval.c (expressions, calls), access.c (iteration, attributes, items, slices),
 * operators.c */
int tmpl_eval_expr(struct rctx *c, struct frame *f, const struct node *n, struct tval *out);
int tmpl_eval_getattr(struct rctx *c, int line, struct tval obj, const char *attr, struct tval *out);
int tmpl_eval_getitem(struct rctx *c, int line, struct tval obj, struct tval key, struct tval *out);
int tmpl_eval_slice(struct rctx *c, int line, struct tval obj, const struct tval parts[3],
                        struct tval *out);
int tmpl_eval_call(struct rctx *c, int line, struct tval fn, const struct targs *a, struct tval *out);
/* Materialises an iterable into a new list reference (consumes iterators). */
int tmpl_eval_iterate(struct rctx *c, int line, struct tval v, struct tlist **out);
int tmpl_eval_undefined_error(struct rctx *c, int line, struct tval u);
/* Python binary operators (op: OP_ADD ... OP_POW), `in` and comparisons (op: enum cmp_op). */
int tmpl_eval_contains(struct rctx *c, int line, struct tval item, struct tval seq, int *res);
int tmpl_eval_compare(struct rctx *c, int line, int op, struct tval a, struct tval b, int *res);
int tmpl_eval_binop(struct rctx *c, int line, int op, struct tval a, struct tval b, struct tval *out);
/* Applies a filter node (and the filters below it) to its subject: the node's
 * own operand, or `subject` when it has none (filter blocks, set blocks). */
int tmpl_eval_filter_apply(struct rctx *c, struct frame *f, const struct node *n, struct tval subject,
                               struct tval *out);

/* exec.c */
int tmpl_exec_body(struct rctx *c, struct frame *f, const struct nlist *body);
int tmpl_exec_macro_call(struct rctx *c, int line, const struct tfunc *m, const struct targs *a,
                         struct tval *out);
struct frame *tmpl_frame_new(struct frame *parent);
void tmpl_frame_release(struct frame *f);
void tmpl_frame_set(struct frame *f, const char *name, struct tval v); /* takes v */
struct tval *tmpl_frame_lookup(struct frame *f, const char *name);
void tmpl_track_ns(struct rctx *c, struct tns *ns);

/* builtins.c: binding call arguments to parameter names */
/* Fills slots[0..nnames) with borrowed values (TV_MISSING when not given). */
int tmpl_args_bind(struct rctx *c, int line, const char *fname, const struct targs *a,
                   const char *const *names, int nnames, struct tval *slots);
int tmpl_arg_int(struct rctx *c, int line, const char *fname, struct tval v, int64_t *out);

/* filters*.c, tests.c, methods.c, str_methods*.c, builtins.c, pyfmt.c */
typedef int (*filter_fn)(struct rctx *c, int line, struct tval v, const struct targs *a, struct tval *out);
typedef int (*test_fn)(struct rctx *c, int line, struct tval v, const struct targs *a, int *out);

struct filter_def {
    const char *name;
    filter_fn fn;
};
struct test_def {
    const char *name;
    test_fn fn;
};

const struct filter_def *tmpl_filter_find(const char *name);
const struct test_def *tmpl_test_find(const char *name);
/* Python attribute lookup of methods: str, dict, list. Returns 1 and a bound
 * method in *out when obj has a method of that name, 0 otherwise. */
int tmpl_method_lookup(struct rctx *c, int line, struct tval obj, const char *name, struct tval *out);
/* str_methods.c, str_methods_format.c: the str method tables (search and cut;
 * case, padding and format), and string operations shared with the filters */
struct method_def {
    const char *name;
    tbuiltin_fn fn;
};
extern const struct method_def tmpl_str_methods[];
extern const size_t tmpl_n_str_methods;
extern const struct method_def tmpl_str_format_methods[];
extern const size_t tmpl_n_str_format_methods;
enum { CASE_UPPER, CASE_LOWER, CASE_TITLE, CASE_CAPITALIZE, CASE_SWAP };
int tmpl_str_case(struct tval s, int mode, struct tval *out);
int tmpl_str_replace(struct rctx *c, int line, struct tval s, struct tval old, struct tval neu, int64_t count,
                     struct tval *out);
int tmpl_str_is_upper(struct tval s);
int tmpl_str_is_lower(struct tval s);
/* builtins.c: global functions: range, namespace, dict, raise_exception, strftime_now. */
int tmpl_builtin_global(const char *name, struct tval *out);
/* pyfmt.c: Python's "%" string formatting (str % args). */
int tmpl_percent_format(struct rctx *c, int line, struct tval fmt, struct tval args, struct tval *out);
/* Python str.format(*args, **kwargs). */
int tmpl_str_format(struct rctx *c, int line, struct tval fmt, const struct targs *a, struct tval *out);

/* Limits that keep a hostile template from exhausting the host. */
#define TMPL_MAX_DEPTH 256       /* nested macro calls */
#define TMPL_MAX_PARSE_DEPTH 400 /* nested expressions/statements */
#define TMPL_MAX_RANGE 100000    /* jinja2's sandbox MAX_RANGE */
#define TMPL_MAX_STR ((size_t)1 << 28)
#define TMPL_MAX_WIDTH ((int64_t)1 << 20) /* a field's width or precision: padding is built in memory */

/* The integer value of an int or bool (Python's bool is an int); 0 if v is neither. */
static inline int tval_int_of(struct tval v, int64_t *i)
{
    if (v.k == TV_INT)
        *i = v.u.i;
    else if (v.k == TV_BOOL)
        *i = v.u.b;
    else
        return 0;
    return 1;
}

#endif
