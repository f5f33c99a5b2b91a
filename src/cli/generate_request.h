/* One line of `infer generate --input FILE.jsonl`: a JSON object of request
 * fields ("prompt" text, "prompt_ids" or chat "messages", and OpenAI-style
 * sampling fields) through the shared parser (engine/request_fields.h: the
 * server's rules), with the command line's flags as the defaults and
 * unknown fields refused. */
#ifndef INFER_CLI_GENERATE_REQUEST_H
#define INFER_CLI_GENERATE_REQUEST_H

#include "engine/request_fields.h"

/* What a line leaves out: the command line's flags. */
struct generate_defaults {
    int max_tokens;
    struct sampling_params sampling;
    int have_seed; /* else each request gets a seed of its own */
    int ignore_eos;
};

/* Where text prompts and messages go: tok may be NULL (then only
 * "prompt_ids"); the chat template is loaded on the first "messages". */
struct generate_context {
    const struct tokenizer *tok;
    const char *model_dir;
    struct chat_template *ct; /* owned (chat_template_free), lazily loaded */
    int vocab_size;
    struct grammar_cache *grammars; /* output constraints ("response_format", ...); NULL: refused */
};

/* Parses line (len bytes) into out (free with request_fields_free).
 * Returns 0, or -1 with e holding the problem, which names the field.
 * index: the request's position, which picks its seed when none is given. */
int generate_request_parse(struct generate_context *ctx, const char *line, size_t len,
                           const struct generate_defaults *d, uint64_t seed_base, int index,
                           struct request_fields *out, struct err *e);

#endif
