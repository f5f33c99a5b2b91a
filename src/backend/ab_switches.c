#include "backend/ab_switches.h"

#include <stdlib.h>
#include <string.h>

/* Each switch's digits and what they do; unset or empty is the default. */
static const struct {
    const char *name, *digits, *meaning;
} switches[] = {
    {"INFER_NO_PDL", "01", "1: every kernel launched plainly, no programmatic dependent launch"},
    {"INFER_ATTN_EARLY", "01", "0: the decode attention waits before its first KV loads"},
    {"INFER_ATTN_ROPE", "012",
     "RoPE inside the decode attention: 0 never, 1 by batch and head size, 2 always"},
    {"INFER_ATTN_MERGE", "012",
     "the decode attention's splits merged: 0 by the combine kernel, 1 by batch and head size, 2 in the last "
     "split"},
    {"INFER_NORM_PRELOAD", "01", "0: the norm folds wait before loading the residual and weights"},
    {"INFER_GEMV_GATED5", "01", "0: the gated GEMV stays at 4 blocks an SM; 1 as busy_share picks"},
};

int ab_switches_check(struct err *e)
{
    for (size_t i = 0; i < sizeof switches / sizeof switches[0]; i++) {
        const char *v = getenv(switches[i].name);
        if (v && v[0] && (v[1] || !strchr(switches[i].digits, v[0])))
            return err_set(e, "%s: '%s' is not one of the digits %s (%s)", switches[i].name, v,
                           switches[i].digits, switches[i].meaning);
    }
    return 0;
}
