/* Request bodies (http_read_body): by Content-Length, straight into the
 * body while it is kept, or chunked through the connection's buffer; what is
 * over the kept limit is read and dropped, up to a hard one. */
#include <stdlib.h>
#include <string.h>

#include "server/http_internal.h"

/* The first keep bytes of p[0, n) that fit into the body; the rest dropped. */
static void body_add(struct http_conn *c, const char *p, size_t n, size_t keep)
{
    struct http_request *rq = &c->rq;
    size_t take = rq->body_len < keep ? keep - rq->body_len : 0;
    if (take > n)
        take = n;
    rq->body_over_limit |= take < n;
    if (!take)
        return;
    if (rq->body_len + take + 1 > c->body_cap) {
        c->body_cap = 2 * (rq->body_len + take + 1);
        if (c->body_cap > keep + 1)
            c->body_cap = keep + 1;
        rq->body = xrealloc(rq->body, c->body_cap);
    }
    memcpy(rq->body + rq->body_len, p, take);
    rq->body_len += take;
    rq->body[rq->body_len] = '\0';
}

/* The client stopped sending inside its body (http_conn_read's n). */
static int body_cut(struct http_conn *c, long n)
{
    if (n == 0)
        http_refuse(c, 400, "the connection ended inside the request body");
    else if (c->timed_out)
        http_refuse(c, 408, "no byte of the request body for %.0f s", c->hs->cfg.timeout);
    else
        c->gone = 1;
    return -1;
}

/* Next bytes of the body through the buffer's window (the head stays). */
static long window_read(struct http_conn *c)
{
    c->pos = c->len = c->head.len;
    long n = http_conn_read(c, c->buf + c->len, c->cap - c->len);
    if (n > 0)
        c->len += (size_t)n;
    return n;
}

static int read_length(struct http_conn *c, size_t keep)
{
    struct http_request *rq = &c->rq;
    uint64_t left = rq->content_length;
    c->body_cap = (left < keep ? (size_t)left : keep) + 1;
    rq->body = xmalloc(c->body_cap);
    rq->body[0] = '\0';
    const size_t have = c->len - c->pos, take = have < left ? have : (size_t)left;
    body_add(c, c->buf + c->pos, take, keep);
    c->pos += take;
    left -= take;
    while (left) {
        long n;
        if (rq->body_len < keep) { /* straight into the body */
            size_t room = keep - rq->body_len;
            n = http_conn_read(c, rq->body + rq->body_len, room < left ? room : (size_t)left);
            if (n > 0)
                rq->body[rq->body_len += (size_t)n] = '\0';
        } else { /* past what is kept: through the window, dropped */
            c->pos = c->len = c->head.len;
            size_t room = c->cap - c->len;
            n = http_conn_read(c, c->buf + c->len, room < left ? room : (size_t)left); /* never past the body */
            rq->body_over_limit |= n > 0;
        }
        if (n <= 0)
            return body_cut(c, n);
        left -= (uint64_t)n;
    }
    return 0;
}

static int read_chunked(struct http_conn *c, size_t keep, uint64_t most)
{
    uint64_t total = 0;
    for (;;) {
        if (c->pos == c->len) {
            long n = window_read(c);
            if (n <= 0)
                return body_cut(c, n);
        }
        size_t used, data;
        const int st = http_chunked_decode(&c->chunked, c->buf + c->pos, c->len - c->pos, &used, &data);
        body_add(c, c->buf + c->pos, data, keep);
        total += data;
        c->pos += used;
        if (st == HTTP_DONE)
            return 0;
        if (st != HTTP_MORE) {
            http_refuse(c, st, "%s", c->chunked.why);
            return -1;
        }
        if (total > most || c->chunked.left > most - total) {
            http_refuse(c, 413, "the request body exceeds %zu bytes", keep);
            return -1;
        }
    }
}

int http_read_body(struct http_request *rq, size_t keep, uint64_t most)
{
    struct http_conn *c = rq->conn;
    if (c->body_state != BODY_UNREAD || c->responded)
        return c->body_state == BODY_READ ? 0 : -1;
    c->body_state = BODY_FAILED;
    if (rq->chunked || rq->content_length) {
        if (rq->content_length > most) {
            http_refuse(c, 413, "the request body exceeds %zu bytes", keep);
            return -1;
        }
        if (rq->expect_continue && rq->minor == 1) {
            struct iovec iov = {"HTTP/1.1 100 Continue\r\n\r\n", 25};
            if (http_conn_write(c, &iov, 1))
                return -1;
        }
        if (rq->chunked ? read_chunked(c, keep, most) : read_length(c, keep))
            return -1;
    }
    c->body_state = BODY_READ;
    return 0;
}
