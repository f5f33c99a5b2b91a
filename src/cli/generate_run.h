/* Running `infer generate`'s requests through the engine (the single prompt
 * and the JSONL file alike), each choice printed as it finishes. */
#ifndef INFER_CLI_GENERATE_RUN_H
#define INFER_CLI_GENERATE_RUN_H

#include "cli/generate_request.h"

/* Returns 0, or -1 with e set (a bad line is named by file and line number;
 * nothing is printed on stdout then). */
int generate_run_file(struct model *m, const struct tokenizer *tok, const char *model_dir, const char *input,
                  const struct generate_defaults *d, const struct engine_opts *o, int as_json, struct err *e);

/* The same for requests already made; reqs stay the caller's. single: the
 * single-prompt form, whose JSON object has no "request" field. */
int generate_run_requests(struct model *m, const struct tokenizer *tok, struct request_fields *reqs, int n,
                          const struct engine_opts *o, int as_json, int single, struct err *e);

#endif
