#include "engine/greedy.h"

#include <string.h>

#include "core/clock.h"

const char *finish_reason_name(enum finish_reason f)
{
    return f == FINISH_REASON_STOP ? "stop" : f == FINISH_REASON_ABORT ? "abort" : "length";
}

int greedy_generate(struct seq_runner *r, const int32_t *prompt, int n_prompt, int max_tokens,
                    int ignore_eos, struct greedy_result *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    const struct model_config *c = &r->m->cfg;
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            return err_set(e, "prompt token %d at index %d is outside the vocabulary (0..%d)", prompt[i],
                           i, c->vocab_size - 1);
    if (n_prompt + max_tokens - 1 > r->max_context)
        return err_set(e, "prompt of %d tokens + %d new tokens exceeds the context of %d", n_prompt,
                       max_tokens, r->max_context);
    out->ids = xmalloc((size_t)(max_tokens > 0 ? max_tokens : 1) * sizeof(int32_t));
    out->finish = FINISH_REASON_LENGTH;
    double t0 = clock_now();
    int32_t next;
    if (seq_runner_feed(r, prompt, n_prompt, 0, NULL, &next, e))
        return -1;
    double t1 = clock_now();
    out->prefill_seconds = t1 - t0;
    while (out->n_ids < max_tokens) {
        out->ids[out->n_ids++] = next;
        if (!ignore_eos && token_is_eos(c->eos_ids, c->n_eos, next)) {
            out->finish = FINISH_REASON_STOP;
            break;
        }
        if (out->n_ids == max_tokens)
            break;
        if (seq_runner_feed(r, &next, 1, 0, NULL, &next, e))
            return -1;
    }
    out->decode_seconds = clock_now() - t1;
    return 0;
}
