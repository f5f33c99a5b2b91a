/* HTTP/1.1 response parsing (http_response.h). */
#include "loadgen/http_response.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void http_response_init(struct http_response *r)
{
    memset(r, 0, sizeof *r);
    r->stage = HTTP_STATUS_LINE;
    r->length = -1;
}

static long malformed(struct http_response *r, const char *why)
{
    snprintf(r->why, sizeof r->why, "%s", why);
    r->stage = HTTP_MALFORMED;
    return -1;
}

static int status_line(struct http_response *r)
{
    int major, minor, code;
    if (sscanf(r->line, "HTTP/%d.%d %3d", &major, &minor, &code) != 3 || major != 1 || code < 100 || code > 999)
        return -1;
    r->status = code;
    return 0;
}

/* Whether the comma-separated header value v lists token (any case). */
static int has_token(const char *v, const char *token)
{
    const size_t n = strlen(token);
    for (const char *p = v; *p; p++)
        if (!strncasecmp(p, token, n) && (p == v || p[-1] == ' ' || p[-1] == ',') &&
            (!p[n] || p[n] == ' ' || p[n] == ',' || p[n] == ';'))
            return 1;
    return 0;
}

/* One header line (without CRLF); an empty one ends the headers. */
static int header_line(struct http_response *r)
{
    if (r->line_len == 0) {
        if (r->chunked)
            r->stage = HTTP_CHUNK_SIZE;
        else if (r->length >= 0)
            r->stage = r->length ? HTTP_BODY_SIZED : HTTP_COMPLETE, r->left = r->length;
        else
            r->stage = HTTP_BODY_TO_CLOSE;
        return 0;
    }
    char *colon = strchr(r->line, ':');
    if (!colon)
        return -1;
    *colon = 0;
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    if (!strcasecmp(r->line, "Content-Length")) {
        char *end;
        long long n = strtoll(v, &end, 10);
        if (end == v || n < 0)
            return -1;
        r->length = n;
    } else if (!strcasecmp(r->line, "Transfer-Encoding")) {
        r->chunked = has_token(v, "chunked");
    }
    return 0;
}

static int chunk_size_line(struct http_response *r)
{
    char *end;
    if (!isxdigit((unsigned char)r->line[0]))
        return -1;
    long long n = strtoll(r->line, &end, 16);
    if (n < 0 || (*end && *end != ';' && *end != ' '))
        return -1;
    r->left = n;
    r->stage = n ? HTTP_CHUNK_DATA : HTTP_TRAILER_LINES;
    return 0;
}

/* Collects a CRLF- (or LF-) terminated line into r->line; 1 when one is
 * complete, 0 when more bytes are needed, -1 when it is too long. */
static int take_line(struct http_response *r, const char *p, size_t n, size_t *used)
{
    const char *nl = memchr(p, '\n', n);
    size_t take = nl ? (size_t)(nl - p) + 1 : n;
    *used = take;
    size_t keep = nl ? take - 1 : take;
    if (r->line_len + keep >= sizeof r->line)
        return -1;
    memcpy(r->line + r->line_len, p, keep);
    r->line_len += keep;
    if (!nl)
        return 0;
    if (r->line_len && r->line[r->line_len - 1] == '\r')
        r->line_len--;
    r->line[r->line_len] = 0;
    return 1;
}

long http_response_feed(struct http_response *r, const char *p, size_t n, http_body_fn on_body, void *ctx)
{
    size_t at = 0;
    while (at < n && r->stage != HTTP_COMPLETE) {
        size_t used = 0;
        switch (r->stage) {
        case HTTP_STATUS_LINE:
        case HTTP_HEADER_LINES:
        case HTTP_CHUNK_SIZE:
        case HTTP_CHUNK_END:
        case HTTP_TRAILER_LINES: {
            const int got = take_line(r, p + at, n - at, &used);
            at += used;
            if (got < 0)
                return malformed(r, "a status, header or chunk-size line longer than 8 KiB");
            if (!got)
                break;
            int bad = 0;
            if (r->stage == HTTP_STATUS_LINE) {
                bad = status_line(r);
                r->stage = HTTP_HEADER_LINES;
                if (bad)
                    return malformed(r, "not an HTTP/1.x status line");
            } else if (r->stage == HTTP_HEADER_LINES) {
                if (header_line(r))
                    return malformed(r, "a malformed header line");
            } else if (r->stage == HTTP_CHUNK_SIZE) {
                if (chunk_size_line(r))
                    return malformed(r, "a malformed chunk size");
            } else if (r->stage == HTTP_CHUNK_END) {
                if (r->line_len)
                    return malformed(r, "a chunk longer than its size");
                r->stage = HTTP_CHUNK_SIZE;
            } else if (r->line_len == 0) { /* the end of the trailers */
                r->stage = HTTP_COMPLETE;
            }
            r->line_len = 0;
            break;
        }
        case HTTP_BODY_SIZED:
        case HTTP_CHUNK_DATA: {
            size_t k = n - at < (size_t)r->left ? n - at : (size_t)r->left;
            if (on_body)
                on_body(ctx, p + at, k);
            at += k;
            r->left -= (long long)k;
            if (!r->left)
                r->stage = r->stage == HTTP_BODY_SIZED ? HTTP_COMPLETE : HTTP_CHUNK_END;
            break;
        }
        case HTTP_BODY_TO_CLOSE:
            if (on_body)
                on_body(ctx, p + at, n - at);
            at = n;
            break;
        case HTTP_COMPLETE:
        case HTTP_MALFORMED:
            return -1;
        }
    }
    return (long)at;
}

int http_response_closed(struct http_response *r)
{
    if (r->stage == HTTP_BODY_TO_CLOSE)
        r->stage = HTTP_COMPLETE;
    return r->stage == HTTP_COMPLETE ? 0 : -1;
}
