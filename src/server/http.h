/* A small HTTP/1.1 server (RFC 9112) for `infer serve`: one listening
 * socket, an accept thread, a thread per connection (at most
 * max_connections; beyond, a 503 and the connection closed), keep-alive,
 * request heads and chunked bodies parsed with hard limits (http_parse.h),
 * whole and streamed responses. Every error this layer answers by itself
 * gets the body its user makes (the OpenAI server: OpenAI's JSON error) and
 * closes the connection. The handler runs on the connection's thread and may
 * block there as long as it likes: the timeout only runs while the server
 * waits on the client (for a request, for its body, or for it to take a
 * response). */
#ifndef INFER_SERVER_HTTP_H
#define INFER_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct http_conn;

/* One request, its head parsed and its framing checked; valid until the
 * handler returns. */
struct http_request {
    const char *method;
    const char *path;  /* the target's path, percent-decoded */
    const char *query; /* after '?', as sent; "" without */
    int minor;         /* HTTP/1.minor (0 or 1) */
    int head_only;     /* HEAD: responses go without their body */
    uint64_t content_length; /* announced (0 without Content-Length) */
    int chunked;
    int expect_continue; /* the client waits for "100 Continue" before its body */
    /* http_read_body's result: the bytes kept (NUL-terminated; NULL when
     * none came) and whether more came than were kept */
    char *body;
    size_t body_len;
    int body_over_limit;
    /* the handler sets it before answering: the connection ends after the
     * response (the layer adds its own reasons) */
    int close;
    struct http_conn *conn;
};

struct http_config {
    int max_connections;
    double timeout; /* seconds the client may keep the server waiting (60) */
    /* Answers rq once (http_respond*), or returns without: the connection
     * then closes. Runs on the connection's thread. */
    void (*handle)(void *ctx, struct http_request *rq);
    /* The body (malloc'ed) of an error the layer answers by itself: a bad
     * request, a body too large, too many connections. Called once per such
     * error, from any thread. */
    char *(*error_body)(void *ctx, int status, const char *message, size_t *len);
    const char *error_type; /* that body's Content-Type */
    void *ctx;
};

struct http_server;

/* Binds host (a name or address; IPv4 or IPv6) and port (0: an ephemeral
 * one, http_port says which) and listens; connections wait in the backlog until
 * http_serve. NULL with e set when the host does not resolve or its address
 * cannot be bound (the message names neither). A server binds before it
 * loads its model, so a port in use fails at once. */
struct http_server *http_listen(const char *host, int port, struct err *e);
/* Starts accepting with cfg's handler. */
void http_serve(struct http_server *hs, const struct http_config *cfg);
int http_port(const struct http_server *hs);
/* Stops accepting, lets the handlers running answer (a few seconds at
 * most), then closes every connection and waits for their threads; frees hs
 * (one that only listened too). */
void http_stop(struct http_server *hs);

/* The first header field named name (any case), or NULL. */
const char *http_header(const struct http_request *rq, const char *name);
/* The client's socket, to notice a client that left (poll it; do not read). */
int http_fd(const struct http_request *rq);

/* Reads the body: the first `keep` bytes into rq->body, the rest counted
 * and dropped (rq->body_over_limit); more than `most` bytes in all (or
 * announced) is refused with a 413. Sends "100 Continue" first when the
 * client waits for it. Returns 0, or -1 when the request got the layer's
 * error or the client left: the handler returns without answering. Not
 * called, a request's body is left unread and the connection closes after
 * the response. */
int http_read_body(struct http_request *rq, size_t keep, uint64_t most);

/* A whole response: the status, Content-Type (unless NULL), Content-Length,
 * the extra header lines ("Name: value\r\n" each, or NULL), the body.
 * Returns 0, or -1 when it could not be sent (the client left). */
int http_respond(struct http_request *rq, int status, const char *type, const char *extra, const void *body,
                 size_t len);

/* A streamed response's source: writes up to max bytes into buf and returns
 * how many; 0 ends the response, < 0 cuts it (the connection closes, so the
 * client sees it was not whole). May block. */
typedef long (*http_stream_fn)(void *arg, char *buf, size_t max);
/* A streamed response: chunked on HTTP/1.1, ended by closing on HTTP/1.0;
 * each piece goes out as the source gives it. Returns when the source ended
 * (0) or the stream was cut or could not be sent (-1). */
int http_respond_stream(struct http_request *rq, int status, const char *type, const char *extra,
                        http_stream_fn next, void *arg);

#endif
