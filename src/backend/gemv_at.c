#include "backend/gemv_at.h"

#include <stdio.h>
#include <string.h>

int gemv_at_parse(const char *s, struct gemv_at *out, struct err *e)
{
    int n = 0;
    for (const char *at = s; at && *at;) {
        const size_t len = strcspn(at, ",");
        long long fn, fk;
        int t, u, h, used = 0;
        if (sscanf(at, "%lld:%lld:%d:%d:%d%n", &fn, &fk, &t, &u, &h, &used) != 5 || (size_t)used != len ||
            fn < 1 || fk < 1 || (t != 1 && t != 2) || (u != 2 && u != 4) || (h != 0 && h != 1))
            return err_set(e, "INFER_GEMV_AT: '%.*s' is not N:K:T:U:H (N, K > 0; T 1|2, U 2|4, H 0|1)",
                           (int)len, at);
        if (n == GEMV_AT_MAX)
            return err_set(e, "INFER_GEMV_AT: more than %d entries", GEMV_AT_MAX);
        out[n++] = (struct gemv_at){fn, fk, t, u, h};
        at += len;
        if (*at == ',' && !*++at)
            return err_set(e, "INFER_GEMV_AT: '%s' ends with a comma", s);
    }
    return n;
}
