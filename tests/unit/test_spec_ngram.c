/* spec/ngram: prompt lookup proposals. The longest suffix n-gram in
 * [n_min, n_max] found earlier wins, the most recent occurrence among equal
 * lengths; what followed it is proposed, up to k tokens and never past the
 * known ones; against a brute-force search on random token runs. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "spec/ngram.h"

static int propose(struct spec_proposer *p, const int32_t *t, int n, int n_prompt, int k, int32_t *out)
{
    const struct spec_seq s = {.id = 0, .tokens = t, .n_prompt = n_prompt, .n_known = n};
    return spec_propose(p, &s, k, out);
}

Test(spec_ngram, proposes_what_followed_the_last_ngram)
{
    struct err e;
    struct spec_ngram_opts o = spec_ngram_opts_default();
    struct spec_proposer *p = spec_ngram_create(&o, &e);
    cr_assert(p, "%s", e.msg);
    cr_assert_str_eq(p->ops->name, "ngram");
    /* "5 6 7 8 9 ... 5 6": the 2-gram "5 6" came before, followed by 7 8 9 */
    const int32_t t[] = {1, 5, 6, 7, 8, 9, 2, 3, 5, 6};
    int32_t out[8];
    cr_assert_eq(propose(p, t, 10, 10, 3, out), 3);
    cr_assert(out[0] == 7 && out[1] == 8 && out[2] == 9);
    /* k caps it */
    cr_assert_eq(propose(p, t, 10, 10, 1, out), 1);
    cr_assert_eq(out[0], 7);
    /* to the end, 7 8 9 2 3 5 6 (the output part, from 4 on, is text to copy as well), then on as
     * a repeat: 7 */
    cr_assert_eq(propose(p, t, 10, 4, 8, out), 8);
    cr_assert(out[0] == 7 && out[6] == 6 && out[7] == 7);
    /* a loop just before the end proposes itself over and over */
    const int32_t loop[] = {4, 1, 2, 3, 1, 2, 3, 1, 2}, one[] = {9, 5, 5, 5};
    const int32_t want[] = {3, 1, 2, 3, 1, 2, 3, 1};
    cr_assert_eq(propose(p, loop, 9, 9, 8, out), 8);
    cr_assert_eq(memcmp(out, want, sizeof want), 0, "the period-3 loop continued");
    cr_assert_eq(propose(p, one, 4, 4, 5, out), 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(out[i], 5, "a repeated token, repeated");
    /* no earlier "3 5 6" or "x 6"... only length >= 2 counts: "9 4" has no match */
    const int32_t u[] = {1, 5, 6, 7, 9, 4};
    cr_assert_eq(propose(p, u, 6, 6, 4, out), 0);
    /* too few tokens to hold a match */
    cr_assert_eq(propose(p, u, 1, 1, 4, out), 0);
    spec_free(p);
}

Test(spec_ngram, longest_then_most_recent)
{
    int len;
    /* "1 2 3" occurs at 0 (followed by 10); "2 3" also at 5 (followed by 20): the longer wins */
    const int32_t a[] = {1, 2, 3, 10, 9, 2, 3, 20, 1, 2, 3};
    cr_assert_eq(spec_ngram_match(a, 11, 2, 4, &len), 3);
    cr_assert_eq(len, 3);
    /* with n_max 2 the most recent "2 3" wins */
    cr_assert_eq(spec_ngram_match(a, 11, 2, 2, &len), 7);
    cr_assert_eq(len, 2);
    /* a run repeats itself: the occurrence may overlap the suffix */
    const int32_t r[] = {4, 4, 4, 4};
    cr_assert_eq(spec_ngram_match(r, 4, 2, 3, &len), 3);
    cr_assert_eq(len, 3);
    /* n_min 3: a 2-token match is not enough */
    const int32_t b[] = {7, 8, 1, 7, 8};
    cr_assert_eq(spec_ngram_match(b, 5, 3, 4, &len), -1);
    cr_assert_eq(spec_ngram_match(b, 5, 1, 4, &len), 2);
    cr_assert_eq(len, 2);
}

/* The brute force: every length from the longest, every earlier start from the nearest. */
static int brute(const int32_t *t, int n, int lo, int hi, int *len)
{
    for (int l = hi; l >= lo; l--) {
        if (l > n - 1)
            continue;
        for (int j = n - l - 1; j >= 0; j--) {
            int same = 1;
            for (int i = 0; i < l; i++)
                same &= t[j + i] == t[n - l + i];
            if (same) {
                *len = l;
                return j + l;
            }
        }
    }
    return -1;
}

Test(spec_ngram, equals_brute_force)
{
    struct rng r;
    rng_seed(&r, 5, 0, 0);
    int32_t t[300];
    int found = 0;
    for (int trial = 0; trial < 2000; trial++) {
        const int n = 1 + (int)(rng_next(&r) % 300), vocab = 2 + (int)(rng_next(&r) % 12);
        for (int i = 0; i < n; i++)
            t[i] = (int32_t)(rng_next(&r) % (uint64_t)vocab);
        const int lo = 1 + (int)(rng_next(&r) % 3), hi = lo + (int)(rng_next(&r) % 4);
        int l1 = -1, l2 = -1;
        const int a = spec_ngram_match(t, n, lo, hi, &l1), b = brute(t, n, lo, hi, &l2);
        cr_assert_eq(a, b, "trial %d: n=%d lengths %d..%d: %d, brute force %d", trial, n, lo, hi, a, b);
        if (a >= 0) {
            cr_assert_eq(l1, l2);
            found++;
        }
    }
    cr_assert_gt(found, 1000, "the random runs should match often (%d of 2000)", found);
}

Test(spec_ngram, bad_lengths_are_refused)
{
    struct err e;
    const struct spec_ngram_opts bad[] = {{0, 2}, {3, 2}, {1, 65}, {-1, -1}};
    for (int i = 0; i < 4; i++) {
        cr_assert_null(spec_ngram_create(&bad[i], &e));
        cr_assert(strstr(e.msg, "n-gram lengths"), "%s", e.msg);
    }
}
