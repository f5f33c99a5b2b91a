/* Flag parsing shared by the subcommands: --name VALUE or --name=VALUE,
 * typed, with errors that name the flag. */
#ifndef INFER_CLI_ARGS_H
#define INFER_CLI_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"

enum cli_opt_type { CLI_OPT_STRING, CLI_OPT_INT, CLI_OPT_U64, CLI_OPT_DOUBLE, CLI_OPT_FLAG };

struct cli_opt {
    const char *name; /* without the leading -- */
    enum cli_opt_type type;
    void *dst;        /* const char **, int *, uint64_t *, double *, int * (flag) */
    int required;
    long min, max;    /* for CLI_OPT_INT */
    const char *help;
    int seen;         /* set by the parser */
};

/* Returns 0 on success, 1 if --help was given (usage printed), -1 with e set. */
int cli_parse(int argc, char **argv, const char *cmd, struct cli_opt *opts, int n_opts, struct err *e);
void cli_usage(FILE *f, const char *cmd, const struct cli_opt *opts, int n_opts);

/* Whether the option named name was given on the command line. */
int cli_given(const struct cli_opt *opts, int n_opts, const char *name);

/* Parses "1,2,3" into a malloc'ed array (caller frees). */
int cli_parse_int_list(const char *s, const char *flag, int32_t **out, int *n, struct err *e);

#endif
