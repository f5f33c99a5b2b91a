#include "tokenizer/pretokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"

enum pre_kind { PRE_SPLIT, PRE_BYTE_LEVEL, PRE_SEQUENCE };
enum split_behavior { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS };

struct pretokenizer {
    enum pre_kind kind;
    struct pattern *pattern;
    enum split_behavior behavior;
    int invert;
    int add_prefix_space; /* ByteLevel */
    int use_regex;        /* ByteLevel */
    struct pretokenizer **children;
    int n_children;
};

/* GPT-2's split, used by ByteLevel when use_regex is true */
static const char gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

void pretokenizer_free(struct pretokenizer *p)
{
    if (!p)
        return;
    pattern_free(p->pattern);
    for (int i = 0; i < p->n_children; i++)
        pretokenizer_free(p->children[i]);
    free(p->children);
    free(p);
}

static int parse_behavior(const char *b, enum split_behavior *out)
{
    static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    for (int i = 0; b && i < 5; i++)
        if (!strcmp(b, names[i])) {
            *out = (enum split_behavior)i;
            return 0;
        }
    return -1;
}

struct pretokenizer *pretokenizer_parse(const json_t *j, struct err *e, int *failed)
{
    *failed = 0;
    if (!j || json_is_null(j))
        return NULL;
    const char *type = json_string_value(json_object_get(j, "type"));
    struct pretokenizer *p = xcalloc(1, sizeof *p);
    if (type && !strcmp(type, "Split")) {
        p->kind = PRE_SPLIT;
        const char *b = json_string_value(json_object_get(j, "behavior"));
        if (parse_behavior(b, &p->behavior)) {
            err_set(e, "pre-tokenizer Split: behavior '%s' is not supported", b ? b : "(none)");
            goto fail;
        }
        p->invert = json_is_true(json_object_get(j, "invert"));
        if (!(p->pattern = pattern_parse(json_object_get(j, "pattern"), "pre-tokenizer Split", e)))
            goto fail;
    } else if (type && !strcmp(type, "ByteLevel")) {
        p->kind = PRE_BYTE_LEVEL;
        p->add_prefix_space = json_is_true(json_object_get(j, "add_prefix_space"));
        const json_t *ur = json_object_get(j, "use_regex");
        p->use_regex = !ur || json_is_true(ur); /* tokenizers' default is true */
        if (p->use_regex) {
            json_t *pj = json_pack("{s:s}", "Regex", gpt2_regex);
            p->pattern = pattern_parse(pj, "pre-tokenizer ByteLevel", e);
            json_decref(pj);
            if (!p->pattern)
                goto fail;
        }
    } else if (type && !strcmp(type, "Sequence")) {
        p->kind = PRE_SEQUENCE;
        const json_t *list = json_object_get(j, "pretokenizers");
        size_t i;
        const json_t *c;
        p->children = xcalloc(json_array_size(list) + 1, sizeof *p->children);
        json_array_foreach(list, i, c)
        {
            int f;
            struct pretokenizer *child = pretokenizer_parse(c, e, &f);
            if (f)
                goto fail;
            if (child)
                p->children[p->n_children++] = child;
        }
    } else {
        err_set(e, "pre-tokenizer '%s' is not supported (Split, ByteLevel, Sequence are)", type ? type : "(no type)");
        goto fail;
    }
    return p;
fail:
    pretokenizer_free(p);
    *failed = 1;
    return NULL;
}

int pretokenizer_is_byte_level(const struct pretokenizer *p)
{
    if (!p)
        return 0;
    if (p->kind == PRE_BYTE_LEVEL)
        return 1;
    for (int i = 0; i < p->n_children; i++)
        if (pretokenizer_is_byte_level(p->children[i]))
            return 1;
    return 0;
}

/* One text piece through Split: spans -> pieces by behaviour, as tokenizers'
 * NormalizedString::split does. */
static void split_piece(const struct pretokenizer *p, const char *s, size_t len, struct pieces *out,
                        struct pattern_span **spans, int *cap)
{
    int n = pattern_find_all(p->pattern, s, len, spans, cap);
    struct pattern_span *sp = *spans;
    if (p->invert)
        for (int i = 0; i < n; i++)
            sp[i].is_match = !sp[i].is_match;
    int first = out->n; /* pieces this call adds start here */
    int prev_match = 0;
    switch (p->behavior) {
    case SPLIT_REMOVED:
        for (int i = 0; i < n; i++)
            if (!sp[i].is_match)
                pieces_push(out, s + sp[i].start, sp[i].end - sp[i].start, -1);
        break;
    case SPLIT_ISOLATED:
        for (int i = 0; i < n; i++)
            pieces_push(out, s + sp[i].start, sp[i].end - sp[i].start, -1);
        break;
    case SPLIT_MERGED_PREV:
        for (int i = 0; i < n; i++) {
            if (sp[i].is_match && !prev_match && out->n > first)
                pieces_extend_last(out, s + sp[i].start, sp[i].end - sp[i].start);
            else
                pieces_push(out, s + sp[i].start, sp[i].end - sp[i].start, -1);
            prev_match = sp[i].is_match;
        }
        break;
    case SPLIT_MERGED_NEXT: {
        /* walk backwards, merging each match into the piece after it */
        struct pattern_span *merged = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *merged);
        int m = 0;
        for (int i = n - 1; i >= 0; i--) {
            if (sp[i].is_match && !prev_match && m > 0)
                merged[m - 1].start = sp[i].start;
            else
                merged[m++] = sp[i];
            prev_match = sp[i].is_match;
        }
        for (int i = m - 1; i >= 0; i--)
            pieces_push(out, s + merged[i].start, merged[i].end - merged[i].start, -1);
        free(merged);
        break;
    }
    case SPLIT_CONTIGUOUS:
        for (int i = 0; i < n; i++) {
            if (sp[i].is_match == prev_match && out->n > first)
                pieces_extend_last(out, s + sp[i].start, sp[i].end - sp[i].start);
            else
                pieces_push(out, s + sp[i].start, sp[i].end - sp[i].start, -1);
            prev_match = sp[i].is_match;
        }
        break;
    }
}

static void byte_level_piece(const struct pretokenizer *p, const char *s, size_t len, struct pieces *out,
                             struct pattern_span **spans, int *cap)
{
    char stack[512];
    size_t need = 2 * (len + 1);
    char *src = (char *)s;
    size_t src_len = len;
    if (p->add_prefix_space && (len == 0 || s[0] != ' ')) {
        src = xmalloc(len + 1);
        src[0] = ' ';
        memcpy(src + 1, s, len);
        src_len = len + 1;
    }
    char *mapped = need <= sizeof stack ? stack : xmalloc(need);
    int n = 1;
    struct pattern_span whole = {0, src_len, 0};
    struct pattern_span *sp = &whole;
    if (p->use_regex) {
        n = pattern_find_all(p->pattern, src, src_len, spans, cap);
        sp = *spans;
    }
    for (int i = 0; i < n; i++) {
        size_t m = byte_level_encode(mapped, src + sp[i].start, sp[i].end - sp[i].start);
        pieces_push(out, mapped, m, -1);
    }
    if (mapped != stack)
        free(mapped);
    if (src != s)
        free(src);
}

void pretokenizer_apply(const struct pretokenizer *p, struct pieces *in, struct pieces *tmp)
{
    if (!p)
        return;
    if (p->kind == PRE_SEQUENCE) {
        for (int i = 0; i < p->n_children; i++)
            pretokenizer_apply(p->children[i], in, tmp);
        return;
    }
    pieces_clear(tmp);
    struct pattern_span *spans = NULL;
    int cap = 0;
    for (int i = 0; i < in->n; i++) {
        const char *s = piece_str(in, i);
        size_t len = in->v[i].len;
        if (in->v[i].id >= 0)
            pieces_push(tmp, s, len, in->v[i].id);
        else if (p->kind == PRE_SPLIT)
            split_piece(p, s, len, tmp, &spans, &cap);
        else
            byte_level_piece(p, s, len, tmp, &spans, &cap);
    }
    free(spans);
    struct pieces swap = *in;
    *in = *tmp;
    *tmp = swap;
}
