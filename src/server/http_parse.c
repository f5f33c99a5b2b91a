/* HTTP/1.1 request heads and chunked bodies, incrementally (http_parse.h).
 *
 * The head is read line by line: a line is parsed once its LF is there, and
 * only the bytes after the last search are searched, so a head that arrives a
 * byte at a time costs what one read costs. The limits are checked on the
 * unfinished line too, so a client cannot make the server buffer more than
 * HTTP_MAX_HEAD bytes, nor wait for a line that is already too long. */
#include "server/http_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"

enum { ST_REQUEST, ST_FIELDS, ST_DONE };

__attribute__((format(printf, 3, 4))) static int refuse(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return 0;
}

#define REFUSE(h, status, ...) (refuse((h)->why, sizeof (h)->why, __VA_ARGS__), (status))

/* RFC 9110 section 5.6.2: the characters of a method or field name. */
static int is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* A field value's characters: visible, obs-text, space and tab. */
static int is_value_char(unsigned char ch) { return ch == '\t' || (ch >= ' ' && ch != 0x7f); }

/* A target's: anything visible (raw UTF-8 too: it is routed, then 404). */
static int is_target_char(unsigned char ch) { return ch > ' ' && ch != 0x7f; }

void http_head_reset(struct http_head *h)
{
    struct http_field *fields = h->fields;
    unsigned cap = h->cap_fields;
    memset(h, 0, sizeof *h);
    h->fields = fields;
    h->cap_fields = cap;
}

int http_head_started(const struct http_head *h, size_t len) { return h->state != ST_REQUEST || len > h->line; }

void http_head_free(struct http_head *h)
{
    free(h->fields);
    memset(h, 0, sizeof *h);
}

const char *http_head_field(const struct http_head *h, const char *buf, const char *name)
{
    for (unsigned i = 0; i < h->n_fields; i++)
        if (!strcasecmp(buf + h->fields[i].name, name))
            return buf + h->fields[i].value;
    return NULL;
}

/* What can be refused from the start of a request line already (a method
 * that is not one, a target over the limit, a target ended by something
 * else than a space), so that neither waits for the line's end. Run on every
 * unfinished line and on the finished one before anything else, it gives a
 * head the same answer however its bytes were split. */
static int partial_request_line(struct http_head *h, const char *p, size_t n)
{
    size_t m = 0;
    while (m < n && m <= HTTP_MAX_METHOD && is_tchar((unsigned char)p[m]))
        m++;
    if (m > HTTP_MAX_METHOD)
        return REFUSE(h, 501, "the method is longer than %d bytes: not one this server knows", HTTP_MAX_METHOD);
    if (m == n || (p[m] == '\r' && m + 1 == n))
        return 0; /* more to come, or the line's end (request_line decides) */
    if (p[m] != ' ' || m == 0)
        return REFUSE(h, 400, "the request line does not start with a method and a space");
    size_t t = m + 1, e = t;
    while (e < n && e - t <= HTTP_MAX_TARGET && is_target_char((unsigned char)p[e]))
        e++;
    if (e - t > HTTP_MAX_TARGET)
        return REFUSE(h, 414, "the request target exceeds %d bytes", HTTP_MAX_TARGET);
    if (e < n && p[e] != ' ')
        return REFUSE(h, 400, "not a request line (method SP target SP HTTP-version)");
    return 0;
}

/* method SP request-target SP HTTP-version, in p[a, b). */
static int request_line(struct http_head *h, char *p, size_t a, size_t b)
{
    size_t m = a;
    while (m < b && is_tchar((unsigned char)p[m]))
        m++;
    if (m - a > HTTP_MAX_METHOD)
        return REFUSE(h, 501, "the method is longer than %d bytes: not one this server knows", HTTP_MAX_METHOD);
    if (m == a || m == b || p[m] != ' ')
        return REFUSE(h, 400, "not a request line (method SP target SP HTTP-version)");
    size_t t = m + 1, e = t;
    while (e < b && is_target_char((unsigned char)p[e]))
        e++;
    if (e - t > HTTP_MAX_TARGET)
        return REFUSE(h, 414, "the request target exceeds %d bytes", HTTP_MAX_TARGET);
    if (e == t || e == b || p[e] != ' ')
        return REFUSE(h, 400, "not a request line (method SP target SP HTTP-version)");
    const char *v = p + e + 1;
    const size_t vn = b - e - 1;
    if (vn < 6 || memcmp(v, "HTTP/", 5) || v[5] < '0' || v[5] > '9' ||
        (vn != 6 && (vn != 8 || v[6] != '.' || v[7] < '0' || v[7] > '9')))
        return REFUSE(h, 400, "the request line's version is not HTTP/1.0 or HTTP/1.1");
    if (v[5] != '1')
        return REFUSE(h, 505, "HTTP/%.*s is not supported (HTTP/1.0 and HTTP/1.1 are)", (int)(vn - 5), v + 5);
    if (vn == 6)
        return REFUSE(h, 400, "the request line's version is not HTTP/1.0 or HTTP/1.1");
    h->minor = v[7] != '0';
    h->method = (uint32_t)a;
    h->target = (uint32_t)t;
    h->target_len = (uint32_t)(e - t);
    p[m] = p[e] = '\0';
    h->state = ST_FIELDS;
    return 0;
}

/* Whether the comma-separated list s holds token (any case). */
static int has_token(const char *s, const char *token)
{
    const size_t n = strlen(token);
    while (*s) {
        s += strspn(s, " \t,");
        size_t k = strcspn(s, ",");
        size_t w = k;
        while (w && (s[w - 1] == ' ' || s[w - 1] == '\t'))
            w--;
        if (w == n && !strncasecmp(s, token, n))
            return 1;
        s += k;
    }
    return 0;
}

/* The body's framing and the connection's fate, from the fields (RFC 9112
 * sections 6.1 and 6.3). A proxy in front that framed the body by another
 * field than this server would take part of this request for the next one,
 * or the other way round (request smuggling). So: at most one Content-Length
 * (two equal ones refused too: nginx and Node refuse them, and a repeated
 * field means something on the way rewrote the request), plain digits; none
 * with a Transfer-Encoding; that one field "chunked", not in HTTP/1.0. */
static int frame(struct http_head *h, const char *buf)
{
    unsigned n_length = 0, n_coding = 0, n_host = 0;
    const char *length = NULL, *coding = NULL;
    int close = 0, keep = 0;
    for (unsigned i = 0; i < h->n_fields; i++) {
        const char *name = buf + h->fields[i].name, *value = buf + h->fields[i].value;
        if (!strcasecmp(name, "Content-Length")) {
            if (!n_length++)
                length = value;
        } else if (!strcasecmp(name, "Transfer-Encoding")) {
            if (!n_coding++)
                coding = value;
        } else if (!strcasecmp(name, "Host")) {
            n_host++;
        } else if (!strcasecmp(name, "Connection")) {
            close |= has_token(value, "close");
            keep |= has_token(value, "keep-alive");
        } else if (!strcasecmp(name, "Expect")) {
            h->expect_continue |= !strcasecmp(value, "100-continue");
        }
    }
    if (n_length > 1)
        return REFUSE(h, 400, "Content-Length is given %u times", n_length);
    if (n_coding && n_length)
        return REFUSE(h, 400, "both Content-Length and Transfer-Encoding are given");
    if (n_coding > 1)
        return REFUSE(h, 400, "Transfer-Encoding is given %u times", n_coding);
    if (n_coding && strcasecmp(coding, "chunked"))
        return REFUSE(h, 501, "Transfer-Encoding '%.64s' is not supported (only chunked)", coding);
    if (n_coding && h->minor == 0)
        return REFUSE(h, 400, "Transfer-Encoding in an HTTP/1.0 request");
    if (length) {
        uint64_t v = 0;
        const char *d = length;
        for (; *d >= '0' && *d <= '9'; d++) {
            if (v > (UINT64_MAX - (uint64_t)(*d - '0')) / 10)
                return REFUSE(h, 400, "Content-Length '%.32s' overflows 64 bits", length);
            v = v * 10 + (uint64_t)(*d - '0');
        }
        if (d == length || *d)
            return REFUSE(h, 400, "Content-Length '%.32s' is not a number of bytes", length);
        h->content_length = v;
    }
    if (h->minor == 1 && n_host != 1) /* RFC 9112 section 3.2 */
        return n_host ? REFUSE(h, 400, "Host is given %u times", n_host)
                      : REFUSE(h, 400, "an HTTP/1.1 request without Host");
    h->chunked = n_coding > 0;
    h->keep_alive = !close && (h->minor == 1 || keep);
    return 0;
}

/* name ":" OWS value OWS, in p[a, b); the blank line ends the head. */
static int field_line(struct http_head *h, char *p, size_t a, size_t b)
{
    if (a == b) {
        h->state = ST_DONE;
        return 0;
    }
    if (p[a] == ' ' || p[a] == '\t')
        return REFUSE(h, 400, "a header line starts with whitespace (obsolete line folding)");
    size_t n = a;
    while (n < b && is_tchar((unsigned char)p[n]))
        n++;
    if (n == b || p[n] != ':') {
        if (!memchr(p + a, ':', b - a))
            return REFUSE(h, 400, "a header line without a colon");
        if (p[n] == ' ' || p[n] == '\t')
            return REFUSE(h, 400, "whitespace between a header name and its colon");
        return REFUSE(h, 400, "a header name holds a character names cannot");
    }
    if (n == a)
        return REFUSE(h, 400, "a header line with an empty name");
    if (h->n_fields == HTTP_MAX_FIELDS)
        return REFUSE(h, 431, "more than %d header fields", HTTP_MAX_FIELDS);
    size_t v = n + 1, e = b;
    while (v < e && (p[v] == ' ' || p[v] == '\t'))
        v++;
    while (e > v && (p[e - 1] == ' ' || p[e - 1] == '\t'))
        e--;
    for (size_t i = v; i < e; i++)
        if (!is_value_char((unsigned char)p[i]))
            return REFUSE(h, 400, "a header value holds a control character");
    if (h->n_fields == h->cap_fields) {
        h->cap_fields = h->cap_fields ? 2 * h->cap_fields : 16;
        h->fields = xrealloc(h->fields, h->cap_fields * sizeof *h->fields);
    }
    h->fields[h->n_fields++] = (struct http_field){(uint32_t)a, (uint32_t)v, (uint32_t)(e - v)};
    p[n] = p[e] = '\0'; /* e is at most b, the line's CR or LF */
    return 0;
}

int http_head_parse(struct http_head *h, char *buf, size_t len)
{
    while (h->state != ST_DONE) {
        char *lf = h->scan < len ? memchr(buf + h->scan, '\n', len - h->scan) : NULL;
        if (!lf) {
            h->scan = len;
            int st = h->state == ST_REQUEST ? partial_request_line(h, buf + h->line, len - h->line) : 0;
            if (st)
                return st;
            if (len > HTTP_MAX_HEAD)
                return REFUSE(h, 431, "the request line and headers exceed %d bytes", HTTP_MAX_HEAD);
            return HTTP_MORE;
        }
        const size_t end = (size_t)(lf - buf);
        int st = h->state == ST_REQUEST ? partial_request_line(h, buf + h->line, end - h->line) : 0;
        if (st)
            return st;
        if (end + 1 > HTTP_MAX_HEAD) /* before the line's own checks, as when it was still unfinished */
            return REFUSE(h, 431, "the request line and headers exceed %d bytes", HTTP_MAX_HEAD);
        size_t stop = end;
        if (stop > h->line && buf[stop - 1] == '\r')
            stop--;
        if (h->state == ST_FIELDS)
            st = field_line(h, buf, h->line, stop);
        else if (stop > h->line) /* before the request line, blank lines are skipped (RFC 9112 section 2.2) */
            st = request_line(h, buf, h->line, stop);
        h->line = h->scan = end + 1;
        if (st)
            return st;
    }
    h->len = h->line;
    int st = frame(h, buf);
    return st ? st : HTTP_DONE;
}

/* ---- chunked bodies ---- */

enum {
    C_SIZE,        /* the first hex digit */
    C_SIZE_MORE,   /* more of them */
    C_SIZE_WS,     /* whitespace after them, before ';' */
    C_EXT,         /* extensions, skipped */
    C_SIZE_LF,     /* the size line's LF */
    C_DATA,
    C_DATA_CR,
    C_DATA_LF,
    C_TRAILER,     /* a trailer line's start, or the blank line */
    C_TRAILER_NAME,
    C_TRAILER_VALUE,
    C_TRAILER_LF,
    C_END_LF,      /* the blank line's LF */
    C_DONE,
};

int http_hex_value(int ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

int http_chunked_decode(struct http_chunked *c, char *buf, size_t len, size_t *used, size_t *data)
{
    size_t i = 0, out = 0;
    int st = HTTP_MORE;
    while (i < len && c->state != C_DONE) {
        if (c->state == C_DATA) { /* the bulk: moved down in place */
            size_t n = len - i < c->left ? len - i : (size_t)c->left;
            memmove(buf + out, buf + i, n);
            out += n;
            i += n;
            if (!(c->left -= n))
                c->state = C_DATA_CR;
            continue;
        }
        const unsigned char ch = (unsigned char)buf[i++];
        if (c->state <= C_SIZE_LF && ++c->line > HTTP_MAX_CHUNK_LINE) {
            st = REFUSE(c, 400, "a chunk-size line over %d bytes", HTTP_MAX_CHUNK_LINE);
            break;
        }
        if (c->state >= C_TRAILER && ++c->trailer > HTTP_MAX_HEAD) {
            st = REFUSE(c, 431, "the trailer fields exceed %d bytes", HTTP_MAX_HEAD);
            break;
        }
        int d;
        switch (c->state) {
        case C_SIZE:
        case C_SIZE_MORE:
            if ((d = http_hex_value(ch)) >= 0) {
                if (c->left > UINT64_MAX >> 4) {
                    st = REFUSE(c, 400, "a chunk size over 64 bits");
                    break;
                }
                c->left = c->left << 4 | (uint64_t)d;
                c->state = C_SIZE_MORE;
            } else if (c->state == C_SIZE) {
                st = REFUSE(c, 400, "a chunk size that is not hexadecimal");
            } else if (ch == ' ' || ch == '\t' || ch == ';' || ch == '\r') {
                c->state = ch == ';' ? C_EXT : ch == '\r' ? C_SIZE_LF : C_SIZE_WS;
            } else {
                st = REFUSE(c, 400, "a chunk size that is not hexadecimal");
            }
            break;
        case C_SIZE_WS:
            if (ch == ';' || ch == '\r')
                c->state = ch == ';' ? C_EXT : C_SIZE_LF;
            else if (ch != ' ' && ch != '\t')
                st = REFUSE(c, 400, "a chunk size followed by something else than an extension");
            break;
        case C_EXT:
            if (ch == '\r')
                c->state = C_SIZE_LF;
            else if (!is_value_char(ch))
                st = REFUSE(c, 400, "a chunk extension holds a control character");
            break;
        case C_SIZE_LF:
            if (ch != '\n') {
                st = REFUSE(c, 400, "a chunk-size line not ended by CRLF");
                break;
            }
            c->line = 0;
            c->state = c->left ? C_DATA : C_TRAILER;
            break;
        case C_DATA_CR:
        case C_DATA_LF:
            if (ch != (c->state == C_DATA_CR ? '\r' : '\n'))
                st = REFUSE(c, 400, "chunk data not followed by CRLF");
            else
                c->state = c->state == C_DATA_CR ? C_DATA_LF : C_SIZE;
            break;
        case C_TRAILER:
            if (ch == '\r')
                c->state = C_END_LF;
            else if (is_tchar(ch))
                c->state = C_TRAILER_NAME;
            else
                st = REFUSE(c, 400, "a trailer line without a field name");
            break;
        case C_TRAILER_NAME:
            if (ch == ':')
                c->state = C_TRAILER_VALUE;
            else if (!is_tchar(ch))
                st = REFUSE(c, 400, "a trailer line without a colon");
            break;
        case C_TRAILER_VALUE:
            if (ch == '\r')
                c->state = C_TRAILER_LF;
            else if (!is_value_char(ch))
                st = REFUSE(c, 400, "a trailer value holds a control character");
            break;
        case C_TRAILER_LF:
            if (ch != '\n')
                st = REFUSE(c, 400, "a trailer line not ended by CRLF");
            else if (++c->n_trailers > HTTP_MAX_FIELDS)
                st = REFUSE(c, 431, "more than %d trailer fields", HTTP_MAX_FIELDS);
            else
                c->state = C_TRAILER;
            break;
        case C_END_LF:
            if (ch != '\n')
                st = REFUSE(c, 400, "the chunked body's last line not ended by CRLF");
            else
                c->state = C_DONE;
            break;
        }
        if (st)
            break;
    }
    *used = i;
    *data = out;
    return st ? st : c->state == C_DONE ? HTTP_DONE : HTTP_MORE;
}
