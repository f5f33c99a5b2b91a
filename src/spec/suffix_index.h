/* The token store under suffix decoding (spec/suffix.h): tokens by
 * position, and for every position a link to the previous one that ends
 * the same two tokens, so the earlier occurrences of any bigram come out
 * newest first at O(1) each. Each occurrence found is then matched back
 * against the query, token by token, to its full length.
 *
 * Positions only grow. A per-request index doubles when full; a shared
 * one is a ring of fixed capacity whose owner drops the oldest positions
 * to make room (links into dropped positions end the walk). SUFFIX_SEP
 * between the sequences of a shared index stops every match and every
 * continuation. */
#ifndef INFER_SPEC_SUFFIX_INDEX_H
#define INFER_SPEC_SUFFIX_INDEX_H

#include <stdint.h>

#define SUFFIX_SEP (-1)

struct suffix_index {
    int32_t *tok;        /* [cap]: position p at p & (cap - 1) */
    int64_t *prev;       /* [cap]: the previous position ending the same bigram (maybe another's: hashed), or -1 */
    int64_t *head;       /* [cap]: per bigram hash, the newest position ending it, or -1 */
    int64_t begin, end;  /* the live positions */
    int64_t cap;         /* a power of two */
    int grow;
};

/* An occurrence: the query's last len tokens end at pos; what followed
 * starts at pos + 1. */
struct suffix_match {
    int64_t pos;
    int len;
};

/* cap: rounded up to a power of two (at least 16). grow: double when
 * full instead of being a ring. */
void suffix_index_init(struct suffix_index *ix, int64_t cap, int grow);
void suffix_index_free(struct suffix_index *ix);

/* Appends t (a token id, or SUFFIX_SEP). A ring must have room. */
void suffix_index_push(struct suffix_index *ix, int32_t t);

/* Forgets the oldest n positions. */
void suffix_index_drop(struct suffix_index *ix, int64_t n);

static inline int32_t suffix_index_at(const struct suffix_index *ix, int64_t p)
{
    return ix->tok[p & (ix->cap - 1)];
}

/* The token at p if p is live and no separator, else SUFFIX_SEP. */
static inline int32_t suffix_index_token(const struct suffix_index *ix, int64_t p)
{
    return p >= ix->begin && p < ix->end ? suffix_index_at(ix, p) : SUFFIX_SEP;
}

/* Up to max occurrences of q's last two tokens (q has nq >= 2 ids), the
 * newest first but never one ending at the index's last position (nothing
 * follows it yet), each matched back up to max_len tokens; sorted by
 * length, longest first, newest first among equals. Returns how many. */
int suffix_index_find(const struct suffix_index *ix, const int32_t *q, int nq, int max_len, struct suffix_match *m,
                      int max);

#endif
