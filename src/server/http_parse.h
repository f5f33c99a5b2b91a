/* HTTP/1.1 request heads and chunked bodies (RFC 9112), parsed from bytes a
 * caller has read, in any number of pieces, with hard limits. No I/O: the
 * server (http.c) reads and writes, this decides what the bytes mean. Every
 * refusal is an HTTP status and a message for the client. */
#ifndef INFER_SERVER_HTTP_PARSE_H
#define INFER_SERVER_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEAD (64 << 10)  /* request line, fields and the blank line: 431 beyond */
#define HTTP_MAX_FIELDS 1024      /* header fields: 431 beyond */
#define HTTP_MAX_TARGET (8 << 10) /* path and query, as nginx and Apache: 414 beyond */
#define HTTP_MAX_METHOD 32        /* the longest registered method has 17 */
#define HTTP_MAX_CHUNK_LINE 4096  /* a chunk-size line with its extensions */

enum { HTTP_MORE = 0, HTTP_DONE = 1 }; /* else an HTTP status: the refusal */

/* A header field: offsets into the parsed buffer; name and value are
 * NUL-terminated there once their line is parsed. */
struct http_field {
    uint32_t name, value, value_len;
};

struct http_head {
    /* the request line (offsets into the buffer, NUL-terminated there) */
    uint32_t method, target, target_len;
    int minor; /* HTTP/1.minor, 0 or 1 (1.2 and up read as 1.1) */
    struct http_field *fields;
    unsigned n_fields, cap_fields;
    size_t len; /* once done: the head's bytes, blank line included */
    /* what the fields say about the body and the connection, once done */
    int chunked;
    uint64_t content_length; /* announced; 0 without Content-Length */
    int keep_alive;          /* the client's wish: 1.1 unless "close", 1.0 with "keep-alive" */
    int expect_continue;     /* "Expect: 100-continue" */
    /* the parser's place */
    int state;
    size_t line; /* where the line being read starts */
    size_t scan; /* how far that line has been searched for its end */
    char why[160];
};

/* Parses buf[0, len) on from where the last call stopped (buf holds what
 * that call saw, maybe moved, plus new bytes). Returns HTTP_MORE, HTTP_DONE
 * (the head is buf[0, h->len); bytes after it are the body or the next
 * request), or a status with h->why. Writes NULs into the head's lines. */
int http_head_parse(struct http_head *h, char *buf, size_t len);
/* Whether buf[0, len) holds part of a request (more than blank lines). */
int http_head_started(const struct http_head *h, size_t len);
/* For the next request (keeps the field table's memory). */
void http_head_reset(struct http_head *h);
void http_head_free(struct http_head *h);
/* The first field named name (any case), or NULL. */
const char *http_head_field(const struct http_head *h, const char *buf, const char *name);

/* A hexadecimal digit's value (chunk sizes, %XX in targets), -1 for any other byte. */
int http_hex_value(int ch);

/* A chunked body being decoded (RFC 9112 section 7.1): chunk-size lines
 * with optional extensions (ignored), data, CRLFs, and trailer fields
 * (checked and dropped), CRLF line ends only. */
struct http_chunked {
    int state;
    uint64_t left;       /* data bytes of the current chunk still to come */
    size_t line;         /* bytes of the current size line */
    size_t trailer;      /* bytes of the trailer section */
    unsigned n_trailers; /* its fields */
    char why[96];
};

/* Decodes buf[0, len) in place: the data found moves to buf[0, *data).
 * Sets *used to the bytes consumed. Returns HTTP_MORE (all used), HTTP_DONE
 * (the body ended at *used) or a status with c->why. */
int http_chunked_decode(struct http_chunked *c, char *buf, size_t len, size_t *used, size_t *data);

#endif
