/* Drives the scheduler over a CPU model for the tests: plan, build, forward,
 * commit, with the scheduler's integrity check after every step. */
#ifndef INFER_TESTS_SCHED_HARNESS_H
#define INFER_TESTS_SCHED_HARNESS_H

#include "engine/scheduler.h"
#include "engine/step_builder.h"
#include "engine/step_sample.h"
#include "model/forward.h"

enum { HARNESS_BS = 16 };

struct harness {
    struct model *m; /* borrowed */
    struct kv_store kv;
    struct block_pool pool;
    struct forward_ws ws;
    struct step_builder sb;
    struct scheduler s;
    struct step_seq *q;
    struct request **rq;
    struct step_sampler sampler;
    struct sample_result *drawn; /* [max_seqs] */
    int n_blocks;
    long steps;
};

void harness_init(struct harness *h, struct model *m, int n_blocks, int budget, int max_seqs, int prefix_cache);
/* One step; returns 0 when there was nothing to run. */
int harness_step(struct harness *h);
/* Steps until the scheduler is idle. */
void harness_run(struct harness *h);
/* Checks that every block is free or cached, then frees. */
void harness_free(struct harness *h);

/* The greedy tokens of prompt alone (seq_runner), malloc'ed; *n set. */
int32_t *alone_greedy(struct model *m, const int32_t *prompt, int n_prompt, int max_tokens, int *n,
                      enum finish_reason *finish);

#endif
