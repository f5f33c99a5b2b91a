/* Server-sent events read as they arrive (the body of a streaming
 * completion): lines "data: ..." gather into an event, a blank line ends
 * it, lines starting with ':' are comments, other fields are ignored. */
#ifndef INFER_LOADGEN_SSE_H
#define INFER_LOADGEN_SSE_H

#include <stddef.h>

struct sse_reader {
    char *line;  /* the line being read */
    size_t line_len, line_cap;
    char *data;  /* the event's data lines, joined by '\n' */
    size_t data_len, data_cap;
    int has_data;
};

/* Called once per event with its data (NUL-terminated); non-zero stops the
 * feed, which then returns that value. */
typedef int (*sse_event_fn)(void *ctx, const char *data, size_t n);

void sse_reader_init(struct sse_reader *s);
void sse_reader_free(struct sse_reader *s);
int sse_reader_feed(struct sse_reader *s, const char *p, size_t n, sse_event_fn on_event, void *ctx);
/* Whether bytes of an unfinished line or event are pending (a stream that
 * ends here was cut mid-event). */
int sse_reader_pending(const struct sse_reader *s);

#endif
