/* The knobs of a split model that change its speed, never its results:
 * read once from the environment by the process that starts the group
 * (parallel_tuning_read, the one place infer reads the environment for
 * anything but its log level), sent to every rank with the settings, and
 * passed down to the relay and the GPU communicator. docs/dist.md,
 * "Tuning knobs", says when to turn them.
 *
 *   INFER_AR_NCCL_ONLY=1          every sum and the logits' gather through NCCL,
 *                                 not the CUDA IPC kernels (default 0)
 *   INFER_AR_ONE_SHOT_MAX=BYTES   one host: IPC sums up to this size, NCCL above
 *                                 (default 1 MiB; with --batch-invariant IPC always)
 *   INFER_AR_TWO_SHOT_MIN=BYTES   IPC sums of at least this size in two rounds
 *                                 (default 256 KiB from 4 ranks, never below)
 *   INFER_RELAY_SPIN_MS=MS        how long a GPU rank polls for rank 0's next step
 *                                 before it sleeps, in [0, 10000] (default 50)
 *   INFER_RELAY=shm|tcp           rank 0's machine's ranks get the steps through
 *                                 shared memory (default) or the connections only
 *   INFER_RELAY_MAILBOX_BYTES=N   the shared memory a step message may take, in
 *                                 [64, 2^30] (default 1 MiB; larger ones go on the
 *                                 connections) */
#ifndef INFER_PARALLEL_TUNING_H
#define INFER_PARALLEL_TUNING_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct parallel_tuning {
    int32_t ar_nccl_only;
    int64_t ar_one_shot_max;  /* bytes */
    int64_t ar_two_shot_min;  /* bytes; -1: the default for the group's size */
    double relay_spin_ms;
    int32_t relay_tcp;        /* 1: no mailbox */
    int64_t relay_mailbox_bytes;
};

/* The defaults, as above. */
struct parallel_tuning parallel_tuning_default(void);
/* The defaults with what the environment sets; -1 with e naming the
 * variable and the values it takes when one is set to anything else. */
int parallel_tuning_read(struct parallel_tuning *t, struct err *e);

#endif
