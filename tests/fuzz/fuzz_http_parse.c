/* libFuzzer target for the server's HTTP request parser (src/server/
 * http_parse.c; the bytes come from any client). The first byte picks what
 * the rest is: even, a request head; odd, a chunked body. Each is parsed
 * whole and in pieces (sizes from the first byte: 1 to 8 bytes, so split
 * reads land everywhere), and both must agree: the same status (the first
 * that is not "more"), and for a body the same data. A head is never left
 * wanting more beyond its limit, a done head's fields lie inside it, and a
 * refusal says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int head_in_pieces(const char *d, size_t n, size_t step, struct http_head *h, char *buf, size_t *at)
{
    memcpy(buf, d, n);
    memset(h, 0, sizeof *h);
    int st = HTTP_MORE;
    for (size_t len = 0; len < n && st == HTTP_MORE;) {
        len = n - len > step ? len + step : n;
        *at = len;
        st = http_head_parse(h, buf, len);
    }
    return st;
}

static void check_head(const char *d, size_t n, size_t step)
{
    char *a = malloc(n + 1), *b = malloc(n + 1);
    struct http_head whole, pieces;
    size_t at_whole = n, at = n;
    const int st = head_in_pieces(d, n, n ? n : 1, &whole, a, &at_whole);
    if (head_in_pieces(d, n, step, &pieces, b, &at) != st)
        abort(); /* split reads must not change the answer */
    if (st == HTTP_MORE && n > HTTP_MAX_HEAD)
        abort(); /* more buffered than the limit, still waiting */
    if (st != HTTP_MORE && st != HTTP_DONE && !whole.why[0])
        abort();
    if (st == HTTP_DONE) {
        if (whole.len > n || whole.len > HTTP_MAX_HEAD || whole.len != pieces.len || whole.n_fields > HTTP_MAX_FIELDS ||
            whole.n_fields != pieces.n_fields || whole.content_length != pieces.content_length ||
            whole.chunked != pieces.chunked || whole.keep_alive != pieces.keep_alive)
            abort();
        if (whole.target + whole.target_len > whole.len || strlen(a + whole.target) > whole.target_len)
            abort();
        for (unsigned i = 0; i < whole.n_fields; i++) {
            const struct http_field *f = &whole.fields[i];
            if (f->name >= whole.len || f->value + f->value_len > whole.len || strlen(a + f->value) != f->value_len ||
                memcmp(a + f->value, b + f->value, f->value_len))
                abort();
        }
    }
    http_head_free(&whole);
    http_head_free(&pieces);
    free(a);
    free(b);
}

/* The status and the data (into out) of decoding d in pieces of step. */
static int chunked_in_pieces(const char *d, size_t n, size_t step, char *out, size_t *out_len, size_t *end)
{
    char *buf = malloc(n + 1);
    memcpy(buf, d, n);
    struct http_chunked c = {0};
    int st = HTTP_MORE;
    size_t pos = 0;
    *out_len = 0;
    while (pos < n && st == HTTP_MORE) {
        size_t k = n - pos > step ? step : n - pos, used, got;
        st = http_chunked_decode(&c, buf + pos, k, &used, &got);
        if (used > k || got > used || (st == HTTP_MORE && used != k) || (st > HTTP_DONE && !c.why[0]))
            abort();
        memcpy(out + *out_len, buf + pos, got);
        *out_len += got;
        pos += used;
    }
    *end = pos;
    free(buf);
    return st;
}

static void check_chunked(const char *d, size_t n, size_t step)
{
    char *a = malloc(n + 1), *b = malloc(n + 1);
    size_t la, lb, ea, eb;
    const int st = chunked_in_pieces(d, n, n ? n : 1, a, &la, &ea);
    if (chunked_in_pieces(d, n, step, b, &lb, &eb) != st || la != lb || ea != eb || memcmp(a, b, la))
        abort();
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const size_t step = (size_t)(data[0] >> 1 & 7) + 1;
    const char *d = (const char *)data + 1;
    if (data[0] & 1)
        check_chunked(d, size - 1, step);
    else
        check_head(d, size - 1, step);
    return 0;
}
