/* Server-sent events (sse.h). */
#include "loadgen/sse.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void sse_reader_init(struct sse_reader *s) { memset(s, 0, sizeof *s); }

void sse_reader_free(struct sse_reader *s)
{
    free(s->line);
    free(s->data);
    memset(s, 0, sizeof *s);
}

static void append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = 0;
}

/* One complete line (no line ending). */
static int line_done(struct sse_reader *s, sse_event_fn on_event, void *ctx)
{
    const char *l = s->line ? s->line : "";
    size_t n = s->line_len;
    if (n == 0) { /* the event ends */
        int rc = 0;
        if (s->has_data)
            rc = on_event(ctx, s->data ? s->data : "", s->data_len);
        s->data_len = 0, s->has_data = 0;
        if (s->data)
            s->data[0] = 0;
        return rc;
    }
    if (l[0] == ':')
        return 0;
    if (n >= 5 && !memcmp(l, "data:", 5)) {
        const char *v = l + 5;
        size_t k = n - 5;
        if (k && *v == ' ')
            v++, k--;
        if (s->has_data)
            append(&s->data, &s->data_len, &s->data_cap, "\n", 1);
        append(&s->data, &s->data_len, &s->data_cap, v, k);
        s->has_data = 1;
    }
    return 0;
}

int sse_reader_feed(struct sse_reader *s, const char *p, size_t n, sse_event_fn on_event, void *ctx)
{
    while (n) {
        const char *nl = memchr(p, '\n', n);
        const size_t take = nl ? (size_t)(nl - p) : n;
        append(&s->line, &s->line_len, &s->line_cap, p, take);
        if (!nl)
            return 0;
        if (s->line_len && s->line[s->line_len - 1] == '\r')
            s->line[--s->line_len] = 0;
        const int rc = line_done(s, on_event, ctx);
        s->line_len = 0;
        if (rc)
            return rc;
        p += take + 1;
        n -= take + 1;
    }
    return 0;
}

int sse_reader_pending(const struct sse_reader *s) { return s->line_len > 0 || s->has_data; }
