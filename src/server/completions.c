/* POST /v1/chat/completions and /v1/completions: parse (oai_request.c),
 * submit to the engine, then either wait for every choice and answer with
 * one JSON object, or stream SSE chunks as the engine's events arrive. A
 * client that leaves (its socket closes) aborts its request, which frees
 * the request's KV blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_output.h"
#include "core/clock.h"
#include "server/server_internal.h"

/* How often a waiting HTTP thread looks at its client's socket. */
#define POLL_SECONDS 0.05

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    return x ^ (x >> 33);
}

static void out_append(struct inflight *j, char *chunk)
{
    size_t n = strlen(chunk);
    if (j->out_len + n > j->out_cap) {
        j->out_cap = (j->out_len + n) * 2;
        j->out = xrealloc(j->out, j->out_cap);
    }
    memcpy(j->out + j->out_len, chunk, n);
    j->out_len += n;
    free(chunk);
}

/* A streamed chat choice read back: each piece a chunk, the round's new
 * log-probs on its first. */
struct piece_out {
    struct inflight *j;
    int index;
    const struct oai_token_logprob *lp;
    int n_lp;
};

static void piece_chunk(void *arg, const struct chat_piece *p)
{
    struct piece_out *po = arg;
    struct inflight *j = po->j;
    out_append(j, oai_chunk_piece(&j->req, j->srv->tok, j->id, j->created, po->index, p, po->lp, po->n_lp));
    po->lp = NULL;
    po->n_lp = 0;
}

/* A read-back choice's new text and log-probs as chunks (j->mu held). */
static void produce_read_back(struct inflight *j, int i)
{
    struct inflight_choice *c = &j->ch[i];
    const int new_lp = c->n_lp - c->sent_lp;
    struct piece_out po = {j, i, new_lp > 0 ? c->lp + c->sent_lp : NULL, new_lp > 0 ? new_lp : 0};
    if (c->len > c->parsed_len || (c->finished && !c->closed))
        inflight_read_back(j, i, piece_chunk, &po);
    if (po.n_lp > 0) /* log-probs of tokens whose text is held back */
        out_append(j, oai_chunk(&j->req, j->srv->tok, j->id, j->created, i, 0, "", 0, po.lp, po.n_lp, -1));
    c->sent_len = c->len;
    c->sent_lp = c->n_lp;
}

/* Formats what arrived since the last call into j->out (j->mu held). */
static void produce(struct inflight *j)
{
    const int read_back = inflight_reads_back(j);
    const struct server *s = j->srv;
    const int chat = j->req.kind == OAI_CHAT;
    int all_closed = 1;
    for (int i = 0; i < j->req.f.submit.n; i++) {
        struct inflight_choice *c = &j->ch[i];
        if (!c->opened) {
            c->opened = 1;
            if (chat)
                out_append(j, oai_chunk(&j->req, s->tok, j->id, j->created, i, 1, "", 0, NULL, 0, -1));
            else if (j->req.echo && j->req.f.prompt_text)
                out_append(j, oai_chunk(&j->req, s->tok, j->id, j->created, i, 0, j->req.f.prompt_text,
                                        strlen(j->req.f.prompt_text), NULL, 0, -1));
        }
        size_t new_text = c->len > c->sent_len ? c->len - c->sent_len : 0;
        int new_lp = c->n_lp - c->sent_lp;
        if (read_back)
            produce_read_back(j, i);
        else if (new_text || new_lp > 0) {
            out_append(j, oai_chunk(&j->req, s->tok, j->id, j->created, i, 0, c->text + c->sent_len, new_text,
                                    new_lp > 0 ? c->lp + c->sent_lp : NULL, new_lp > 0 ? new_lp : 0, -1));
            c->sent_len += new_text;
            c->sent_lp = c->n_lp;
        }
        if (c->finished && !c->closed) {
            c->closed = 1;
            const int calls = read_back && c->parser && chat_output_calls(c->parser) > 0 && c->finish == FINISH_REASON_STOP;
            out_append(j, oai_chunk(&j->req, s->tok, j->id, j->created, i, 0, "", 0, NULL, 0,
                                    calls ? OAI_FINISH_TOOL_CALLS : (int)c->finish));
        }
        all_closed &= c->closed;
    }
    if (all_closed && !j->done_sent) {
        if (j->req.include_usage && !j->usage_sent) {
            int completion = 0;
            for (int i = 0; i < j->req.f.submit.n; i++)
                completion += j->ch[i].completion_tokens;
            out_append(j, oai_usage_chunk(&j->req, j->id, j->created, j->prompt_tokens, completion));
            j->usage_sent = 1;
        }
        out_append(j, strdup("data: [DONE]\n\n"));
        j->done_sent = 1;
        metrics_observe(j->srv->metrics, METRICS_E2E, clock_now() - j->arrived_at);
    }
}

/* The stream's source for the HTTP layer (http_stream_fn): what is
 * formatted, else waits for the engine's next events. */
static long stream_read(void *arg, char *buf, size_t max)
{
    struct inflight *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if (j->out_pos < j->out_len) {
            size_t n = j->out_len - j->out_pos < max ? j->out_len - j->out_pos : max;
            memcpy(buf, j->out + j->out_pos, n);
            j->out_pos += n;
            if (j->out_pos == j->out_len)
                j->out_pos = j->out_len = 0;
            pthread_mutex_unlock(&j->mu);
            return (long)n;
        }
        if (j->done_sent) {
            pthread_mutex_unlock(&j->mu);
            return 0;
        }
        produce(j);
        if (j->out_len)
            continue;
        if (j->srv->stopping) {
            pthread_mutex_unlock(&j->mu);
            return -1;
        }
        inflight_wait(j, POLL_SECONDS);
        if (inflight_client_gone(j)) { /* reply_stream's release aborts the request */
            pthread_mutex_unlock(&j->mu);
            return -1;
        }
    }
}

/* The HTTP side lets go of the request in flight: one still running is aborted. */
static void release(struct inflight *j)
{
    struct server *s = j->srv;
    pthread_mutex_lock(&j->mu);
    int running = j->n_finished < j->req.f.submit.n;
    pthread_mutex_unlock(&j->mu);
    if (running)
        engine_abort(s->eng, j->engine_id);
    server_inflight_detach(s, j);
    inflight_unref(j);
}

static int reply_stream(struct server *s, struct conn *c, struct inflight *j)
{
    (void)s;
    c->status = 200;
    int rc = http_respond_stream(c->rq, 200, "text/event-stream", "Cache-Control: no-cache\r\n", stream_read, j);
    release(j);
    return rc;
}

static int reply_whole(struct server *s, struct conn *c, struct inflight *j)
{
    const int n = j->req.f.submit.n;
    pthread_mutex_lock(&j->mu);
    int gone = 0;
    while (j->n_finished < n && !s->stopping && !gone) {
        inflight_wait(j, POLL_SECONDS);
        gone = j->n_finished < n && inflight_client_gone(j);
    }
    if (j->n_finished < n) { /* the client left, or the drain ran out of time */
        pthread_mutex_unlock(&j->mu);
        release(j);
        if (gone)
            return -1; /* nobody to answer: the connection closes */
        struct oai_error err;
        oai_error_set(&err, 503, NULL, "the server is shutting down");
        return server_reply_error(c, &err);
    }
    struct oai_choice *choices = xcalloc((size_t)n, sizeof *choices);
    struct chat_message *msgs = xcalloc((size_t)n, sizeof *msgs);
    const int read_back = inflight_reads_back(j);
    int completion = 0, aborted = 0;
    for (int i = 0; i < n; i++) {
        const struct inflight_choice *ch = &j->ch[i];
        if (read_back)
            inflight_read_back(j, i, chat_message_add, &msgs[i]);
        choices[i] = (struct oai_choice){ch->text ? ch->text : "", ch->len, ch->finish, ch->lp, ch->n_lp,
                                         read_back ? &msgs[i] : NULL};
        completion += ch->completion_tokens;
        aborted |= ch->finish == FINISH_REASON_ABORT;
    }
    json_t *body = aborted ? NULL
                           : oai_response(&j->req, s->tok, j->id, j->created, choices, n, j->prompt_tokens, completion);
    pthread_mutex_unlock(&j->mu);
    for (int i = 0; i < n; i++)
        chat_message_free(&msgs[i]);
    free(msgs);
    free(choices);
    metrics_observe(s->metrics, METRICS_E2E, clock_now() - j->arrived_at);
    release(j);
    if (!body) {
        struct oai_error err;
        oai_error_set(&err, 500, NULL, "the engine failed while running the request (see the server's log)");
        return server_reply_error(c, &err);
    }
    return server_reply_json(c, 200, body);
}

int route_completion(struct server *s, struct conn *c, enum oai_kind kind)
{
    struct oai_completion_request r;
    struct oai_error err;
    pthread_mutex_lock(&s->mu);
    const unsigned long serial = ++s->next_id;
    pthread_mutex_unlock(&s->mu);
    const uint64_t tag = mix((uint64_t)serial ^ mix((uint64_t)s->started));
    if (oai_request_parse(&s->octx, kind, c->body ? c->body : "", c->len, tag, &r, &err))
        return server_reply_error(c, &err);
    struct engine_stats st;
    engine_get_stats(s->eng, &st);
    if (st.waiting >= s->o.max_queued) {
        oai_request_free(&r);
        oai_error_set(&err, 429, NULL, "%d requests are waiting already (--max-queued-requests); try again later",
                      st.waiting);
        return server_reply_error(c, &err);
    }
    struct inflight *j = inflight_new(s, &r, c->arrived_at);
    snprintf(j->id, sizeof j->id, "%s-%016llx", kind == OAI_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)tag);
    j->client_fd = http_fd(c->rq);
    j->req.f.submit.user = j;
    server_inflight_attach(s, j);
    j->submitted_at = clock_now();
    struct err e = {{0}};
    long id = engine_submit(s->eng, &j->req.f.submit, &e);
    if (id < 0) {
        server_inflight_detach(s, j);
        inflight_unref(j); /* the engine never had it */
        inflight_unref(j);
        oai_error_set(&err, 400, NULL, "%s", e.msg);
        return server_reply_error(c, &err);
    }
    j->engine_id = id;
    /* No timeout runs while the request waits for the engine, maybe long in
     * the queue (the HTTP layer's runs only while it waits on the client); a
     * hang-up is noticed on the client's socket. */
    return j->req.stream ? reply_stream(s, c, j) : reply_whole(s, c, j);
}
