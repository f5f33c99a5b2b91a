/* The engine's state, shared by engine.c (thread, queue, steps) and
 * live_request.c (requests inside the engine: validation, choices, events). */
#ifndef INFER_ENGINE_ENGINE_INTERNAL_H
#define INFER_ENGINE_ENGINE_INTERNAL_H

#include <pthread.h>

#include "engine/engine.h"
#include "engine/stop_text.h"
#include "runner/runner.h"
#include "sched/scheduler.h"

/* A submitted request while the engine holds it: its n choices (one
 * sequence each) and what they borrow from it. */
struct live_request {
    long id;
    void *user;
    int n;
    int32_t *prompt;
    int n_prompt;
    int32_t *forced;
    int n_forced;
    char **stop;
    int n_stop;
    struct logit_bias *bias;
    struct sequence *seqs;   /* [n]; choices 1.. fork from seqs[0] */
    struct stop_text *texts; /* [n] */
    struct grammar_ref *grammar;       /* a reference of the request's, or NULL */
    struct grammar_matcher **matchers; /* [n] each choice's position in it */
    int n_finished;
    int no_speculation;
    double submitted_at, scheduled_at; /* clock_now(): engine_submit, the first step that ran it (0 before) */
    struct live_request *next;
};

struct engine {
    struct model *m;
    const struct tokenizer *tok;
    struct engine_opts o;
    engine_event_fn on_event;
    void *ctx;
    /* the engine thread's */
    struct runner runner;
    struct block_pool pool;
    struct scheduler sched;
    struct step_seq *work;       /* [max_seqs] the step's entries */
    struct sequence **seqs;      /* [max_seqs] their sequences */
    struct sample_result *drawn; /* [max_draws] the step's draws */
    struct spec_proposer *spec;  /* NULL: no speculation */
    struct spec_seq *spec_seqs;  /* [max_seqs] the prepare hook's */
    int *spec_max_k;
    uint32_t *masks;             /* [max_seqs * mask_words]: the grammar masks of the step's draws */
    int mask_words;              /* ceil(vocab / 32) */
    int n_work;                  /* the step's entries in work (engine_assign_masks) */
    int *mask_rows, n_mask_rows; /* [max_seqs]: the entries with a mask this step */
    struct threadpool *mask_pool; /* writes a step's masks in parallel; made at the first step with two */
    double mask_s;                /* seconds in engine_write_masks (copied to stats after each step) */
    struct live_request *live;
    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct live_request *pending, *pending_tail;
    long *aborts;
    int n_aborts, cap_aborts;
    int shutdown;
    long next_id;
    long next_seq_id; /* every choice of every request its own (the proposer keys on it) */
    struct engine_stats stats;
    pthread_t thread;
};

/* A validated copy of req as a request of choices (not yet scheduled), or
 * NULL with e naming the field. */
struct live_request *live_request_new(struct engine *eng, const struct engine_request *req, struct err *e);
void live_request_free(struct live_request *lr);

/* How many of proposed[0, k) the grammar takes, in order: up to the first
 * it refuses, and none past the one that completes it (m is left as it
 * was). */
struct grammar_matcher;
int engine_grammar_prefix(struct grammar_matcher *m, const int32_t *proposed, int k);
/* Before a step: the drawing entries that decode under a grammar get
 * their mask's slot (sample.mask), not yet written. */
void engine_assign_masks(struct engine *eng, int n);
/* The runner's write_masks hook: writes the assigned masks of the step
 * that engine_assign_masks last prepared. */
void engine_write_masks(void *eng);

/* The scheduler's on_token hook: the grammar, text, stop strings, the event. */
int engine_on_token(void *ctx, struct sequence *seq, const struct sample_result *res, int finish);

/* The logits event of a return_logits sequence's step. */
void engine_emit_logits(struct engine *eng, const struct sequence *seq, const float *logits, int n_rows,
                        int first_position);

/* Ends every unfinished choice of lr as aborted, with its last event. */
void live_request_abort(struct engine *eng, struct live_request *lr);

#endif
