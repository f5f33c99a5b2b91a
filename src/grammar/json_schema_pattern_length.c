/* A string "pattern" together with "minLength" / "maxLength": the
 * intersection of two regular languages over the string's JSON spelling,
 * built as a product automaton and written back into the IR.
 *
 * The pattern is compiled alone (grammar_compile on an IR of its own) into
 * a DFA over bytes; a small hand-written automaton follows the JSON string
 * spelling beside it and says where each character ends (a raw UTF-8
 * character, a short escape, a \uXXXX escape, or a surrogate pair of them,
 * which is one character), so the product (pattern state, spelling state,
 * characters so far) counts characters exactly as the length keywords do.
 * Counts stop at maxLength, or saturate at minLength without one. States
 * that cannot reach an end are dropped (a mask must never allow a dead end),
 * and each remaining state becomes a rule: its bytes, each followed by the
 * next state's rule. Bounded lengths make the product acyclic, so the
 * compiler inlines it into the surrounding automaton. */
#include <stdlib.h>
#include <string.h>

#include "grammar/chars.h"
#include "grammar/grammar_impl.h"
#include "grammar/json_schema_internal.h"
#include "grammar/regex.h"

enum { PRODUCT_MAX_STATES = 1 << 15 };

/* The JSON string spelling, byte by byte: where a character is (not yet)
 * complete. Only the spellings the pattern's DFA allows ever reach it, so
 * it need not reject malformed ones beyond returning -1. */
enum {
    SP_START, /* between characters */
    SP_CONT1,
    SP_CONT2,
    SP_CONT3,     /* UTF-8 continuation bytes to come */
    SP_BACKSLASH, /* after '\' */
    SP_U0,
    SP_U1,
    SP_U2,
    SP_U3, /* \u and that many hex digits */
    SP_UD1,
    SP_UH2,
    SP_UH3, /* ... the first digits of a high surrogate (d, d8-db) */
    SP_LOW_BS,
    SP_LOW_U, /* the '\' and 'u' of the low surrogate's escape */
    SP_L0,
    SP_L1,
    SP_L2,
    SP_L3, /* its hex digits */
    SP_STATES
};

static int is_hex(unsigned b) { return chars_hex_value((int)b) >= 0; }

/* The spelling state after byte b from state t (-1: not a spelling); *done = 1 when a character ends. */
static int spell_next(int t, unsigned b, int *done)
{
    *done = 0;
    switch (t) {
    case SP_START:
        if (b == '\\')
            return SP_BACKSLASH;
        if (b < 0x80)
            return (*done = 1), SP_START;
        if (b >= 0xC2 && b <= 0xDF)
            return SP_CONT1;
        if (b >= 0xE0 && b <= 0xEF)
            return SP_CONT2;
        if (b >= 0xF0 && b <= 0xF4)
            return SP_CONT3;
        return -1;
    case SP_CONT1:
    case SP_CONT2:
    case SP_CONT3:
        if (b < 0x80 || b > 0xBF)
            return -1;
        if (t == SP_CONT1)
            return (*done = 1), SP_START;
        return t - 1;
    case SP_BACKSLASH:
        if (b == 'u')
            return SP_U0;
        if (strchr("\"\\/bfnrt", (int)b) && b)
            return (*done = 1), SP_START;
        return -1;
    case SP_U0:
        return !is_hex(b) ? -1 : (b | 0x20) == 'd' ? SP_UD1 : SP_U1;
    case SP_UD1:
        return !is_hex(b) ? -1 : strchr("89abAB", (int)b) && b ? SP_UH2 : SP_U2;
    case SP_U1:
        return is_hex(b) ? SP_U2 : -1;
    case SP_U2:
        return is_hex(b) ? SP_U3 : -1;
    case SP_UH2:
        return is_hex(b) ? SP_UH3 : -1;
    case SP_U3:
    case SP_L3:
        return is_hex(b) ? ((*done = 1), SP_START) : -1;
    case SP_UH3:
        return is_hex(b) ? SP_LOW_BS : -1;
    case SP_LOW_BS:
        return b == '\\' ? SP_LOW_U : -1;
    case SP_LOW_U:
        return b == 'u' ? SP_L0 : -1;
    case SP_L0:
    case SP_L1:
    case SP_L2:
        return is_hex(b) ? t + 1 : -1;
    }
    return -1;
}

struct product {
    int32_t *dfa, *spell, *count; /* per product state */
    int32_t *next;                /* [n * 256]: -1 none */
    int n, cap;
    int32_t *index; /* (dfa, spell, count) -> state, -1 none */
    long n_index;
};

static int product_state(struct product *p, int d, int t, int c, int n_counts)
{
    long key = ((long)d * SP_STATES + t) * n_counts + c;
    if (p->index[key] >= 0)
        return p->index[key];
    if (p->n == PRODUCT_MAX_STATES)
        return -2;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->dfa = xrealloc(p->dfa, (size_t)p->cap * sizeof(int32_t));
        p->spell = xrealloc(p->spell, (size_t)p->cap * sizeof(int32_t));
        p->count = xrealloc(p->count, (size_t)p->cap * sizeof(int32_t));
        p->next = xrealloc(p->next, (size_t)p->cap * 256 * sizeof(int32_t));
    }
    p->dfa[p->n] = d, p->spell[p->n] = t, p->count[p->n] = c;
    return p->index[key] = p->n++;
}

static void product_free(struct product *p)
{
    free(p->dfa), free(p->spell), free(p->count), free(p->next), free(p->index);
}

int js_pattern_with_length(struct js *js, const char *pattern, size_t len, long long min, long long max,
                           const char *pattern_path, const char *len_path)
{
    struct gir t;
    gir_init(&t);
    struct err e = {{0}};
    int x = regex_to_gx(&t, pattern, len, REGEX_JSON_STRING | REGEX_SEARCH, &e);
    struct grammar *gr = NULL;
    if (x >= 0) {
        int root = gir_rule(&t, "pattern");
        gir_define(&t, root, x);
        gir_set_root(&t, root);
        gr = grammar_compile(&t, &e);
    }
    gir_free(&t);
    if (!gr) {
        js_refuse(js, "pattern", pattern_path, "%s", e.msg);
        return js->failed ? -1 : js_string_any(js);
    }
    const long long cap = max >= 0 ? max : min; /* counts beyond it: dead (max) or all alike (min only) */
    const int n_counts = (int)cap + 1;
    int refuse = gr->n_rules != 1 || (long)gr->n_states * SP_STATES * n_counts > 64L * PRODUCT_MAX_STATES;
    for (int s = 0; s < gr->n_states && !refuse; s++)
        refuse = (gr->flags[s] & GS_CALLS) != 0;
    if (refuse) {
        grammar_free(gr);
        return js_refuse(js, "minLength/maxLength", len_path, "too large together with this pattern");
    }
    struct product p = {0};
    p.n_index = (long)gr->n_states * SP_STATES * n_counts;
    p.index = xmalloc((size_t)p.n_index * sizeof(int32_t));
    memset(p.index, 0xff, (size_t)p.n_index * sizeof(int32_t));
    int over = product_state(&p, gr->rule_start[gr->root], SP_START, 0, n_counts) < 0;
    for (int i = 0; i < p.n && !over; i++) {
        for (int b = 0; b < 256; b++) {
            int d = grammar_next(gr, p.dfa[i], (unsigned char)b), done, c;
            int sp = d < 0 ? -1 : spell_next(p.spell[i], (unsigned)b, &done);
            int to = -1;
            if (sp >= 0) {
                c = p.count[i] + done;
                if (c > cap && max < 0)
                    c = (int)cap;
                to = c > cap ? -1 : product_state(&p, d, sp, c, n_counts);
                if (to == -2) {
                    over = 1;
                    break;
                }
            }
            p.next[(size_t)i * 256 + b] = to;
        }
    }
    if (over) {
        product_free(&p);
        grammar_free(gr);
        return js_refuse(js, "minLength/maxLength", len_path,
                         "too large together with this pattern (over %d states)", PRODUCT_MAX_STATES);
    }
    /* the states that can still end: final ones, then backwards to a fixed point */
    uint8_t *live = xcalloc((size_t)p.n, 1);
    for (int i = 0; i < p.n; i++)
        live[i] = (gr->flags[p.dfa[i]] & GS_FINAL) && p.spell[i] == SP_START && p.count[i] >= min;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = p.n - 1; i >= 0; i--)
            for (int b = 0; b < 256 && !live[i]; b++) {
                int to = p.next[(size_t)i * 256 + b];
                if (to >= 0 && live[to])
                    live[i] = 1, changed = 1;
            }
    }
    int result;
    if (!live[0]) {
        result = js_fail(js, "schema at %s accepts nothing: no string of the pattern has the length asked",
                         js_show(js, len_path));
    } else {
        struct gir *g = js->g;
        int *rule = xmalloc((size_t)p.n * sizeof(int));
        for (int i = 0; i < p.n; i++)
            rule[i] = live[i] ? gir_rule_fresh(g, "pattern_length") : -1;
        int *alts = xmalloc(257 * sizeof(int));
        for (int i = 0; i < p.n; i++) {
            if (!live[i])
                continue;
            int n = 0;
            uint8_t seen[256] = {0};
            for (int b = 0; b < 256; b++) { /* one alternative per next state, with all its bytes */
                int to = p.next[(size_t)i * 256 + b];
                if (seen[b] || to < 0 || !live[to])
                    continue;
                struct byteset set = {{0}};
                for (int c = b; c < 256; c++)
                    if (p.next[(size_t)i * 256 + c] == to)
                        byteset_add(&set, (unsigned)c), seen[c] = 1;
                alts[n++] = gx_seq2(g, gx_bytes(g, &set), gx_ref(g, rule[to]));
            }
            if ((gr->flags[p.dfa[i]] & GS_FINAL) && p.spell[i] == SP_START && p.count[i] >= min)
                alts[n++] = gx_empty(g);
            gir_define(g, rule[i], gx_alt(g, alts, n));
        }
        result = gx_seq3(g, gx_byte(g, '"'), gx_ref(g, rule[0]), gx_byte(g, '"'));
        free(alts);
        free(rule);
    }
    free(live);
    product_free(&p);
    grammar_free(gr);
    return js->failed ? -1 : result;
}
