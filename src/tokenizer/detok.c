#include "tokenizer/detok.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void detok_init(struct detok *d, const struct tokenizer *tok, int skip_special)
{
    memset(d, 0, sizeof *d);
    d->tok = tok;
    d->skip_special = skip_special;
}

void detok_free(struct detok *d)
{
    free(d->window);
    memset(d, 0, sizeof *d);
}

static char *substr(const char *s, size_t from, size_t to, size_t *len)
{
    *len = to > from ? to - from : 0;
    char *p = xmalloc(*len + 1);
    memcpy(p, s + from, *len);
    p[*len] = '\0';
    return p;
}

int detok_push(struct detok *d, int32_t id, char **piece, size_t *len, struct err *e)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->window = xrealloc(d->window, (size_t)d->cap * sizeof *d->window);
    }
    d->window[d->n++] = id;
    /* A run of byte tokens at the end decodes as one group whose text can
     * still change (a later byte can make it invalid): leave it out. */
    int k = d->n;
    while (k > 0 && tokenizer_is_byte_token(d->tok, d->window[k - 1]))
        k--;
    char *text;
    size_t tlen;
    if (tokenizer_decode(d->tok, d->window, k, d->skip_special, &text, &tlen, e)) {
        d->n--;
        return -1;
    }
    size_t stable = tlen;
    while (stable >= 3 && !memcmp(text + stable - 3, "\xEF\xBF\xBD", 3))
        stable -= 3;
    CHECK(stable >= d->emitted);
    *piece = substr(text, d->emitted, stable, len);
    if (k == d->n && stable == tlen) { /* a clean cut: start a new window */
        d->n = 0;
        d->emitted = 0;
    } else {
        d->emitted = stable;
    }
    free(text);
    return 0;
}

int detok_flush(struct detok *d, char **piece, size_t *len, struct err *e)
{
    char *text;
    size_t tlen;
    if (tokenizer_decode(d->tok, d->window, d->n, d->skip_special, &text, &tlen, e))
        return -1;
    *piece = substr(text, d->emitted, tlen, len);
    free(text);
    d->n = 0;
    d->emitted = 0;
    return 0;
}
