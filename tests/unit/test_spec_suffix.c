/* spec/suffix: suffix decoding proposals. The continuation most
 * occurrences share wins over the newest; a proposal ends where the share
 * agreeing falls below min_prob, at spec_factor x the match's length and at
 * k; finished outputs propose for later sequences, the least recently used
 * leaving the shared index first; against a brute force of the same rule
 * on random token runs, the per-sequence index grown step by step. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "spec/suffix.h"
#include "spec/suffix_index.h"

static int propose(struct spec_proposer *p, long id, const int32_t *t, int n, int n_prompt, int k, int32_t *out)
{
    const struct spec_seq s = {.id = id, .tokens = t, .n_prompt = n_prompt, .n_known = n};
    return spec_propose(p, &s, k, out);
}

static void finish(struct spec_proposer *p, long id, const int32_t *t, int n, int n_prompt)
{
    const struct spec_seq s = {.id = id, .tokens = t, .n_prompt = n_prompt, .n_known = n};
    spec_finish(p, &s);
}

static struct spec_proposer *make(int depth, float factor, float min_prob, int cache)
{
    struct err e;
    const struct spec_suffix_opts o = {depth, factor, min_prob, cache};
    struct spec_proposer *p = spec_suffix_create(&o, &e);
    cr_assert(p, "%s", e.msg);
    return p;
}

Test(spec_suffix, the_most_frequent_continuation_wins)
{
    struct spec_proposer *p = make(24, 4.f, 0.1f, 0);
    cr_assert_str_eq(p->ops->name, "suffix");
    /* "5 6" was followed by 7 twice and by 9 once (the newest): 7 wins, at 2/3 */
    const int32_t t[] = {5, 6, 7, 8, 1, 5, 6, 7, 8, 2, 5, 6, 9, 3, 5, 6};
    int32_t out[16];
    const int n = propose(p, 1, t, 16, 16, 8, out);
    cr_assert_geq(n, 2);
    cr_assert(out[0] == 7 && out[1] == 8, "%d %d", out[0], out[1]);
    spec_free(p);
}

Test(spec_suffix, lengths_follow_the_match_and_the_chance)
{
    int32_t out[16];
    /* "1 2 3 4 5 6 7 8 | 1 2": a 2-token match; factor 1 allows 2 tokens, factor 3 six */
    const int32_t t[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2};
    struct spec_proposer *p = make(24, 1.f, 0.1f, 0);
    cr_assert_eq(propose(p, 1, t, 11, 11, 8, out), 2);
    cr_assert(out[0] == 3 && out[1] == 4);
    spec_free(p);
    p = make(24, 3.f, 0.1f, 0);
    cr_assert_eq(propose(p, 1, t, 11, 11, 8, out), 6);
    cr_assert_eq(out[5], 8);
    /* k caps it */
    cr_assert_eq(propose(p, 1, t, 11, 11, 3, out), 3);
    spec_free(p);
    /* "4 4" followed by 1, 2, 3, 4 once each: a quarter each, below min_prob 0.3 -> nothing */
    const int32_t u[] = {4, 4, 1, 4, 4, 2, 4, 4, 3, 4, 4, 5, 4, 4};
    p = make(24, 4.f, 0.3f, 0);
    cr_assert_eq(propose(p, 1, u, 14, 14, 8, out), 0);
    spec_free(p);
    p = make(24, 4.f, 0.2f, 0);
    /* a quarter: the newest's continuation (5), then what followed it, to the end, all at a quarter */
    cr_assert_eq(propose(p, 1, u, 14, 14, 8, out), 3);
    cr_assert(out[0] == 5 && out[1] == 4 && out[2] == 4);
    spec_free(p);
    /* nothing to match */
    p = make(24, 1.f, 0.f, 0);
    const int32_t v[] = {1, 2, 3, 4};
    cr_assert_eq(propose(p, 1, v, 4, 4, 8, out), 0);
    cr_assert_eq(propose(p, 1, v, 1, 1, 8, out), 0);
    spec_free(p);
}

Test(spec_suffix, finished_outputs_propose_for_later_sequences)
{
    int32_t out[16];
    /* sequence 1's prompt ends "10 11", its output "12 13 14 15 16" */
    const int32_t a[] = {3, 10, 11, 12, 13, 14, 15, 16};
    const int32_t b[] = {7, 7, 10, 11};
    for (int cache = 0; cache <= 1; cache++) {
        struct spec_proposer *p = make(24, 2.f, 0.1f, cache ? 4096 : 0);
        cr_assert_eq(propose(p, 1, a, 3, 3, 8, out), 0);
        finish(p, 1, a, 8, 3);
        const int n = propose(p, 2, b, 4, 4, 8, out);
        if (cache) {
            cr_assert_eq(n, 4, "a 2-token match from the prompt's tail, factor 2");
            cr_assert(out[0] == 12 && out[3] == 15);
            struct spec_suffix_stats st;
            spec_suffix_stats(p, &st);
            cr_assert_eq(st.cached_seqs, 1);
            cr_assert_eq(st.cached_tokens, 9, "the 8 tokens (the prompt is under the depth) and a separator");
        } else {
            cr_assert_eq(n, 0, "without the shared index nothing is known of sequence 1");
        }
        spec_free(p);
    }
}

/* A sequence of 9 tokens: marker m, then 8 tokens of its own. */
static void seq_of(int m, int32_t *t)
{
    t[0] = 1000 + m;
    for (int i = 1; i < 9; i++)
        t[i] = 100 * (m + 1) + i;
}

Test(spec_suffix, the_least_recently_used_leave_first)
{
    /* 64 tokens: six sequences of 9 + a separator (60) fit, the seventh evicts */
    struct spec_proposer *p = make(8, 4.f, 0.1f, 64);
    int32_t t[8][9], out[8];
    for (int m = 0; m < 6; m++) {
        seq_of(m, t[m]);
        finish(p, m, t[m], 9, 0);
    }
    /* a proposal from sequence 0 (the oldest): it is used */
    const int32_t q0[] = {t[0][1], t[0][2]};
    cr_assert_eq(propose(p, 50, q0, 2, 2, 4, out), 4);
    cr_assert_eq(out[0], t[0][3]);
    finish(p, 50, q0, 2, 2);
    seq_of(6, t[6]);
    finish(p, 6, t[6], 9, 0);
    struct spec_suffix_stats st;
    spec_suffix_stats(p, &st);
    cr_assert_eq(st.requeued, 1, "sequence 0 moved up instead of out");
    cr_assert_eq(st.cached_seqs, 6);
    /* sequence 1, the least recently used, is gone; 0 and 6 are there */
    const int32_t q1[] = {t[1][1], t[1][2]}, q6[] = {t[6][1], t[6][2]};
    cr_assert_eq(propose(p, 51, q1, 2, 2, 4, out), 0);
    cr_assert_eq(propose(p, 52, q0, 2, 2, 4, out), 4);
    cr_assert_eq(propose(p, 53, q6, 2, 2, 4, out), 4);
    cr_assert_eq(out[0], t[6][3]);
    /* a sequence longer than half the index keeps its newest tokens */
    int32_t big[100];
    for (int i = 0; i < 100; i++)
        big[i] = 5000 + i;
    finish(p, 7, big, 100, 0);
    const int32_t q_old[] = {5001, 5002}, q_new[] = {5090, 5091};
    cr_assert_eq(propose(p, 54, q_old, 2, 2, 4, out), 0);
    cr_assert_eq(propose(p, 55, q_new, 2, 2, 4, out), 4);
    cr_assert_eq(out[0], 5092);
    spec_free(p);
}

/* The rule, by brute force: the 64 newest earlier occurrences of the last
 * bigram (one must follow), matched back up to depth, longest then newest;
 * for every distinct length the path its occurrences share. */
struct occ {
    int pos, len;
};

static float brute_path(const int32_t *t, int n, const struct occ *c, int nc, int max_tokens, float min_prob,
                        int32_t *out, int *len)
{
    int alive[64], na = nc;
    for (int i = 0; i < nc; i++)
        alive[i] = i;
    float prob = 1.f, score = 0.f;
    *len = 0;
    for (int s = 0; s < max_tokens; s++) {
        int best_tok = -1, best_count = 0;
        for (int i = 0; i < na; i++) {
            const int at = c[alive[i]].pos + 1 + s;
            if (at >= n)
                continue;
            int count = 0;
            for (int j = 0; j < na; j++)
                count += c[alive[j]].pos + 1 + s < n && t[c[alive[j]].pos + 1 + s] == t[at];
            if (count > best_count) /* the first (longest, newest) among equal counts */
                best_tok = t[at], best_count = count;
        }
        if (best_count == 0 || prob * (float)best_count / (float)na < min_prob)
            break;
        prob = prob * (float)best_count / (float)na;
        out[(*len)++] = best_tok;
        score += prob;
        int k = 0;
        for (int i = 0; i < na; i++)
            if (c[alive[i]].pos + 1 + s < n && t[c[alive[i]].pos + 1 + s] == best_tok)
                alive[k++] = alive[i];
        na = k;
    }
    return score;
}

static int brute(const int32_t *t, int n, int depth, float factor, float min_prob, int k, int32_t *out)
{
    struct occ c[64];
    int nc = 0;
    for (int p = n - 2; p >= 1 && nc < 64; p--)
        if (t[p - 1] == t[n - 2] && t[p] == t[n - 1]) {
            int len = 2;
            while (len < depth && len < n && p - len >= 0 && t[p - len] == t[n - 1 - len])
                len++;
            c[nc++] = (struct occ){p, len};
        }
    for (int i = 1; i < nc; i++) /* stable: by length, the newest first among equals */
        for (int j = i; j > 0 && c[j - 1].len < c[j].len; j--) {
            const struct occ x = c[j];
            c[j] = c[j - 1], c[j - 1] = x;
        }
    float best = 0.f;
    int n_best = 0;
    for (int i = 0; i < nc; i++) {
        if (i + 1 < nc && c[i + 1].len == c[i].len)
            continue;
        int max_tokens = (int)((float)c[i].len * factor + 1e-6f);
        max_tokens = max_tokens < k ? max_tokens : k;
        int32_t path[64];
        int len;
        const float s = brute_path(t, n, c, i + 1, max_tokens, min_prob, path, &len);
        if (s > best)
            best = s, n_best = len, memcpy(out, path, (size_t)len * sizeof *out);
    }
    return n_best;
}

Test(spec_suffix, equals_brute_force)
{
    struct rng r;
    rng_seed(&r, 9, 0, 0);
    static int32_t t[2000];
    int proposed = 0, calls = 0;
    for (int trial = 0; trial < 120; trial++) {
        const int n_max = 2 + (int)(rng_next(&r) % 1999), vocab = 2 + (int)(rng_next(&r) % 10);
        for (int i = 0; i < n_max; i++)
            t[i] = (int32_t)(rng_next(&r) % (uint64_t)vocab);
        const int depth = 2 + (int)(rng_next(&r) % 30), k = 1 + (int)(rng_next(&r) % 16);
        const float factor = 0.5f + (float)(rng_next(&r) % 8) * 0.5f, min_prob = (float)(rng_next(&r) % 5) * 0.1f;
        struct spec_proposer *p = make(depth, factor, min_prob, 0);
        /* one sequence growing: its index grows with it (and doubles past its first size) */
        for (int n = 2; n <= n_max; n += 1 + (int)(rng_next(&r) % 40)) {
            int32_t a[64], b[64];
            const int na = propose(p, 7, t, n, n / 2, k, a), nb = brute(t, n, depth, factor, min_prob, k, b);
            cr_assert_eq(na, nb, "trial %d, %d tokens (vocab %d, depth %d, k %d, factor %g, min %g): %d, brute %d",
                         trial, n, vocab, depth, k, (double)factor, (double)min_prob, na, nb);
            cr_assert_eq(memcmp(a, b, (size_t)na * sizeof *a), 0, "trial %d, %d tokens: tokens differ", trial, n);
            proposed += na > 0, calls++;
        }
        spec_free(p);
    }
    cr_assert_gt(proposed, calls / 3, "random runs should propose often (%d of %d)", proposed, calls);
}

Test(spec_suffix, bad_options_are_refused)
{
    struct err e;
    const struct spec_suffix_opts bad[] = {
        {1, 1.f, 0.1f, 0}, {65, 1.f, 0.1f, 0}, {8, 0.f, 0.1f, 0}, {8, 1.f, 1.5f, 0}, {8, 1.f, 0.1f, 10}};
    const char *why[] = {"depth", "depth", "factor", "chance", "cache"};
    for (int i = 0; i < 5; i++) {
        cr_assert_null(spec_suffix_create(&bad[i], &e));
        cr_assert(strstr(e.msg, why[i]), "%s", e.msg);
    }
}
