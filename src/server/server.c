/* The server's lifecycle and request handling on the HTTP layer (http.h):
 * the request body (bounded), authentication, routing, replies, and the
 * SIGTERM drain. */
#include "server/server.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/heap.h"
#include "core/log.h"
#include "grammar/cache.h"
#include "model/model.h"
#include "model/weights.h"
#include "server/server_internal.h"

enum { HEAP_TRIM_SECONDS = 5 };

struct server_opts server_opts_default(void)
{
    return (struct server_opts){.host = "127.0.0.1", .port = 8000, .max_queued = 1024,
                                .max_body = (size_t)8 << 20, .max_connections = 1024, .drain_seconds = 30};
}

void server_block_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that left: write errors, not death */
}

/* ---- replies ---- */

int server_reply_text(struct conn *c, int status, const char *type, char *text, size_t len)
{
    c->status = status;
    int rc = http_respond(c->rq, status, type, NULL, text, len);
    free(text);
    return rc;
}

int server_reply_json(struct conn *c, int status, json_t *json)
{
    char *s = json_dumps(json, JSON_COMPACT);
    json_decref(json);
    if (!s)
        return -1;
    return server_reply_text(c, status, "application/json", s, strlen(s));
}

int server_reply_error(struct conn *c, const struct oai_error *err)
{
    return server_reply_json(c, err->status, oai_error_json(err));
}

/* The HTTP layer's own errors (a malformed request, a body too large, too
 * many connections): OpenAI's shape too, counted under the route "other". */
static char *http_error_body(void *ctx, int status, const char *message, size_t *len)
{
    struct server *s = ctx;
    struct oai_error err;
    oai_error_set(&err, status, NULL, "%s", message);
    json_t *j = oai_error_json(&err);
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    metrics_request(s->metrics, "other", status);
    *len = body ? strlen(body) : 0;
    return body;
}

/* ---- the list of requests in flight ---- */

void server_inflight_attach(struct server *s, struct inflight *j)
{
    pthread_mutex_lock(&s->mu);
    j->next_live = s->live;
    s->live = j;
    s->n_live++;
    pthread_mutex_unlock(&s->mu);
}

void server_inflight_detach(struct server *s, struct inflight *j)
{
    pthread_mutex_lock(&s->mu);
    for (struct inflight **p = &s->live; *p; p = &(*p)->next_live)
        if (*p == j) {
            *p = j->next_live;
            s->n_live--;
            break;
        }
    pthread_mutex_unlock(&s->mu);
}

/* ---- routing ---- */

struct route {
    const char *path, *method;
    int needs_key;
    int prefix; /* the path and something after it (/v1/models/{id}) */
};

static const struct route ROUTES[] = {
    {"/health", "GET", 0, 0},           {"/metrics", "GET", 0, 0},         {"/v1/models", "GET", 1, 0},
    {"/v1/models/", "GET", 1, 1},       {"/v1/chat/completions", "POST", 1, 0},
    {"/v1/completions", "POST", 1, 0},  {"/tokenize", "POST", 1, 0},       {"/detokenize", "POST", 1, 0},
};

static int route_matches(const struct route *r, const char *url)
{
    size_t n = strlen(r->path);
    return r->prefix ? !strncmp(url, r->path, n) && url[n] : !strcmp(url, r->path);
}

static int authorized(const struct server *s, const struct http_request *rq)
{
    if (!s->o.api_key)
        return 1;
    const char *h = http_header(rq, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7))
        return 0;
    h += 7;
    while (*h == ' ')
        h++;
    /* same time whatever the mismatch position */
    size_t n = strlen(s->o.api_key), m = strlen(h);
    unsigned diff = (unsigned)(n != m);
    for (size_t i = 0; i < m; i++)
        diff |= (unsigned)(h[i] ^ s->o.api_key[n ? i % n : 0]);
    return diff == 0;
}

/* JSON bodies only: a missing type is let through (curl -d without -H). */
static int json_content(const struct http_request *rq)
{
    const char *t = http_header(rq, "Content-Type");
    if (!t)
        return 1;
    while (*t == ' ')
        t++;
    size_t n = strcspn(t, "; ");
    return (n == 16 && !strncasecmp(t, "application/json", 16)) || (n > 5 && !strncasecmp(t + n - 5, "+json", 5));
}

/* What can be refused from the headers alone: route, method, key, content
 * type, announced length. Returns the route, or NULL with the refusal sent.
 * Run before the body is read, a refusal leaves the body unread (the
 * connection then closes) and answers an "Expect: 100-continue" without
 * inviting the body. */
static const struct route *precheck(struct server *s, struct conn *c)
{
    const struct route *r = NULL;
    const char *url = c->rq->path, *method = c->rq->method;
    int path_known = 0;
    if (!strcmp(method, "HEAD"))
        method = "GET"; /* the HTTP layer sends the headers alone */
    for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++)
        if (route_matches(&ROUTES[i], url)) {
            path_known = 1;
            c->route = ROUTES[i].path;
            if (!strcmp(method, ROUTES[i].method))
                r = &ROUTES[i];
        }
    struct oai_error err;
    if (!path_known)
        oai_error_set(&err, 404, NULL, "no route %s", url);
    else if (!r)
        oai_error_set(&err, 405, NULL, "%s does not take %s", url, method);
    else if (r->needs_key && !authorized(s, c->rq))
        oai_error_set(&err, 401, NULL, "missing or wrong API key (Authorization: Bearer <key>)");
    else if (!strcmp(r->method, "POST") && !json_content(c->rq))
        oai_error_set(&err, 415, NULL, "the body must be JSON (Content-Type: application/json)");
    else if (c->too_big)
        oai_error_set(&err, 413, NULL, "the request body exceeds %zu bytes", s->o.max_body);
    else if (s->draining && strcmp(r->path, "/metrics"))
        oai_error_set(&err, 503, NULL, "the server is shutting down");
    else
        return r;
    server_reply_error(c, &err);
    return NULL;
}

static void dispatch(struct server *s, struct conn *c, const struct route *r)
{
    if (!strcmp(r->path, "/health"))
        route_health(s, c);
    else if (!strcmp(r->path, "/metrics"))
        route_metrics(s, c);
    else if (!strcmp(r->path, "/v1/models"))
        route_models(s, c);
    else if (!strcmp(r->path, "/v1/models/"))
        route_model(s, c, c->rq->path + strlen(r->path));
    else if (!strcmp(r->path, "/tokenize"))
        route_tokenize(s, c);
    else if (!strcmp(r->path, "/detokenize"))
        route_detokenize(s, c);
    else
        route_completion(s, c, strcmp(r->path, "/v1/completions") ? OAI_CHAT : OAI_COMPLETION);
}

/* One request from the HTTP layer (http.h), its head parsed and framed. */
static void on_request(void *ctx, struct http_request *rq)
{
    struct server *s = ctx;
    struct conn c = {.rq = rq, .arrived_at = clock_now(), .route = "other"};
    /* Beyond this, a body is not read to its end to be dropped. */
    const uint64_t most = 8 * (uint64_t)s->o.max_body;
    c.too_big = rq->content_length > s->o.max_body;
    /* A client that waits for "100 Continue", or announces a body far
     * beyond the limit, is refused from the headers (the connection then
     * closes unread). Others are read to the end (what is over the limit
     * dropped), so that a client that writes its whole body before it
     * reads hears the answer rather than a broken pipe. */
    if ((rq->expect_continue || rq->content_length > most) && !precheck(s, &c))
        goto done;
    if (http_read_body(rq, s->o.max_body, most))
        goto done; /* the layer answered (a bad framing), or the client left */
    c.body = rq->body;
    c.len = rq->body_len;
    c.too_big |= rq->body_over_limit;
    const struct route *r = precheck(s, &c);
    if (r)
        dispatch(s, &c, r);
done:
    if (c.status)
        metrics_request(s->metrics, c.route, c.status);
}

/* ---- lifecycle ---- */

/* Waits for SIGTERM or SIGINT (blocked by server_block_signals). Meanwhile, every HEAP_TRIM_SECONDS in which
 * requests came, the allocator's free pages go back to the system: without,
 * the connection threads' arenas keep what their requests freed and an
 * hour of novel traffic left 20 MB more resident (docs/server.md, Memory). */
static int wait_for_signal(struct server *s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    const struct timespec every = {.tv_sec = HEAP_TRIM_SECONDS};
    long trimmed_at = 0;
    for (;;) {
        const int sig = sigtimedwait(&set, NULL, &every);
        if (sig == SIGTERM || sig == SIGINT)
            return sig;
        struct engine_stats st;
        engine_get_stats(s->eng, &st);
        if (st.requests != trimmed_at) {
            trimmed_at = st.requests;
            heap_give_back(); /* 2 ms under 16 clients' traffic (docs/server.md, Memory) */
        }
    }
}

/* SIGTERM: refuse new work, let in-flight requests finish (bounded). */
static void drain(struct server *s)
{
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    pthread_mutex_unlock(&s->mu);
    const double until = clock_now() + s->o.drain_seconds;
    for (;;) {
        struct engine_stats st;
        engine_get_stats(s->eng, &st);
        pthread_mutex_lock(&s->mu);
        int live = s->n_live;
        pthread_mutex_unlock(&s->mu);
        if ((live == 0 && st.running == 0 && st.waiting == 0) || clock_now() > until)
            break;
        usleep(20000);
    }
    pthread_mutex_lock(&s->mu); /* whatever still waits ends now */
    s->stopping = 1;
    for (struct inflight *j = s->live; j; j = j->next_live) {
        pthread_mutex_lock(&j->mu);
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&s->mu);
}

int server_listen(struct server_opts *so, struct err *e)
{
    if (!(so->listener = http_listen(so->host, so->port, e)))
        return err_prefix(e, "--host %s --port %d", so->host, so->port);
    return 0;
}

void server_unlisten(struct server_opts *so)
{
    http_stop(so->listener);
    so->listener = NULL;
}

int server_run(struct model *m, const struct tokenizer *tok, const struct chat_template *ct,
               const struct engine_opts *eo, const struct server_opts *so, struct err *e)
{
    CHECK(so->listener); /* server_listen's */
    struct server s = {.m = m, .tok = tok, .ct = ct, .o = *so, .started = (long)time(NULL), .http = so->listener};
    pthread_mutex_init(&s.mu, NULL);
    s.names[0] = so->served_name;
    s.octx = (struct oai_context){.tok = tok, .ct = ct, .model_names = s.names, .n_model_names = 1,
                                  .max_n = 16, .max_stop = 16,
                                  .max_stop_len = 256, .default_max_tokens = 1 << 20};
    int rc = -1;
    s.metrics = metrics_create(so->served_name);
    if (!(s.eng = engine_create(m, tok, eo, inflight_on_event, &s, e)))
        goto done;
    struct engine_stats st;
    engine_get_stats(s.eng, &st);
    s.octx.max_context = st.max_context; /* what the engine made of --max-model-len */
    s.octx.vocab_size = engine_vocab_size(s.eng);
    if (tok) /* structured outputs: compiled constraints, cached */
        s.octx.grammars = s.grammars = grammar_cache_new(tok, s.octx.vocab_size, m->cfg.eos_ids, m->cfg.n_eos,
                                                         GRAMMAR_CACHE_ENTRIES, GRAMMAR_CACHE_BYTES);
    const struct http_config hc = {.max_connections = so->max_connections,
                                   .timeout = 60, .handle = on_request, .error_body = http_error_body,
                                   .error_type = "application/json", .ctx = &s};
    http_serve(s.http, &hc);
    char weights[512];
    model_weights_summary(&m->w, &m->cfg, weights, sizeof weights);
    fprintf(stderr, "infer: %s backend%s%s; weights %s\n", m->be->ops->name, m->be->detail[0] ? ": " : "",
            m->be->detail, weights);
    fprintf(stderr, "infer: KV cache of %d tokens (%d blocks of %d), contexts of up to %d tokens\n",
            (st.kv_blocks - 1) * eo->block_size, st.kv_blocks - 1, eo->block_size, st.max_context);
    fprintf(stderr, "infer: serving %s on http://%s:%d\n", so->served_name, so->host, http_port(s.http));
    fflush(stderr);
    int sig = wait_for_signal(&s);
    log_info("%s: finishing the requests in flight (at most %.0f s), then exiting", sig == SIGINT ? "SIGINT" : "SIGTERM",
             so->drain_seconds);
    drain(&s);
    rc = 0;
done:
    http_stop(s.http); /* every connection closed, its thread gone */
    engine_free(s.eng);
    grammar_cache_free(s.grammars); /* after the engine: its requests held references */
    metrics_free(s.metrics);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
