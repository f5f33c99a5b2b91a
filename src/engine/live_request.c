/* Requests inside the engine: validation of what callers submit, the n
 * choices of one request (a sequence each), and the events each step
 * produces for them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/threadpool.h"
#include "engine/engine_internal.h"
#include "grammar/cache.h"

enum { MAX_CHOICES = 128, MAX_STOPS = 16 };

static int validate(const struct engine *eng, const struct engine_request *req, struct err *e)
{
    const int vocab = eng->m->cfg.vocab_size;
    if (req->n_prompt < 1)
        return err_set(e, "prompt: the prompt has no tokens");
    for (int i = 0; i < req->n_prompt; i++)
        if (req->prompt[i] < 0 || req->prompt[i] >= vocab)
            return err_set(e, "prompt: token %d at index %d is outside the vocabulary (0..%d)",
                           req->prompt[i], i, vocab - 1);
    if (req->n_prompt >= eng->o.max_context)
        return err_set(e, "prompt: %d tokens leave no room to generate in the context of %d", req->n_prompt,
                       eng->o.max_context);
    if (req->max_tokens < 1)
        return err_set(e, "max_tokens must be >= 1, got %d", req->max_tokens);
    if (req->n < 1 || req->n > MAX_CHOICES)
        return err_set(e, "n must be in [1, %d], got %d", MAX_CHOICES, req->n);
    if (sampling_params_check(&req->sampling, vocab, e))
        return -1;
    if (req->n_stop > 0 && !eng->tok)
        return err_set(e, "stop: stop strings need the model's tokenizer (tokenizer.json)");
    if (req->n_stop < 0 || req->n_stop > MAX_STOPS)
        return err_set(e, "stop: at most %d stop strings, got %d", MAX_STOPS, req->n_stop);
    for (int i = 0; i < req->n_stop; i++)
        if (!req->stop[i] || !req->stop[i][0])
            return err_set(e, "stop: stop string %d is empty", i);
    if (req->n_forced < 0 || req->n_forced > req->max_tokens)
        return err_set(e, "forced: %d forced tokens for max_tokens %d", req->n_forced, req->max_tokens);
    if (req->n_forced > eng->o.max_context - req->n_prompt)
        return err_set(e, "forced: %d prompt and %d forced tokens exceed the context of %d", req->n_prompt,
                       req->n_forced, eng->o.max_context);
    for (int i = 0; i < req->n_forced; i++)
        if (req->forced[i] < 0 || req->forced[i] >= vocab)
            return err_set(e, "forced: token %d at index %d is outside the vocabulary (0..%d)",
                           req->forced[i], i, vocab - 1);
    if (req->return_logits && !eng->o.return_logits)
        return err_set(e, "return_logits: the engine was not started to return logits");
    if (req->return_logits && req->n != 1)
        return err_set(e, "return_logits: only one choice can return its logits, got n = %d", req->n);
    if (req->grammar) {
        const struct grammar_vocab *gv = grammar_tokens_vocab(grammar_ref_tokens(req->grammar));
        if (grammar_vocab_size(gv) != vocab)
            return err_set(e, "grammar: compiled for a vocabulary of %d tokens, the model has %d",
                           grammar_vocab_size(gv), vocab);
        if (req->n_forced > 0)
            return err_set(e, "grammar: forced tokens and a grammar cannot be combined");
    }
    return 0;
}

static void *copy_of(const void *src, size_t bytes)
{
    void *p = xmalloc(bytes ? bytes : 1);
    if (bytes) /* src may be NULL when there is nothing */
        memcpy(p, src, bytes);
    return p;
}

struct live_request *live_request_new(struct engine *eng, const struct engine_request *req, struct err *e)
{
    if (validate(eng, req, e))
        return NULL;
    struct live_request *lr = xcalloc(1, sizeof *lr);
    lr->user = req->user;
    lr->submitted_at = clock_now();
    lr->n = req->n;
    lr->n_prompt = req->n_prompt;
    lr->prompt = copy_of(req->prompt, (size_t)req->n_prompt * sizeof(int32_t));
    lr->n_forced = req->n_forced;
    lr->forced = copy_of(req->forced, (size_t)req->n_forced * sizeof(int32_t));
    lr->n_stop = req->n_stop;
    lr->stop = xcalloc((size_t)(req->n_stop > 0 ? req->n_stop : 1), sizeof(char *));
    for (int i = 0; i < req->n_stop; i++)
        lr->stop[i] = xstrdup(req->stop[i]);
    struct sampling_params sp = req->sampling;
    if (sp.n_bias > 0)
        sp.bias = lr->bias = copy_of(sp.bias, (size_t)sp.n_bias * sizeof *lr->bias);
    if (req->grammar) {
        grammar_ref_retain(req->grammar);
        lr->grammar = req->grammar;
        lr->matchers = xcalloc((size_t)req->n, sizeof *lr->matchers);
        for (int i = 0; i < req->n; i++)
            lr->matchers[i] = grammar_matcher_new(grammar_ref_tokens(req->grammar));
    }
    lr->no_speculation = req->no_speculation;
    const int room = eng->o.max_context - req->n_prompt;
    lr->seqs = xcalloc((size_t)lr->n, sizeof *lr->seqs);
    lr->texts = xcalloc((size_t)lr->n, sizeof *lr->texts);
    for (int i = 0; i < lr->n; i++) {
        lr->seqs[i] = (struct sequence){.prompt = lr->prompt,
                                        .n_prompt = lr->n_prompt,
                                        .max_tokens = req->max_tokens < room ? req->max_tokens : room,
                                        .sampling = sp,
                                        .ignore_eos = req->ignore_eos,
                                        .forced = lr->forced,
                                        .n_forced = lr->n_forced,
                                        .return_logits = req->return_logits,
                                        .choice = i,
                                        .fork_parent = i ? &lr->seqs[0] : NULL,
                                        .user = lr};
        stop_text_init(&lr->texts[i], eng->tok, lr->stop, lr->n_stop);
    }
    return lr;
}

void live_request_free(struct live_request *lr)
{
    for (int i = 0; i < lr->n; i++) {
        sequence_free(&lr->seqs[i]);
        stop_text_free(&lr->texts[i]);
        if (lr->matchers)
            grammar_matcher_free(lr->matchers[i]);
    }
    free(lr->matchers);
    grammar_ref_release(lr->grammar);
    for (int i = 0; i < lr->n_stop; i++)
        free(lr->stop[i]);
    free(lr->stop);
    free(lr->bias);
    free(lr->prompt);
    free(lr->forced);
    free(lr->seqs);
    free(lr->texts);
    free(lr);
}

static struct engine_event event_of(const struct live_request *lr, const struct sequence *seq)
{
    return (struct engine_event){.request_id = lr->id,
                                 .user = lr->user,
                                 .choice = seq->choice,
                                 .prompt_tokens = seq->n_prompt,
                                 .completion_tokens = seq->n_out,
                                 .queued_seconds =
                                     lr->scheduled_at > 0 ? lr->scheduled_at - lr->submitted_at : 0};
}

static void emit(struct engine *eng, struct live_request *lr, const struct sequence *seq,
                 const struct sample_result *res, size_t text_from, int finish)
{
    const struct stop_text *st = &lr->texts[seq->choice];
    struct engine_event ev = event_of(lr, seq);
    ev.has_token = res != NULL;
    ev.sample = res;
    ev.finished = finish >= 0;
    ev.finish = finish >= 0 ? (enum finish_reason)finish : FINISH_REASON_LENGTH;
    if (eng->tok) {
        ev.text = st->text + text_from;
        ev.text_len = st->sent - text_from;
    }
    if (ev.finished) {
        if (eng->tok)
            ev.full_text = stop_text_final(st, &ev.full_text_len);
        ev.ids = seq->out;
        lr->n_finished++;
    }
    eng->on_event(eng->ctx, &ev);
}

void engine_emit_logits(struct engine *eng, const struct sequence *seq, const float *logits, int n_rows,
                        int first_position)
{
    struct engine_event ev = event_of(seq->user, seq);
    ev.logits = logits;
    ev.n_logits = n_rows;
    ev.logits_from = first_position;
    eng->on_event(eng->ctx, &ev);
}

int engine_grammar_prefix(struct grammar_matcher *m, const int32_t *proposed, int k)
{
    int n = 0;
    while (n < k && !grammar_matcher_done(m) && grammar_matcher_accept(m, proposed[n]) == 0)
        n++;
    grammar_matcher_rollback(m, n);
    return n;
}

void engine_assign_masks(struct engine *eng, int n)
{
    eng->n_work = n;
    eng->n_mask_rows = 0;
    for (int i = 0, row = 0; i < n; row += eng->work[i++].draw) {
        struct step_seq *w = &eng->work[i];
        const struct live_request *lr = eng->seqs[i]->user;
        /* a mask per draw row: a verify entry's one after the other */
        w->sample.mask = w->draw && lr->matchers ? eng->masks + (size_t)row * eng->mask_words : NULL;
        if (w->sample.mask)
            eng->mask_rows[eng->n_mask_rows++] = i;
    }
}

/* The grammar's mask into mask; a dead end (a byte no token spells) allows
 * the eos, whose draw then ends the choice, refused. */
static void fill_mask(const struct engine *eng, struct grammar_matcher *m, uint32_t *mask)
{
    grammar_matcher_fill_mask(m, mask);
    uint32_t any = 0;
    for (int w = 0; w < eng->mask_words; w++)
        any |= mask[w];
    if (!any)
        for (int e = 0; e < eng->m->cfg.n_eos; e++)
            mask[eng->m->cfg.eos_ids[e] >> 5] |= 1u << (eng->m->cfg.eos_ids[e] & 31);
}

/* Masks [begin, end) of the step's masked entries: each its own matcher's,
 * over the shared read-only token tables, so rows run in parallel. A
 * verify entry's row d gets the grammar after its first d proposals (the
 * matcher steps over them, then back). */
static void write_mask_rows(void *arg, long begin, long end)
{
    struct engine *eng = arg;
    for (long k = begin; k < end; k++) {
        const int i = eng->mask_rows[k];
        const struct step_seq *w = &eng->work[i];
        const struct sequence *seq = eng->seqs[i];
        const struct live_request *lr = seq->user;
        struct grammar_matcher *m = lr->matchers[seq->choice];
        uint32_t *mask = (uint32_t *)w->sample.mask;
        const int32_t *proposed = w->tokens + w->n_tokens - (w->draw - 1);
        int stepped = 0;
        for (int d = 0; d < w->draw; d++) {
            if (d > 0 && grammar_matcher_accept(m, proposed[d - 1]) == 0)
                stepped++;
            fill_mask(eng, m, mask + (size_t)d * eng->mask_words);
        }
        grammar_matcher_rollback(m, stepped);
    }
}

/* The CPUs, up to 8: a step's masked rows rarely need more. */
static int mask_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

void engine_write_masks(void *arg)
{
    struct engine *eng = arg;
    const double t0 = clock_now();
    if (eng->n_mask_rows > 1 && !eng->mask_pool) /* a mask can take tens of us: rows in parallel */
        eng->mask_pool = threadpool_create(mask_threads());
    if (eng->n_mask_rows > 1)
        threadpool_for(eng->mask_pool, eng->n_mask_rows, 1, write_mask_rows, eng);
    else
        write_mask_rows(eng, 0, eng->n_mask_rows);
    eng->mask_s += clock_now() - t0;
}

/* The grammar's verdict on a drawn token: finish as it was, stop once the
 * grammar is complete, abort (logged) when the token breaks it. */
static int grammar_finish(struct live_request *lr, const struct sequence *seq, int32_t token, int finish)
{
    struct grammar_matcher *m = lr->matchers[seq->choice];
    if (grammar_matcher_accept(m, token) < 0) {
        log_error("request %ld: token %d breaks its grammar; the choice ends", lr->id, token);
        return FINISH_REASON_ABORT;
    }
    if (finish < 0 && grammar_matcher_done(m))
        return FINISH_REASON_STOP;
    return finish;
}

int engine_on_token(void *ctx, struct sequence *seq, const struct sample_result *res, int finish)
{
    struct engine *eng = ctx;
    struct live_request *lr = seq->user;
    if (lr->matchers)
        finish = grammar_finish(lr, seq, res->token, finish);
    struct stop_text *st = &lr->texts[seq->choice];
    const size_t from = st->sent; /* the delta is text[from, sent) once settled */
    const char *d;
    size_t dl;
    struct err e = {{0}};
    int rc = stop_text_push(st, res->token, &d, &dl, &e);
    if (rc == 0 && finish >= 0)
        rc = stop_text_finish(st, &d, &dl, &e);
    if (rc < 0) {
        log_error("request %ld: detokenizing failed (%s); the choice ends", lr->id, e.msg);
        finish = FINISH_REASON_ABORT;
    } else if (rc == 1) {
        finish = FINISH_REASON_STOP;
    }
    /* counted before the event, which may read it; a verify step adds several */
    pthread_mutex_lock(&eng->mu);
    eng->stats.completion_tokens++;
    pthread_mutex_unlock(&eng->mu);
    emit(eng, lr, seq, res, from, finish);
    return finish;
}

void live_request_abort(struct engine *eng, struct live_request *lr)
{
    for (int i = 0; i < lr->n; i++) {
        struct sequence *seq = &lr->seqs[i];
        if (seq->state == SEQUENCE_FINISHED)
            continue;
        scheduler_abort(&eng->sched, seq);
        emit(eng, lr, seq, NULL, lr->texts[i].sent, FINISH_REASON_ABORT);
    }
}
