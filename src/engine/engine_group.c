/* Requests inside the engine: validation of what callers submit, the n
 * choices of one request, and the events each drawn token produces. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/clock.h"
#include "engine/engine_internal.h"

enum { MAX_CHOICES = 128, MAX_STOPS = 16 };

static int validate(const struct engine *eng, const struct engine_request *rq, struct err *e)
{
    const int vocab = eng->m->cfg.vocab_size;
    if (rq->n_prompt < 1)
        return err_set(e, "prompt: the prompt has no tokens");
    for (int i = 0; i < rq->n_prompt; i++)
        if (rq->prompt[i] < 0 || rq->prompt[i] >= vocab)
            return err_set(e, "prompt: token %d at index %d is outside the vocabulary (0..%d)", rq->prompt[i], i,
                           vocab - 1);
    if (rq->n_prompt >= eng->o.max_context)
        return err_set(e, "prompt: %d tokens leave no room to generate in the context of %d", rq->n_prompt,
                       eng->o.max_context);
    if (rq->max_tokens < 1)
        return err_set(e, "max_tokens must be >= 1, got %d", rq->max_tokens);
    if (rq->n < 1 || rq->n > MAX_CHOICES)
        return err_set(e, "n must be in [1, %d], got %d", MAX_CHOICES, rq->n);
    if (sampling_params_check(&rq->sampling, vocab, e))
        return -1;
    if (rq->n_stop > 0 && !eng->tok)
        return err_set(e, "stop: stop strings need the model's tokenizer (tokenizer.json)");
    if (rq->n_stop < 0 || rq->n_stop > MAX_STOPS)
        return err_set(e, "stop: at most %d stop strings, got %d", MAX_STOPS, rq->n_stop);
    for (int i = 0; i < rq->n_stop; i++)
        if (!rq->stop[i] || !rq->stop[i][0])
            return err_set(e, "stop: stop string %d is empty", i);
    return 0;
}

struct engine_group *engine_group_new(struct engine *eng, const struct engine_request *rq, struct err *e)
{
    if (validate(eng, rq, e))
        return NULL;
    struct engine_group *g = xcalloc(1, sizeof *g);
    g->user = rq->user;
    g->submitted_at = clock_now();
    g->n = rq->n;
    g->n_prompt = rq->n_prompt;
    g->prompt = xmalloc((size_t)rq->n_prompt * sizeof(int32_t));
    memcpy(g->prompt, rq->prompt, (size_t)rq->n_prompt * sizeof(int32_t));
    g->n_stop = rq->n_stop;
    g->stop = xcalloc((size_t)(rq->n_stop > 0 ? rq->n_stop : 1), sizeof(char *));
    for (int i = 0; i < rq->n_stop; i++)
        g->stop[i] = xstrdup(rq->stop[i]);
    struct sampling_params sp = rq->sampling;
    if (sp.n_bias > 0) {
        g->bias = xmalloc((size_t)sp.n_bias * sizeof *g->bias);
        memcpy(g->bias, sp.bias, (size_t)sp.n_bias * sizeof *g->bias);
        sp.bias = g->bias;
    }
    int room = eng->o.max_context - rq->n_prompt;
    g->reqs = xcalloc((size_t)g->n, sizeof *g->reqs);
    g->texts = xcalloc((size_t)g->n, sizeof *g->texts);
    for (int i = 0; i < g->n; i++) {
        g->reqs[i] = (struct request){.prompt = g->prompt, .n_prompt = g->n_prompt,
                                      .max_tokens = rq->max_tokens < room ? rq->max_tokens : room,
                                      .sampling = sp, .ignore_eos = rq->ignore_eos, .choice = i,
                                      .fork_parent = i ? &g->reqs[0] : NULL, .user = g};
        stop_text_init(&g->texts[i], eng->tok, g->stop, g->n_stop);
    }
    return g;
}

void engine_group_free(struct engine_group *g)
{
    for (int i = 0; i < g->n; i++) {
        request_free(&g->reqs[i]);
        stop_text_free(&g->texts[i]);
    }
    for (int i = 0; i < g->n_stop; i++)
        free(g->stop[i]);
    free(g->stop);
    free(g->bias);
    free(g->prompt);
    free(g->reqs);
    free(g->texts);
    free(g);
}

static void emit(struct engine *eng, struct engine_group *g, const struct request *r, const struct sample_result *res,
                 size_t text_from, int finish)
{
    const struct stop_text *st = &g->texts[r->choice];
    struct engine_event ev = {.request_id = g->id, .user = g->user, .choice = r->choice, .has_token = res != NULL,
                              .sample = res, .finished = finish >= 0,
                              .finish = finish >= 0 ? (enum finish_reason)finish : FINISH_REASON_LENGTH,
                              .prompt_tokens = r->n_prompt, .completion_tokens = r->n_out,
                              .queued_seconds = g->scheduled_at > 0 ? g->scheduled_at - g->submitted_at : 0};
    if (eng->tok) {
        ev.text = st->text + text_from;
        ev.text_len = st->sent - text_from;
    }
    if (ev.finished) {
        if (eng->tok)
            ev.full_text = stop_text_final(st, &ev.full_text_len);
        ev.ids = r->out;
        g->n_finished++;
    }
    eng->on_event(eng->ctx, &ev);
}

int engine_on_token(void *ctx, struct request *r, const struct sample_result *res, int finish)
{
    struct engine *eng = ctx;
    struct engine_group *g = r->user;
    struct stop_text *st = &g->texts[r->choice];
    const size_t from = st->sent; /* the delta is text[from, sent) once settled */
    const char *d;
    size_t dl;
    struct err e = {{0}};
    int rc = stop_text_push(st, res->token, &d, &dl, &e);
    if (rc == 0 && finish >= 0)
        rc = stop_text_finish(st, &d, &dl, &e);
    if (rc < 0) {
        log_error("request %ld: detokenizing failed (%s); the choice ends", g->id, e.msg);
        finish = FINISH_REASON_ABORT;
    } else if (rc == 1) {
        finish = FINISH_REASON_STOP;
    }
    emit(eng, g, r, res, from, finish);
    return finish;
}

void engine_group_abort(struct engine *eng, struct engine_group *g)
{
    for (int i = 0; i < g->n; i++) {
        struct request *r = &g->reqs[i];
        if (r->state == REQUEST_FINISHED)
            continue;
        scheduler_abort(&eng->s, r);
        emit(eng, g, r, NULL, g->texts[i].sent, FINISH_REASON_ABORT);
    }
}
