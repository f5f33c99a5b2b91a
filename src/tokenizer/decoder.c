#include "tokenizer/decoder.h"

#include <stdlib.h>
#include <string.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"
#include "core/utf8.h"

enum dec_kind { DEC_BYTE_LEVEL, DEC_REPLACE, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP, DEC_SEQUENCE };

struct decoder {
    enum dec_kind kind;
    struct pattern *pattern; /* Replace */
    char *content;           /* Replace: replacement; Strip: the character */
    size_t content_len;
    int start, stop; /* Strip */
    struct decoder **children;
    int n_children;
};

void decoder_free(struct decoder *d)
{
    if (!d)
        return;
    pattern_free(d->pattern);
    free(d->content);
    for (int i = 0; i < d->n_children; i++)
        decoder_free(d->children[i]);
    free(d->children);
    free(d);
}

struct decoder *decoder_parse(const json_t *j, struct err *e, int *failed)
{
    *failed = 0;
    if (!j || json_is_null(j))
        return NULL;
    const char *type = json_string_value(json_object_get(j, "type"));
    struct decoder *d = xcalloc(1, sizeof *d);
    if (type && !strcmp(type, "ByteLevel")) {
        d->kind = DEC_BYTE_LEVEL;
    } else if (type && !strcmp(type, "ByteFallback")) {
        d->kind = DEC_BYTE_FALLBACK;
    } else if (type && !strcmp(type, "Fuse")) {
        d->kind = DEC_FUSE;
    } else if (type && (!strcmp(type, "Replace") || !strcmp(type, "Strip"))) {
        const json_t *c = json_object_get(j, "content");
        if (!json_is_string(c)) {
            err_set(e, "decoder %s: missing string field 'content'", type);
            goto fail;
        }
        d->content_len = json_string_length(c);
        d->content = xmalloc(d->content_len + 1);
        memcpy(d->content, json_string_value(c), d->content_len + 1);
        if (type[0] == 'R') {
            d->kind = DEC_REPLACE;
            if (!(d->pattern = pattern_parse(json_object_get(j, "pattern"), "decoder Replace", e)))
                goto fail;
        } else {
            d->kind = DEC_STRIP;
            d->start = (int)json_integer_value(json_object_get(j, "start"));
            d->stop = (int)json_integer_value(json_object_get(j, "stop"));
        }
    } else if (type && !strcmp(type, "Sequence")) {
        d->kind = DEC_SEQUENCE;
        const json_t *list = json_object_get(j, "decoders");
        size_t i;
        const json_t *c;
        d->children = xcalloc(json_array_size(list) + 1, sizeof *d->children);
        json_array_foreach(list, i, c)
        {
            int f;
            struct decoder *child = decoder_parse(c, e, &f);
            if (f)
                goto fail;
            if (child)
                d->children[d->n_children++] = child;
        }
    } else {
        err_set(e, "decoder '%s' is not supported (ByteLevel, Replace, ByteFallback, Fuse, Strip, Sequence are)",
                type ? type : "(no type)");
        goto fail;
    }
    return d;
fail:
    decoder_free(d);
    *failed = 1;
    return NULL;
}

/* All tokens -> their bytes (a token with a character outside the alphabet
 * keeps its own UTF-8 bytes) -> one lossy UTF-8 string. */
static void byte_level(struct pieces *in, struct pieces *out, int raw)
{
    char *bytes = xmalloc(in->len + 1);
    size_t n = 0;
    for (int i = 0; i < in->n; i++) {
        const char *s = piece_str(in, i);
        size_t len = in->v[i].len, start = n;
        for (size_t k = 0; k < len;) {
            int b = byte_level_byte(utf8_next(s, len, &k));
            if (b < 0) {
                memcpy(bytes + start, s, len);
                n = start + len;
                break;
            }
            bytes[n++] = (char)b;
        }
    }
    if (raw) {
        pieces_push_kept(out, bytes, n);
    } else {
        char *lossy = xmalloc(3 * n + 1);
        size_t m = utf8_lossy(lossy, bytes, n);
        pieces_push(out, lossy, m, -1);
        free(lossy);
    }
    free(bytes);
}

static int byte_token(const char *s, size_t len, uint8_t *b)
{
    if (len != 6 || memcmp(s, "<0x", 3) || s[5] != '>')
        return 0;
    unsigned v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
        if (d > 15)
            return 0;
        v = v * 16 + d;
    }
    *b = (uint8_t)v;
    return 1;
}

/* Runs of <0xNN> tokens become their UTF-8 text, or one U+FFFD per byte when
 * the run is not valid UTF-8. */
static void byte_fallback(struct pieces *in, struct pieces *out, int raw)
{
    char *run = xmalloc((size_t)in->n + 1);
    size_t n = 0;
    for (int i = 0; i <= in->n; i++) {
        uint8_t b;
        if (i < in->n && byte_token(piece_str(in, i), in->v[i].len, &b)) {
            run[n++] = (char)b;
            continue;
        }
        if (n > 0) {
            if (raw || utf8_valid_prefix(run, n) == n)
                pieces_push(out, run, n, -1);
            else
                for (size_t k = 0; k < n; k++)
                    pieces_push(out, "\xEF\xBF\xBD", 3, -1);
            n = 0;
        }
        if (i < in->n)
            pieces_push(out, piece_str(in, i), in->v[i].len, -1);
    }
    free(run);
}

static void replace(const struct decoder *d, struct pieces *in, struct pieces *out)
{
    struct pattern_span *spans = NULL;
    int cap = 0;
    for (int i = 0; i < in->n; i++) {
        const char *s = piece_str(in, i);
        int n = pattern_find_all(d->pattern, s, in->v[i].len, &spans, &cap);
        pieces_push_kept(out, "", 0); /* an empty token stays a token */
        for (int k = 0; k < n; k++) {
            if (spans[k].is_match)
                pieces_extend_last(out, d->content, d->content_len);
            else
                pieces_extend_last(out, s + spans[k].start, spans[k].end - spans[k].start);
        }
    }
    free(spans);
}

static void strip(const struct decoder *d, struct pieces *in, struct pieces *out)
{
    for (int i = 0; i < in->n; i++) {
        const char *s = piece_str(in, i);
        size_t a = 0, b = in->v[i].len;
        for (int k = 0; k < d->start && b - a >= d->content_len && !memcmp(s + a, d->content, d->content_len); k++)
            a += d->content_len;
        for (int k = 0; k < d->stop && b - a >= d->content_len &&
                        !memcmp(s + b - d->content_len, d->content, d->content_len);
             k++)
            b -= d->content_len;
        pieces_push_kept(out, s + a, b - a);
    }
}

/* raw: bytes as they are (no U+FFFD for invalid UTF-8) and no Strip, for
 * one token's bytes in the middle of a text. */
static void apply(const struct decoder *d, struct pieces *tokens, struct pieces *tmp, int raw)
{
    if (!d)
        return;
    if (d->kind == DEC_SEQUENCE) {
        for (int i = 0; i < d->n_children; i++)
            apply(d->children[i], tokens, tmp, raw);
        return;
    }
    if (raw && d->kind == DEC_STRIP)
        return;
    pieces_clear(tmp);
    switch (d->kind) {
    case DEC_BYTE_LEVEL:
        byte_level(tokens, tmp, raw);
        break;
    case DEC_BYTE_FALLBACK:
        byte_fallback(tokens, tmp, raw);
        break;
    case DEC_FUSE:
        pieces_push_kept(tmp, "", 0);
        for (int i = 0; i < tokens->n; i++)
            pieces_extend_last(tmp, piece_str(tokens, i), tokens->v[i].len);
        break;
    case DEC_REPLACE:
        replace(d, tokens, tmp);
        break;
    case DEC_STRIP:
        strip(d, tokens, tmp);
        break;
    case DEC_SEQUENCE:
        break;
    }
    struct pieces swap = *tokens;
    *tokens = *tmp;
    *tmp = swap;
}

void decoder_apply(const struct decoder *d, struct pieces *tokens, struct pieces *tmp) { apply(d, tokens, tmp, 0); }

void decoder_apply_raw(const struct decoder *d, struct pieces *tokens, struct pieces *tmp) { apply(d, tokens, tmp, 1); }
