/* JSON strings for the JSON Schema front end: the string grammar, strings
 * of bounded length, and exact strings (const values, property names) in
 * every spelling JSON has for them.
 *
 * Everything is built from one function that writes a set of code points
 * as JSON string content: raw where JSON allows (not '"', '\' or a
 * control), each short escape, and \uXXXX in either hex case, a
 * character outside the BMP as a surrogate pair. A \u escape never spells
 * a lone surrogate, so a string's characters are read one way only and
 * lengths count characters exactly (an escape is one, a pair is one).
 * "Any name but these" (the keys of additional properties) walks a trie
 * of the names: at each node a name may end (when no listed one does),
 * go on with a character no listed name has there (and then anything),
 * or follow a listed name's character. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "grammar/json_schema_internal.h"

enum { CP_MAX = 0x10FFFF };

/* --- code point sets ------------------------------------------------------ */

struct cpset { /* inclusive [lo, hi] pairs */
    uint32_t *r;
    int n, cap;
};

static void cs_add(struct cpset *s, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->r = xrealloc(s->r, (size_t)s->cap * 2 * sizeof(uint32_t));
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
}

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *p = a, *q = b;
    return p[0] < q[0] ? -1 : p[0] > q[0];
}

/* Sorted, merged, without surrogates. */
static void cs_norm(struct cpset *s)
{
    qsort(s->r, (size_t)s->n, 2 * sizeof(uint32_t), cmp_pair);
    struct cpset o = {0};
    for (int i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (o.n > 0 && lo <= o.r[2 * o.n - 1] + 1) {
            if (hi > o.r[2 * o.n - 1])
                o.r[2 * o.n - 1] = hi;
        } else {
            cs_add(&o, lo, hi);
        }
    }
    struct cpset c = {0};
    for (int i = 0; i < o.n; i++) {
        uint32_t lo = o.r[2 * i], hi = o.r[2 * i + 1];
        if (lo < 0xD800)
            cs_add(&c, lo, hi < 0xD7FF ? hi : 0xD7FF);
        if (hi > 0xDFFF)
            cs_add(&c, lo > 0xE000 ? lo : 0xE000, hi);
    }
    free(o.r);
    free(s->r);
    *s = c;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cs_has(const struct cpset *s, uint32_t c)
{
    for (int i = 0; i < s->n; i++)
        if (s->r[2 * i] <= c && c <= s->r[2 * i + 1])
            return 1;
    return 0;
}

/* s intersected with [lo, hi], added to out. */
static void cs_clip(const struct cpset *s, uint32_t lo, uint32_t hi, struct cpset *out)
{
    for (int i = 0; i < s->n; i++) {
        uint32_t a = s->r[2 * i] > lo ? s->r[2 * i] : lo, b = s->r[2 * i + 1] < hi ? s->r[2 * i + 1] : hi;
        if (a <= b)
            cs_add(out, a, b);
    }
}

/* --- sets as JSON string content -------------------------------------------- */

static int hex_digit(struct js *js, unsigned lo, unsigned hi) /* a hex digit of value lo..hi, either case */
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
    return gx_bytes(js->g, &b);
}

/* nd hex digits of a value in [lo, hi]: fix the leading digit, split off
 * the partial first and last blocks, the full blocks between as one set. */
static int hex_range(struct js *js, unsigned lo, unsigned hi, int nd)
{
    struct gir *g = js->g;
    if (nd == 1)
        return hex_digit(js, lo, hi);
    unsigned shift = 4u * (unsigned)(nd - 1), m = (1u << shift) - 1, dl = lo >> shift, dh = hi >> shift;
    if (dl == dh)
        return gx_seq2(g, hex_digit(js, dl, dl), hex_range(js, lo & m, hi & m, nd - 1));
    int alts[3], k = 0;
    if ((lo & m) != 0) {
        alts[k++] = gx_seq2(g, hex_digit(js, dl, dl), hex_range(js, lo & m, m, nd - 1));
        dl++;
    }
    if ((hi & m) != m) {
        alts[k++] = gx_seq2(g, hex_digit(js, dh, dh), hex_range(js, 0, hi & m, nd - 1));
        dh--;
    }
    if (dl <= dh)
        alts[k++] = gx_seq2(g, hex_digit(js, dl, dh), gx_repeat(g, hex_digit(js, 0, 15), nd - 1, nd - 1));
    return gx_alt(g, alts, k);
}

/* After "\u": the surrogate pairs of the astral code points [lo, hi]. */
static int astral(struct js *js, uint32_t lo, uint32_t hi)
{
    uint32_t a = lo - 0x10000, b = hi - 0x10000, ha = a >> 10, hb = b >> 10;
    uint32_t h0[3], h1[3], l0[3], l1[3];
    int k = 0;
    if (ha == hb) {
        h0[k] = h1[k] = ha, l0[k] = a & 0x3FF, l1[k] = b & 0x3FF, k++;
    } else {
        h0[k] = h1[k] = ha, l0[k] = a & 0x3FF, l1[k] = 0x3FF, k++;
        if (hb > ha + 1)
            h0[k] = ha + 1, h1[k] = hb - 1, l0[k] = 0, l1[k] = 0x3FF, k++;
        h0[k] = h1[k] = hb, l0[k] = 0, l1[k] = b & 0x3FF, k++;
    }
    int alts[3];
    for (int i = 0; i < k; i++) {
        int items[3] = {hex_range(js, 0xD800 + h0[i], 0xD800 + h1[i], 4), js_lit(js, "\\u"),
                        hex_range(js, 0xDC00 + l0[i], 0xDC00 + l1[i], 4)};
        alts[i] = gx_seq(js->g, items, 3);
    }
    return gx_alt(js->g, alts, k);
}

/* The characters of s (normalized) as JSON string content, every spelling. */
static int json_chars(struct js *js, const struct cpset *s)
{
    static const struct {
        uint32_t c;
        char letter;
    } short_esc[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {8, 'b'},
                     {12, 'f'},  {10, 'n'},    {13, 'r'},  {9, 't'}};
    struct gir *g = js->g;
    struct cpset raw = {0};
    cs_clip(s, 0x20, 0x21, &raw);
    cs_clip(s, 0x23, 0x5B, &raw);
    cs_clip(s, 0x5D, CP_MAX, &raw);
    int raw_x = gx_codepoints(g, raw.r, raw.n);
    free(raw.r);
    struct byteset letters = {{0}};
    for (size_t i = 0; i < sizeof(short_esc) / sizeof(short_esc[0]); i++)
        if (cs_has(s, short_esc[i].c))
            byteset_add(&letters, (unsigned char)short_esc[i].letter);
    int *u = xmalloc((size_t)(2 * s->n + 1) * sizeof(int)), k = 0;
    for (int i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (lo <= 0xFFFF)
            u[k++] = hex_range(js, lo, hi < 0xFFFF ? hi : 0xFFFF, 4);
        if (hi >= 0x10000)
            u[k++] = astral(js, lo > 0x10000 ? lo : 0x10000, hi);
    }
    int after_u = gx_alt(g, u, k);
    free(u);
    int esc =
        gx_seq2(g, gx_byte(g, '\\'), gx_alt2(g, gx_bytes(g, &letters), gx_seq2(g, gx_byte(g, 'u'), after_u)));
    return gx_alt2(g, raw_x, esc);
}

/* --- shared rules ------------------------------------------------------------ */

int js_char_any(struct js *js)
{
    if (js->r_char < 0) {
        js->r_char = gir_rule_fresh(js->g, "json_char");
        struct cpset all = {0};
        cs_add(&all, 0, CP_MAX);
        cs_norm(&all);
        gir_define(js->g, js->r_char, json_chars(js, &all));
        free(all.r);
    }
    return gx_ref(js->g, js->r_char);
}

int js_string_any(struct js *js)
{
    if (js->r_string < 0) {
        js->r_string = gir_rule_fresh(js->g, "json_string");
        gir_define(js->g, js->r_string,
                   gx_seq3(js->g, gx_byte(js->g, '"'), gx_star(js->g, js_char_any(js)), gx_byte(js->g, '"')));
    }
    return gx_ref(js->g, js->r_string);
}

/* The rest of a string once its content may be anything: chars, '"'. */
static int string_rest(struct js *js)
{
    return gx_seq2(js->g, gx_star(js->g, js_char_any(js)), gx_byte(js->g, '"'));
}

int js_string_length(struct js *js, long long min, long long max, const char *path)
{
    if (min == 0 && max < 0)
        return js_string_any(js);
    if (min > JSON_SCHEMA_MAX_BOUND || max > JSON_SCHEMA_MAX_BOUND)
        return js_fail(js, "%s at %s: %lld is above the supported %d",
                       min > JSON_SCHEMA_MAX_BOUND ? "minLength" : "maxLength", js_show(js, path),
                       min > JSON_SCHEMA_MAX_BOUND ? min : max, JSON_SCHEMA_MAX_BOUND);
    int body = js_repeat(js, js_char_any(js), min, max, "minLength/maxLength", path);
    return gx_seq3(js->g, gx_byte(js->g, '"'), body, gx_byte(js->g, '"'));
}

/* The spellings of one code point, a rule each (a property name or const
 * string repeats its characters; a rule keeps each spelling one node). */
static int cp_spell(struct js *js, uint32_t cp)
{
    if (js->n_cps * 2 >= js->cap_cps) {
        int old = js->cap_cps;
        struct js_cp *prev = js->cps;
        js->cap_cps = old ? old * 2 : 256;
        js->cps = xmalloc((size_t)js->cap_cps * sizeof(*js->cps));
        for (int i = 0; i < js->cap_cps; i++)
            js->cps[i].rule = -1;
        for (int i = 0; i < old; i++) {
            if (prev[i].rule < 0)
                continue;
            unsigned h = (prev[i].cp * 2654435761u) & (unsigned)(js->cap_cps - 1);
            while (js->cps[h].rule >= 0)
                h = (h + 1) & (unsigned)(js->cap_cps - 1);
            js->cps[h] = prev[i];
        }
        free(prev);
    }
    unsigned h = (cp * 2654435761u) & (unsigned)(js->cap_cps - 1);
    while (js->cps[h].rule >= 0) {
        if (js->cps[h].cp == cp)
            return gx_ref(js->g, js->cps[h].rule);
        h = (h + 1) & (unsigned)(js->cap_cps - 1);
    }
    char hint[32];
    snprintf(hint, sizeof(hint), "json_char_%X", (unsigned)cp);
    int r = gir_rule_fresh(js->g, hint);
    if (r < 0)
        return -1;
    struct cpset one = {0};
    cs_add(&one, cp, cp);
    gir_define(js->g, r, json_chars(js, &one));
    free(one.r);
    js->cps[h].cp = cp;
    js->cps[h].rule = r;
    js->n_cps++;
    return gx_ref(js->g, r);
}

int js_string_literal(struct js *js, const char *s, size_t n)
{
    size_t cap = n + 2, k = 0, i = 0;
    int *items = xmalloc(cap * sizeof(int));
    items[k++] = gx_byte(js->g, '"');
    while (i < n)
        items[k++] = cp_spell(js, utf8_next(s, n, &i));
    items[k++] = gx_byte(js->g, '"');
    int x = gx_seq(js->g, items, (int)k);
    free(items);
    return x;
}

/* --- any string but a few -------------------------------------------------------- */

struct trie {
    struct tnode {
        int first_child, next_sibling, terminal;
        uint32_t cp;
    } * n;
    int count, cap;
};

static int trie_node(struct trie *t, uint32_t cp)
{
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->n = xrealloc(t->n, (size_t)t->cap * sizeof(*t->n));
    }
    t->n[t->count] = (struct tnode){-1, -1, 0, cp};
    return t->count++;
}

static void trie_add(struct trie *t, const char *s, size_t len)
{
    int at = 0;
    size_t i = 0;
    while (i < len) {
        uint32_t cp = utf8_next(s, len, &i);
        int c = t->n[at].first_child;
        while (c >= 0 && t->n[c].cp != cp)
            c = t->n[c].next_sibling;
        if (c < 0) {
            c = trie_node(t, cp);
            t->n[c].next_sibling = t->n[at].first_child;
            t->n[at].first_child = c;
        }
        at = c;
    }
    t->n[at].terminal = 1;
}

/* The rest of a string (after the characters leading to node at) that
 * makes it none of the names. */
static int not_in_from(struct js *js, const struct trie *t, int at)
{
    struct gir *g = js->g;
    int n_kids = 0;
    for (int c = t->n[at].first_child; c >= 0; c = t->n[c].next_sibling)
        n_kids++;
    int *alts = xmalloc((size_t)(n_kids + 2) * sizeof(int)), k = 0;
    alts[k++] = t->n[at].terminal ? gx_nothing(g) : gx_byte(g, '"');
    struct cpset other = {0}; /* the characters no name goes on with here */
    uint32_t *kids = xmalloc((size_t)(n_kids + 1) * sizeof(uint32_t));
    int m = 0;
    for (int c = t->n[at].first_child; c >= 0; c = t->n[c].next_sibling)
        kids[m++] = t->n[c].cp;
    qsort(kids, (size_t)m, sizeof(uint32_t), cmp_u32);
    uint32_t next = 0;
    for (int i = 0; i < m; i++) {
        if (kids[i] > next)
            cs_add(&other, next, kids[i] - 1);
        next = kids[i] + 1;
    }
    if (next <= CP_MAX)
        cs_add(&other, next, CP_MAX);
    free(kids);
    cs_norm(&other);
    if (other.n > 0)
        alts[k++] = gx_seq2(g, json_chars(js, &other), string_rest(js));
    free(other.r);
    for (int c = t->n[at].first_child; c >= 0; c = t->n[c].next_sibling)
        alts[k++] = gx_seq2(g, cp_spell(js, t->n[c].cp), not_in_from(js, t, c));
    int x = gx_alt(g, alts, k);
    free(alts);
    return x;
}

int js_string_not_in(struct js *js, const char *const *names, const size_t *lens, int n)
{
    if (n == 0)
        return js_string_any(js);
    struct trie t = {0};
    trie_node(&t, 0);
    for (int i = 0; i < n; i++)
        trie_add(&t, names[i], lens[i]);
    int x = gx_seq2(js->g, gx_byte(js->g, '"'), not_in_from(js, &t, 0));
    free(t.n);
    return x;
}
