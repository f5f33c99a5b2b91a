/* The relay: how rank 0 of a split model drives its other ranks step by
 * step. The group (group.c) carries it, through shared memory to the ranks
 * of rank 0's machine and its control connections to the rest; the step
 * runner writes and reads its messages (runner/relay.c). */
#ifndef INFER_PARALLEL_RELAY_H
#define INFER_PARALLEL_RELAY_H

#include <stddef.h>

#include "core/error.h"

struct relay {
    void *ctx;
    /* rank 0: msg[n] to every other rank */
    int (*send)(void *ctx, const void *msg, size_t n, struct err *e);
    /* the other ranks: the next message from rank 0 into *msg (malloc'ed);
     * 0, or 1 when the group ends (no message), -1 with e set */
    int (*recv)(void *ctx, void **msg, size_t *n, struct err *e);
    /* every rank: *out := the smallest v of all ranks */
    int (*agree_min)(void *ctx, int v, int *out, struct err *e);
};

#endif
