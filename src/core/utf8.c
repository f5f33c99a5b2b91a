#include "core/utf8.h"

#include <string.h>
#include <utf8proc.h>

/* Bytes of a well-formed sequence that starts with lead byte b, and the
 * allowed range of its second byte (Unicode Table 3-7). */
static int seq_shape(uint8_t b, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0)
            *lo = 0xA0;
        if (b == 0xED)
            *hi = 0x9F;
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0)
            *lo = 0x90;
        if (b == 0xF4)
            *hi = 0x8F;
        return 4;
    }
    return 0;
}

/* Valid bytes of the sequence at s[i] (n == need means complete). */
static int valid_run(const uint8_t *s, size_t len, size_t i, int *need)
{
    uint8_t lo, hi;
    *need = seq_shape(s[i], &lo, &hi);
    if (*need <= 1)
        return *need;
    int k = 1;
    for (; k < *need && i + (size_t)k < len; k++) {
        uint8_t c = s[i + (size_t)k];
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF))
            break;
    }
    return k;
}

size_t utf8_valid_prefix(const char *str, size_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < len) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int need, got = valid_run(s, len, i, &need);
        if (need == 0 || got < need)
            return i;
        i += (size_t)need;
    }
    return len;
}

size_t utf8_lossy(char *out, const char *str, size_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0, o = 0;
    while (i < len) {
        int need, got = valid_run(s, len, i, &need);
        if (need >= 1 && got == need) {
            memcpy(out + o, s + i, (size_t)need);
            o += (size_t)need;
            i += (size_t)need;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += got > 0 ? (size_t)got : 1;
        }
    }
    return o;
}

uint32_t utf8_next(const char *s, size_t n, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t k = *i;
    uint32_t c = p[k];
    int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    if (c >= 0x80 && c < 0xC0) { /* stray continuation byte: take it alone */
        *i = k + 1;
        return 0xFFFD;
    }
    if (extra)
        c &= 0x3F >> extra;
    k++;
    for (int j = 0; j < extra && k < n && (p[k] & 0xC0) == 0x80; j++, k++)
        c = (c << 6) | (p[k] & 0x3F);
    *i = k;
    return c;
}

size_t utf8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

size_t utf8_offset(const char *s, size_t n, size_t cp_index)
{
    size_t i = 0;
    while (cp_index > 0 && i < n) {
        utf8_next(s, n, &i);
        cp_index--;
    }
    return i;
}

size_t utf8_prev(const char *s, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && ((uint8_t)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

int utf8_is_whitespace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

int utf8_is_word_char(uint32_t c)
{
    if (c == '_')
        return 1;
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_ME) || /* letters, marks */
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO) || cat == UTF8PROC_CATEGORY_PC;
}
