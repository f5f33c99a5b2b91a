/* The engine's state, shared by engine.c (thread, queue, lifecycle) and
 * engine_group.c (requests: validation, choices, events). */
#ifndef INFER_ENGINE_ENGINE_INTERNAL_H
#define INFER_ENGINE_ENGINE_INTERNAL_H

#include <pthread.h>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "engine/step_builder.h"
#include "engine/step_sample.h"
#include "engine/stop_text.h"
#include "model/forward.h"

/* One submitted request: its n choices and what they borrow from it. */
struct engine_group {
    long id;
    void *user;
    int n;
    int32_t *prompt;
    int n_prompt;
    char **stop;
    int n_stop;
    struct logit_bias *bias;
    struct request *reqs;    /* [n]; choices 1.. fork from reqs[0] */
    struct stop_text *texts; /* [n] */
    int n_finished;
    double submitted_at, scheduled_at; /* clock_now(): engine_submit, the first step that ran it (0 before) */
    struct engine_group *next;
};

struct engine {
    struct model *m;
    const struct tokenizer *tok;
    struct engine_opts o;
    engine_event_fn on_event;
    void *ctx;
    /* the engine thread's */
    struct kv_store kv;
    struct block_pool pool;
    struct forward_ws ws;
    struct step_builder sb;
    struct scheduler s;
    struct step_seq *q;     /* [max_seqs] */
    struct request **rq;    /* [max_seqs] */
    struct step_sampler sampler;
    struct graph_runner graphs;
    struct sample_result *drawn; /* [max_seqs] a step's draws */
    struct engine_group *live;
    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct engine_group *pending, *pending_tail;
    long *aborts;
    int n_aborts, cap_aborts;
    int shutdown;
    long next_id;
    struct engine_stats stats;
    pthread_t thread;
};

/* A validated copy of rq as a group of choices (not yet scheduled), or NULL
 * with e naming the field. */
struct engine_group *engine_group_new(struct engine *eng, const struct engine_request *rq, struct err *e);
void engine_group_free(struct engine_group *g);

/* The scheduler's on_token hook: text, stop strings, the event. */
int engine_on_token(void *ctx, struct request *r, const struct sample_result *res, int finish);

/* Ends every unfinished choice of g as aborted, with its last event. */
void engine_group_abort(struct engine *eng, struct engine_group *g);

#endif
