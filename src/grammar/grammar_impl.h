/* The compiled grammar and its token tables, shared by the compiler, the
 * token precomputation and the matcher (grammar.h is the interface). */
#ifndef INFER_GRAMMAR_GRAMMAR_IMPL_H
#define INFER_GRAMMAR_GRAMMAR_IMPL_H

#include <stdint.h>

#include "grammar/grammar.h"

enum {
    GS_FINAL = 1, /* the state may end its rule */
    GS_BYTES = 2, /* it has a byte edge */
    GS_CALLS = 4, /* it has call edges */
    GS_TAIL = 8,  /* final with no edges: a call returning here needs no frame */
};

struct gcall {
    int32_t rule; /* the called rule (compiled index) */
    int32_t ret;  /* the caller's state once it returns */
};

struct grammar {
    int n_states, n_classes, n_rules;
    uint8_t cls[256];        /* byte -> class */
    int32_t *next;           /* [n_states * n_classes]: the state after a byte, -1 dead */
    uint8_t *flags;          /* [n_states] GS_* */
    int32_t *call_off;       /* [n_states + 1]: state s's calls are calls[call_off[s] .. call_off[s + 1]) */
    struct gcall *calls;
    int32_t *state_rule;     /* [n_states] */
    int32_t *rule_start;     /* [n_rules] */
    char **rule_name;        /* [n_rules] */
    struct byteset *follow;  /* [n_rules]: bytes that may come right after the rule, in any context */
    int root;                /* compiled index of the start rule */
};

static inline int32_t grammar_next(const struct grammar *g, int32_t s, unsigned char b)
{
    return g->next[(size_t)s * (size_t)g->n_classes + g->cls[b]];
}

/* A token's class at a state (grammar_tokens). */
enum { TOK_REJECT = 0, TOK_ACCEPT = 1, TOK_DEPENDS = 2 };

/* A token that leaves its state's rule with bytes left: at mask time the
 * rest, token bytes [off..), is read from the real stack's caller. */
struct token_rest {
    int32_t token;
    uint16_t off;
};

/* One state's precomputed tokens: the accepted ones as a list (few) or as
 * the complement of a rejected list (many), and the rests of those that
 * depend on the stack below, sorted by their bytes (a walk shares
 * prefixes; equal rests are checked once). */
struct state_tokens {
    int complement; /* list holds the rejected ones; every other non-special token is accepted */
    int32_t *list;
    int n_list;
    struct token_rest *rests;
    int n_rests;
};

enum { GRAMMAR_MAX_TOKEN_BYTES = 1024 }; /* longer tokens are never allowed */

/* A token set precomputed per vocabulary (slice.c). */
struct vocab_slice {
    struct grammar *dfa; /* one rule: its class, repeated */
    uint32_t *tokens;    /* [words]: tokens made of whole characters of the class */
    int n_tokens;
    uint8_t *outside;    /* [n_nodes]: the trie node's subtree holds a token outside the slice */
};

enum { VOCAB_SLICES = 2 };

struct grammar_vocab {
    int n;
    char **bytes;
    uint32_t *len;
    uint8_t *special;
    uint8_t *is_eos;
    int32_t *eos;
    int n_eos;
    int words;
    uint32_t *allowed; /* [words]: tokens a grammar may ever allow (non-special, non-empty) */
    /* the trie, in preorder: node i's byte, its depth (1 for a first
     * byte), the token it ends (-1 none) and where its subtree ends */
    int n_nodes;
    uint8_t *node_byte;
    uint16_t *node_depth;
    int32_t *node_token;
    int32_t *node_end;
    int32_t root_child[256]; /* the node of each first byte, -1 none */
    int max_depth;
    int32_t *dup_next; /* [n]: the next token with the same bytes, -1 none */
    int32_t *sorted; /* token ids in byte order (the trie's tokens) */
    int n_sorted;
    struct vocab_slice slices[VOCAB_SLICES];
    int n_slices;
};

void vocab_slices_build(struct grammar_vocab *v);
void vocab_slices_free(struct grammar_vocab *v);
int vocab_slice_contains(const struct vocab_slice *sl, const struct grammar *g, int32_t s);

struct grammar_tokens {
    const struct grammar *g;
    const struct grammar_vocab *v;
    struct state_tokens *states; /* [g->n_states] */
    void *block;                 /* every state's rests, then lists (tokens.c: pack) */
};

#endif
