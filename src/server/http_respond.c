/* Responses (http.h): heads, whole bodies, streams (chunked on HTTP/1.1,
 * ended by closing on HTTP/1.0), and the layer's own errors. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server/http_internal.h"

#define STREAM_PIECE (16 << 10) /* the most a streamed response's source gives at once */

int http_conn_write(struct http_conn *c, struct iovec *iov, int n)
{
    while (n > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t k = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            c->gone = 1;
            return -1;
        }
        for (; n > 0 && (size_t)k >= iov->iov_len; iov++, n--)
            k -= (ssize_t)iov->iov_len;
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

static const char *reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
    }
}

__attribute__((format(printf, 4, 5))) static void put(char *b, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b + *n, cap - *n, fmt, ap);
    va_end(ap);
    CHECK(k >= 0 && (size_t)k < cap - *n); /* the head's parts are ours, and short */
    *n += (size_t)k;
}

size_t http_format_head(char *b, size_t cap, int status, const char *type, const char *extra, long long length,
                        int chunked, int close, int keep_alive_10)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = 0;
    put(b, cap, &n, "HTTP/1.1 %d %s\r\nDate: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n", status, reason(status),
        days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (type)
        put(b, cap, &n, "Content-Type: %s\r\n", type);
    if (length >= 0)
        put(b, cap, &n, "Content-Length: %lld\r\n", length);
    else if (chunked)
        put(b, cap, &n, "Transfer-Encoding: chunked\r\n");
    put(b, cap, &n, "%s%s\r\n", extra ? extra : "",
        close ? "Connection: close\r\n" : keep_alive_10 ? "Connection: keep-alive\r\n" : "");
    return n;
}

/* The head, and the body unless HEAD. Decides whether the connection ends
 * after it: the client's wish, a body left unread (its bytes would be read
 * as the next request), a cut stream, the stop. */
static int send_response(struct http_conn *c, int status, const char *type, const char *extra, long long length,
                         const void *body, size_t len)
{
    struct http_request *rq = &c->rq;
    const int has_body = c->head.chunked || c->head.content_length > 0;
    const int chunked = length < 0 && rq->minor == 1;
    rq->close |= !c->head.keep_alive || (has_body && c->body_state != BODY_READ) || (length < 0 && !chunked) ||
                 http_stopping(c->hs);
    char head[1024];
    size_t n = http_format_head(head, sizeof head, status, type, extra, length, chunked, rq->close,
                           !rq->close && rq->minor == 0);
    struct iovec iov[2] = {{head, n}, {(void *)body, rq->head_only ? 0 : len}};
    return http_conn_write(c, iov, 2);
}

void http_refuse(struct http_conn *c, int status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len = 0;
    char *body = c->hs->cfg.error_body(c->hs->cfg.ctx, status, msg, &len);
    c->responded = 1;
    c->rq.close = 1;
    send_response(c, status, c->hs->cfg.error_type, NULL, (long long)len, body, len);
    free(body);
}

int http_respond(struct http_request *rq, int status, const char *type, const char *extra, const void *body,
                 size_t len)
{
    struct http_conn *c = rq->conn;
    if (c->responded)
        return -1;
    c->responded = 1;
    return send_response(c, status, type, extra, (long long)len, body, len);
}

int http_respond_stream(struct http_request *rq, int status, const char *type, const char *extra,
                        http_stream_fn next, void *arg)
{
    struct http_conn *c = rq->conn;
    if (c->responded)
        return -1;
    c->responded = 1;
    const int chunked = rq->minor == 1;
    if (send_response(c, status, type, extra, -1, NULL, 0))
        return -1;
    if (rq->head_only)
        return 0;
    enum { ROOM = 16 }; /* before the piece: its chunk-size line */
    char *buf = xmalloc(ROOM + STREAM_PIECE + 2);
    int rc = 0;
    for (;;) {
        const long n = next(arg, buf + ROOM, STREAM_PIECE);
        if (n < 0 || n > STREAM_PIECE) {
            c->gone = 1; /* no last chunk: the client sees the stream was cut */
            rc = -1;
            break;
        }
        struct iovec iov = {buf + ROOM, (size_t)n};
        if (n == 0 && chunked) {
            iov = (struct iovec){"0\r\n\r\n", 5};
        } else if (chunked) {
            char size[ROOM];
            const int k = snprintf(size, sizeof size, "%lx\r\n", n);
            memcpy(buf + ROOM - k, size, (size_t)k);
            memcpy(buf + ROOM + n, "\r\n", 2);
            iov = (struct iovec){buf + ROOM - k, (size_t)(k + n + 2)};
        }
        if (iov.iov_len && http_conn_write(c, &iov, 1)) {
            rc = -1;
            break;
        }
        if (n == 0)
            break;
    }
    free(buf);
    return rc;
}
