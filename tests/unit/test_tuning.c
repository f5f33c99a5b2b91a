/* A split model's tuning knobs (parallel/tuning.c), the one place infer
 * reads the environment for more than its log level: unset and empty give
 * the defaults, each knob takes what it says it takes, and anything else is
 * refused with the variable's name and the value. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/tuning.h"

static const char *const names[] = {"INFER_AR_NCCL_ONLY",  "INFER_AR_ONE_SHOT_MAX", "INFER_AR_TWO_SHOT_MIN",
                                    "INFER_RELAY_SPIN_MS", "INFER_RELAY",           "INFER_RELAY_MAILBOX_BYTES"};
#define N_NAMES (sizeof names / sizeof names[0])

static void unset_all(void)
{
    for (size_t i = 0; i < N_NAMES; i++)
        unsetenv(names[i]);
}

Test(tuning, unset_and_empty_give_the_defaults)
{
    struct parallel_tuning t, d = parallel_tuning_default();
    struct err e = {{0}};
    unset_all();
    cr_assert_eq(parallel_tuning_read(&t, &e), 0, "%s", e.msg);
    cr_assert(!memcmp(&t, &d, sizeof t));
    cr_assert_eq(d.ar_nccl_only, 0);
    cr_assert_eq(d.ar_one_shot_max, 1 << 20);
    cr_assert_eq(d.ar_two_shot_min, -1);
    cr_assert_eq(d.relay_tcp, 0);
    cr_assert_eq(d.relay_mailbox_bytes, 1 << 20);
    cr_assert_float_eq(d.relay_spin_ms, 50.0, 1e-12);
    for (size_t i = 0; i < N_NAMES; i++)
        setenv(names[i], "", 1);
    cr_assert_eq(parallel_tuning_read(&t, &e), 0, "%s", e.msg);
    cr_assert(!memcmp(&t, &d, sizeof t));
}

/* Sets the values names[i] = values[i] (NULL: unset) and reads them back. */
static struct parallel_tuning read_with(const char *const values[N_NAMES])
{
    struct parallel_tuning t;
    struct err e = {{0}};
    for (size_t i = 0; i < N_NAMES; i++)
        values[i] ? setenv(names[i], values[i], 1) : unsetenv(names[i]);
    cr_assert_eq(parallel_tuning_read(&t, &e), 0, "%s", e.msg);
    return t;
}

Test(tuning, each_knob_takes_its_values)
{
    static const char *const set[N_NAMES] = {"1", "524288", "0", "0.5", "tcp", "64"};
    struct parallel_tuning t = read_with(set);
    cr_assert_eq(t.ar_nccl_only, 1);
    cr_assert_eq(t.ar_one_shot_max, 524288);
    cr_assert_eq(t.ar_two_shot_min, 0);
    cr_assert_float_eq(t.relay_spin_ms, 0.5, 1e-12);
    cr_assert_eq(t.relay_tcp, 1);
    cr_assert_eq(t.relay_mailbox_bytes, 64);
    static const char *const other[N_NAMES] = {"0", NULL, NULL, NULL, "shm", "1073741824"};
    t = read_with(other);
    cr_assert_eq(t.ar_nccl_only, 0);
    cr_assert_eq(t.relay_tcp, 0);
    cr_assert_eq(t.relay_mailbox_bytes, 1 << 30);
}

Test(tuning, refuses_other_values_by_name)
{
    static const struct {
        const char *name, *value;
    } bad[] = {
        {"INFER_AR_NCCL_ONLY", "2"},       {"INFER_AR_NCCL_ONLY", "yes"},      {"INFER_AR_ONE_SHOT_MAX", "-1"},
        {"INFER_AR_ONE_SHOT_MAX", "1k"},   {"INFER_AR_ONE_SHOT_MAX", "1.5"},   {"INFER_AR_TWO_SHOT_MIN", "x"},
        {"INFER_RELAY_SPIN_MS", "abc"},    {"INFER_RELAY_SPIN_MS", "-1"},      {"INFER_RELAY_SPIN_MS", "20000"},
        {"INFER_RELAY_SPIN_MS", "5ms"},    {"INFER_RELAY", "udp"},             {"INFER_RELAY_MAILBOX_BYTES", "12"},
        {"INFER_RELAY_MAILBOX_BYTES", "1e3x"}, {"INFER_RELAY_MAILBOX_BYTES", "2147483648"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct parallel_tuning t;
        struct err e = {{0}};
        unset_all();
        setenv(bad[i].name, bad[i].value, 1);
        cr_assert_eq(parallel_tuning_read(&t, &e), -1, "%s=%s taken", bad[i].name, bad[i].value);
        cr_assert(strstr(e.msg, bad[i].name) && strstr(e.msg, bad[i].value), "%s=%s: %s", bad[i].name, bad[i].value,
                  e.msg);
    }
}
