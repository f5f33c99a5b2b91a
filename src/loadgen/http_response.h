/* An HTTP/1.1 response read as it arrives, for the load generator: the
 * status line, the headers, then the body as Content-Length bytes, as
 * chunks (Transfer-Encoding: chunked), or up to the connection's close.
 * Body bytes go to a callback as they come, so a stream is timed chunk by
 * chunk. No allocation; one response per struct. */
#ifndef INFER_LOADGEN_HTTP_RESPONSE_H
#define INFER_LOADGEN_HTTP_RESPONSE_H

#include <stddef.h>

enum http_stage {
    HTTP_STATUS_LINE,
    HTTP_HEADER_LINES,
    HTTP_BODY_SIZED,   /* Content-Length bytes left */
    HTTP_CHUNK_SIZE,   /* a chunk's size line */
    HTTP_CHUNK_DATA,   /* bytes left of a chunk */
    HTTP_CHUNK_END,    /* the CRLF after a chunk */
    HTTP_TRAILER_LINES,
    HTTP_BODY_TO_CLOSE,
    HTTP_COMPLETE,
    HTTP_MALFORMED,
};

enum { HTTP_LINE_MAX = 8192 };

struct http_response {
    enum http_stage stage;
    int status;           /* the status code, once the status line is in */
    int chunked;
    long long length;     /* Content-Length, or -1 */
    long long left;       /* bytes left in the body or the current chunk */
    char line[HTTP_LINE_MAX];
    size_t line_len;
    char why[160];        /* what was malformed */
};

typedef void (*http_body_fn)(void *ctx, const char *p, size_t n);

void http_response_init(struct http_response *r);

/* Takes the next n bytes of the connection. Returns the bytes used (fewer
 * than n only once the response is complete: the rest is not its), or -1
 * when the response is malformed (r->why says how). */
long http_response_feed(struct http_response *r, const char *p, size_t n, http_body_fn on_body, void *ctx);

/* The connection closed: 0 when that completes the response (a body that
 * runs to the close), -1 when the response was cut short. */
int http_response_closed(struct http_response *r);

#endif
