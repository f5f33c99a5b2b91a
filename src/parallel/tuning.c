#include "parallel/tuning.h"

#include <stdlib.h>
#include <string.h>

struct parallel_tuning parallel_tuning_default(void)
{
    return (struct parallel_tuning){.ar_one_shot_max = 1 << 20,
                                    .ar_two_shot_min = -1,
                                    .relay_spin_ms = 50,
                                    .relay_mailbox_bytes = 1 << 20}; /* a batch-64 step at a 16k context fits */
}

/* The variable's value, or NULL when it is unset or empty. */
static const char *value_of(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A whole number in [lo, hi] into *out, where name is set. */
static int read_number(const char *name, double lo, double hi, const char *what, int64_t *out, struct err *e)
{
    const char *v = value_of(name);
    if (!v)
        return 0;
    char *end;
    const double n = strtod(v, &end);
    if (*end || !(n >= lo && n <= hi) || n != (double)(int64_t)n)
        return err_set(e, "%s: '%s' is not %s", name, v, what);
    *out = (int64_t)n;
    return 0;
}

int parallel_tuning_read(struct parallel_tuning *t, struct err *e)
{
    *t = parallel_tuning_default();
    const char *nccl = value_of("INFER_AR_NCCL_ONLY"), *relay = value_of("INFER_RELAY"),
               *spin = value_of("INFER_RELAY_SPIN_MS");
    if (nccl && strcmp(nccl, "0") && strcmp(nccl, "1"))
        return err_set(e, "INFER_AR_NCCL_ONLY: '%s' is not 0 or 1", nccl);
    t->ar_nccl_only = nccl && !strcmp(nccl, "1");
    if (relay && strcmp(relay, "shm") && strcmp(relay, "tcp"))
        return err_set(e, "INFER_RELAY: '%s' is not shm or tcp", relay);
    t->relay_tcp = relay && !strcmp(relay, "tcp");
    if (spin) {
        char *end;
        t->relay_spin_ms = strtod(spin, &end);
        if (*end || !(t->relay_spin_ms >= 0 && t->relay_spin_ms <= 10000))
            return err_set(e, "INFER_RELAY_SPIN_MS: '%s' is not a number of ms in [0, 10000]", spin);
    }
    if (read_number("INFER_AR_ONE_SHOT_MAX", 0, 9e15, "a byte count", &t->ar_one_shot_max, e) ||
        read_number("INFER_AR_TWO_SHOT_MIN", 0, 9e15, "a byte count", &t->ar_two_shot_min, e) ||
        read_number("INFER_RELAY_MAILBOX_BYTES", 64, (double)(1 << 30), "a whole number of bytes in [64, 2^30]",
                    &t->relay_mailbox_bytes, e))
        return -1;
    return 0;
}
