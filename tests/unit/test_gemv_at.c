/* INFER_GEMV_AT's parser (backend/gemv_at.c): a list is read entry by
 * entry, and every malformed or out-of-range entry is refused with the
 * variable's name and the entry. */
#include <criterion/criterion.h>
#include <string.h>

#include "backend/gemv_at.h"

Test(gemv_at, empty_and_unset_force_nothing)
{
    struct gemv_at v[GEMV_AT_MAX];
    struct err e;
    cr_assert_eq(gemv_at_parse(NULL, v, &e), 0);
    cr_assert_eq(gemv_at_parse("", v, &e), 0);
}

Test(gemv_at, reads_every_entry)
{
    struct gemv_at v[GEMV_AT_MAX];
    struct err e;
    cr_assert_eq(gemv_at_parse("6144:2560:1:4:1,19456:2560:2:2:0", v, &e), 2);
    cr_assert(v[0].n == 6144 && v[0].k == 2560 && v[0].tiles == 1 && v[0].unroll == 4 && v[0].l2_hint == 1);
    cr_assert(v[1].n == 19456 && v[1].k == 2560 && v[1].tiles == 2 && v[1].unroll == 2 && v[1].l2_hint == 0);
}

Test(gemv_at, refuses_bad_entries_by_name)
{
    static const char *bad[] = {"x",
                                "6144:2560:1:4",
                                "6144:2560:3:4:1",
                                "6144:2560:1:3:1",
                                "6144:2560:1:4:2",
                                "6144:2560:1:4:1x",
                                "0:2560:1:4:1",
                                "6144:-1:1:4:1",
                                "6144:2560:1:4:1,",
                                "6144:2560:1:4:1,,1:1:1:2:0"};
    struct gemv_at v[GEMV_AT_MAX];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct err e = {0};
        cr_assert_eq(gemv_at_parse(bad[i], v, &e), -1, "took '%s'", bad[i]);
        cr_assert(strstr(e.msg, "INFER_GEMV_AT"), "'%s': %s", bad[i], e.msg);
    }
}

Test(gemv_at, refuses_too_many_entries)
{
    char list[64 * (GEMV_AT_MAX + 1)] = "";
    for (int i = 0; i <= GEMV_AT_MAX; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d:64:1:2:0", i ? "," : "", 8 * (i + 1));
    struct gemv_at v[GEMV_AT_MAX];
    struct err e = {0};
    cr_assert_eq(gemv_at_parse(list, v, &e), -1);
    cr_assert(strstr(e.msg, "more than"), "%s", e.msg);
}
