#include "tokenizer/pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

struct pattern {
    char *literal; /* String pattern */
    size_t literal_len;
    pcre2_code *re; /* Regex pattern */
};

struct pattern *pattern_parse(const json_t *j, const char *where, struct err *e)
{
    const char *lit = json_string_value(json_object_get(j, "String"));
    const char *rx = json_string_value(json_object_get(j, "Regex"));
    if (!lit && !rx) {
        err_set(e, "%s: pattern must be {\"String\": ...} or {\"Regex\": ...}", where);
        return NULL;
    }
    struct pattern *p = xcalloc(1, sizeof *p);
    if (lit) {
        p->literal_len = json_string_length(json_object_get(j, "String"));
        p->literal = xmalloc(p->literal_len + 1);
        memcpy(p->literal, lit, p->literal_len + 1);
        if (p->literal_len == 0) {
            pattern_free(p);
            err_set(e, "%s: empty String pattern", where);
            return NULL;
        }
        return p;
    }
    int code;
    PCRE2_SIZE off;
    p->re = pcre2_compile((PCRE2_SPTR)rx, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &off, NULL);
    if (!p->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        err_set(e, "%s: regex does not compile at offset %zu: %s", where, (size_t)off, (char *)msg);
        free(p);
        return NULL;
    }
    pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is unavailable */
    return p;
}

void pattern_free(struct pattern *p)
{
    if (!p)
        return;
    free(p->literal);
    if (p->re)
        pcre2_code_free(p->re);
    free(p);
}

static void push(struct pattern_span **spans, int *n, int *cap, size_t a, size_t b, int m)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *spans = xrealloc(*spans, (size_t)*cap * sizeof **spans);
    }
    (*spans)[(*n)++] = (struct pattern_span){a, b, m};
}

int pattern_find_all(const struct pattern *p, const char *s, size_t len, struct pattern_span **spans, int *cap)
{
    int n = 0;
    size_t prev = 0;
    if (p->literal) {
        for (size_t i = 0; i + p->literal_len <= len;) {
            if (!memcmp(s + i, p->literal, p->literal_len)) {
                if (prev != i)
                    push(spans, &n, cap, prev, i, 0);
                push(spans, &n, cap, i, i + p->literal_len, 1);
                i += p->literal_len;
                prev = i;
            } else {
                i++;
            }
        }
    } else {
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->re, NULL);
        size_t at = 0;
        while (at <= len) {
            /* input was validated as UTF-8 once, at the tokenizer's entry */
            int rc = pcre2_match(p->re, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc < 0)
                break;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            if (me == ms) { /* empty match: step over one character */
                at = me + 1;
                while (at < len && ((unsigned char)s[at] & 0xC0) == 0x80)
                    at++;
                continue;
            }
            if (prev != ms)
                push(spans, &n, cap, prev, ms, 0);
            push(spans, &n, cap, ms, me, 1);
            prev = at = me;
        }
        pcre2_match_data_free(md);
    }
    if (prev != len)
        push(spans, &n, cap, prev, len, 0);
    return n;
}
