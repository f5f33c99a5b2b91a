#include "server/inflight.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "chat/chat_output.h"
#include "core/clock.h"
#include "server/server_internal.h"

struct inflight *inflight_new(struct server *srv, struct oai_completion_request *r, double arrived_at)
{
    struct inflight *j = xcalloc(1, sizeof *j);
    j->srv = srv;
    j->req = *r;
    memset(r, 0, sizeof *r);
    j->arrived_at = arrived_at;
    j->created = (long)time(NULL);
    j->refs = 2;
    j->client_fd = -1;
    j->ch = xcalloc((size_t)j->req.f.submit.n, sizeof *j->ch);
    for (int i = 0; i < j->req.f.submit.n; i++)
        j->ch[i].call_token_at = SIZE_MAX;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    return j;
}

static void inflight_free(struct inflight *j)
{
    for (int i = 0; i < j->req.f.submit.n; i++) {
        free(j->ch[i].text);
        free(j->ch[i].lp);
        chat_output_free(j->ch[i].parser);
    }
    free(j->ch);
    free(j->out);
    oai_request_free(&j->req);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

void inflight_unref(struct inflight *j)
{
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left == 0)
        inflight_free(j);
}

static void append_text(struct inflight_choice *c, const char *s, size_t n)
{
    if (c->len + n + 1 > c->cap) {
        c->cap = (c->len + n + 1) * 2;
        c->text = xrealloc(c->text, c->cap);
    }
    memcpy(c->text + c->len, s, n);
    c->len += n;
    c->text[c->len] = '\0';
}

static void append_lp(struct inflight_choice *c, const struct sample_result *s, int n_top)
{
    if (c->n_lp == c->cap_lp) {
        c->cap_lp = c->cap_lp ? c->cap_lp * 2 : 32;
        c->lp = xrealloc(c->lp, (size_t)c->cap_lp * sizeof *c->lp);
    }
    while (n_top > 0 && s->top_ids[n_top - 1] < 0) /* a grammar's mask left fewer */
        n_top--;
    struct oai_token_logprob *l = &c->lp[c->n_lp++];
    l->token = s->token;
    l->logprob = s->logprob;
    l->n_top = n_top;
    memcpy(l->top_ids, s->top_ids, (size_t)n_top * sizeof *l->top_ids);
    memcpy(l->top_logprobs, s->top_logprobs, (size_t)n_top * sizeof *l->top_logprobs);
}

void inflight_on_event(void *ctx, const struct engine_event *ev)
{
    struct server *srv = ctx;
    struct inflight *j = ev->user;
    const double now = clock_now();
    pthread_mutex_lock(&j->mu);
    struct inflight_choice *c = &j->ch[ev->choice];
    if (ev->has_token) {
        if (j->first_token_at == 0) {
            j->first_token_at = now;
            metrics_observe(srv->metrics, METRICS_TTFT, now - j->arrived_at);
            metrics_observe(srv->metrics, METRICS_QUEUE, (j->submitted_at - j->arrived_at) + ev->queued_seconds);
        }
        if (c->last_token_at > 0)
            metrics_observe(srv->metrics, METRICS_ITL, now - c->last_token_at);
        c->last_token_at = now;
        if (j->req.logprobs)
            append_lp(c, ev->sample, j->req.f.submit.sampling.top_logprobs);
        if (ev->sample->token == j->req.f.call_token && c->call_token_at == SIZE_MAX)
            c->call_token_at = c->len;
    }
    if (ev->text_len)
        append_text(c, ev->text, ev->text_len);
    int last_ref = 0;
    if (ev->finished) {
        c->finished = 1;
        c->finish = ev->finish;
        c->completion_tokens = ev->completion_tokens;
        if (ev->full_text) { /* the whole text, cut at a stop string */
            c->len = 0;
            append_text(c, ev->full_text, ev->full_text_len);
        }
        j->prompt_tokens = ev->prompt_tokens;
        metrics_tokens(srv->metrics, j->n_finished == 0 ? ev->prompt_tokens : 0, ev->completion_tokens);
        if (++j->n_finished == j->req.f.submit.n)
            last_ref = --j->refs == 0; /* the engine's reference */
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (last_ref)
        inflight_free(j);
}

int inflight_reads_back(const struct inflight *j)
{
    return j->req.kind == OAI_CHAT && j->req.f.format && (j->req.f.read_calls || j->req.f.read_reasoning);
}

void inflight_read_back(struct inflight *j, int i, void (*fn)(void *arg, const struct chat_piece *p), void *arg)
{
    struct inflight_choice *c = &j->ch[i];
    if (!c->parser) {
        struct chat_output_opts o = {j->req.f.format, j->req.f.read_calls, j->req.f.read_reasoning,
                                     j->req.f.in_reasoning, j->req.f.calls_held};
        c->parser = chat_output_new(&o);
    }
    size_t from = c->parsed_len < c->len ? c->parsed_len : c->len;
    if (!c->call_token_fed && c->call_token_at >= from && c->call_token_at <= c->len) {
        size_t at = c->call_token_at;
        chat_output_feed(c->parser, c->text + from, at - from, fn, arg);
        chat_output_feed(c->parser, CHAT_PYTHON_TAG, strlen(CHAT_PYTHON_TAG), fn, arg);
        c->call_token_fed = 1;
        from = at;
    }
    chat_output_feed(c->parser, c->text ? c->text + from : "", c->len - from, fn, arg);
    c->parsed_len = c->len;
    if (c->finished)
        chat_output_finish(c->parser, fn, arg);
}

int inflight_client_gone(const struct inflight *j)
{
    if (j->client_fd < 0)
        return 0;
    struct pollfd p = {j->client_fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0)
        return 0;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
        return 1;
    char b;
    ssize_t n = recv(j->client_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void inflight_wait(struct inflight *j, double timeout_s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(timeout_s * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}
