#include "engine/stop_text.h"

#include <stdlib.h>
#include <string.h>

void stop_text_init(struct stop_text *st, const struct tokenizer *tok, char *const *stops, int n_stops)
{
    memset(st, 0, sizeof *st);
    st->tok = tok;
    st->stops = stops;
    st->n_stops = tok ? n_stops : 0;
    if (tok)
        detok_init(&st->detok, tok, 1);
    st->cap = 64;
    st->text = xmalloc(st->cap);
    st->text[0] = '\0';
}

void stop_text_free(struct stop_text *st)
{
    if (st->tok)
        detok_free(&st->detok);
    free(st->text);
    memset(st, 0, sizeof *st);
}

static void append(struct stop_text *st, const char *s, size_t n)
{
    if (st->len + n + 1 > st->cap) {
        while (st->len + n + 1 > st->cap)
            st->cap *= 2;
        st->text = xrealloc(st->text, st->cap);
    }
    memcpy(st->text + st->len, s, n);
    st->len += n;
    st->text[st->len] = '\0';
}

/* The earliest complete stop string at or after `sent`, or -1. Nothing
 * before `sent` can start one: that text was released only once no stop
 * string could begin in it. */
static long find_stop(const struct stop_text *st)
{
    long best = -1;
    for (int i = 0; i < st->n_stops; i++) {
        const char *hit = memmem(st->text + st->sent, st->len - st->sent, st->stops[i], strlen(st->stops[i]));
        if (hit && (best < 0 || hit - st->text < best))
            best = hit - st->text;
    }
    return best;
}

/* Bytes at the end that could begin a stop string (held back). */
static size_t held_back(const struct stop_text *st)
{
    size_t hold = 0;
    for (int i = 0; i < st->n_stops; i++) {
        size_t l = strlen(st->stops[i]);
        if (l == 0)
            continue;
        for (size_t k = l - 1; k > hold; k--)
            if (k <= st->len - st->sent && !memcmp(st->text + st->len - k, st->stops[i], k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

/* Releases text up to the first stop string, or up to what is held back
 * (everything when final). */
static int settle(struct stop_text *st, int final, const char **delta, size_t *delta_len)
{
    long stop = find_stop(st);
    size_t until = stop >= 0 ? (size_t)stop : st->len - (final ? 0 : held_back(st));
    *delta = st->text + st->sent;
    *delta_len = until - st->sent;
    st->sent = until;
    st->stopped = stop >= 0;
    return st->stopped;
}

int stop_text_push(struct stop_text *st, int32_t id, const char **delta, size_t *delta_len, struct err *e)
{
    *delta = "";
    *delta_len = 0;
    if (!st->tok || st->stopped)
        return st->stopped;
    char *piece;
    size_t n;
    if (detok_push(&st->detok, id, &piece, &n, e))
        return -1;
    append(st, piece, n);
    free(piece);
    return settle(st, 0, delta, delta_len);
}

int stop_text_finish(struct stop_text *st, const char **delta, size_t *delta_len, struct err *e)
{
    *delta = "";
    *delta_len = 0;
    if (!st->tok || st->stopped)
        return st->stopped;
    char *piece;
    size_t n;
    if (detok_flush(&st->detok, &piece, &n, e))
        return -1;
    append(st, piece, n);
    free(piece);
    return settle(st, 1, delta, delta_len);
}
