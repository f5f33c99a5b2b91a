/* Speculative decoding's proposals (docs/architecture.md, section 6): a
 * proposer looks at one sequence's known tokens — its prompt, then its
 * output — and offers up to k tokens that may come next; the engine checks
 * them against the target model in its next step and keeps the longest
 * prefix the target itself would have produced. A proposer never changes
 * what a request outputs, only how many steps it takes.
 *
 * Each kind (prompt lookup: spec/ngram.h; suffix decoding: spec/suffix.h;
 * a draft model: engine/spec_draft.h, which runs a model) is one struct
 * spec_proposer behind these ops. */
#ifndef INFER_SPEC_PROPOSER_H
#define INFER_SPEC_PROPOSER_H

#include <stdint.h>

struct sampling_params;

/* One sequence as the proposer sees it: tokens[0, n_prompt) the prompt,
 * tokens[n_prompt, n_known) the output so far. id names the sequence for
 * proposers that keep state per sequence. A draft model draws its
 * proposals as the sequence samples (sampling; the RNG counter of its next
 * output token, step, then step + 1 ...), so that where the draft agrees
 * with the target the same noise picks the same token. */
struct spec_seq {
    long id;
    const int32_t *tokens;
    int n_prompt, n_known;
    const struct sampling_params *sampling; /* NULL: greedy */
    uint64_t step;
};

struct spec_proposer;

struct spec_proposer_ops {
    const char *name; /* "ngram", "suffix", "draft" */
    /* Before a step: every sequence that may get proposals in it, with the
     * most each may get (max_k[i]), so that proposals can be made for all
     * of them at once (a draft model's steps batch them). NULL: propose
     * works alone. */
    void (*prepare)(struct spec_proposer *p, const struct spec_seq *seqs, const int *max_k, int n);
    /* Up to max_k tokens likely to follow s's known ones into out; returns
     * how many (0: none worth checking). */
    int (*propose)(struct spec_proposer *p, const struct spec_seq *s, int max_k, int32_t *out);
    /* s has finished: whatever the proposer keeps for it is dropped (or
     * kept for other sequences). NULL: nothing kept. */
    void (*finish)(struct spec_proposer *p, const struct spec_seq *s);
    void (*free)(struct spec_proposer *p);
};

struct spec_proposer {
    const struct spec_proposer_ops *ops;
};

static inline int spec_propose(struct spec_proposer *p, const struct spec_seq *s, int max_k, int32_t *out)
{
    return max_k > 0 ? p->ops->propose(p, s, max_k, out) : 0;
}

static inline void spec_prepare(struct spec_proposer *p, const struct spec_seq *seqs, const int *max_k, int n)
{
    if (p->ops->prepare && n > 0)
        p->ops->prepare(p, seqs, max_k, n);
}

static inline void spec_finish(struct spec_proposer *p, const struct spec_seq *s)
{
    if (p->ops->finish)
        p->ops->finish(p, s);
}

static inline void spec_free(struct spec_proposer *p)
{
    if (p)
        p->ops->free(p);
}

#endif
