/* Greedy generation of one sequence (the pre-engine path of `infer
 * generate`): prefill the prompt, then append the argmax token until an eos
 * id, max_tokens or the context limit. */
#ifndef INFER_ENGINE_GREEDY_H
#define INFER_ENGINE_GREEDY_H

#include "engine/seq_runner.h"

/* LENGTH: max_tokens or the context ran out; STOP: an eos id or a stop
 * string; ABORT: the caller cancelled the request. */
enum finish_reason { FINISH_REASON_LENGTH, FINISH_REASON_STOP, FINISH_REASON_ABORT };

struct greedy_result {
    int32_t *ids; /* [n_ids] generated tokens (an eos that stopped it included); caller frees */
    int n_ids;
    enum finish_reason finish;
    double prefill_seconds;
    double decode_seconds; /* for tokens after the first */
};

int greedy_generate(struct seq_runner *r, const int32_t *prompt, int n_prompt, int max_tokens,
                    int ignore_eos, struct greedy_result *out, struct err *e);

const char *finish_reason_name(enum finish_reason f);

/* Whether id is one of the n end-of-sequence ids. */
static inline int token_is_eos(const int32_t *eos_ids, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (eos_ids[i] == id)
            return 1;
    return 0;
}

#endif
