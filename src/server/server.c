/* The server's lifecycle and HTTP plumbing: the daemon, the request body
 * (bounded), authentication, routing, replies, and the SIGTERM drain. */
#include "server/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "grammar/cache.h"
#include "model/model.h"
#include "server/server_internal.h"

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

static enum MHD_Result queue(struct conn *c, struct MHD_Connection *conn, int status, const char *type, void *data,
                             size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (c->close)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    c->status = status;
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result server_reply_text(struct conn *c, struct MHD_Connection *conn, int status, const char *type,
                                  char *text, size_t len)
{
    return queue(c, conn, status, type, text, len);
}

enum MHD_Result server_reply_json(struct conn *c, struct MHD_Connection *conn, int status, json_t *json)
{
    char *s = json_dumps(json, JSON_COMPACT);
    json_decref(json);
    if (!s)
        return MHD_NO;
    return queue(c, conn, status, "application/json", s, strlen(s));
}

enum MHD_Result server_reply_error(struct conn *c, struct MHD_Connection *conn, const struct oai_error *err)
{
    return server_reply_json(c, conn, err->status, oai_error_json(err));
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

static int authorized(const struct server *s, struct MHD_Connection *conn)
{
    if (!s->o.api_key)
        return 1;
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
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
static int json_content(struct MHD_Connection *conn)
{
    const char *t = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!t)
        return 1;
    while (*t == ' ')
        t++;
    size_t n = strcspn(t, "; ");
    return (n == 16 && !strncasecmp(t, "application/json", 16)) || (n > 5 && !strncasecmp(t + n - 5, "+json", 5));
}

/* ---- the request's framing and size ----
 *
 * libmicrohttpd 0.9.75 (src/microhttpd/connection.c) answers these itself,
 * before or without calling our handler, with a fixed HTML body that no option
 * or callback replaces:
 * - a request line without a space: closed unanswered (parse_initial_message_line);
 * - a bad HTTP version token: 400; HTTP/0.x or 2+: 505 (parse_http_version);
 * - a header line without a colon: 400 (MHD_connection_handle_idle,
 *   process_broken_line);
 * - a head over the connection's memory pool: 414 while the request line is
 *   read, else 431 (get_next_header_line, connection_add_header,
 *   parse_cookie_header);
 * - a Content-Length that is not digits: 400; over 64 bits: 413
 *   (parse_connection_headers);
 * - bad chunked framing: 400; a chunk size over 64 bits: 413
 *   (process_request_body, while the body is read).
 * The parse_connection_headers errors (Content-Length, and a Cookie the pool
 * cannot copy) also send their status line and headers twice: the error is
 * queued (state HEADERS_SENDING), MHD_connection_handle_idle then overwrites
 * the state with HEADERS_PROCESSED, and START_REPLY runs build_header_response
 * again, which appends. Our handler is never called for such a request.
 * Fixed upstream in f1bfbe71, first released in 1.0.0: this server linked
 * against 1.0.1 sends one response (its HTML body). Everything else is
 * refused here or in precheck(), in OpenAI's JSON shape. */

/* The memory pool of a connection holds its request line, its header fields
 * (64 bytes of bookkeeping each) and its read buffer; a head that does not fit
 * gets the library's HTML 431 / 414. 256 KiB, 4 times MAX_HEAD_BYTES, lets a
 * head of up to ~260 KB or ~3,400 short fields reach protocol_check() and its
 * JSON 431 / 414 (the library's 32 KiB default: ~32 KB, ~440 fields). More
 * costs every connection: each request's read buffer takes half the pool and
 * the library zeroes what it left unused, so an idle kept-alive connection
 * holds its whole pool resident. Measured: 42 kB at 32 KiB, 266 kB at 256 KiB,
 * 1034 kB at 1 MiB, the size 10,000 fields need (1 GiB at --max-connections
 * 1024), for a JSON body no real client needs (nginx in front stops at 8 KB a
 * line, 32 KB in all). A 1-token completion's rate did not move (49/s at each
 * size). */
#define CONNECTION_MEMORY ((size_t)256 << 10)
#define MAX_HEAD_BYTES (64 << 10) /* request line and header fields */
#define MAX_HEAD_FIELDS 1024
#define MAX_TARGET_BYTES (8 << 10) /* path and query, as nginx and Apache */

struct head {
    unsigned fields, n_length, n_coding;
    const char *coding; /* the first Transfer-Encoding */
    size_t target;      /* the query's bytes (protocol_check adds the path's) */
};

static enum MHD_Result head_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct head *h = cls;
    if (kind == MHD_GET_ARGUMENT_KIND) {
        h->target += strlen(key) + (value ? strlen(value) + 1 : 0) + 1;
        return MHD_YES;
    }
    h->fields++;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
        h->n_length++;
    else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) && !h->n_coding++)
        h->coding = value ? value : "";
    return MHD_YES;
}

/* The request's size and framing (RFC 9112 sections 6.1 and 6.3), from its
 * headers: 0, or -1 with err filled. The library frames the body by the first
 * Transfer-Encoding, else the first Content-Length, and ignores the others; a
 * proxy in front that frames it by another would take part of this request
 * for the next one, or the other way round (request smuggling). So: at most
 * one Content-Length, two equal ones refused too (RFC 9110 section 8.6 allows
 * either; nginx and Node refuse them, and a repeated field means something on
 * the way rewrote the request); none with a Transfer-Encoding; that one field
 * "chunked", not in an HTTP/1.0 request. The refusal closes the connection. */
static int protocol_check(struct MHD_Connection *conn, const char *url, const char *version,
                          struct oai_error *err)
{
    struct head h = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, head_field, &h);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, head_field, &h);
    h.target += strlen(url);
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    const size_t head = i ? i->header_size : 0;
    if (h.target > MAX_TARGET_BYTES)
        return oai_error_set(err, 414, NULL, "the request target exceeds %d bytes", MAX_TARGET_BYTES);
    if (head > MAX_HEAD_BYTES)
        return oai_error_set(err, 431, NULL, "the request line and headers exceed %d bytes", MAX_HEAD_BYTES);
    if (h.fields > MAX_HEAD_FIELDS)
        return oai_error_set(err, 431, NULL, "more than %d header fields", MAX_HEAD_FIELDS);
    if (h.n_length > 1)
        return oai_error_set(err, 400, NULL, "Content-Length is given %u times", h.n_length);
    if (h.n_coding && h.n_length)
        return oai_error_set(err, 400, NULL, "both Content-Length and Transfer-Encoding are given");
    if (h.n_coding > 1)
        return oai_error_set(err, 400, NULL, "Transfer-Encoding is given %u times", h.n_coding);
    if (h.n_coding && strcasecmp(h.coding, "chunked"))
        return oai_error_set(err, 501, NULL, "Transfer-Encoding '%.64s' is not supported (only chunked)",
                             h.coding);
    if (h.n_coding && !strcmp(version, MHD_HTTP_VERSION_1_0))
        return oai_error_set(err, 400, NULL, "Transfer-Encoding in an HTTP/1.0 request");
    return 0;
}

/* What can be refused from the headers alone: route, method, key, content
 * type, announced length. Returns the route, or NULL with the refusal queued
 * (*rc): a refusal before the body is read closes the connection without
 * reading it, and answers an "Expect: 100-continue" without inviting it. */
static const struct route *precheck(struct server *s, struct conn *c, struct MHD_Connection *conn, const char *url,
                                    const char *method, enum MHD_Result *rc)
{
    const struct route *r = NULL;
    int path_known = 0;
    if (!strcmp(method, "HEAD"))
        method = "GET"; /* the library sends the headers alone */
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
    else if (r->needs_key && !authorized(s, conn))
        oai_error_set(&err, 401, NULL, "missing or wrong API key (Authorization: Bearer <key>)");
    else if (!strcmp(r->method, "POST") && !json_content(conn))
        oai_error_set(&err, 415, NULL, "the body must be JSON (Content-Type: application/json)");
    else if (c->too_big)
        oai_error_set(&err, 413, NULL, "the request body exceeds %zu bytes", s->o.max_body);
    else if (s->draining && strcmp(r->path, "/metrics"))
        oai_error_set(&err, 503, NULL, "the server is shutting down");
    else
        return r;
    *rc = server_reply_error(c, conn, &err);
    return NULL;
}

static enum MHD_Result dispatch(struct server *s, struct conn *c, struct MHD_Connection *conn, const char *url,
                                const char *method)
{
    enum MHD_Result rc;
    const struct route *r = precheck(s, c, conn, url, method, &rc);
    if (!r)
        return rc;
    if (!strcmp(r->path, "/health"))
        return route_health(s, c, conn);
    if (!strcmp(r->path, "/metrics"))
        return route_metrics(s, c, conn);
    if (!strcmp(r->path, "/v1/models"))
        return route_models(s, c, conn);
    if (!strcmp(r->path, "/v1/models/"))
        return route_model(s, c, conn, url + strlen(r->path));
    if (!strcmp(r->path, "/tokenize"))
        return route_tokenize(s, c, conn);
    if (!strcmp(r->path, "/detokenize"))
        return route_detokenize(s, c, conn);
    return route_completion(s, c, conn, strcmp(r->path, "/v1/completions") ? OAI_CHAT : OAI_COMPLETION);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state)
{
    struct server *s = cls;
    struct conn *c = *state;
    if (!c) { /* the headers are in: refuse an announced oversized body before reading it */
        c = xcalloc(1, sizeof *c);
        c->arrived_at = clock_now();
        c->route = "other";
        *state = c;
        struct oai_error err;
        if (protocol_check(conn, url, version, &err)) { /* the body unread, the connection closed */
            c->close = 1;
            return server_reply_error(c, conn, &err);
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
        const unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
        c->too_big = announced > s->o.max_body;
        /* A client that waits for "100 Continue", or announces a body far
         * beyond the limit, is refused from the headers (the connection then
         * closes unread). Others are read to the end (what is over the limit
         * dropped), so that a client that writes its whole body before it
         * reads hears the answer rather than a broken pipe. */
        if ((expect && !strncasecmp(expect, "100-continue", 12)) || announced > 8 * (unsigned long long)s->o.max_body) {
            enum MHD_Result rc;
            return precheck(s, c, conn, url, method, &rc) ? MHD_YES : rc;
        }
        return MHD_YES;
    }
    if (c->status) { /* refused from the headers: whatever body comes is dropped */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        c->received += *upload_size;
        if (c->received > 8 * (unsigned long long)s->o.max_body)
            return MHD_NO; /* an endless body: close */
        if (!c->too_big && c->len + *upload_size > s->o.max_body)
            c->too_big = 1;
        if (!c->too_big) {
            if (c->len + *upload_size + 1 > c->cap) {
                c->cap = (c->len + *upload_size + 1) * 2;
                if (c->cap > s->o.max_body + 1)
                    c->cap = s->o.max_body + 1;
                c->body = xrealloc(c->body, c->cap);
            }
            memcpy(c->body + c->len, upload, *upload_size);
            c->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return dispatch(s, c, conn, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state, enum MHD_RequestTerminationCode code)
{
    (void)conn;
    struct server *s = cls;
    struct conn *c = *state;
    (void)code;
    if (!c)
        return;
    if (c->status)
        metrics_request(s->metrics, c->route, c->status);
    free(c->body);
    free(c);
    *state = NULL;
}

/* ---- lifecycle ---- */

static int resolve(const char *host, int port, struct sockaddr_storage *ss, struct err *e)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    int rc = getaddrinfo(host, p, &hints, &res);
    if (rc || !res)
        return err_set(e, "--host %s: %s", host, gai_strerror(rc));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static int bound_port(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : 0;
}

/* Waits for SIGTERM / SIGINT (blocked by server_block_signals). */
static int wait_for_signal(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    while (sigwait(&set, &sig))
        ;
    return sig;
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

int server_run(struct model *m, const struct tokenizer *tok, const struct chat_template *ct,
               const struct engine_opts *eo, const struct server_opts *so, struct err *e)
{
    struct server s = {.m = m, .tok = tok, .ct = ct, .o = *so, .started = (long)time(NULL)};
    pthread_mutex_init(&s.mu, NULL);
    s.names[0] = so->served_name;
    s.octx = (struct oai_context){.tok = tok, .ct = ct, .model_names = s.names, .n_model_names = 1,
                                  .max_n = 16, .max_stop = 16,
                                  .max_stop_len = 256, .default_max_tokens = 1 << 20};
    struct sockaddr_storage addr;
    int rc = -1;
    if (resolve(so->host, so->port, &addr, e))
        goto done;
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
    s.daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                    (addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                                0, NULL, NULL, on_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s, MHD_OPTION_CONNECTION_LIMIT,
                                (unsigned)so->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, 60u,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONNECTION_MEMORY, MHD_OPTION_END);
    if (!s.daemon) {
        err_set(e, "cannot listen on %s:%d (in use, or not an address of this machine)", so->host, so->port);
        goto done;
    }
    fprintf(stderr, "infer: serving %s on http://%s:%d (libmicrohttpd %s)\n", so->served_name, so->host,
            bound_port(s.daemon), MHD_get_version());
    fflush(stderr);
    int sig = wait_for_signal();
    log_info("%s: finishing the requests in flight (at most %.0f s), then exiting", sig == SIGINT ? "SIGINT" : "SIGTERM",
             so->drain_seconds);
    drain(&s);
    rc = 0;
done:
    if (s.daemon)
        MHD_stop_daemon(s.daemon);
    engine_free(s.eng);
    grammar_cache_free(s.grammars); /* after the engine: its requests held references */
    metrics_free(s.metrics);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
