/* Drives the scheduler over the step runner on a CPU model for the tests,
 * as the engine thread does (plan, run, commit) but on the test's thread,
 * with the scheduler's integrity check after every step. */
#ifndef INFER_TESTS_SCHED_HARNESS_H
#define INFER_TESTS_SCHED_HARNESS_H

#include "runner/runner.h"
#include "sched/scheduler.h"
#include "spec/proposer.h"

enum { HARNESS_BS = 16 };

struct harness {
    struct model *m; /* borrowed */
    struct runner runner;
    struct block_pool pool;
    struct scheduler s;
    struct step_seq *work;
    struct sequence **seqs;
    struct sample_result *drawn; /* [max_seqs * (1 + spec_k)] */
    struct spec_proposer *spec;  /* borrowed, or NULL */
    int n_blocks;
    long steps;
};

/* n_blocks KV blocks of HARNESS_BS tokens (block 0 reserved), a step of
 * budget tokens and max_seqs sequences. */
void harness_init(struct harness *h, struct model *m, int n_blocks, int budget, int max_seqs,
                  int prefix_cache);
/* The same, decoding speculatively: spec proposes up to spec_k tokens a
 * sequence a step (the scheduler's propose hook). */
void harness_init_spec(struct harness *h, struct model *m, int n_blocks, int budget, int max_seqs,
                       int prefix_cache, struct spec_proposer *spec, int spec_k);
/* One step; returns 0 when there was nothing to run. */
int harness_step(struct harness *h);
/* Steps until the scheduler is idle. */
void harness_run(struct harness *h);
/* Checks that every block is free or cached, then frees. */
void harness_free(struct harness *h);

/* The greedy tokens of prompt run alone (a harness of one sequence),
 * malloc'ed; *n set. */
int32_t *alone_greedy(struct model *m, const int32_t *prompt, int n_prompt, int max_tokens, int *n,
                      enum finish_reason *finish);

#endif
