/* The flags every subcommand that runs the model shares (generate, logits,
 * bench, serve): --model, --device, --threads, --batch-invariant, and the
 * loading they drive. */
#ifndef INFER_CLI_MODEL_FLAGS_H
#define INFER_CLI_MODEL_FLAGS_H

#include "cli/args.h"
#include "model/model.h"

struct model_flags {
    const char *model;  /* checkpoint directory or .gguf file */
    const char *device; /* cpu, cuda or auto */
    int threads;        /* CPU threads; 0: all cores */
    int batch_invariant;
};

#define MODEL_FLAGS_N_OPTS 4

/* --device auto (the GPU where there is one), all cores. */
struct model_flags model_flags_default(void);
/* Writes the MODEL_FLAGS_N_OPTS options into opts (pointing into f). */
void model_flags_opts(struct model_flags *f, struct cli_opt *opts);
/* Checks what can be checked before loading (the device's name). */
int model_flags_check(const struct model_flags *f, struct err *e);
/* Creates the backend and loads the model onto it; the caller frees both
 * (model_free, then backend_free), also after a failure. */
int model_flags_load(const struct model_flags *f, struct backend **be, struct model **m, struct err *e);

#endif
