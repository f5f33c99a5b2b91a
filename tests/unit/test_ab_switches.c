/* The CUDA backend's one-digit A/B switches (backend/ab_switches.c): a value
 * that is not exactly one of a switch's digits is refused with its name;
 * unset, empty and every listed digit pass. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ab_switches.h"

static const struct {
    const char *name, *digits;
} known[] = {{"INFER_NO_PDL", "01"},      {"INFER_ATTN_EARLY", "01"},   {"INFER_ATTN_ROPE", "012"},
             {"INFER_ATTN_MERGE", "012"}, {"INFER_NORM_PRELOAD", "01"}, {"INFER_GEMV_GATED5", "01"}};
#define N_KNOWN (sizeof known / sizeof known[0])

static void unset_all(void)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        unsetenv(known[i].name);
}

Test(ab_switches, unset_empty_and_each_digit_pass)
{
    struct err e = {{0}};
    unset_all();
    cr_assert_eq(ab_switches_check(&e), 0, "%s", e.msg);
    for (size_t i = 0; i < N_KNOWN; i++) {
        setenv(known[i].name, "", 1);
        cr_assert_eq(ab_switches_check(&e), 0, "%s empty: %s", known[i].name, e.msg);
        for (const char *d = known[i].digits; *d; d++) {
            const char v[2] = {*d, 0};
            setenv(known[i].name, v, 1);
            cr_assert_eq(ab_switches_check(&e), 0, "%s=%s: %s", known[i].name, v, e.msg);
        }
        unsetenv(known[i].name);
    }
}

Test(ab_switches, refuses_other_values_by_name)
{
    static const char *bad[] = {"3", "9", "01", "1x", "yes", " 1", "-1"};
    unset_all();
    for (size_t i = 0; i < N_KNOWN; i++) {
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            if (strlen(bad[b]) == 1 && strchr(known[i].digits, bad[b][0]))
                continue;
            struct err e = {{0}};
            setenv(known[i].name, bad[b], 1);
            cr_assert_eq(ab_switches_check(&e), -1, "%s=%s taken", known[i].name, bad[b]);
            cr_assert(strstr(e.msg, known[i].name) && strstr(e.msg, bad[b]), "%s=%s: %s", known[i].name,
                      bad[b], e.msg);
        }
        unsetenv(known[i].name);
    }
}
