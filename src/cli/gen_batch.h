/* The batch form of `infer generate`: a JSONL file of requests through the
 * engine, results printed as they finish. */
#ifndef INFER_CLI_GEN_BATCH_H
#define INFER_CLI_GEN_BATCH_H

#include "cli/gen_request.h"

/* Returns 0, or -1 with e set (a bad line is named by file and line number;
 * nothing is printed on stdout then). */
int gen_batch_run(struct model *m, const struct tokenizer *tok, const char *model_dir, const char *input,
                  const struct gen_defaults *d, const struct engine_opts *o, int as_json, struct err *e);

/* The same for requests already made (the single-prompt form with sampling
 * flags); reqs stay the caller's. */
int gen_batch_run_requests(struct model *m, const struct tokenizer *tok, struct gen_request *reqs, int n,
                           const struct engine_opts *o, int as_json, struct err *e);

#endif
