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
    /* logit rows drawn: the last `draw` tokens' (0: none; 1: the next token;
     * 1 + k: a verify step, tokens[n_tokens - k ..] proposed, row i drawn as
     * output token n_output + i, sampling.h's sample_verify) */
    int draw;
    int return_logits;          /* the logits of every token fed come back to the host */
    struct sample_input sample; /* the draw's inputs, when draw */
};

#endif
