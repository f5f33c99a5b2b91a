/* The sampling flags that `generate` and `bench` share: --temperature,
 * --top-p, --top-k, --min-p and --seed, parsed into doubles and checked by
 * sampling_params_check, whose refusals are given the flag's name. */
#ifndef INFER_CLI_SAMPLING_FLAGS_H
#define INFER_CLI_SAMPLING_FLAGS_H

#include <stdint.h>

#include "cli/args.h"
#include "sampling/sampling.h"

struct sampling_flags {
    double temperature, top_p, min_p;
    int top_k;
    uint64_t seed;
};

#define SAMPLING_FLAGS_N_OPTS 5

/* Greedy: temperature 0, top-p 1, no top-k or min-p, seed 0. */
struct sampling_flags sampling_flags_default(void);
/* Writes the SAMPLING_FLAGS_N_OPTS options into opts (pointing into sf);
 * seed_help: what --seed does for the command. */
void sampling_flags_opts(struct sampling_flags *sf, struct cli_opt *opts, const char *seed_help);
struct sampling_params sampling_flags_params(const struct sampling_flags *sf);
/* After parsing, before anything loads: the values on their own (a
 * vocabulary of any size), the refusal naming the flag. */
int sampling_flags_check(const struct sampling_flags *sf, struct err *e);

#endif
