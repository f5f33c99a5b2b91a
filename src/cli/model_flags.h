/* The flags every subcommand that runs the model shares (generate, logits,
 * bench, serve): --model, --device, --threads, --batch-invariant, and
 * tensor parallelism (--tensor-parallel-size / --tp, --nnodes, --node-rank,
 * --dist-init-addr, --dist-backend, --dist-timeout), into the options that
 * bring the model up (engine/launch.h). */
#ifndef INFER_CLI_MODEL_FLAGS_H
#define INFER_CLI_MODEL_FLAGS_H

#include "cli/args.h"
#include "engine/launch.h"

#define MODEL_FLAGS_N_OPTS 10

/* Writes the MODEL_FLAGS_N_OPTS options into opts (pointing into f, which
 * launch_opts_default filled). */
void model_flags_opts(struct launch_opts *f, struct cli_opt *opts);

#endif
