/* The HTTP server (http.h): the listening socket and its accept thread, a
 * thread per connection that reads request heads (http_parse.c) and hands
 * each request to the handler (bodies: http_body.c; responses:
 * http_respond.c), and the stop.
 *
 * A connection's read buffer holds one request's head from its start, then
 * serves as the window its body is read through; bytes read past the
 * request (pipelined ones) move to the front for the next. It starts at
 * BUF_START and grows only for a large head (to BUF_MAX), shrinking back
 * after that request, so an idle kept-alive connection holds little. */
#include "server/http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "server/http_internal.h"

#define BUF_START 4096              /* most heads, and small bodies after them */
#define BUF_MAX (2 * HTTP_MAX_HEAD) /* a head at the limit, a byte more to see it is over, the body window */
#define BODY_WINDOW 4096            /* room after a head to read a body through */
#define LINGER_SECONDS 2.0          /* after the last response: see linger() */
#define LINGER_BYTES (16 << 20)
#define STOP_GRACE_SECONDS 5.0      /* for the handlers still running at the stop to answer */

/* ---- the socket ---- */

long http_conn_read(struct http_conn *c, char *p, size_t n)
{
    const int ms = c->hs->cfg.timeout > 0 ? (int)(c->hs->cfg.timeout * 1000) : -1;
    for (;;) {
        struct pollfd pf = {c->fd, POLLIN, 0};
        int r = poll(&pf, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            c->timed_out = 1;
        if (r <= 0)
            return -1;
        ssize_t k = recv(c->fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        return k;
    }
}

/* Closing a socket with unread bytes makes the kernel send a reset, which
 * can destroy the response still on its way (the client that writes its
 * whole body before it reads would see a reset, not the 413). So: end our
 * side, then read and drop what the client still sends, for a bounded time,
 * until it closes too. */
static void linger(int fd)
{
    shutdown(fd, SHUT_WR);
    char sink[4096];
    size_t total = 0;
    const double until = clock_now() + LINGER_SECONDS;
    while (total < LINGER_BYTES) {
        const double left = until - clock_now();
        struct pollfd pf = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
            break;
        ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0)
            break;
        total += (size_t)n;
    }
}

/* ---- requests ---- */

const char *http_header(const struct http_request *rq, const char *name)
{
    return http_head_field(&rq->conn->head, rq->conn->buf, name);
}

int http_fd(const struct http_request *rq) { return rq->conn->fd; }

static void grow(struct http_conn *c, size_t need)
{
    size_t cap = 2 * c->cap > need ? 2 * c->cap : need;
    c->cap = cap > BUF_MAX && need <= BUF_MAX ? BUF_MAX : cap;
    c->buf = xrealloc(c->buf, c->cap);
}

/* Reads until the head is whole: 1, or 0 when the connection ends (the
 * client closed or idled between requests, or the head was refused). */
static int read_head(struct http_conn *c)
{
    for (;;) {
        int st = c->len ? http_head_parse(&c->head, c->buf, c->len) : HTTP_MORE;
        if (st == HTTP_DONE)
            return 1;
        if (st != HTTP_MORE) {
            http_refuse(c, st, "%s", c->head.why);
            return 0;
        }
        if (c->len == c->cap)
            grow(c, c->cap + 1);
        long n = http_conn_read(c, c->buf + c->len, c->cap - c->len);
        if (n > 0) {
            c->len += (size_t)n;
            continue;
        }
        if (!http_head_started(&c->head, c->len) || (n < 0 && !c->timed_out))
            c->gone = 1; /* between requests, or a reset: nobody to answer */
        else if (n == 0)
            http_refuse(c, 400, "the connection ended inside the request head");
        else
            http_refuse(c, 408, "no complete request head within %.0f s", c->hs->cfg.timeout);
        return 0;
    }
}

/* %XX to its byte, in place; a bad escape, and %00, stay as they are. */
static void percent_decode(char *s)
{
    char *out = s;
    for (; *s; s++) {
        int hi, lo;
        if (*s == '%' && (hi = http_hex_value((unsigned char)s[1])) >= 0 &&
            (lo = http_hex_value((unsigned char)s[2])) >= 0 && (hi || lo)) {
            *out++ = (char)(hi << 4 | lo);
            s += 2;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

/* The request the handler gets, from the whole head. */
static void prepare(struct http_conn *c)
{
    if (c->cap - c->head.len < BODY_WINDOW)
        grow(c, c->head.len + BODY_WINDOW);
    c->pos = c->head.len;
    const struct http_head *h = &c->head;
    char *target = c->buf + h->target, *q = strchr(target, '?');
    if (q)
        *q = '\0';
    percent_decode(target);
    c->rq = (struct http_request){.method = c->buf + h->method, .path = target, .query = q ? q + 1 : "",
                                  .minor = h->minor, .content_length = h->content_length, .chunked = h->chunked,
                                  .expect_continue = h->expect_continue, .conn = c};
    c->rq.head_only = !strcmp(c->rq.method, "HEAD");
}

/* After a response on a kept connection: what was read past the request
 * moves to the front, and what a large request grew is given back. */
static void next_request(struct http_conn *c)
{
    const size_t rest = c->len - c->pos;
    memmove(c->buf, c->buf + c->pos, rest);
    c->len = rest;
    c->pos = 0;
    if (c->cap > BUF_START && rest <= BUF_START) {
        c->cap = BUF_START;
        c->buf = xrealloc(c->buf, c->cap);
    }
    free(c->rq.body);
    memset(&c->rq, 0, sizeof c->rq);
    memset(&c->chunked, 0, sizeof c->chunked);
    if (c->head.cap_fields > 64)
        http_head_free(&c->head);
    else
        http_head_reset(&c->head);
    c->body_cap = 0;
    c->body_state = BODY_UNREAD;
    c->responded = c->timed_out = 0;
}

int http_stopping(struct http_server *hs)
{
    pthread_mutex_lock(&hs->mu);
    int s = hs->stopping;
    pthread_mutex_unlock(&hs->mu);
    return s;
}

/* ---- connections ---- */

/* Marks c in or out of the handler; returns whether the server stops. */
static int set_busy(struct http_conn *c, int busy)
{
    pthread_mutex_lock(&c->hs->mu);
    c->busy = busy;
    int s = c->hs->stopping;
    pthread_mutex_unlock(&c->hs->mu);
    return s;
}

/* Off the server's list; called with hs->mu held. */
static void unlink_conn(struct http_server *hs, struct http_conn *c)
{
    *(c->prev ? &c->prev->next : &hs->conns) = c->next;
    if (c->next)
        c->next->prev = c->prev;
    hs->n_conns--;
}

static void *conn_main(void *arg)
{
    struct http_conn *c = arg;
    struct http_server *hs = c->hs;
    while (read_head(c)) {
        prepare(c);
        set_busy(c, 1);
        hs->cfg.handle(hs->cfg.ctx, &c->rq);
        if (set_busy(c, 0) || !c->responded || c->rq.close || c->gone)
            break;
        next_request(c);
    }
    if (!c->gone)
        linger(c->fd);
    free(c->rq.body);
    free(c->buf);
    http_head_free(&c->head);
    pthread_mutex_lock(&hs->mu); /* the fd closes while listed, so the stop never shuts a reused number */
    close(c->fd);
    unlink_conn(hs, c);
    pthread_cond_broadcast(&hs->gone);
    pthread_mutex_unlock(&hs->mu);
    free(c); /* nothing of hs is touched from here: http_stop may have freed it */
    return NULL;
}

/* Over max_connections: a 503 without a thread, sent only if the socket
 * takes it at once (the accept thread must not wait on a client). */
static void refuse_busy(struct http_server *hs, int fd)
{
    char msg[96], head[512], sink[4096];
    snprintf(msg, sizeof msg, "%d connections are open, the most this server takes; try again later",
             hs->cfg.max_connections);
    size_t len = 0;
    char *body = hs->cfg.error_body(hs->cfg.ctx, 503, msg, &len);
    size_t n = http_format_head(head, sizeof head, 503, hs->cfg.error_type, NULL, (long long)len, 0, 1, 0);
    struct iovec iov[2] = {{head, n}, {body, len}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    if (sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
        shutdown(fd, SHUT_WR);
    while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) /* what already came: a close with it unread resets */
        ;
    close(fd);
    free(body);
}

static void admit(struct http_server *hs, int fd)
{
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* an SSE event must not wait for an ACK */
    const double t = hs->cfg.timeout > 0 ? hs->cfg.timeout : 0;
    struct timeval tv = {(time_t)t, (suseconds_t)((t - (double)(time_t)t) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct http_conn *c = xcalloc(1, sizeof *c);
    c->hs = hs;
    c->fd = fd;
    c->cap = BUF_START;
    c->buf = xmalloc(c->cap);
    pthread_mutex_lock(&hs->mu);
    const int full = hs->n_conns >= hs->cfg.max_connections;
    if (!full) {
        c->next = hs->conns;
        if (hs->conns)
            hs->conns->prev = c;
        hs->conns = c;
        hs->n_conns++;
    }
    pthread_mutex_unlock(&hs->mu);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED); /* it ends alone; the stop waits on n_conns */
    pthread_t th;
    if (full || pthread_create(&th, &a, conn_main, c)) {
        if (!full) {
            pthread_mutex_lock(&hs->mu);
            unlink_conn(hs, c);
            pthread_mutex_unlock(&hs->mu);
        }
        refuse_busy(hs, fd);
        free(c->buf);
        free(c);
    }
    pthread_attr_destroy(&a);
}

static void *accept_main(void *arg)
{
    struct http_server *hs = arg;
    for (;;) {
        struct pollfd p[2] = {{hs->listen_fd, POLLIN, 0}, {hs->wake[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents)
            return NULL;
        int fd = accept4(hs->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            admit(hs, fd);
        else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            usleep(50000); /* out of descriptors: let connections end rather than spin */
    }
}

struct http_server *http_listen(const char *host, int port_number, struct err *e)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", port_number);
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc || !res) {
        err_set(e, "no such address (%s)", gai_strerror(rc));
        return NULL;
    }
    const int one = 1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, SOMAXCONN)) {
        err_set(e, "cannot listen (%s)", strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return NULL;
    }
    freeaddrinfo(res);
    struct http_server *hs = xcalloc(1, sizeof *hs);
    hs->listen_fd = fd;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
        hs->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
    CHECK(pipe2(hs->wake, O_CLOEXEC) == 0);
    pthread_mutex_init(&hs->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&hs->gone, &ca);
    pthread_condattr_destroy(&ca);
    return hs;
}

void http_serve(struct http_server *hs, const struct http_config *cfg)
{
    CHECK(!hs->serving);
    hs->cfg = *cfg;
    hs->serving = 1;
    CHECK(pthread_create(&hs->acceptor, NULL, accept_main, hs) == 0);
}

int http_port(const struct http_server *hs) { return hs->port; }

/* Shuts the sockets of the connections (the handler's too, or only those
 * outside it): their threads' reads and writes end at once. */
static void shut_conns(struct http_server *hs, int busy_too)
{
    for (struct http_conn *c = hs->conns; c; c = c->next)
        if (busy_too || !c->busy)
            shutdown(c->fd, SHUT_RDWR);
}

void http_stop(struct http_server *hs)
{
    if (!hs)
        return;
    if (hs->serving) {
        CHECK(write(hs->wake[1], "", 1) == 1);
        pthread_join(hs->acceptor, NULL);
    }
    close(hs->listen_fd);
    pthread_mutex_lock(&hs->mu);
    hs->stopping = 1;
    shut_conns(hs, 0);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)STOP_GRACE_SECONDS;
    while (hs->n_conns && pthread_cond_timedwait(&hs->gone, &hs->mu, &until) != ETIMEDOUT)
        ;
    shut_conns(hs, 1);
    while (hs->n_conns)
        pthread_cond_wait(&hs->gone, &hs->mu);
    pthread_mutex_unlock(&hs->mu);
    close(hs->wake[0]);
    close(hs->wake[1]);
    pthread_cond_destroy(&hs->gone);
    pthread_mutex_destroy(&hs->mu);
    free(hs);
}
