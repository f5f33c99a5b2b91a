/* JSON strings for the JSON Schema front end: the string grammar, strings
 * of bounded length, and exact strings (const values, property names) in
 * every spelling JSON has for them.
 *
 * Everything is built from json_chars (json_chars.h), which writes a set
 * of code points as JSON string content: raw where JSON allows (not '"',
 * '\' or a control), each short escape, and \uXXXX in either hex case, a
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
#include "grammar/cpset.h"
#include "grammar/json_chars.h"
#include "grammar/json_schema_internal.h"

/* --- shared rules ------------------------------------------------------------ */

int js_char_any(struct js *js)
{
    if (js->r_char < 0) {
        js->r_char = gir_rule_fresh(js->g, "json_char");
        struct cpset all = {0};
        cpset_add(&all, 0, CP_MAX);
        cpset_norm(&all);
        gir_define(js->g, js->r_char, json_chars(js->g, &all));
        cpset_free(&all);
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
    cpset_add(&one, cp, cp);
    gir_define(js->g, r, json_chars(js->g, &one));
    cpset_free(&one);
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
    for (int c = t->n[at].first_child; c >= 0; c = t->n[c].next_sibling)
        cpset_add(&other, t->n[c].cp, t->n[c].cp);
    cpset_norm(&other);
    cpset_invert(&other);
    if (other.n > 0)
        alts[k++] = gx_seq2(g, json_chars(js->g, &other), string_rest(js));
    cpset_free(&other);
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
