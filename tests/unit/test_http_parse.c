/* The HTTP request parser (src/server/http_parse.c): a table of heads with
 * the status each must get (every refusal, the limits at their edges), each
 * parsed whole, a byte at a time and split in two at every position, which
 * must all give the same answer (the first status other than "more" is the
 * whole head's, and a good head is done only at its last byte); what a good
 * head says (method, target, fields, framing, keep-alive); and chunked
 * bodies, whole and a byte at a time, with their refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_parse.h"

/* ---- heads ---- */

static int parse_whole(const char *data, size_t n, struct http_head *h, char **buf)
{
    *buf = malloc(n + 1);
    memcpy(*buf, data, n);
    memset(h, 0, sizeof *h);
    return http_head_parse(h, *buf, n);
}

/* Feeds data[0, n) in the pieces [0, cut), then a byte at a time if step,
 * else the rest at once; returns the first status that is not HTTP_MORE and
 * the length it came at. */
static int parse_pieces(const char *data, size_t n, size_t cut, int step, size_t *at)
{
    char *buf = malloc(n + 1);
    memcpy(buf, data, n);
    struct http_head h = {0};
    int st = HTTP_MORE;
    for (size_t len = cut; len <= n; len = step ? len + 1 : n) {
        *at = len;
        if ((st = http_head_parse(&h, buf, len)) != HTTP_MORE || len == n)
            break;
    }
    http_head_free(&h);
    free(buf);
    return st;
}

struct head_case {
    const char *name;
    const char *data;
    int status;
    size_t len; /* of data: it may hold a NUL */
};

#define H(name, data, status) {name, data, status, sizeof data - 1}

static const struct head_case HEADS[] = {
    H("get", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_DONE),
    H("post-length", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n", HTTP_DONE),
    H("http-1.0-no-host", "GET / HTTP/1.0\r\n\r\n", HTTP_DONE),
    H("http-1.2-as-1.1", "GET / HTTP/1.2\r\nHost: x\r\n\r\n", HTTP_DONE),
    H("bare-lf", "GET / HTTP/1.1\nHost: x\n\n", HTTP_DONE),
    H("leading-blank-lines", "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_DONE),
    H("raw-utf8-target", "GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_DONE),
    H("value-ows-and-obs-text", "GET / HTTP/1.1\r\nHost: x\r\nX-A: \t a\xc3\xa9 b \t\r\n\r\n", HTTP_DONE),
    H("empty-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A:\r\n\r\n", HTTP_DONE),
    H("length-ows", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  5 \r\n\r\n", HTTP_DONE),
    H("length-max", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n", HTTP_DONE),
    H("chunked-any-case", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ChUnKeD\r\n\r\n", HTTP_DONE),
    H("method-32", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEF / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_DONE),
    /* the request line */
    H("garbage", "GARBAGE\r\n\r\n", 400),
    H("binary", "\x00\x01\x02\xff\xfe\r\n\r\n", 400),
    H("method-only", "GET\r\n\r\n", 400),
    H("no-version", "GET /health\r\n\r\n", 400),
    H("two-spaces", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    H("trailing-space", "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400),
    H("tab-separator", "GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    H("bare-cr-in-line", "GET / HTTP/1.1\r\rHost: x\r\n\r\n", 400),
    H("control-in-target", "GET /a\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    H("bad-version", "GET / FOO\r\nHost: x\r\n\r\n", 400),
    H("lowercase-version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400),
    H("version-no-minor-1", "GET / HTTP/1\r\nHost: x\r\n\r\n", 400),
    H("version-two-digit-minor", "GET / HTTP/1.10\r\nHost: x\r\n\r\n", 400),
    H("http-2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    H("http-2", "GET / HTTP/2\r\nHost: x\r\n\r\n", 505),
    H("http-0.9", "GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505),
    H("http-9.9", "GET / HTTP/9.9\r\nHost: x\r\n\r\n", 505),
    H("method-33", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
    /* header lines */
    H("no-colon", "GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400),
    H("space-before-colon", "GET / HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n", 400),
    H("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n", 400),
    H("obs-fold-tab", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n\tc\r\n\r\n", 400),
    H("empty-name", "GET / HTTP/1.1\r\nHost: x\r\n: b\r\n\r\n", 400),
    H("bad-name-char", "GET / HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n", 400),
    H("nul-in-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\0c\r\n\r\n", 400),
    H("bare-cr-in-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\rc\r\n\r\n", 400),
    H("del-in-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: b\x7f\r\n\r\n", 400),
    H("no-host", "GET / HTTP/1.1\r\n\r\n", 400),
    H("host-twice", "GET / HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n", 400),
    /* framing */
    H("length-negative", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
    H("length-letters", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
    H("length-empty", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", 400),
    H("length-plus", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", 400),
    H("length-list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n", 400),
    H("length-inner-space", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5 5\r\n\r\n", 400),
    H("length-overflow", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551616\r\n\r\n", 400),
    H("length-twice-equal", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", 400),
    H("length-and-chunked", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
     400),
    H("chunked-twice", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
     400),
    H("gzip", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    H("gzip-chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    H("chunked-in-1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
};

#define N_HEADS (sizeof HEADS / sizeof HEADS[0])

Test(http_parse, every_head_whole_byte_by_byte_and_split_anywhere)
{
    for (size_t i = 0; i < N_HEADS; i++) {
        const struct head_case *c = &HEADS[i];
        const size_t n = c->len;
        struct http_head h;
        char *buf;
        int st = parse_whole(c->data, n, &h, &buf);
        cr_assert_eq(st, c->status, "%s: %d, expected %d (%s)", c->name, st, c->status, h.why);
        if (st == HTTP_DONE)
            cr_assert_eq(h.len, n, "%s: the head is %zu bytes, not %zu", c->name, h.len, n);
        else
            cr_assert(h.why[0], "%s: a refusal without a message", c->name);
        http_head_free(&h);
        free(buf);
        size_t at;
        st = parse_pieces(c->data, n, 1, 1, &at);
        cr_assert_eq(st, c->status, "%s, a byte at a time: %d, expected %d", c->name, st, c->status);
        cr_assert(st != HTTP_DONE || at == n, "%s: done after %zu of %zu bytes", c->name, at, n);
        for (size_t cut = 0; cut <= n; cut++) {
            st = parse_pieces(c->data, n, cut, 0, &at);
            cr_assert_eq(st, c->status, "%s, split at %zu: %d, expected %d", c->name, cut, st, c->status);
        }
    }
}

Test(http_parse, what_a_head_says)
{
    static const char d[] = "POST /v1/x?y=1 HTTP/1.1\r\nHost: h\r\ncontent-type:  application/json \r\n"
                            "Content-Length: 12\r\nExpect: 100-Continue\r\nConnection: Upgrade, Close\r\n\r\nBODY";
    struct http_head h;
    char *buf;
    cr_assert_eq(parse_whole(d, sizeof d - 1, &h, &buf), HTTP_DONE, "%s", h.why);
    cr_assert_eq(h.len, sizeof d - 1 - 4);
    cr_assert_str_eq(buf + h.method, "POST");
    cr_assert_str_eq(buf + h.target, "/v1/x?y=1");
    cr_assert_eq(h.target_len, 9);
    cr_assert_eq(h.minor, 1);
    cr_assert_eq(h.n_fields, 5);
    cr_assert_str_eq(http_head_field(&h, buf, "Content-Type"), "application/json");
    cr_assert_str_eq(http_head_field(&h, buf, "HOST"), "h");
    cr_assert_null(http_head_field(&h, buf, "X-None"));
    cr_assert_eq(h.content_length, 12);
    cr_assert(!h.chunked && h.expect_continue && !h.keep_alive);
    http_head_free(&h);
    free(buf);
    static const struct {
        const char *data;
        int keep;
    } ka[] = {
        {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: closed\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\n\r\n", 0},
        {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\nConnection: x ,  keep-alive \r\n\r\n", 1},
    };
    for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++) {
        cr_assert_eq(parse_whole(ka[i].data, strlen(ka[i].data), &h, &buf), HTTP_DONE);
        cr_assert_eq(h.keep_alive, ka[i].keep, "%s", ka[i].data);
        http_head_free(&h);
        free(buf);
    }
}

/* A head of exactly n bytes: a request line, Host, one padded field. */
static char *head_of_size(size_t n, const char *target)
{
    char *d = malloc(n + 1);
    int k = snprintf(d, n + 1, "GET %s HTTP/1.1\r\nHost: x\r\nX-Pad: ", target);
    memset(d + k, 'a', n - (size_t)k - 4);
    memcpy(d + n - 4, "\r\n\r\n", 5);
    return d;
}

Test(http_parse, limits_at_their_edges)
{
    struct http_head h;
    char *buf;
    /* the head: 64 KiB with its blank line, not a byte more, found with or without the end in sight */
    char *d = head_of_size(HTTP_MAX_HEAD, "/");
    cr_assert_eq(parse_whole(d, HTTP_MAX_HEAD, &h, &buf), HTTP_DONE, "%s", h.why);
    http_head_free(&h);
    free(buf);
    free(d);
    d = head_of_size(HTTP_MAX_HEAD + 1, "/");
    cr_assert_eq(parse_whole(d, HTTP_MAX_HEAD + 1, &h, &buf), 431);
    http_head_free(&h);
    free(buf);
    free(d);
    d = head_of_size(HTTP_MAX_HEAD + 8, "/"); /* its first HTTP_MAX_HEAD + 1 bytes: no end in them */
    cr_assert_eq(parse_whole(d, HTTP_MAX_HEAD + 1, &h, &buf), 431, "an unfinished head over the limit");
    http_head_free(&h);
    free(buf);
    cr_assert_eq(parse_whole(d, HTTP_MAX_HEAD, &h, &buf), HTTP_MORE);
    http_head_free(&h);
    free(buf);
    free(d);
    /* fields: 1024, Host one of them */
    for (int n = HTTP_MAX_FIELDS; n <= HTTP_MAX_FIELDS + 1; n++) {
        size_t cap = 64 + (size_t)n * 16, len = 0;
        d = malloc(cap);
        len += (size_t)snprintf(d + len, cap - len, "GET / HTTP/1.1\r\nHost: x\r\n");
        for (int i = 1; i < n; i++)
            len += (size_t)snprintf(d + len, cap - len, "X-%d: v\r\n", i);
        len += (size_t)snprintf(d + len, cap - len, "\r\n");
        cr_assert_eq(parse_whole(d, len, &h, &buf), n == HTTP_MAX_FIELDS ? HTTP_DONE : 431, "%d fields", n);
        http_head_free(&h);
        free(buf);
        free(d);
    }
    /* the target: 8 KiB, not a byte more; refused before its line ends */
    for (size_t n = HTTP_MAX_TARGET; n <= HTTP_MAX_TARGET + 1; n++) {
        char *t = malloc(n + 1);
        t[0] = '/';
        memset(t + 1, 'a', n - 1);
        t[n] = '\0';
        d = head_of_size(n + 64, t);
        cr_assert_eq(parse_whole(d, n + 64, &h, &buf), n == HTTP_MAX_TARGET ? HTTP_DONE : 414, "target %zu", n);
        http_head_free(&h);
        free(buf);
        const size_t line = 4 + n; /* "GET " and the target: no space after it yet */
        cr_assert_eq(parse_whole(d, line, &h, &buf), n == HTTP_MAX_TARGET ? HTTP_MORE : 414, "partial %zu", n);
        http_head_free(&h);
        free(buf);
        free(d);
        free(t);
    }
    /* a method that is not one is refused at its first byte, a long one at its 33rd */
    cr_assert_eq(parse_whole("\x16\x03\x01", 3, &h, &buf), 400, "a TLS hello");
    http_head_free(&h);
    free(buf);
    cr_assert_eq(parse_whole("ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG", 33, &h, &buf), 501);
    http_head_free(&h);
    free(buf);
    cr_assert_eq(parse_whole("ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEF", 32, &h, &buf), HTTP_MORE);
    http_head_free(&h);
    free(buf);
}

Test(http_parse, reset_keeps_the_table_and_parses_the_next_head)
{
    static const char d[] = "GET /a HTTP/1.1\r\nHost: x\r\nX-1: 1\r\n\r\nGET /b HTTP/1.0\r\n\r\n";
    char buf[sizeof d];
    memcpy(buf, d, sizeof d);
    struct http_head h = {0};
    cr_assert_eq(http_head_parse(&h, buf, sizeof d - 1), HTTP_DONE);
    const size_t first = h.len;
    cr_assert_str_eq(buf + h.target, "/a");
    http_head_reset(&h);
    cr_assert(h.fields && h.n_fields == 0);
    memmove(buf, buf + first, sizeof d - first);
    cr_assert_eq(http_head_parse(&h, buf, sizeof d - 1 - first), HTTP_DONE);
    cr_assert_str_eq(buf + h.target, "/b");
    cr_assert_eq(h.minor, 0);
    http_head_free(&h);
    struct http_head e = {0};
    cr_assert(!http_head_started(&e, 0));
    cr_assert_eq(http_head_parse(&e, (char[]){"\r\n"}, 2), HTTP_MORE);
    cr_assert(!http_head_started(&e, 2), "blank lines are no request yet");
    http_head_free(&e);
}

/* ---- chunked bodies ---- */

/* Decodes data[0, n) in pieces of step bytes (0: whole); the data found goes
 * to out. Returns the status, *end the bytes used in all. */
static int decode(const char *data, size_t n, size_t step, char *out, size_t *out_len, size_t *end,
                  struct http_chunked *c)
{
    char *buf = malloc(n + 1);
    memcpy(buf, data, n);
    memset(c, 0, sizeof *c);
    size_t pos = 0;
    int st = HTTP_MORE;
    *out_len = 0;
    while (pos < n && st == HTTP_MORE) {
        size_t k = step && n - pos > step ? step : n - pos, used, got;
        st = http_chunked_decode(c, buf + pos, k, &used, &got);
        cr_assert(used <= k && got <= used);
        cr_assert(st != HTTP_MORE || used == k, "more, with bytes left unused");
        memcpy(out + *out_len, buf + pos, got);
        *out_len += got;
        pos += used;
    }
    *end = pos;
    free(buf);
    return st;
}

struct chunk_case {
    const char *name;
    const char *data;
    int status;
    const char *body; /* when done */
};

static const struct chunk_case CHUNKS[] = {
    {"simple", "2\r\n{}\r\n0\r\n\r\n", HTTP_DONE, "{}"},
    {"pieces", "5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n", HTTP_DONE, "hello world"},
    {"upper-hex-leading-zeros", "000A\r\n0123456789\r\n0\r\n\r\n", HTTP_DONE, "0123456789"},
    {"extensions", "2;a=b;c=\"d e\"\r\n{}\r\n0;last\r\n\r\n", HTTP_DONE, "{}"},
    {"space-before-extension", "2 ;a\r\n{}\r\n0\r\n\r\n", HTTP_DONE, "{}"},
    {"trailers", "2\r\n{}\r\n0\r\nX-A: 1\r\nX-B:\r\n\r\n", HTTP_DONE, "{}"},
    {"empty", "0\r\n\r\n", HTTP_DONE, ""},
    {"more-after-the-end", "0\r\n\r\nGET / HTTP/1.1\r\n", HTTP_DONE, ""},
    {"not-hex", "ZZ\r\nabc\r\n0\r\n\r\n", 400, NULL},
    {"no-size", "\r\n", 400, NULL},
    {"size-then-junk", "2x\r\n{}\r\n0\r\n\r\n", 400, NULL},
    {"bare-lf-after-size", "2\n{}\r\n0\r\n\r\n", 400, NULL},
    {"no-crlf-after-data", "2\r\n{}XX0\r\n\r\n", 400, NULL},
    {"bare-lf-after-data", "2\r\n{}\n0\r\n\r\n", 400, NULL},
    {"over-64-bits", "10000000000000000\r\n", 400, NULL},
    {"over-64-bits-18-digits", "FFFFFFFFFFFFFFFFFF\r\nabc", 400, NULL},
    {"control-in-extension", "2;a\x01\r\n{}\r\n0\r\n\r\n", 400, NULL},
    {"trailer-without-colon", "2\r\n{}\r\n0\r\nbad\r\n\r\n", 400, NULL},
    {"trailer-obs-fold", "0\r\nX-A: 1\r\n 2\r\n\r\n", 400, NULL},
    {"trailer-bare-lf", "0\r\nX-A: 1\n\r\n", 400, NULL},
    {"end-bare-lf", "0\r\n\n", 400, NULL},
};

Test(http_parse, chunked_bodies_whole_and_byte_by_byte)
{
    char out[256];
    for (size_t i = 0; i < sizeof CHUNKS / sizeof CHUNKS[0]; i++) {
        const struct chunk_case *c = &CHUNKS[i];
        const size_t n = strlen(c->data);
        for (size_t step = 0; step <= 3; step++) {
            struct http_chunked ch;
            size_t len, end;
            int st = decode(c->data, n, step, out, &len, &end, &ch);
            cr_assert_eq(st, c->status, "%s (pieces of %zu): %d, expected %d (%s)", c->name, step, st, c->status,
                         ch.why);
            if (st == HTTP_DONE) {
                cr_assert_eq(len, strlen(c->body), "%s: %zu bytes of data", c->name, len);
                cr_assert(!memcmp(out, c->body, len), "%s: the data", c->name);
                const char *after = strstr(c->data, "\r\n\r\n");
                cr_assert_eq(end, (size_t)(after - c->data) + 4, "%s: ended at %zu", c->name, end);
            } else {
                cr_assert(ch.why[0], "%s: a refusal without a message", c->name);
            }
        }
    }
}

Test(http_parse, chunked_limits)
{
    struct http_chunked c;
    char out[64], *d;
    size_t len, end;
    /* the largest size is read (its data would follow), one digit more is refused */
    cr_assert_eq(decode("FFFFFFFFFFFFFFFF\r\n", 18, 0, out, &len, &end, &c), HTTP_MORE);
    cr_assert_eq(c.left, UINT64_MAX);
    /* a chunk-size line of 4096 bytes with its extension and CRLF, not one more */
    for (size_t n = HTTP_MAX_CHUNK_LINE; n <= HTTP_MAX_CHUNK_LINE + 1; n++) {
        d = malloc(n + 16);
        memcpy(d, "0;", 2);
        memset(d + 2, 'e', n - 4);
        memcpy(d + n - 2, "\r\n\r\n", 5);
        cr_assert_eq(decode(d, n + 2, 0, out, &len, &end, &c), n == HTTP_MAX_CHUNK_LINE ? HTTP_DONE : 400, "%zu", n);
        free(d);
    }
    /* trailers: 64 KiB in all */
    const size_t big = HTTP_MAX_HEAD + 16;
    d = malloc(big + 16);
    memcpy(d, "0\r\nX-A: ", 8);
    memset(d + 8, 'a', big - 8);
    cr_assert_eq(decode(d, big, 0, out, &len, &end, &c), 431);
    free(d);
    /* the data moves down in place over its framing */
    char buf[] = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    struct http_chunked k = {0};
    size_t used, data;
    cr_assert_eq(http_chunked_decode(&k, buf, strlen(buf), &used, &data), HTTP_DONE);
    cr_assert_eq(used, strlen("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));
    cr_assert_eq(data, 5);
    cr_assert(!memcmp(buf, "abcde", 5));
}
