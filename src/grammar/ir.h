/* The grammar IR: what every front end (JSON Schema, regular expressions,
 * GBNF) builds and grammar_compile turns into automata. A grammar is a set
 * of named rules over bytes; a rule's body is an expression of byte sets,
 * sequences, alternations, bounded or unbounded repetitions and references
 * to rules (recursion allowed, left recursion refused at compile time).
 * Text is UTF-8: gx_codepoints turns a set of code points into the byte
 * sequences that encode them, so front ends think in characters.
 *
 * Expressions and rules are small integer handles into the IR; an
 * expression may be used in several places (the compiler instantiates each
 * use; a large shared part is better made a rule). A builder
 * function returns -1 once the IR has failed (too large, an unknown rule),
 * and every builder given -1 returns -1, so a front end checks once at the
 * end (gir_failed). */
#ifndef INFER_GRAMMAR_IR_H
#define INFER_GRAMMAR_IR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

enum gx_kind {
    GX_NOTHING, /* matches nothing */
    GX_EMPTY,   /* matches the empty string */
    GX_BYTES,   /* one byte of a set */
    GX_SEQ,
    GX_ALT,
    GX_REPEAT, /* min..max copies; max < 0: unbounded */
    GX_REF,    /* a rule */
};

struct gx_node {
    uint8_t kind;
    int32_t n, first; /* SEQ / ALT: n children at kids[first..]; REPEAT: the child at kids[first] */
    int32_t min, max; /* REPEAT */
    int32_t arg;      /* BYTES: the set's index; REF: the rule */
};

struct byteset {
    uint32_t w[8];
};

static inline int byteset_has(const struct byteset *s, unsigned b) { return (int)((s->w[b >> 5] >> (b & 31)) & 1u); }
static inline void byteset_add(struct byteset *s, unsigned b) { s->w[b >> 5] |= 1u << (b & 31); }
void byteset_add_range(struct byteset *s, unsigned lo, unsigned hi);

struct gir_rule {
    char *name;
    int32_t body; /* an expression, or -1 until defined */
};

/* Limits that keep a hostile or huge grammar from exhausting memory. */
enum {
    GIR_MAX_NODES = 1 << 21,
    GIR_MAX_RULES = 1 << 16,
    GIR_MAX_REPEAT = 1 << 16, /* a repetition's bounds */
};

struct gir {
    struct gx_node *nodes;
    int n_nodes, cap_nodes;
    int32_t *kids;
    int n_kids, cap_kids;
    struct byteset *sets;
    int n_sets, cap_sets;
    struct gir_rule *rules;
    int n_rules, cap_rules;
    int32_t *by_name; /* open-addressing index of rules by name, -1 empty */
    int cap_by_name;
    int root; /* the start rule, or -1 */
    struct err error;
    int failed;
};

void gir_init(struct gir *g);
void gir_free(struct gir *g);
/* Sets the IR's error (the first one wins) and returns -1. */
int gir_fail(struct gir *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gir_failed(const struct gir *g);

/* The rule named name, declared if new (its body -1); -1 on failure. */
int gir_rule(struct gir *g, const char *name);
/* A new rule with a fresh name made from hint ("hint", "hint_2", ...). */
int gir_rule_fresh(struct gir *g, const char *hint);
/* The rule named name, or -1 when there is none (no declaration). */
int gir_rule_find(const struct gir *g, const char *name);
/* Defines rule's body; -1 if it already has one. */
int gir_define(struct gir *g, int rule, int expr);
void gir_set_root(struct gir *g, int rule);

/* Expressions. */
int gx_nothing(struct gir *g);
int gx_empty(struct gir *g);
int gx_bytes(struct gir *g, const struct byteset *set); /* an empty set is gx_nothing */
int gx_byte(struct gir *g, unsigned b);
int gx_byte_range(struct gir *g, unsigned lo, unsigned hi);
int gx_literal(struct gir *g, const char *s, size_t n); /* these bytes in order */
int gx_str(struct gir *g, const char *s);               /* gx_literal of a C string */
/* Any bytes that do not contain the string lit (2 bytes or more, its first
 * byte not repeated in it: a marker such as "</think>"). */
int gx_without(struct gir *g, const char *lit);
/* Code points: n_pairs inclusive [lo, hi] pairs (any order, overlaps
 * allowed; surrogates D800..DFFF and values past 10FFFF are dropped), as
 * their UTF-8 encodings. */
int gx_codepoints(struct gir *g, const uint32_t *pairs, int n_pairs);
/* Every code point except those of the pairs. */
int gx_codepoints_not(struct gir *g, const uint32_t *pairs, int n_pairs);
int gx_seq(struct gir *g, const int *items, int n);
int gx_alt(struct gir *g, const int *items, int n);
int gx_seq2(struct gir *g, int a, int b);
int gx_seq3(struct gir *g, int a, int b, int c);
int gx_alt2(struct gir *g, int a, int b);
int gx_repeat(struct gir *g, int x, int min, int max); /* max < 0: unbounded */
int gx_opt(struct gir *g, int x);                      /* x? */
int gx_star(struct gir *g, int x);                     /* x* */
int gx_plus(struct gir *g, int x);                     /* x+ */
int gx_ref(struct gir *g, int rule);

/* Writes the IR as GBNF-like text (for tests and `infer grammar --show`);
 * returns a malloc'ed string. */
char *gir_dump(const struct gir *g);

#endif
