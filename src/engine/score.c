#include "engine/score.h"

#include <pthread.h>
#include <string.h>

#include "model/model.h"

/* The logits events of the one request, gathered by position. */
struct collected {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    float *rows; /* [n, vocab] */
    int n, vocab;
    int done, aborted;
};

static void on_event(void *ctx, const struct engine_event *ev)
{
    struct collected *c = ctx;
    if (ev->logits && ev->logits_from >= 0 && ev->logits_from + ev->n_logits <= c->n)
        memcpy(c->rows + (size_t)ev->logits_from * c->vocab, ev->logits,
               (size_t)ev->n_logits * c->vocab * sizeof(float));
    if (!ev->finished)
        return;
    pthread_mutex_lock(&c->mu);
    c->done = 1;
    c->aborted = ev->finish == FINISH_REASON_ABORT;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

int engine_score(struct model *m, const struct engine_opts *o, const int32_t *ids, int n, int prefill,
                 float *rows, struct err *e)
{
    if (prefill < 1 || prefill > n)
        return err_set(e, "score: %d prompt tokens of %d", prefill, n);
    if (o->max_context < n + 1)
        return err_set(e, "score: %d tokens need a context of %d, got %d", n, n + 1, o->max_context);
    struct engine_opts so = *o;
    so.return_logits = 1;
    struct collected c = {.rows = rows, .n = n, .vocab = m->cfg.vocab_size};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    struct engine *eng = engine_create(m, NULL, &so, on_event, &c, e);
    /* one free draw after the forced tokens, so that the last one is fed */
    const struct engine_request req = {.prompt = ids,
                                       .n_prompt = prefill,
                                       .max_tokens = n - prefill + 1,
                                       .n = 1,
                                       .sampling = sampling_params_default(),
                                       .forced = ids + prefill,
                                       .n_forced = n - prefill,
                                       .return_logits = 1};
    int rc = eng && engine_submit(eng, &req, e) > 0 ? 0 : -1;
    if (!rc) {
        pthread_mutex_lock(&c.mu);
        while (!c.done)
            pthread_cond_wait(&c.cv, &c.mu);
        pthread_mutex_unlock(&c.mu);
        if (c.aborted)
            rc = err_set(e, "the engine ended the sequence early (see the log above)");
    }
    engine_free(eng);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
    return rc;
}
