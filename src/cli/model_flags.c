#include "cli/model_flags.h"

void model_flags_opts(struct launch_opts *f, struct cli_opt *opts)
{
    const struct cli_opt list[MODEL_FLAGS_N_OPTS] = {
        {"model", CLI_OPT_STRING, &f->model, 1, 0, 0, "checkpoint directory or .gguf file", 0},
        {"device", CLI_OPT_STRING, &f->device, 0, 0, 0, "cpu, cpu-reference (the fp32 oracle), cuda, or auto (cuda when a GPU is there, else cpu)", 0},
        {"threads", CLI_OPT_INT, &f->threads, 0, 0, 1024, "CPU threads (0: all cores)", 0},
        {"batch-invariant", CLI_OPT_FLAG, &f->batch_invariant, 0, 0, 0,
         "results independent of the batch (CUDA: slower prefill)", 0},
        {"tensor-parallel-size", CLI_OPT_INT, &f->tp, 0, 1, 1024,
         "GPUs (ranks, one process each) to split the model over (also --tp)", 0},
        {"nnodes", CLI_OPT_INT, &f->nnodes, 0, 1, 1024, "machines the ranks run on", 0},
        {"node-rank", CLI_OPT_INT, &f->node_rank, 0, 0, 1023, "this machine's place among them (0: rank 0's)", 0},
        {"dist-init-addr", CLI_OPT_STRING, &f->dist_init_addr, 0, 0, 0,
         "HOST:PORT where rank 0 listens for the other ranks (default: this machine, a free port)", 0},
        {"dist-backend", CLI_OPT_STRING, &f->dist_backend, 0, 0, 0,
         "nccl (GPUs), or cpu-test: the CPU communicator, for tests; default nccl", 0},
        {"dist-timeout", CLI_OPT_DOUBLE, &f->dist_timeout, 0, 0, 0, "seconds the ranks have to meet", 0},
    };
    for (int i = 0; i < MODEL_FLAGS_N_OPTS; i++)
        opts[i] = list[i];
}
