/* The load generator's event loop (loadgen.h). One connection per request
 * (Connection: close), so a response ends where its connection does. */
#include "loadgen/loadgen.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "loadgen/http_response.h"
#include "loadgen/sse.h"

const char *const lg_failure_names[LG_N_FAILURES] = {"ok",    "connect", "status",  "http",
                                                     "chunk", "cut",     "usage",   "timeout"};

int lg_target_parse(struct lg_target *t, const char *url, struct err *e)
{
    const char *p = url;
    if (strncmp(p, "http://", 7))
        return err_set(e, "--url '%s': only http:// URLs are supported (no TLS)", url);
    p += 7;
    const char *slash = strchr(p, '/');
    const size_t hostport = slash ? (size_t)(slash - p) : strlen(p);
    char hp[300];
    if (hostport == 0 || hostport >= sizeof hp)
        return err_set(e, "--url '%s': no host", url);
    memcpy(hp, p, hostport);
    hp[hostport] = 0;
    char *colon = strrchr(hp, ':');
    const char *port = "80";
    if (colon) {
        *colon = 0;
        port = colon + 1;
        char *end;
        long v = strtol(port, &end, 10);
        if (*end || v < 1 || v > 65535)
            return err_set(e, "--url '%s': bad port '%s'", url, port);
    }
    const size_t hl = strlen(hp);
    if (!hl || hl >= sizeof t->host)
        return err_set(e, "--url '%s': no host", url);
    memcpy(t->host, hp, hl + 1);
    snprintf(t->port, sizeof t->port, "%s", port);
    const char *prefix = slash ? slash : "";
    size_t plen = strlen(prefix);
    while (plen && prefix[plen - 1] == '/')
        plen--;
    if (plen + sizeof "/v1/completions" > sizeof t->path)
        return err_set(e, "--url '%s': path too long", url);
    snprintf(t->path, sizeof t->path, "%.*s/v1/completions", (int)plen, prefix);
    return 0;
}

void lg_record_free(struct lg_record *r)
{
    free(r->chunk_at);
    memset(r, 0, sizeof *r);
}

struct conn {
    int fd;
    int req;            /* index */
    char *out;          /* the request bytes */
    size_t out_len, out_at;
    struct http_response http;
    struct sse_reader sse;
    int done;           /* [DONE] seen */
    int usage;          /* the usage chunk seen */
    int finished;       /* a finish_reason seen */
    struct lg_record *rec;
    double t0;
};

/* The request's first failure, and why; later ones are consequences. */
__attribute__((format(printf, 3, 4))) static void fail(struct conn *c, enum lg_failure f, const char *fmt, ...)
{
    if (c->rec->failure != LG_OK)
        return;
    c->rec->failure = f;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->rec->why, sizeof c->rec->why, fmt, ap);
    va_end(ap);
}

static char *request_bytes(const struct lg_target *t, const struct lg_request *r, const struct lg_options *o,
                           size_t *len)
{
    json_t *prompt = r->text ? json_string(r->text) : json_array();
    for (int i = 0; !r->text && i < r->n_prompt; i++)
        json_array_append_new(prompt, json_integer(r->prompt[i]));
    json_t *body = json_pack("{s:s, s:o, s:i, s:b, s:{s:b}, s:f}", "model", t->model ? t->model : "", "prompt",
                             prompt, "max_tokens", r->max_tokens, "stream", 1, "stream_options", "include_usage", 1,
                             "temperature", 0.0);
    if (o->ignore_eos)
        json_object_set_new(body, "ignore_eos", json_true());
    char *js = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    char auth[300] = "";
    if (t->api_key)
        snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", t->api_key);
    char *out = NULL;
    const int n = asprintf(&out,
                           "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n%s"
                           "Accept: text/event-stream\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                           t->path, t->host, t->port, auth, strlen(js), js);
    free(js);
    CHECK(n > 0);
    *len = (size_t)n;
    return out;
}

/* One stream event: a completion chunk, the usage chunk, or [DONE]. */
static int on_event(void *ctx, const char *data, size_t n)
{
    struct conn *c = ctx;
    const double now = clock_now() - c->t0;
    if (c->done) {
        fail(c, LG_FAIL_CHUNK, "an event after [DONE]: %.80s", data);
        return 1;
    }
    if (n == 6 && !memcmp(data, "[DONE]", 6)) {
        c->done = 1;
        return 0;
    }
    json_error_t je;
    json_t *o = json_loadb(data, n, JSON_ALLOW_NUL, &je); /* a token's text may be U+0000 */
    if (!json_is_object(o)) {
        fail(c, LG_FAIL_CHUNK, "an event that is not a JSON object (%s): %.80s", o ? "not an object" : je.text,
             data);
        json_decref(o);
        return 1;
    }
    if (json_object_get(o, "error")) {
        fail(c, LG_FAIL_CHUNK, "an error event: %.120s", data);
        json_decref(o);
        return 1;
    }
    const json_t *choices = json_object_get(o, "choices"), *usage = json_object_get(o, "usage");
    if (!json_is_array(choices)) {
        fail(c, LG_FAIL_CHUNK, "a chunk without \"choices\": %.80s", data);
        json_decref(o);
        return 1;
    }
    for (size_t i = 0; i < json_array_size(choices); i++) {
        const json_t *ch = json_array_get(choices, i);
        const json_t *text = json_object_get(ch, "text");
        if (!text)
            text = json_object_get(json_object_get(ch, "delta"), "content");
        if (json_is_string(text) && json_string_length(text) > 0) {
            struct lg_record *r = c->rec;
            if (r->n_chunks == r->cap_chunks) {
                r->cap_chunks = r->cap_chunks ? 2 * r->cap_chunks : 64;
                r->chunk_at = xrealloc(r->chunk_at, (size_t)r->cap_chunks * sizeof *r->chunk_at);
            }
            if (!r->n_chunks)
                r->first = now;
            r->chunk_at[r->n_chunks++] = now;
        }
        if (json_is_string(json_object_get(ch, "finish_reason")))
            c->finished = 1;
    }
    if (json_is_object(usage)) {
        const json_t *pt = json_object_get(usage, "prompt_tokens"), *ct = json_object_get(usage, "completion_tokens");
        if (!json_is_integer(pt) || !json_is_integer(ct)) {
            fail(c, LG_FAIL_USAGE, "a usage object without integer token counts: %.80s", data);
            json_decref(o);
            return 1;
        }
        c->usage = 1;
        c->rec->prompt_tokens = (int)json_integer_value(pt);
        c->rec->completion_tokens = (int)json_integer_value(ct);
    }
    json_decref(o);
    return 0;
}

static void on_body(void *ctx, const char *p, size_t n)
{
    struct conn *c = ctx;
    if (c->rec->failure == LG_OK && c->http.status == 200)
        sse_reader_feed(&c->sse, p, n, on_event, c);
}

static int set_nonblocking(int fd) { return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* The request ended (its connection closed, or it failed): the checks. */
static void finish(struct conn *c, const struct lg_request *req, const struct lg_options *o, double now)
{
    struct lg_record *r = c->rec;
    r->end = now;
    if (r->failure != LG_OK)
        return;
    if (!c->http.status)
        fail(c, LG_FAIL_CONNECT, "the connection closed before a response");
    else if (c->http.status != 200)
        fail(c, LG_FAIL_STATUS, "HTTP status %d", c->http.status);
    else if (!c->done || sse_reader_pending(&c->sse))
        fail(c, LG_FAIL_CUT, "the stream ended before [DONE]");
    else if (!c->usage)
        fail(c, LG_FAIL_USAGE, "no usage chunk");
    else if ((!req->text && r->prompt_tokens != req->n_prompt) || r->completion_tokens < r->n_chunks ||
             r->completion_tokens > req->max_tokens || (o->ignore_eos && r->completion_tokens != req->max_tokens))
        fail(c, LG_FAIL_USAGE,
             "usage says %d prompt + %d completion tokens for %d prompt ids, max_tokens %d, %d chunks of text",
             r->prompt_tokens, r->completion_tokens, req->n_prompt, req->max_tokens, r->n_chunks);
}

static void conn_close(int ep, struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    free(c->out);
    sse_reader_free(&c->sse);
    c->fd = -1;
    c->out = NULL;
    c->rec = NULL;
}

int lg_run(const struct lg_target *t, const struct lg_request *req, int n, const struct lg_options *o,
           struct lg_record *rec, struct err *e)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    const int gai = getaddrinfo(t->host, t->port, &hints, &ai);
    if (gai)
        return err_set(e, "cannot resolve %s:%s: %s", t->host, t->port, gai_strerror(gai));
    const int max_c = o->max_concurrency > 0 ? o->max_concurrency : n;
    struct conn *conns = xcalloc((size_t)(max_c > 0 ? max_c : 1), sizeof *conns);
    int *free_slots = xmalloc((size_t)(max_c > 0 ? max_c : 1) * sizeof *free_slots), n_free = max_c;
    for (int i = 0; i < max_c; i++)
        conns[i].fd = -1, free_slots[i] = max_c - 1 - i;
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep >= 0);
    for (int i = 0; i < n; i++)
        memset(&rec[i], 0, sizeof rec[i]);
    const double t0 = clock_now();
    int next = 0, running = 0, ended = 0;
    double last_progress = 0;
    char buf[65536];
    struct epoll_event evs[256];
    while (ended < n) {
        double now = clock_now() - t0;
        if (o->time_limit > 0 && now >= o->time_limit) { /* the rest time out */
            for (int s = 0; s < max_c; s++)
                if (conns[s].rec) {
                    fail(&conns[s], LG_FAIL_TIMEOUT, "still running at the time limit");
                    conns[s].rec->end = now;
                    conn_close(ep, &conns[s]);
                    running--;
                    ended++;
                }
            for (; next < n; next++, ended++) {
                rec[next].failure = LG_FAIL_TIMEOUT;
                snprintf(rec[next].why, sizeof rec[next].why, "not started before the time limit");
            }
            break;
        }
        while (next < n && n_free > 0 && req[next].arrival <= now) { /* start what has arrived */
            struct conn *c = &conns[free_slots[--n_free]];
            memset(c, 0, sizeof *c);
            c->req = next;
            c->rec = &rec[next];
            c->t0 = t0;
            c->rec->sent = now;
            http_response_init(&c->http);
            sse_reader_init(&c->sse);
            c->out = request_bytes(t, &req[next], o, &c->out_len);
            c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            int one = 1;
            if (c->fd >= 0)
                setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (c->fd < 0 || set_nonblocking(c->fd) ||
                (connect(c->fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)) {
                fail(c, LG_FAIL_CONNECT, "connect: %s", strerror(errno));
                c->rec->end = now;
                conn_close(ep, c);
                free_slots[n_free++] = (int)(c - conns);
                ended++;
            } else {
                struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP, .data.ptr = c};
                CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) == 0);
                running++;
            }
            next++;
        }
        int wait_ms = 100;
        if (next < n && n_free > 0) {
            const double until = req[next].arrival - now;
            wait_ms = until <= 0 ? 0 : until < 0.1 ? (int)(until * 1000) + 1 : 100;
        }
        const int k = epoll_wait(ep, evs, (int)(sizeof evs / sizeof evs[0]), wait_ms);
        now = clock_now() - t0;
        for (int i = 0; i < k; i++) {
            struct conn *c = evs[i].data.ptr;
            int closed = 0;
            if (c->out_at < c->out_len && (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                const ssize_t w = send(c->fd, c->out + c->out_at, c->out_len - c->out_at, MSG_NOSIGNAL);
                if (w < 0 && errno != EAGAIN) {
                    fail(c, LG_FAIL_CONNECT, "send: %s", strerror(errno));
                    closed = 1;
                } else if (w > 0 && (c->out_at += (size_t)w) == c->out_len) {
                    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (!closed && (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
                for (;;) {
                    const ssize_t r = recv(c->fd, buf, sizeof buf, 0);
                    if (r > 0) {
                        if (c->rec->failure == LG_OK &&
                            http_response_feed(&c->http, buf, (size_t)r, on_body, c) < 0)
                            fail(c, LG_FAIL_HTTP, "malformed HTTP: %s", c->http.why);
                        continue;
                    }
                    if (r == 0) {
                        if (c->rec->failure == LG_OK && http_response_closed(&c->http) && c->http.status == 200)
                            fail(c, LG_FAIL_CUT, "the connection closed mid-response");
                        closed = 1;
                    } else if (errno != EAGAIN && errno != EINTR) {
                        if (c->http.stage == HTTP_STATUS_LINE)
                            fail(c, LG_FAIL_CONNECT, "recv: %s", strerror(errno));
                        else
                            fail(c, LG_FAIL_CUT, "recv: %s", strerror(errno));
                        closed = 1;
                    }
                    break;
                }
            }
            if (closed) {
                finish(c, &req[c->req], o, now);
                conn_close(ep, c);
                free_slots[n_free++] = (int)(c - conns);
                running--;
                ended++;
            }
        }
        if (o->progress && now - last_progress >= 1.0) {
            last_progress = now;
            fprintf(stderr, "\rbench-serve: %d/%d done, %d running, %.0f s", ended, n, running, now);
            fflush(stderr);
        }
    }
    if (o->progress)
        fprintf(stderr, "\rbench-serve: %d/%d done in %.1f s%20s\n", ended, n, clock_now() - t0, "");
    close(ep);
    freeaddrinfo(ai);
    free(conns);
    free(free_slots);
    return 0;
}
