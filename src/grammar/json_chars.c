/* Sets of characters as JSON string content (json_chars.h). */
#include "grammar/json_chars.h"

#include <stdlib.h>

#include "core/error.h"

/* One hex digit whose value is in [lo, hi], in either case. */
static int hex_digits(struct gir *g, unsigned lo, unsigned hi)
{
    struct byteset b = {{0}};
    for (unsigned v = lo; v <= hi; v++) {
        if (v < 10) {
            byteset_add(&b, '0' + v);
        } else {
            byteset_add(&b, 'a' + v - 10);
            byteset_add(&b, 'A' + v - 10);
        }
    }
    return gx_bytes(g, &b);
}

/* nd hex digits spelling a value in [lo, hi] (both below 16^nd): the
 * classic split of a numeric range into digit-wise ranges (fix the leading
 * digit, split off the partial first and last blocks, the full blocks
 * between as one set), so the \uXXXX escapes of a large range stay a
 * handful of nodes. */
static int hex_range(struct gir *g, unsigned lo, unsigned hi, int nd)
{
    if (nd == 1)
        return hex_digits(g, lo, hi);
    unsigned shift = 4u * (unsigned)(nd - 1), m = (1u << shift) - 1, dl = lo >> shift, dh = hi >> shift;
    if (dl == dh)
        return gx_seq2(g, hex_digits(g, dl, dl), hex_range(g, lo & m, hi & m, nd - 1));
    int alts[3], k = 0;
    if ((lo & m) != 0) {
        alts[k++] = gx_seq2(g, hex_digits(g, dl, dl), hex_range(g, lo & m, m, nd - 1));
        dl++;
    }
    if ((hi & m) != m) {
        alts[k++] = gx_seq2(g, hex_digits(g, dh, dh), hex_range(g, 0, hi & m, nd - 1));
        dh--;
    }
    if (dl <= dh)
        alts[k++] = gx_seq2(g, hex_digits(g, dl, dh), gx_repeat(g, hex_digits(g, 0, 15), nd - 1, nd - 1));
    return gx_alt(g, alts, k);
}

/* The escapes after "\u" of the astral code points [lo, hi]: a high
 * surrogate's four digits, "\u", a low surrogate's. Code points sharing a
 * high surrogate form one piece; a range crosses at most two partial
 * high surrogates and a run of full ones between. */
static int astral(struct gir *g, uint32_t lo, uint32_t hi)
{
    uint32_t a = lo - 0x10000, b = hi - 0x10000;
    uint32_t ha = a >> 10, hb = b >> 10, la = a & 0x3FF, lb = b & 0x3FF;
    uint32_t h0[3], h1[3], l0[3], l1[3];
    int k = 0;
    if (ha == hb) {
        h0[k] = h1[k] = ha, l0[k] = la, l1[k] = lb, k++;
    } else {
        h0[k] = h1[k] = ha, l0[k] = la, l1[k] = 0x3FF, k++;
        if (hb > ha + 1)
            h0[k] = ha + 1, h1[k] = hb - 1, l0[k] = 0, l1[k] = 0x3FF, k++;
        h0[k] = h1[k] = hb, l0[k] = 0, l1[k] = lb, k++;
    }
    int alts[3];
    for (int i = 0; i < k; i++) {
        int items[3] = {hex_range(g, 0xD800 + h0[i], 0xD800 + h1[i], 4), gx_str(g, "\\u"),
                        hex_range(g, 0xDC00 + l0[i], 0xDC00 + l1[i], 4)};
        alts[i] = gx_seq(g, items, 3);
    }
    return gx_alt(g, alts, k);
}

/* What may follow "\u" for the characters of s: its BMP part as four
 * digits (s has no surrogates, so no lone one is spelled), its astral
 * part as pairs. */
static int u_escapes(struct gir *g, const struct cpset *s)
{
    int *alts = xmalloc((size_t)(2 * s->n + 1) * sizeof(int)), k = 0;
    for (int i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (lo <= 0xFFFF)
            alts[k++] = hex_range(g, lo, hi < 0xFFFF ? hi : 0xFFFF, 4);
        if (hi >= 0x10000)
            alts[k++] = astral(g, lo > 0x10000 ? lo : 0x10000, hi);
    }
    int x = gx_alt(g, alts, k);
    free(alts);
    return x;
}

int json_chars(struct gir *g, const struct cpset *s)
{
    static const struct {
        uint32_t c;
        char letter;
    } short_esc[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {8, 'b'},
                     {12, 'f'},  {10, 'n'},    {13, 'r'},  {9, 't'}};
    static const uint32_t plain[] = {0x20, 0x21, 0x23, 0x5B, 0x5D, CP_MAX}; /* what JSON allows raw */
    struct cpset raw = {0};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i += 2)
        cpset_clip(s, plain[i], plain[i + 1], &raw);
    int raw_x = gx_codepoints(g, raw.r, raw.n);
    cpset_free(&raw);

    struct byteset letters = {{0}};
    for (size_t i = 0; i < sizeof(short_esc) / sizeof(short_esc[0]); i++)
        if (cpset_has(s, short_esc[i].c))
            byteset_add(&letters, (unsigned char)short_esc[i].letter);
    int after_u = gx_seq2(g, gx_byte(g, 'u'), u_escapes(g, s));
    int esc = gx_seq2(g, gx_byte(g, '\\'), gx_alt2(g, gx_bytes(g, &letters), after_u));
    return gx_alt2(g, raw_x, esc);
}
