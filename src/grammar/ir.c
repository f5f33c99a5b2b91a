/* The grammar IR's builders (ir.h). */
#include "grammar/ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/chars.h"

void byteset_add_range(struct byteset *s, unsigned lo, unsigned hi)
{
    for (unsigned b = lo; b <= hi && b < 256; b++)
        byteset_add(s, b);
}

void gir_init(struct gir *g)
{
    memset(g, 0, sizeof(*g));
    g->root = -1;
}

void gir_free(struct gir *g)
{
    for (int i = 0; i < g->n_rules; i++)
        free(g->rules[i].name);
    free(g->rules);
    free(g->nodes);
    free(g->kids);
    free(g->sets);
    free(g->by_name);
    gir_init(g);
}

int gir_fail(struct gir *g, const char *fmt, ...)
{
    if (!g->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->error.msg, sizeof(g->error.msg), fmt, ap);
        va_end(ap);
        g->failed = 1;
    }
    return -1;
}

int gir_failed(const struct gir *g) { return g->failed; }

static int new_node(struct gir *g, enum gx_kind kind)
{
    if (g->failed)
        return -1;
    if (g->n_nodes >= GIR_MAX_NODES)
        return gir_fail(g, "the grammar is too large (more than %d expression nodes)", GIR_MAX_NODES);
    if (g->n_nodes == g->cap_nodes) {
        g->cap_nodes = g->cap_nodes ? g->cap_nodes * 2 : 256;
        g->nodes = xrealloc(g->nodes, (size_t)g->cap_nodes * sizeof(*g->nodes));
    }
    struct gx_node *x = &g->nodes[g->n_nodes];
    memset(x, 0, sizeof(*x));
    x->kind = (uint8_t)kind;
    return g->n_nodes++;
}

static int push_kids(struct gir *g, const int *items, int n)
{
    if (g->n_kids + n > g->cap_kids) {
        while (g->n_kids + n > g->cap_kids)
            g->cap_kids = g->cap_kids ? g->cap_kids * 2 : 256;
        g->kids = xrealloc(g->kids, (size_t)g->cap_kids * sizeof(*g->kids));
    }
    memcpy(g->kids + g->n_kids, items, (size_t)n * sizeof(*items));
    int first = g->n_kids;
    g->n_kids += n;
    return first;
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int find_rule(const struct gir *g, const char *name)
{
    if (!g->cap_by_name)
        return -1;
    for (uint32_t h = name_hash(name) & (uint32_t)(g->cap_by_name - 1);; h = (h + 1) & (uint32_t)(g->cap_by_name - 1)) {
        int r = g->by_name[h];
        if (r < 0)
            return -1;
        if (strcmp(g->rules[r].name, name) == 0)
            return r;
    }
}

static void index_rule(struct gir *g, int r)
{
    if (2 * (g->n_rules + 1) > g->cap_by_name) {
        free(g->by_name);
        g->cap_by_name = g->cap_by_name ? g->cap_by_name * 2 : 64;
        g->by_name = xmalloc((size_t)g->cap_by_name * sizeof(int32_t));
        memset(g->by_name, 0xff, (size_t)g->cap_by_name * sizeof(int32_t));
        for (int i = 0; i < g->n_rules; i++)
            if (i != r)
                index_rule(g, i);
    }
    uint32_t h = name_hash(g->rules[r].name) & (uint32_t)(g->cap_by_name - 1);
    while (g->by_name[h] >= 0)
        h = (h + 1) & (uint32_t)(g->cap_by_name - 1);
    g->by_name[h] = r;
}

int gir_rule_find(const struct gir *g, const char *name) { return find_rule(g, name); }

static int add_rule(struct gir *g, const char *name)
{
    if (g->n_rules >= GIR_MAX_RULES)
        return gir_fail(g, "the grammar is too large (more than %d rules)", GIR_MAX_RULES);
    if (g->n_rules == g->cap_rules) {
        g->cap_rules = g->cap_rules ? g->cap_rules * 2 : 32;
        g->rules = xrealloc(g->rules, (size_t)g->cap_rules * sizeof(*g->rules));
    }
    g->rules[g->n_rules].name = xstrdup(name);
    g->rules[g->n_rules].body = -1;
    int r = g->n_rules++;
    index_rule(g, r);
    return r;
}

int gir_rule(struct gir *g, const char *name)
{
    if (g->failed)
        return -1;
    int r = find_rule(g, name);
    return r >= 0 ? r : add_rule(g, name);
}

int gir_rule_fresh(struct gir *g, const char *hint)
{
    if (g->failed)
        return -1;
    if (find_rule(g, hint) < 0)
        return add_rule(g, hint);
    char name[256];
    for (int i = 2;; i++) {
        snprintf(name, sizeof(name), "%.200s_%d", hint, i);
        if (find_rule(g, name) < 0)
            return add_rule(g, name);
    }
}

int gir_define(struct gir *g, int rule, int expr)
{
    if (g->failed)
        return -1;
    if (rule < 0 || expr < 0) /* a front end's error it did not record in g */
        return gir_fail(g, "a rule's body failed to build");
    if (g->rules[rule].body >= 0)
        return gir_fail(g, "rule '%s' is defined twice", g->rules[rule].name);
    g->rules[rule].body = expr;
    return 0;
}

void gir_set_root(struct gir *g, int rule) { g->root = rule; }

int gx_nothing(struct gir *g) { return new_node(g, GX_NOTHING); }
int gx_empty(struct gir *g) { return new_node(g, GX_EMPTY); }

int gx_bytes(struct gir *g, const struct byteset *set)
{
    int empty = 1;
    for (int i = 0; i < 8; i++)
        empty &= set->w[i] == 0;
    if (empty)
        return gx_nothing(g);
    int x = new_node(g, GX_BYTES);
    if (x < 0)
        return -1;
    if (g->n_sets == g->cap_sets) {
        g->cap_sets = g->cap_sets ? g->cap_sets * 2 : 64;
        g->sets = xrealloc(g->sets, (size_t)g->cap_sets * sizeof(*g->sets));
    }
    g->sets[g->n_sets] = *set;
    g->nodes[x].arg = g->n_sets++;
    return x;
}

int gx_byte_range(struct gir *g, unsigned lo, unsigned hi)
{
    struct byteset s = {{0}};
    byteset_add_range(&s, lo, hi);
    return gx_bytes(g, &s);
}

int gx_byte(struct gir *g, unsigned b) { return gx_byte_range(g, b, b); }

int gx_literal(struct gir *g, const char *s, size_t n)
{
    if (n == 0)
        return gx_empty(g);
    if (n == 1)
        return gx_byte(g, (unsigned char)s[0]);
    int stack[64], *items = n <= 64 ? stack : xmalloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++)
        items[i] = gx_byte(g, (unsigned char)s[i]);
    int x = gx_seq(g, items, (int)n);
    if (items != stack)
        free(items);
    return x;
}

int gx_str(struct gir *g, const char *s) { return gx_literal(g, s, strlen(s)); }

/* Strings without L = c0 L[1..m): from the matched-nothing state a byte
 * other than c0 stays there; after c0, L[1..i) then c0 starts over
 * (loop), L[1..i) then a byte that is neither L[i] nor c0 returns, and
 * the text may end partway. Exact because c0 occurs in L only first. */
int gx_without(struct gir *g, const char *lit)
{
    const size_t m = strlen(lit);
    const unsigned c0 = (unsigned char)lit[0];
    if (m < 2 || memchr(lit + 1, lit[0], m - 1))
        return gir_fail(g, "gx_without: '%s' must be 2 bytes or more, its first byte not repeated", lit);
    struct byteset not_c0;
    memset(&not_c0, 0xff, sizeof not_c0);
    not_c0.w[c0 >> 5] &= ~(1u << (c0 & 31));
    int loops = gx_nothing(g), exits = gx_nothing(g), ends = gx_nothing(g);
    for (size_t i = 1; i < m; i++) {
        int matched = gx_literal(g, lit + 1, i - 1);
        struct byteset other = not_c0;
        const unsigned li = (unsigned char)lit[i];
        other.w[li >> 5] &= ~(1u << (li & 31));
        loops = gx_alt2(g, loops, gx_seq2(g, matched, gx_byte(g, c0)));
        exits = gx_alt2(g, exits, gx_seq2(g, matched, gx_bytes(g, &other)));
        ends = gx_alt2(g, ends, matched);
    }
    int after_c0 = gx_seq2(g, gx_byte(g, c0), gx_star(g, loops));
    int body = gx_star(g, gx_alt2(g, gx_bytes(g, &not_c0), gx_seq2(g, after_c0, exits)));
    return gx_seq2(g, body, gx_opt(g, gx_seq2(g, after_c0, ends)));
}

static int is_kind(const struct gir *g, int x, enum gx_kind k) { return x >= 0 && g->nodes[x].kind == k; }

/* A SEQ or ALT of items without its neutral ones (EMPTY in a sequence,
 * NOTHING in an alternation); an absorbing one (NOTHING in a sequence)
 * is the whole; none left: the neutral; one: itself. */
static int list_node(struct gir *g, enum gx_kind kind, const int *items, int n)
{
    if (g->failed)
        return -1;
    const enum gx_kind neutral = kind == GX_SEQ ? GX_EMPTY : GX_NOTHING;
    int kept = 0, last = -1;
    for (int i = 0; i < n; i++) {
        if (items[i] < 0)
            return -1;
        if (kind == GX_SEQ && is_kind(g, items[i], GX_NOTHING))
            return gx_nothing(g);
        if (!is_kind(g, items[i], neutral)) {
            kept++;
            last = items[i];
        }
    }
    if (kept == 0)
        return new_node(g, neutral);
    if (kept == 1)
        return last;
    int stack[64], *k = kept <= 64 ? stack : xmalloc((size_t)kept * sizeof(int)), m = 0;
    for (int i = 0; i < n; i++)
        if (!is_kind(g, items[i], neutral))
            k[m++] = items[i];
    int x = new_node(g, kind);
    if (x >= 0) {
        int first = push_kids(g, k, m);
        g->nodes[x].first = first;
        g->nodes[x].n = m;
    }
    if (k != stack)
        free(k);
    return x;
}

int gx_seq(struct gir *g, const int *items, int n) { return list_node(g, GX_SEQ, items, n); }
int gx_alt(struct gir *g, const int *items, int n) { return list_node(g, GX_ALT, items, n); }

int gx_seq2(struct gir *g, int a, int b)
{
    int v[2] = {a, b};
    return gx_seq(g, v, 2);
}

int gx_seq3(struct gir *g, int a, int b, int c)
{
    int v[3] = {a, b, c};
    return gx_seq(g, v, 3);
}

int gx_alt2(struct gir *g, int a, int b)
{
    int v[2] = {a, b};
    return gx_alt(g, v, 2);
}

int gx_repeat(struct gir *g, int x, int min, int max)
{
    if (g->failed || x < 0)
        return -1;
    if (min < 0 || (max >= 0 && max < min))
        return gir_fail(g, "a repetition {%d,%d} has bounds out of order", min, max);
    if (min > GIR_MAX_REPEAT || max > GIR_MAX_REPEAT)
        return gir_fail(g, "a repetition bound above %d is not supported", GIR_MAX_REPEAT);
    if (max == 0 || is_kind(g, x, GX_EMPTY))
        return gx_empty(g);
    if (is_kind(g, x, GX_NOTHING))
        return min == 0 ? gx_empty(g) : gx_nothing(g);
    if (min == 1 && max == 1)
        return x;
    int r = new_node(g, GX_REPEAT);
    if (r < 0)
        return -1;
    int first = push_kids(g, &x, 1);
    g->nodes[r].first = first;
    g->nodes[r].n = 1;
    g->nodes[r].min = min;
    g->nodes[r].max = max;
    return r;
}

int gx_opt(struct gir *g, int x) { return gx_repeat(g, x, 0, 1); }
int gx_star(struct gir *g, int x) { return gx_repeat(g, x, 0, -1); }
int gx_plus(struct gir *g, int x) { return gx_repeat(g, x, 1, -1); }

int gx_ref(struct gir *g, int rule)
{
    if (g->failed || rule < 0)
        return -1;
    int x = new_node(g, GX_REF);
    if (x >= 0)
        g->nodes[x].arg = rule;
    return x;
}

/* --- code points as UTF-8 ------------------------------------------------ */

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *p = a, *q = b;
    return p[0] < q[0] ? -1 : p[0] > q[0];
}

/* Sorted, merged, surrogate-free ranges of pairs into out (room for
 * n_pairs + 1 pairs); returns the count. */
static int normalize_ranges(const uint32_t *pairs, int n_pairs, uint32_t *out)
{
    uint32_t *tmp = xmalloc((size_t)(n_pairs + 1) * 2 * sizeof(uint32_t));
    int n = 0;
    for (int i = 0; i < n_pairs; i++) {
        uint32_t lo = pairs[2 * i], hi = pairs[2 * i + 1];
        if (hi > 0x10FFFF)
            hi = 0x10FFFF;
        if (lo > hi)
            continue;
        tmp[2 * n] = lo;
        tmp[2 * n + 1] = hi;
        n++;
    }
    qsort(tmp, (size_t)n, 2 * sizeof(uint32_t), cmp_pair);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && tmp[2 * i] <= out[2 * m - 1] + 1) {
            if (tmp[2 * i + 1] > out[2 * m - 1])
                out[2 * m - 1] = tmp[2 * i + 1];
        } else {
            out[2 * m] = tmp[2 * i];
            out[2 * m + 1] = tmp[2 * i + 1];
            m++;
        }
    }
    free(tmp);
    /* cut the surrogates out: at most one range grows into two */
    int k = 0;
    uint32_t *res = xmalloc((size_t)(m + 1) * 2 * sizeof(uint32_t));
    for (int i = 0; i < m; i++) {
        uint32_t lo = out[2 * i], hi = out[2 * i + 1];
        if (hi < 0xD800 || lo > 0xDFFF) {
            res[2 * k] = lo, res[2 * k + 1] = hi, k++;
            continue;
        }
        if (lo < 0xD800)
            res[2 * k] = lo, res[2 * k + 1] = 0xD7FF, k++;
        if (hi > 0xDFFF)
            res[2 * k] = 0xE000, res[2 * k + 1] = hi, k++;
    }
    memcpy(out, res, (size_t)k * 2 * sizeof(uint32_t));
    free(res);
    return k;
}

static int utf8_len_of(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

struct alts {
    int *v;
    int n, cap;
};

static void alts_push(struct alts *a, int x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->v = xrealloc(a->v, (size_t)a->cap * sizeof(int));
    }
    a->v[a->n++] = x;
}

/* The UTF-8 sequences of [lo, hi] as byte-range sequences (the split of
 * regex engines' UTF-8 compilers: cut until every byte position is a
 * plain range). */
static void utf8_split(struct gir *g, uint32_t lo, uint32_t hi, struct alts *out)
{
    static const uint32_t len_max[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    for (int l = 0; l < 3; l++)
        if (lo <= len_max[l] && hi > len_max[l]) {
            utf8_split(g, lo, len_max[l], out);
            utf8_split(g, len_max[l] + 1, hi, out);
            return;
        }
    int n = utf8_len_of(lo);
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                utf8_split(g, lo, lo | m, out);
                utf8_split(g, (lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                utf8_split(g, lo, (hi & ~m) - 1, out);
                utf8_split(g, hi & ~m, hi, out);
                return;
            }
        }
    }
    char a[4], b[4];
    chars_utf8(lo, a);
    chars_utf8(hi, b);
    int items[4];
    for (int i = 0; i < n; i++)
        items[i] = gx_byte_range(g, (unsigned char)a[i], (unsigned char)b[i]);
    alts_push(out, gx_seq(g, items, n));
}

int gx_codepoints(struct gir *g, const uint32_t *pairs, int n_pairs)
{
    if (g->failed)
        return -1;
    uint32_t *r = xmalloc((size_t)(n_pairs + 1) * 2 * sizeof(uint32_t));
    int n = normalize_ranges(pairs, n_pairs, r);
    struct alts a = {0};
    struct byteset ascii = {{0}};
    for (int i = 0; i < n; i++) {
        uint32_t lo = r[2 * i], hi = r[2 * i + 1];
        if (lo < 0x80) { /* the one-byte part joins one set */
            byteset_add_range(&ascii, lo, hi < 0x80 ? hi : 0x7F);
            if (hi < 0x80)
                continue;
            lo = 0x80;
        }
        utf8_split(g, lo, hi, &a);
    }
    int any = 0;
    for (int i = 0; i < 8; i++)
        any |= ascii.w[i] != 0;
    if (any)
        alts_push(&a, gx_bytes(g, &ascii));
    int x = gx_alt(g, a.v, a.n);
    free(a.v);
    free(r);
    return x;
}

int gx_codepoints_not(struct gir *g, const uint32_t *pairs, int n_pairs)
{
    if (g->failed)
        return -1;
    uint32_t *r = xmalloc((size_t)(n_pairs + 1) * 2 * sizeof(uint32_t));
    int n = normalize_ranges(pairs, n_pairs, r);
    uint32_t *inv = xmalloc((size_t)(n + 1) * 2 * sizeof(uint32_t));
    int m = 0;
    uint32_t next = 0;
    for (int i = 0; i < n; i++) {
        if (r[2 * i] > next)
            inv[2 * m] = next, inv[2 * m + 1] = r[2 * i] - 1, m++;
        next = r[2 * i + 1] + 1;
    }
    if (next <= 0x10FFFF)
        inv[2 * m] = next, inv[2 * m + 1] = 0x10FFFF, m++;
    int x = gx_codepoints(g, inv, m);
    free(inv);
    free(r);
    return x;
}

/* --- dump -------------------------------------------------------------- */

struct dbuf {
    char *s;
    size_t n, cap;
};

static void dput(struct dbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dput(struct dbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)k + 1 > b->cap) {
        while (b->n + (size_t)k + 1 > b->cap)
            b->cap = b->cap ? b->cap * 2 : 256;
        b->s = xrealloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

static void dump_byte(struct dbuf *b, unsigned c)
{
    if (c == '\\' || c == ']' || c == '[' || c == '-' || c == '^' || c == '"')
        dput(b, "\\%c", c);
    else if (c >= 0x20 && c < 0x7F)
        dput(b, "%c", c);
    else
        dput(b, "\\x%02X", c);
}

static void dump_expr(const struct gir *g, int x, struct dbuf *b)
{
    const struct gx_node *e = &g->nodes[x];
    switch (e->kind) {
    case GX_NOTHING: dput(b, "[]"); break;
    case GX_EMPTY: dput(b, "\"\""); break;
    case GX_BYTES: {
        const struct byteset *s = &g->sets[e->arg];
        dput(b, "[");
        for (unsigned c = 0; c < 256;) {
            if (!byteset_has(s, c)) {
                c++;
                continue;
            }
            unsigned d = c;
            while (d + 1 < 256 && byteset_has(s, d + 1))
                d++;
            dump_byte(b, c);
            if (d > c) {
                dput(b, "-");
                dump_byte(b, d);
            }
            c = d + 1;
        }
        dput(b, "]");
        break;
    }
    case GX_SEQ:
    case GX_ALT:
        dput(b, "(");
        for (int i = 0; i < e->n; i++) {
            if (i)
                dput(b, e->kind == GX_SEQ ? " " : " | ");
            dump_expr(g, g->kids[e->first + i], b);
        }
        dput(b, ")");
        break;
    case GX_REPEAT:
        dump_expr(g, g->kids[e->first], b);
        if (e->max < 0)
            dput(b, "{%d,}", e->min);
        else
            dput(b, "{%d,%d}", e->min, e->max);
        break;
    case GX_REF: dput(b, "%s", g->rules[e->arg].name); break;
    }
}

char *gir_dump(const struct gir *g)
{
    struct dbuf b = {0};
    for (int r = 0; r < g->n_rules; r++) {
        dput(&b, "%s%s ::= ", r == g->root ? "*" : "", g->rules[r].name);
        if (g->rules[r].body < 0)
            dput(&b, "<undefined>");
        else
            dump_expr(g, g->rules[r].body, &b);
        dput(&b, "\n");
    }
    if (!b.s)
        dput(&b, "%s", "");
    return b.s;
}
