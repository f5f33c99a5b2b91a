/* The batch inputs of the CLI's commands: a file read one line at a time. */
#ifndef INFER_CLI_LINES_H
#define INFER_CLI_LINES_H

#include <stddef.h>

#include "core/error.h"

/* Calls fn on each line of file (without its newline; empty ones too
 * unless skip_empty); stops at the first failure, whose message gets
 * "file:line" in front. */
int cli_for_each_line(const char *file, int skip_empty,
                      int (*fn)(const char *line, size_t len, void *ctx, struct err *e), void *ctx, struct err *e);

#endif
