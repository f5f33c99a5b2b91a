/* The flags every subcommand that runs the model shares (generate, logits,
 * bench, serve): --model, --device, --threads, --batch-invariant, and
 * tensor parallelism (--tensor-parallel-size / --tp, --nnodes, --node-rank,
 * --dist-init-addr, --dist-backend, --dist-timeout); and the loading they
 * drive: on a split model, rank 0 starts and joins the other ranks first
 * (src/dist) and loads its share. */
#ifndef INFER_CLI_MODEL_FLAGS_H
#define INFER_CLI_MODEL_FLAGS_H

#include "cli/args.h"
#include "model/model.h"

struct dist_group;
struct dist_settings;
struct runner_relay;

struct model_flags {
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

#define MODEL_FLAGS_N_OPTS 10

/* --device auto (the GPU where there is one), all cores, one rank. */
struct model_flags model_flags_default(void);
/* Writes the MODEL_FLAGS_N_OPTS options into opts (pointing into f). */
void model_flags_opts(struct model_flags *f, struct cli_opt *opts);
/* Checks what can be checked before loading: the device's name, the
 * tensor-parallel flags against each other, the device and the GPUs there
 * are, and the model's configuration (its heads must split). */
int model_flags_check(const struct model_flags *f, struct err *e);

/* A machine other than the first of a split model (--node-rank > 0) only
 * starts its ranks and waits for them: then 1, with the exit status in
 * *status; else 0 (carry on). -1 with e set when the ranks cannot start. */
int model_flags_run_node(const struct model_flags *f, int *status, struct err *e);

/* What loading made: the backend, the model (rank 0's share when split) and
 * the group of ranks (NULL on one). */
struct loaded_model {
    struct backend *be;
    struct model *m;
    struct dist_group *group;
};

/* Loads per the flags (starting and joining the other ranks first when the
 * model is split); free with model_flags_unload, also after a failure. */
int model_flags_load(const struct model_flags *f, struct loaded_model *lm, struct err *e);
/* A rank other than 0 (`infer worker`): its backend, communicator and share
 * as the settings from rank 0 say. */
int model_flags_load_rank(const struct dist_settings *s, int rank, struct loaded_model *lm, struct err *e);
/* The relay an engine on rank 0 drives the other ranks through, or NULL. */
const struct runner_relay *loaded_model_relay(const struct loaded_model *lm);
/* The model, its backend and communicator, then the group's orderly end. */
void model_flags_unload(struct loaded_model *lm);

#endif
