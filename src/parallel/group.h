/* The processes of a split model (docs/dist.md): rank 0 starts the local
 * ranks (one process each), every rank connects to rank 0 over TCP and is
 * told how to load its share; then rank 0's step runner drives the others
 * through the group's relay (parallel/relay.h). A watchdog in every process
 * ends it when a peer dies, so a group never hangs on a dead rank. */
#ifndef INFER_PARALLEL_GROUP_H
#define INFER_PARALLEL_GROUP_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "core/error.h"
#include "parallel/mailbox.h"
#include "parallel/relay.h"
#include "parallel/tuning.h"

enum dist_backend {
    DIST_BACKEND_NCCL,     /* GPUs: NCCL and CUDA IPC */
    DIST_BACKEND_CPU_TEST, /* the CPU communicator over shared memory, for tests */
};

int dist_backend_parse(const char *s, enum dist_backend *out, struct err *e);

struct dist_opts {
    int size;              /* --tensor-parallel-size */
    int nnodes, node_rank; /* --nnodes, --node-rank */
    const char *init_addr; /* --dist-init-addr HOST:PORT; NULL: 127.0.0.1 and a free port (one node) */
    enum dist_backend backend;
    double timeout; /* --dist-timeout: seconds to wait for the ranks to meet */
};

/* What rank 0 tells every rank when it joins: enough to load its share. */
struct dist_settings {
    char model[4096];
    char device[16];
    int size;           /* ranks in all */
    int ranks_per_host; /* on each machine; rank r takes GPU r % ranks_per_host there */
    int threads, batch_invariant;
    int backend;       /* enum dist_backend */
    char comm_id[512]; /* the communicator's name (CPU: a shared-memory segment; NCCL: its unique id) */
    char relay_mailbox[64]; /* the relay's shared memory for rank 0's machine (mailbox.h), or empty */
    struct parallel_tuning tuning; /* rank 0's, for every rank */
};

struct dist_group {
    int rank, size;
    int *ctrl, *live; /* rank 0: [size] connections to each rank (entry 0 unused); others: [1], to rank 0 */
    pid_t *children;  /* the local ranks this process started */
    int n_children;
    double timeout;
    struct dist_settings settings;
    struct relay relay; /* rank 0's runner drives the others through it; the others follow it */
    double relay_spin_s;       /* a GPU rank but 0: how long it polls for the next message (group.c) */
    struct mailbox *mbox;      /* the relay's messages to rank 0's machine (mailbox.h), or NULL */
    int mbox_named;            /* rank 0: its name still exists (unlinked once every rank opened it) */
    pthread_t watchdog;
    int watching;
    int wake[2]; /* a pipe: the end wakes the watchdog */
    atomic_int stopping; /* an orderly end: the watchdog lets connections close */
};

/* Rank 0 of node 0: listens, starts the node's other ranks (`infer worker`
 * processes of this executable), and waits until every rank of every node
 * has connected (--dist-timeout); a local rank that exits first ends it at
 * once. Then send the settings with dist_send_settings. Free with
 * dist_group_end. */
int dist_launch(const struct dist_opts *o, struct dist_group **out, struct err *e);
/* Also makes the relay's mailbox for the ranks of rank 0's machine (unless
 * the tuning says INFER_RELAY=tcp), naming it in *s. */
int dist_send_settings(struct dist_group *g, struct dist_settings *s, struct err *e);

/* Every rank but 0 says it holds its share (and its communicator); rank 0
 * waits until all have. */
int dist_ready(struct dist_group *g, struct err *e);
int dist_wait_ready(struct dist_group *g, struct err *e);

/* Any other rank: connects to rank 0 at addr (retrying until timeout) and
 * receives the settings into g->settings. */
int dist_join(const char *addr, int rank, double timeout, struct dist_group **out, struct err *e);

/* A node other than node 0: starts its ranks and waits for them; returns the
 * exit status to end with (0 when every rank ended well). */
int dist_run_node(const struct dist_opts *o, struct err *e);

/* Watches the other ranks' liveness connections from now on: a peer that
 * dies ends this process (non-zero, the cause logged). */
void dist_watch(struct dist_group *g);

/* The start of an orderly end: rank 0 tells the others to exit, and from
 * now on no rank takes a peer's leaving for a failure. Call it before the
 * communicator goes: the others then end theirs at the same time. */
void dist_group_release(struct dist_group *g);

/* An orderly end (dist_group_release if not yet): waits for the ranks this
 * process started (killing them after a grace period); closes everything. */
void dist_group_end(struct dist_group *g);

#endif
