/* Draft-model proposals (--speculative draft --speculative-model PATH): a
 * smaller model of the same vocabulary, loaded beside the target on a
 * backend of its own of the same kind (threads, device: a backend holds one
 * sampler), runs ahead of each sequence for k tokens and proposes them.
 * It has its own step runner, KV pool and block tables (sized like the
 * target's), so its steps batch every sequence being speculated: before a
 * step is planned (prepare) one draft step feeds each sequence what the
 * draft has not seen yet (a new one's prompt, the tokens the target kept
 * and drew) and draws its first proposal, then each further draft step
 * feeds every sequence its last proposal and draws the next. Its draws use
 * the sequence's own sampling and noise (the RNG step of the output token
 * it proposes), so a draft that agrees with the target proposes the very
 * token the target will draw.
 *
 * The draft's KV of a sequence stays valid up to where its tokens and the
 * sequence's agree: nothing is rolled back, positions past that are simply
 * written again. A sequence whose draft blocks do not fit gets no
 * proposals until some are free. One rank only (no tensor parallelism). */
#ifndef INFER_ENGINE_SPEC_DRAFT_H
#define INFER_ENGINE_SPEC_DRAFT_H

#include "core/error.h"
#include "model/model.h"
#include "runner/graph_opts.h"
#include "spec/proposer.h"

struct spec_draft_opts {
    const char *path;       /* the draft's checkpoint directory or .gguf file */
    int max_seqs, max_tokens; /* the target's step limits */
    int max_context;
    int block_size;
    int kv_blocks;          /* its KV pool (block 0 included), at most */
    double gpu_memory_utilization;
    struct graph_opts graph; /* decode graphs on a device: the draft's steps after the first are all decode */
};

/* Loads the draft beside target; NULL with e set when it cannot
 * load or its vocabulary differs from target's. */
struct spec_proposer *spec_draft_create(const struct model *target, const struct spec_draft_opts *o, struct err *e);

/* Its draft steps and the tokens they fed, so far. */
struct spec_draft_stats {
    long steps, tokens;
};
void spec_draft_stats(const struct spec_proposer *p, struct spec_draft_stats *st);

#endif
