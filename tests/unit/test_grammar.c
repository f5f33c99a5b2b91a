/* The grammar engine's core (src/grammar/grammar.h) against the IR's
 * reference recognizer (gir_match): on grammars built by hand (recursive
 * JSON-like values, ambiguous and nullable rules, tail calls, inlined and
 * called rules) and a vocabulary of every short string over the
 * grammars' alphabet, each mask of a random walk must allow exactly the
 * tokens that keep the text a viable prefix, EOS exactly where the text is
 * complete; rollback returns to earlier masks; bad grammars are refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "gir_match.h"
#include "grammar/grammar.h"

static const char JSON_ALPHABET[] = "{}[]\",:a1 -";
/* A JSON string's characters with the bytes a slice looks at (the probes
 * "a 0Z~"), escapes, a control byte and the two bytes of U+00E9 apart, so
 * tokens end inside a character. */
static const char STRING_ALPHABET[] = "\"\\a 0Z~n\xC3\xA9\x01";
static const char *ALPHABET = JSON_ALPHABET;

struct vocab_fixture {
    int n;
    char **bytes;
    size_t *lens;
    uint8_t *special;
    int32_t eos;
};

/* Every string of 1..3 bytes over the alphabet, then a special token, then EOS. */
static void make_vocab(struct vocab_fixture *f)
{
    int a = (int)strlen(ALPHABET);
    int cap = a + a * a + a * a * a + 2;
    f->bytes = calloc((size_t)cap, sizeof(char *));
    f->lens = calloc((size_t)cap, sizeof(size_t));
    f->special = calloc((size_t)cap, 1);
    f->n = 0;
    for (int len = 1; len <= 3; len++) {
        int total = 1;
        for (int k = 0; k < len; k++)
            total *= a;
        for (int i = 0; i < total; i++) {
            char *s = malloc(4);
            int x = i;
            for (int k = 0; k < len; k++) {
                s[k] = ALPHABET[x % a];
                x /= a;
            }
            f->bytes[f->n] = s;
            f->lens[f->n++] = (size_t)len;
        }
    }
    f->bytes[f->n] = strdup("{");
    f->lens[f->n] = 1;
    f->special[f->n++] = 1; /* a special token with grammar-valid bytes: never allowed */
    f->bytes[f->n] = strdup("");
    f->lens[f->n] = 0;
    f->eos = f->n++;
}

static void free_vocab(struct vocab_fixture *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->bytes[i]);
    free(f->bytes), free(f->lens), free(f->special);
}

static int bit(const uint32_t *m, int i) { return (int)(m[i >> 5] >> (i & 31) & 1); }

/* A random walk of steps tokens, checking every mask against the oracle. */
static void walk_and_check(const struct gir *g, unsigned seed, int steps)
{
    struct err e = {{0}};
    struct grammar *gr = grammar_compile(g, &e);
    cr_assert(gr, "compile: %s", e.msg);
    struct vocab_fixture f;
    make_vocab(&f);
    struct grammar_vocab *v =
        grammar_vocab_new(f.n, (const char *const *)f.bytes, f.lens, f.special, &f.eos, 1);
    struct grammar_tokens *t = grammar_tokens_new(gr, v, &e);
    cr_assert(t, "tokens: %s", e.msg);
    struct grammar_matcher *m = grammar_matcher_new(t);
    int words = grammar_mask_words(v);
    uint32_t *mask = calloc((size_t)words, 4), *first = calloc((size_t)words, 4);
    char text[256] = "";
    size_t len = 0;
    int *allowed = malloc((size_t)f.n * sizeof(int));
    srand(seed);
    for (int step = 0; step < steps; step++) {
        grammar_matcher_fill_mask(m, mask);
        if (step == 0)
            memcpy(first, mask, (size_t)words * 4);
        int n_allowed = 0;
        for (int i = 0; i < f.n; i++) {
            int want;
            if (i == f.eos)
                want = gir_match(g, text, len);
            else if (f.special[i])
                want = 0;
            else {
                char buf[256];
                memcpy(buf, text, len);
                memcpy(buf + len, f.bytes[i], f.lens[i]);
                want = gir_match_prefix(g, buf, len + f.lens[i]);
            }
            cr_assert_eq(bit(mask, i), want, "step %d text '%.*s' token '%s' (%d): mask %d, oracle %d", step,
                         (int)len, text, f.bytes[i], i, bit(mask, i), want);
            if (want)
                allowed[n_allowed++] = i;
        }
        cr_assert_eq(grammar_matcher_can_end(m), gir_match(g, text, len));
        if (n_allowed == 0 || len > 200)
            break;
        int pick = allowed[rand() % n_allowed];
        if (pick == f.eos) {
            if (n_allowed == 1)
                break;
            pick = allowed[(rand() % (n_allowed - 1) + 1) % n_allowed];
            if (pick == f.eos)
                break;
        }
        /* a token the mask refuses is refused by accept too */
        for (int tries = 0; tries < 3; tries++) {
            int r = rand() % f.n;
            if (!bit(mask, r))
                cr_assert_eq(grammar_matcher_accept(m, r), -1);
        }
        cr_assert_eq(grammar_matcher_accept(m, pick), 0);
        memcpy(text + len, f.bytes[pick], f.lens[pick]);
        len += f.lens[pick];
    }
    cr_log_info("walk seed %u: %zu bytes: %.*s", seed, len, (int)len, text);
    /* back to the start: the first mask again */
    grammar_matcher_rollback(m, grammar_matcher_n_accepted(m));
    grammar_matcher_fill_mask(m, mask);
    cr_assert(memcmp(mask, first, (size_t)words * 4) == 0, "rollback to the start gives the first mask");
    free(allowed), free(mask), free(first);
    grammar_matcher_free(m);
    grammar_tokens_free(t);
    grammar_vocab_free(v);
    free_vocab(&f);
    grammar_free(gr);
}

/* value ::= object | array | string | number | "-" ; recursive, with optional blanks. */
static void json_like(struct gir *g)
{
    gir_init(g);
    int value = gir_rule(g, "value"), object = gir_rule(g, "object"), array = gir_rule(g, "array");
    int string = gir_rule(g, "string"), ws = gir_rule(g, "ws"), root = gir_rule(g, "root");
    gir_define(g, ws, gx_repeat(g, gx_byte(g, ' '), 0, 2));
    gir_define(g, string, gx_seq3(g, gx_byte(g, '"'), gx_star(g, gx_byte(g, 'a')), gx_byte(g, '"')));
    int member = gx_seq(g, (int[]){gx_ref(g, string), gx_ref(g, ws), gx_byte(g, ':'), gx_ref(g, ws),
                                   gx_ref(g, value)}, 5);
    int members = gx_seq2(g, member, gx_star(g, gx_seq3(g, gx_byte(g, ','), gx_ref(g, ws), member)));
    gir_define(g, object, gx_seq(g, (int[]){gx_byte(g, '{'), gx_ref(g, ws), gx_opt(g, members), gx_byte(g, '}')}, 4));
    int items = gx_seq2(g, gx_ref(g, value), gx_star(g, gx_seq3(g, gx_byte(g, ','), gx_ref(g, ws), gx_ref(g, value))));
    gir_define(g, array, gx_seq3(g, gx_byte(g, '['), gx_opt(g, items), gx_byte(g, ']')));
    int number = gx_seq2(g, gx_opt(g, gx_byte(g, '-')), gx_plus(g, gx_byte(g, '1')));
    gir_define(g, value, gx_seq2(g, gx_alt(g, (int[]){gx_ref(g, object), gx_ref(g, array), gx_ref(g, string), number}, 4),
                                 gx_ref(g, ws)));
    gir_define(g, root, gx_seq2(g, gx_ref(g, ws), gx_ref(g, value)));
    gir_set_root(g, root);
    cr_assert(!gir_failed(g), "%s", g->error.msg);
}

Test(grammar, json_like_masks_match_the_oracle)
{
    struct gir g;
    json_like(&g);
    for (unsigned seed = 1; seed <= 6; seed++)
        walk_and_check(&g, seed, 24);
    gir_free(&g);
}

/* Ambiguity, nullable rules and tail calls: list ::= item list | "" (right
 * recursive: each call is a tail call), item ::= "a" | "a1" | "" "1". */
Test(grammar, ambiguous_nullable_and_tail_calls)
{
    struct gir g;
    gir_init(&g);
    int list = gir_rule(&g, "list"), item = gir_rule(&g, "item"), opt = gir_rule(&g, "opt");
    gir_define(&g, opt, gx_opt(&g, gx_byte(&g, '-')));
    gir_define(&g, item, gx_alt(&g, (int[]){gx_str(&g, "a"), gx_str(&g, "a1"), gx_seq2(&g, gx_ref(&g, opt), gx_str(&g, "1"))}, 3));
    gir_define(&g, list, gx_alt2(&g, gx_seq3(&g, gx_ref(&g, item), gx_opt(&g, gx_byte(&g, ',')), gx_ref(&g, list)),
                                 gx_empty(&g)));
    gir_set_root(&g, list);
    for (unsigned seed = 1; seed <= 4; seed++)
        walk_and_check(&g, seed, 30);
    gir_free(&g);
}

/* Balanced brackets with a counted repetition: s ::= ("[" s "]"){0,2} "a"? */
Test(grammar, nested_recursion_with_bounds)
{
    struct gir g;
    gir_init(&g);
    int s = gir_rule(&g, "s");
    gir_define(&g, s, gx_seq2(&g, gx_repeat(&g, gx_seq3(&g, gx_byte(&g, '['), gx_ref(&g, s), gx_byte(&g, ']')), 0, 2),
                              gx_opt(&g, gx_byte(&g, 'a'))));
    gir_set_root(&g, s);
    for (unsigned seed = 1; seed <= 4; seed++)
        walk_and_check(&g, seed, 30);
    gir_free(&g);
}

/* A JSON string body (a state that loops on every character of the
 * string slice, so its tokens come from the vocabulary's slice) inside an
 * array of strings, over tokens that split characters and escapes. */
Test(grammar, string_slices_match_the_oracle)
{
    struct gir g;
    gir_init(&g);
    ALPHABET = STRING_ALPHABET;
    int root = gir_rule(&g, "root"), str = gir_rule(&g, "string");
    uint32_t raw_out[] = {'"', '"', '\\', '\\', 0, 0x1F};
    int ch = gx_alt2(&g, gx_codepoints_not(&g, raw_out, 3),
                     gx_seq2(&g, gx_byte(&g, '\\'), gx_alt2(&g, gx_str(&g, "n"), gx_str(&g, "\""))));
    gir_define(&g, str, gx_seq3(&g, gx_byte(&g, '"'), gx_star(&g, ch), gx_byte(&g, '"')));
    /* strings side by side, each maybe followed by a blank */
    gir_define(&g, root, gx_plus(&g, gx_seq2(&g, gx_ref(&g, str), gx_opt(&g, gx_byte(&g, ' ')))));
    gir_set_root(&g, root);
    for (unsigned seed = 1; seed <= 5; seed++)
        walk_and_check(&g, seed, 30);
    ALPHABET = JSON_ALPHABET;
    gir_free(&g);
}

/* Two stacks at once, one in a state whose few tokens are listed and one in
 * a state that allows most tokens (stored as the complement of its
 * rejections), in both orders: the mask is the union of the two. narrow
 * and wide are recursive, so they stay rules and each alternative is a
 * stack of its own. */
Test(grammar, listed_and_complement_states_unite)
{
    for (int wide_first = 0; wide_first <= 1; wide_first++) {
        struct gir g;
        gir_init(&g);
        int root = gir_rule(&g, "root"), narrow = gir_rule(&g, "narrow"), wide = gir_rule(&g, "wide");
        gir_define(&g, narrow, gx_seq2(&g, gx_str(&g, "1:"), gx_opt(&g, gx_ref(&g, narrow))));
        uint32_t out[] = {']', ']'};
        gir_define(&g, wide, gx_seq2(&g, gx_codepoints_not(&g, out, 1), gx_opt(&g, gx_ref(&g, wide))));
        int alts[2] = {gx_ref(&g, wide_first ? wide : narrow), gx_ref(&g, wide_first ? narrow : wide)};
        gir_define(&g, root, gx_seq3(&g, gx_byte(&g, '['), gx_alt(&g, alts, 2), gx_byte(&g, ']')));
        gir_set_root(&g, root);
        for (unsigned seed = 1; seed <= 2; seed++)
            walk_and_check(&g, seed, 6);
        gir_free(&g);
    }
}

/* A big non-recursive rule stays a call (not inlined); a tiny one is inlined. */
Test(grammar, large_rules_stay_rules)
{
    struct gir g;
    gir_init(&g);
    int big = gir_rule(&g, "big"), root = gir_rule(&g, "root");
    gir_define(&g, big, gx_repeat(&g, gx_alt2(&g, gx_byte(&g, 'a'), gx_byte(&g, '1')), 0, 3000));
    gir_define(&g, root, gx_seq3(&g, gx_byte(&g, '['), gx_ref(&g, big), gx_byte(&g, ']')));
    gir_set_root(&g, root);
    struct err e = {{0}};
    struct grammar *gr = grammar_compile(&g, &e);
    cr_assert(gr, "%s", e.msg);
    cr_assert_eq(grammar_n_rules(gr), 2);
    grammar_free(gr);
    walk_and_check(&g, 1, 12);
    gir_free(&g);
}

Test(grammar, refuses_left_recursion_and_undefined_rules)
{
    struct gir g;
    struct err e = {{0}};
    gir_init(&g);
    int a = gir_rule(&g, "expr"), b = gir_rule(&g, "term");
    gir_define(&g, a, gx_alt2(&g, gx_seq3(&g, gx_ref(&g, b), gx_byte(&g, '-'), gx_byte(&g, '1')), gx_byte(&g, '1')));
    gir_define(&g, b, gx_seq2(&g, gx_opt(&g, gx_byte(&g, ' ')), gx_ref(&g, a)));
    gir_set_root(&g, a);
    cr_assert_null(grammar_compile(&g, &e));
    cr_assert(strstr(e.msg, "left-recursive"), "%s", e.msg);
    gir_free(&g);

    gir_init(&g);
    a = gir_rule(&g, "root");
    gir_define(&g, a, gx_seq2(&g, gx_byte(&g, 'a'), gx_ref(&g, gir_rule(&g, "missing"))));
    gir_set_root(&g, a);
    cr_assert_null(grammar_compile(&g, &e));
    cr_assert(strstr(e.msg, "'missing'") && strstr(e.msg, "not defined"), "%s", e.msg);
    gir_free(&g);
}

Test(grammar, done_when_nothing_can_follow)
{
    struct gir g;
    gir_init(&g);
    int r = gir_rule(&g, "root");
    gir_define(&g, r, gx_alt2(&g, gx_str(&g, "a1"), gx_str(&g, "a")));
    gir_set_root(&g, r);
    struct err e = {{0}};
    struct grammar *gr = grammar_compile(&g, &e);
    struct vocab_fixture f;
    make_vocab(&f);
    struct grammar_vocab *v = grammar_vocab_new(f.n, (const char *const *)f.bytes, f.lens, f.special, &f.eos, 1);
    struct grammar_tokens *t = grammar_tokens_new(gr, v, &e);
    struct grammar_matcher *m = grammar_matcher_new(t);
    cr_assert_eq(grammar_matcher_accept_bytes(m, "a", 1), 0);
    cr_assert(grammar_matcher_can_end(m));
    cr_assert(!grammar_matcher_done(m), "a1 may still follow");
    cr_assert_eq(grammar_matcher_accept_bytes(m, "1", 1), 0);
    cr_assert(grammar_matcher_done(m));
    cr_assert_eq(grammar_matcher_accept_bytes(m, "1", 1), -1);
    cr_assert_eq(grammar_matcher_accept(m, f.eos), 0);
    cr_assert(grammar_matcher_done(m));
    grammar_matcher_rollback(m, 2);
    cr_assert(!grammar_matcher_done(m));
    grammar_matcher_free(m);
    grammar_tokens_free(t);
    grammar_vocab_free(v);
    free_vocab(&f);
    grammar_free(gr);
    gir_free(&g);
}
