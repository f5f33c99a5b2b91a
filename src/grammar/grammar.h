/* The grammar engine: constrained decoding's token masks.
 *
 * Three objects, each built once and shared read-only:
 * - struct grammar: a grammar IR (ir.h) compiled into one DFA per rule
 *   over byte classes, with call edges for the rules that stay rules
 *   (recursive or large ones; the others are inlined), checked for
 *   undefined and left-recursive rules;
 * - struct grammar_vocab: a model's tokens as the byte strings they add to
 *   the text, in a trie, with the special tokens (never allowed) and the
 *   EOS tokens (allowed where the grammar may end);
 * - struct grammar_tokens: a grammar bound to a vocabulary: for every DFA
 *   state a token can start in, the tokens it accepts and rejects whatever
 *   the stack below holds, and the few that depend on it (those that leave
 *   the state's rule partway), precomputed.
 * A struct grammar_matcher is one request's position: a set of stacks of
 * DFA states (persistent, shared, hash-consed). Its mask is the union over
 * its stacks of the precomputed accepts plus the stack-dependent tokens
 * that pass a walk with the real stack.
 *
 * Knows nothing of devices or HTTP; tokens are bytes (vocab_tokenizer.c
 * reads them from a tokenizer). */
#ifndef INFER_GRAMMAR_GRAMMAR_H
#define INFER_GRAMMAR_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "grammar/ir.h"

struct grammar;
struct grammar_vocab;
struct grammar_tokens;
struct grammar_matcher;

/* Limits that bound compile time and memory; a grammar past one is refused
 * with an error saying which. */
enum {
    GRAMMAR_MAX_STATES = 1 << 18,  /* DFA states in all */
    GRAMMAR_MAX_NFA = 1 << 22,     /* NFA states while compiling one rule */
    GRAMMAR_INLINE_MAX = 4096,     /* NFA states of a rule inlined into its callers */
};

struct grammar *grammar_compile(const struct gir *g, struct err *e);
void grammar_free(struct grammar *g);
/* Statistics, for logs and tests. */
int grammar_n_states(const struct grammar *g);
int grammar_n_rules(const struct grammar *g); /* rules that stayed rules */

/* bytes[i] / lens[i]: token i's bytes; special[i]: never allowed (may be
 * NULL); eos: the ids that end the text. Copies what it needs. */
struct grammar_vocab *grammar_vocab_new(int n_tokens, const char *const *bytes, const size_t *lens,
                                        const uint8_t *special, const int32_t *eos, int n_eos);
/* The same from a tokenizer (vocab_tokenizer.c): n_vocab ids, the model's
 * rows (ids past the tokenizer's never match; the tokenizer's past n_vocab
 * are left out, the model cannot draw them). */
struct tokenizer;
struct grammar_vocab *grammar_vocab_from_tokenizer(const struct tokenizer *tok, int n_vocab, const int32_t *eos,
                                                   int n_eos);
void grammar_vocab_free(struct grammar_vocab *v);
int grammar_vocab_size(const struct grammar_vocab *v);
/* 32-bit words of a mask over v's tokens (bit i of word i / 32: token i). */
int grammar_mask_words(const struct grammar_vocab *v);

/* Binds g and v (both must outlive the result): precomputes every state's
 * token classes. Fails only on a limit (e.g. memory), naming it. */
struct grammar_tokens *grammar_tokens_new(const struct grammar *g, const struct grammar_vocab *v, struct err *e);
void grammar_tokens_free(struct grammar_tokens *t);
const struct grammar_vocab *grammar_tokens_vocab(const struct grammar_tokens *t);

struct grammar_matcher *grammar_matcher_new(const struct grammar_tokens *t);
void grammar_matcher_free(struct grammar_matcher *m);
/* The tokens allowed next into mask[grammar_mask_words]. */
void grammar_matcher_fill_mask(struct grammar_matcher *m, uint32_t *mask);
/* Consumes token: 0, or -1 (nothing changes) when the grammar does not
 * allow it here. An EOS token is allowed where the grammar may end, and
 * ends it. */
int grammar_matcher_accept(struct grammar_matcher *m, int32_t token);
/* Consumes bytes directly (a forced prefix, tests): 0 or -1 as above. */
int grammar_matcher_accept_bytes(struct grammar_matcher *m, const char *s, size_t n);
/* Whether the text so far is complete (EOS allowed now). */
int grammar_matcher_can_end(const struct grammar_matcher *m);
/* Whether nothing but the end can follow (or the end was consumed): the
 * request is done. */
int grammar_matcher_done(const struct grammar_matcher *m);
/* Undoes the last n accepted tokens (n <= tokens accepted). */
void grammar_matcher_rollback(struct grammar_matcher *m, int n);
int grammar_matcher_n_accepted(const struct grammar_matcher *m);

#endif
