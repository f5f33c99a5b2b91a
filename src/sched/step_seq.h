/* One sequence's share of an engine step: what the scheduler plans and the
 * runner (src/runner) runs. Decode rows and prefill chunks alike are a run
 * of new tokens at the sequence's next positions. */
#ifndef INFER_SCHED_STEP_SEQ_H
#define INFER_SCHED_STEP_SEQ_H

#include <stdint.h>

#include "kvcache/seq_blocks.h"
#include "sampling/sampling.h"

struct step_seq {
    const struct seq_blocks *blocks; /* must already cover start_pos + n_tokens positions */
    const int32_t *tokens;           /* tokens fed this step */
    int n_tokens;
    int start_pos;              /* position of tokens[0] (= tokens already in the cache) */
    int draw;                   /* the last token's logits draw the sequence's next token */
    int return_logits;          /* the logits of every token fed come back to the host */
    struct sample_input sample; /* the draw's inputs, when draw */
};

#endif
