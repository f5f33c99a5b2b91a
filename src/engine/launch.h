/* Bringing a model up for an engine: on one device, or split over ranks
 * (tensor parallelism, docs/dist.md), one process a GPU, which rank 0
 * starts and joins before each loads its share. Any client of the engine
 * (the CLI's commands, a server, a test) starts a model this way; the
 * flags that fill struct launch_opts are the CLI's (cli/model_flags.c). */
#ifndef INFER_ENGINE_LAUNCH_H
#define INFER_ENGINE_LAUNCH_H

#include "core/error.h"
#include "model/model.h"
#include "parallel/relay.h"

struct dist_group;

struct launch_opts {
    const char *model;  /* checkpoint directory or .gguf file */
    const char *device; /* cpu, cuda or auto */
    int threads;        /* CPU threads; 0: all cores */
    int batch_invariant;
    int tp;                     /* ranks the model is split over */
    int nnodes, node_rank;      /* machines, and this one's place */
    const char *dist_init_addr; /* where rank 0 listens (HOST:PORT); NULL: this machine, any port */
    const char *dist_backend;   /* nccl or cpu-test; NULL: nccl on cuda */
    double dist_timeout;        /* seconds for the ranks to meet */
};

/* --device auto (the GPU where there is one), all cores, one rank. */
struct launch_opts launch_opts_default(void);
/* Checks what can be checked before loading: the device's name, the
 * tensor-parallel options against each other, the device and the GPUs there
 * are, and the model's configuration (its heads must split). Errors name
 * the CLI flag of the option at fault. */
int launch_check(const struct launch_opts *o, struct err *e);

/* A machine other than the first of a split model (node_rank > 0) only
 * starts its ranks and waits for them: then 1, with the exit status in
 * *status; else 0 (carry on). -1 with e set when the ranks cannot start. */
int launch_other_node(const struct launch_opts *o, int *status, struct err *e);

/* What loading made: the backend, the model (rank 0's share when split) and
 * the group of ranks (NULL on one). */
struct loaded_model {
    struct backend *be;
    struct model *m;
    struct dist_group *group;
};

/* Loads as o says, starting and joining the other ranks first when the
 * model is split (their tuning, parallel/tuning.h, read here); free with
 * loaded_model_free, also after a failure. */
int launch_model(const struct launch_opts *o, struct loaded_model *lm, struct err *e);
/* The relay an engine on rank 0 drives the other ranks through, or NULL. */
const struct relay *loaded_model_relay(const struct loaded_model *lm);
/* The model, its backend and communicator, then the group's orderly end. */
void loaded_model_free(struct loaded_model *lm);

/* A rank other than 0 (`infer worker`): joins rank 0 at addr within
 * timeout seconds, loads its share as rank 0 says, and follows rank 0's
 * steps until the group ends. 0 on an orderly end; -1 with e set. */
int launch_worker(const char *addr, int rank, double timeout, struct err *e);

#endif
