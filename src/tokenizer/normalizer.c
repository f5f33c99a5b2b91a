#include "tokenizer/normalizer.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/pattern.h"

enum norm_kind { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_REPLACE, NORM_PREPEND, NORM_SEQUENCE };

struct normalizer {
    enum norm_kind kind;
    struct pattern *pattern; /* Replace */
    char *content;           /* Replace, Prepend */
    size_t content_len;
    struct normalizer **children; /* Sequence */
    int n_children;
};

void normalizer_free(struct normalizer *n)
{
    if (!n)
        return;
    pattern_free(n->pattern);
    free(n->content);
    for (int i = 0; i < n->n_children; i++)
        normalizer_free(n->children[i]);
    free(n->children);
    free(n);
}

static char *dup_json_string(const json_t *j, size_t *len)
{
    *len = json_string_length(j);
    char *s = xmalloc(*len + 1);
    memcpy(s, json_string_value(j), *len + 1);
    return s;
}

struct normalizer *normalizer_parse(const json_t *j, struct err *e, int *failed)
{
    *failed = 0;
    if (!j || json_is_null(j))
        return NULL;
    const char *type = json_string_value(json_object_get(j, "type"));
    struct normalizer *n = xcalloc(1, sizeof *n);
    if (!type) {
        goto unsupported;
    } else if (!strcmp(type, "NFC")) {
        n->kind = NORM_NFC;
    } else if (!strcmp(type, "NFD")) {
        n->kind = NORM_NFD;
    } else if (!strcmp(type, "NFKC")) {
        n->kind = NORM_NFKC;
    } else if (!strcmp(type, "NFKD")) {
        n->kind = NORM_NFKD;
    } else if (!strcmp(type, "Replace") || !strcmp(type, "Prepend")) {
        int replace = type[0] == 'R';
        const json_t *c = json_object_get(j, replace ? "content" : "prepend");
        if (!json_is_string(c)) {
            err_set(e, "normalizer %s: missing string field '%s'", type, replace ? "content" : "prepend");
            goto fail;
        }
        n->kind = replace ? NORM_REPLACE : NORM_PREPEND;
        n->content = dup_json_string(c, &n->content_len);
        if (replace && !(n->pattern = pattern_parse(json_object_get(j, "pattern"), "normalizer Replace", e)))
            goto fail;
    } else if (!strcmp(type, "Sequence")) {
        n->kind = NORM_SEQUENCE;
        const json_t *list = json_object_get(j, "normalizers");
        size_t i;
        const json_t *c;
        n->children = xcalloc(json_array_size(list) + 1, sizeof *n->children);
        json_array_foreach(list, i, c)
        {
            int f;
            struct normalizer *child = normalizer_parse(c, e, &f);
            if (f)
                goto fail;
            if (child)
                n->children[n->n_children++] = child;
        }
    } else {
        goto unsupported;
    }
    return n;
unsupported:
    err_set(e, "normalizer '%s' is not supported (NFC, NFD, NFKC, NFKD, Replace, Prepend, Sequence are)",
            type ? type : "(no type)");
fail:
    normalizer_free(n);
    *failed = 1;
    return NULL;
}

static char *copy(const char *s, size_t len, size_t *out_len)
{
    char *o = xmalloc(len + 1);
    memcpy(o, s, len);
    o[len] = '\0';
    *out_len = len;
    return o;
}

static char *unicode_normalize(enum norm_kind kind, const char *s, size_t len, size_t *out_len)
{
    int opts = UTF8PROC_STABLE | (kind == NORM_NFC || kind == NORM_NFKC ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE) |
               (kind == NORM_NFKC || kind == NORM_NFKD ? UTF8PROC_COMPAT : 0);
    utf8proc_uint8_t *out = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &out, opts);
    CHECK(n >= 0); /* input is valid UTF-8 (checked at the tokenizer's entry) */
    *out_len = (size_t)n;
    return (char *)out;
}

static char *replace(const struct normalizer *n, const char *s, size_t len, size_t *out_len)
{
    struct pattern_span *spans = NULL;
    int cap = 0, count = pattern_find_all(n->pattern, s, len, &spans, &cap);
    size_t out_cap = len + 1;
    for (int i = 0; i < count; i++)
        if (spans[i].is_match)
            out_cap += n->content_len;
    char *o = xmalloc(out_cap);
    size_t k = 0;
    for (int i = 0; i < count; i++) {
        if (spans[i].is_match) {
            memcpy(o + k, n->content, n->content_len);
            k += n->content_len;
        } else {
            memcpy(o + k, s + spans[i].start, spans[i].end - spans[i].start);
            k += spans[i].end - spans[i].start;
        }
    }
    o[k] = '\0';
    free(spans);
    *out_len = k;
    return o;
}

char *normalizer_apply(const struct normalizer *n, const char *s, size_t len, size_t *out_len)
{
    if (!n)
        return copy(s, len, out_len);
    switch (n->kind) {
    case NORM_NFC:
    case NORM_NFD:
    case NORM_NFKC:
    case NORM_NFKD:
        return unicode_normalize(n->kind, s, len, out_len);
    case NORM_REPLACE:
        return replace(n, s, len, out_len);
    case NORM_PREPEND: {
        if (len == 0)
            return copy(s, len, out_len);
        char *o = xmalloc(len + n->content_len + 1);
        memcpy(o, n->content, n->content_len);
        memcpy(o + n->content_len, s, len);
        o[len + n->content_len] = '\0';
        *out_len = len + n->content_len;
        return o;
    }
    case NORM_SEQUENCE: {
        char *cur = copy(s, len, out_len);
        for (int i = 0; i < n->n_children; i++) {
            size_t nl;
            char *next = normalizer_apply(n->children[i], cur, *out_len, &nl);
            free(cur);
            cur = next;
            *out_len = nl;
        }
        return cur;
    }
    }
    return NULL;
}
