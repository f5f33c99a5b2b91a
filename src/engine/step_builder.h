/* The step builder: packs the work of one engine step (every sequence's new
 * tokens: decode steps and prefill chunks alike) into the flat forward batch
 * of ARCHITECTURE.md section 2.3, in fixed host staging arrays sized once,
 * so that the runner (and later a captured graph) consumes one structure. */
#ifndef INFER_ENGINE_STEP_BUILDER_H
#define INFER_ENGINE_STEP_BUILDER_H

#include "backend/ops.h"
#include "kvcache/seq_blocks.h"

/* One sequence's share of a step. */
struct step_seq {
    const struct seq_blocks *blocks; /* must already cover start_pos + n_tokens positions */
    const int32_t *tokens;           /* tokens fed this step */
    int n_tokens;
    int start_pos;   /* position of tokens[0] (= tokens already in the cache) */
    int want_logits; /* logits for the last token fed */
};

struct step_builder {
    struct meta_caps caps;
    int block_size;
    int32_t *token_ids, *positions, *slots, *seq_of; /* [max_tokens] */
    int32_t *query_start;                           /* [max_seqs + 1] */
    int32_t *kv_len;                                /* [max_seqs] */
    int32_t *block_tables;                          /* [max_seqs, max_blocks_per_seq] */
    int32_t *logit_rows;                            /* [max_logits] */
};

void step_builder_init(struct step_builder *sb, const struct meta_caps *caps, int block_size);
void step_builder_free(struct step_builder *sb);

/* Fills *b (pointing into sb's arrays). Fails, naming the limit, when the
 * step exceeds the capacities. Logit row i belongs to the i-th sequence
 * that wants logits. */
int step_build(struct step_builder *sb, const struct step_seq *seqs, int n_seqs, struct fwd_batch *b,
               struct err *e);

#endif
