#include "tokenizer/json_scan.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int json_scan_fail(struct json_scan *j, const char *msg)
{
    if (!j->error) {
        j->error = msg;
        j->error_pos = j->pos;
    }
    return -1;
}

void json_scan_ws(struct json_scan *j)
{
    while (j->pos < j->len) {
        char c = j->s[j->pos];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
            break;
        j->pos++;
    }
}

int json_scan_char(struct json_scan *j, char c)
{
    json_scan_ws(j);
    if (j->pos < j->len && j->s[j->pos] == c) {
        j->pos++;
        return 1;
    }
    return 0;
}

static int hex4(const char *p, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v * 16 + (uint32_t)d;
    }
    return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

long json_scan_string(struct json_scan *j, char **buf, size_t *cap)
{
    if (!json_scan_char(j, '"'))
        return json_scan_fail(j, "expected a string");
    size_t start = j->pos, o = 0;
    /* fast path: find the closing quote; escapes need the slow path */
    const char *q = memchr(j->s + start, '"', j->len - start);
    if (!q)
        return json_scan_fail(j, "unterminated string");
    size_t upper = (size_t)(q - j->s) - start;
    if (*cap < upper + 8) {
        *cap = upper * 2 + 64;
        *buf = xrealloc(*buf, *cap);
    }
    while (j->pos < j->len) {
        char c = j->s[j->pos++];
        if (c == '"') {
            (*buf)[o] = '\0';
            return (long)o;
        }
        if ((unsigned char)c < 0x20)
            return json_scan_fail(j, "control character in string");
        if (o + 8 > *cap) {
            *cap = *cap * 2 + 64;
            *buf = xrealloc(*buf, *cap);
        }
        if (c != '\\') {
            (*buf)[o++] = c;
            continue;
        }
        if (j->pos >= j->len)
            break;
        char esc = j->s[j->pos++];
        const char *simple = strchr("\"\\/bfnrt", esc);
        if (simple && esc) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            (*buf)[o++] = map[simple - "\"\\/bfnrt"];
        } else if (esc == 'u') {
            uint32_t cp, lo;
            if (j->pos + 4 > j->len || hex4(j->s + j->pos, &cp))
                return json_scan_fail(j, "bad \\u escape");
            j->pos += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                if (j->pos + 6 > j->len || j->s[j->pos] != '\\' || j->s[j->pos + 1] != 'u' ||
                    hex4(j->s + j->pos + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return json_scan_fail(j, "unpaired surrogate in \\u escape");
                j->pos += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                return json_scan_fail(j, "unpaired surrogate in \\u escape");
            }
            o += put_utf8(*buf + o, cp);
        } else {
            return json_scan_fail(j, "bad escape in string");
        }
    }
    return json_scan_fail(j, "unterminated string");
}

int json_scan_int(struct json_scan *j, int64_t *out)
{
    json_scan_ws(j);
    size_t p = j->pos;
    int neg = p < j->len && j->s[p] == '-';
    p += (size_t)neg;
    int64_t v = 0;
    size_t digits = 0;
    while (p < j->len && j->s[p] >= '0' && j->s[p] <= '9' && digits < 18) {
        v = v * 10 + (j->s[p++] - '0');
        digits++;
    }
    if (!digits || (p < j->len && (j->s[p] == '.' || j->s[p] == 'e' || j->s[p] == 'E' ||
                                    (j->s[p] >= '0' && j->s[p] <= '9'))))
        return json_scan_fail(j, "expected an integer");
    j->pos = p;
    *out = neg ? -v : v;
    return 0;
}

int json_scan_skip(struct json_scan *j)
{
    json_scan_ws(j);
    if (j->pos >= j->len)
        return json_scan_fail(j, "unexpected end of input");
    char c = j->s[j->pos];
    if (c == '"') {
        char *tmp = NULL;
        size_t cap = 0;
        long n = json_scan_string(j, &tmp, &cap);
        free(tmp);
        return n < 0 ? -1 : 0;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->pos++;
        if (json_scan_char(j, close))
            return 0;
        do {
            if (c == '{') {
                char *tmp = NULL;
                size_t cap = 0;
                long n = json_scan_string(j, &tmp, &cap);
                free(tmp);
                if (n < 0 || !json_scan_char(j, ':'))
                    return json_scan_fail(j, "expected a key and ':'");
            }
            if (json_scan_skip(j))
                return -1;
        } while (json_scan_char(j, ','));
        return json_scan_char(j, close) ? 0 : json_scan_fail(j, "expected ',' or a closing bracket");
    }
    /* number or literal */
    size_t start = j->pos;
    while (j->pos < j->len && strchr("+-0123456789.eEtruefalsn", j->s[j->pos]))
        j->pos++;
    return j->pos > start ? 0 : json_scan_fail(j, "unexpected character");
}
