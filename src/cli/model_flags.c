#include "cli/model_flags.h"

struct model_flags model_flags_default(void) { return (struct model_flags){.device = "auto"}; }

void model_flags_opts(struct model_flags *f, struct cli_opt *opts)
{
    const struct cli_opt list[MODEL_FLAGS_N_OPTS] = {
        {"model", CLI_OPT_STRING, &f->model, 1, 0, 0, "checkpoint directory or .gguf file", 0},
        {"device", CLI_OPT_STRING, &f->device, 0, 0, 0,
         "cpu, cuda, or auto (cuda when a GPU is there, else cpu)", 0},
        {"threads", CLI_OPT_INT, &f->threads, 0, 0, 1024, "CPU threads (0: all cores)", 0},
        {"batch-invariant", CLI_OPT_FLAG, &f->batch_invariant, 0, 0, 0,
         "results independent of the batch (CUDA: slower prefill)", 0},
    };
    for (int i = 0; i < MODEL_FLAGS_N_OPTS; i++)
        opts[i] = list[i];
}

int model_flags_check(const struct model_flags *f, struct err *e)
{
    enum backend_kind kind;
    return backend_kind_parse(f->device, &kind, e);
}

int model_flags_load(const struct model_flags *f, struct backend **be, struct model **m, struct err *e)
{
    enum backend_kind kind;
    *be = NULL;
    *m = NULL;
    if (backend_kind_parse(f->device, &kind, e) || !(*be = backend_create(kind, f->threads, e)) ||
        !(*m = model_load(f->model, *be, e)))
        return -1;
    (*be)->batch_invariant = f->batch_invariant;
    return 0;
}
