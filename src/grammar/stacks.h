/* Parser stacks for the grammar's pushdown automaton. A configuration is
 * the top frame's DFA state over a parent: a node of a pool of persistent,
 * hash-consed frames (a return state over its own parent), so that a byte
 * read inside a rule only changes the state (no allocation), equal stacks
 * have equal parents, and stacks share their bottoms. Frames made for a
 * look-ahead (a mask's walk) are dropped in LIFO order by truncating the
 * pool. */
#ifndef INFER_GRAMMAR_STACKS_H
#define INFER_GRAMMAR_STACKS_H

#include <stdint.h>

#include "grammar/grammar_impl.h"

enum {
    STACK_EMPTY = -1,  /* below the start rule: popping here ends the text */
    STACK_BOTTOM = -2, /* below a precomputation's state: popping here depends on the real stack */
};

struct stack_pool {
    int32_t *state, *parent, *chain; /* per node; chain: the next node of its hash bucket */
    int n, cap;
    int32_t *bucket;
    int n_bucket; /* a power of two */
};

struct config {
    int32_t state;  /* the top frame's DFA state */
    int32_t parent; /* a pool node, STACK_EMPTY or STACK_BOTTOM */
};

/* A set of configurations whose top state reads bytes, and whether the
 * text may end here (a stack emptied) or the precomputed state's rule was
 * left (STACK_BOTTOM reached). */
struct stack_set {
    struct config *v;
    int n, cap;
    uint8_t end, leave;
};

/* Dedup of the configurations an expansion visits. */
struct config_seen {
    uint64_t *key;
    uint32_t *stamp;
    int cap; /* a power of two */
    int n;
    uint32_t now;
};

void stack_pool_init(struct stack_pool *p);
void stack_pool_free(struct stack_pool *p);
int32_t stack_node(struct stack_pool *p, int32_t state, int32_t parent);
void stack_pool_truncate(struct stack_pool *p, int n);

void stack_set_free(struct stack_set *s);
static inline void stack_set_clear(struct stack_set *s) { s->n = 0, s->end = 0, s->leave = 0; }
void stack_set_copy(struct stack_set *dst, const struct stack_set *src);

void config_seen_free(struct config_seen *s);
/* Starts a new set (forgets every visit). */
void config_seen_reset(struct config_seen *s);

/* Adds c's closure to out: the configurations reached by calls (pushes) and
 * returns (pops) without reading a byte, keeping those that can read one.
 * Configurations visited since the last config_seen_reset are skipped. */
void stack_expand(struct stack_pool *p, const struct grammar *g, struct config c, struct stack_set *out,
                  struct config_seen *seen);
/* out = in after reading byte b; returns out->n || out->end || out->leave. */
int stack_step(struct stack_pool *p, const struct grammar *g, const struct stack_set *in, unsigned char b,
               struct stack_set *out, struct config_seen *seen);

#endif
