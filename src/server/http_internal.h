/* What the HTTP layer's files share (http.c: the server, connections and
 * request heads; http_body.c: request bodies; http_respond.c: responses). */
#ifndef INFER_SERVER_HTTP_INTERNAL_H
#define INFER_SERVER_HTTP_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <sys/uio.h>

#include "server/http.h"
#include "server/http_parse.h"

struct http_server {
    struct http_config cfg;
    int listen_fd, wake[2], port;
    pthread_t acceptor;
    pthread_mutex_t mu;
    pthread_cond_t gone;     /* a connection ended */
    struct http_conn *conns; /* the open ones: the stop shuts their sockets */
    int n_conns, stopping;
    int serving; /* http_serve ran: the acceptor thread exists */
};

enum { BODY_UNREAD, BODY_READ, BODY_FAILED };

struct http_conn {
    struct http_server *hs;
    int fd;
    char *buf;
    size_t cap, len, pos; /* buf[0, len) read, buf[0, pos) used by the request */
    struct http_head head;
    struct http_chunked chunked;
    struct http_request rq;
    size_t body_cap;
    int body_state, responded;
    int gone;      /* the client left, idled out, or the response was cut: close at once */
    int timed_out; /* the last read waited cfg.timeout */
    int busy;      /* in the handler (the server's lock) */
    struct http_conn *prev, *next;
};

/* Up to n bytes once the client sends some: > 0, 0 at its end, -1 on an
 * error or after cfg.timeout without a byte (timed_out). */
long http_conn_read(struct http_conn *c, char *p, size_t n);
/* All of iov, or -1 (the client left, or took nothing for cfg.timeout: SO_SNDTIMEO). */
int http_conn_write(struct http_conn *c, struct iovec *iov, int n);
/* Whether http_stop has begun. */
int http_stopping(struct http_server *hs);
/* A response head. length: the body's, or -1 for a stream (chunked, or
 * ended by closing). keep_alive_10: tell an HTTP/1.0 client it is kept. */
size_t http_format_head(char *b, size_t cap, int status, const char *type, const char *extra, long long length,
                        int chunked, int close, int keep_alive_10);
/* An error of the layer's own: the user's body for it, and the connection ends. */
void http_refuse(struct http_conn *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
