/* Suffix decoding proposals (arXiv 2411.04975, vLLM's and Arctic
 * Inference's "suffix"): the sequence's recent tokens are matched in two
 * indexes, its own prompt and output (spec/suffix_index.h, one per
 * sequence) and the outputs of the server's finished requests (one shared,
 * of bounded size, least recently used out first); the match proposes the
 * continuation most of its occurrences share, token by token, while the
 * share of occurrences that agree (the estimated chance that the whole
 * proposal so far is right) stays at or above min_prob, and never more
 * tokens than spec_factor x the match's length.
 *
 * Every match length from max_depth down to 2 is tried: a long match has
 * few occurrences (a sharp estimate, a long proposal allowed), a short one
 * many. The proposal with the highest expected number of kept tokens (the
 * sum of those chances) wins, from either index. */
#ifndef INFER_SPEC_SUFFIX_H
#define INFER_SPEC_SUFFIX_H

#include <stdint.h>

#include "core/error.h"
#include "spec/proposer.h"

struct spec_suffix_opts {
    int max_depth;        /* the longest match looked for, 2..64 */
    float spec_factor;    /* a proposal is at most spec_factor x its match's length, > 0 */
    float min_prob;       /* the least estimated chance a proposal is kept, in [0, 1] */
    int cache_tokens;     /* the shared index's size in tokens, rounded up to a power of two (0: none; else 64..2^30) */
};

/* The defaults: depth 24, factor 1, 0.1, a million tokens shared (about
 * 20 MB). */
struct spec_suffix_opts spec_suffix_opts_default(void);

/* NULL with e set when an option is out of range. */
struct spec_proposer *spec_suffix_create(const struct spec_suffix_opts *o, struct err *e);

/* What the shared index holds: finished sequences, their tokens (each
 * with its separator), and the times a least recently used sequence was
 * moved up instead of dropped. */
struct spec_suffix_stats {
    long cached_seqs;
    int64_t cached_tokens;
    long requeued;
};
void spec_suffix_stats(const struct spec_proposer *p, struct spec_suffix_stats *st);

#endif
