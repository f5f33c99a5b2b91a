/* Prompt lookup (n-gram) proposals: the sequence's last n tokens, found
 * again earlier in its prompt or output, propose the tokens that followed
 * them there. The longest n in [n_min, n_max] that matches wins; among
 * matches of that length the most recent one (nearest the end: the text
 * being quoted or edited now). Past the known tokens the continuation
 * repeats (a match p tokens before the end proposes the last p tokens over
 * and over: a loop). No state: each proposal reads the tokens
 * afresh (a backward scan, O(known tokens x n_max) at worst). */
#ifndef INFER_SPEC_NGRAM_H
#define INFER_SPEC_NGRAM_H

#include "core/error.h"
#include "spec/proposer.h"

struct spec_ngram_opts {
    int n_min, n_max; /* the n-gram lengths tried, 1 <= n_min <= n_max */
};

/* The defaults: n from 2 to 4 tokens. */
struct spec_ngram_opts spec_ngram_opts_default(void);

/* NULL with e set when the lengths are out of range. */
struct spec_proposer *spec_ngram_create(const struct spec_ngram_opts *o, struct err *e);

/* The match itself, for tests and other proposers: the position after the
 * most recent earlier occurrence of the longest matching suffix of
 * tokens[0, n) (length in [n_min, n_max], written to *len), or -1. */
int spec_ngram_match(const int32_t *tokens, int n, int n_min, int n_max, int *len);

#endif
