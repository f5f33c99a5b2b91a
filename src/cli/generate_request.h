/* One line of `infer generate --input FILE.jsonl`: a JSON object with the
 * prompt ("prompt" text, "prompt_ids", or chat "messages") and OpenAI-style
 * sampling fields, turned into an engine request. Unknown fields and bad
 * values are refused, naming the field. */
#ifndef INFER_CLI_GENERATE_REQUEST_H
#define INFER_CLI_GENERATE_REQUEST_H

#include "engine/engine.h"
#include "chat/chat_template.h"

/* What a line leaves out: the command line's flags. */
struct generate_defaults {
    int max_tokens;
    struct sampling_params sampling;
    int have_seed; /* else each request gets a seed of its own */
    int ignore_eos;
};

/* One request of infer generate (a line of --input, or the single prompt). Free with generate_request_free. */
struct generate_request {
    struct engine_request submit; /* what goes to the engine; points into the owned arrays */
    int32_t *prompt;
    char **stop;
    struct logit_bias *bias;
    int logprobs; /* report log-probs of the output tokens */
};

/* Where text prompts and messages go: tok may be NULL (then only
 * "prompt_ids"); the chat template is loaded on the first "messages". */
struct generate_context {
    const struct tokenizer *tok;
    const char *model_dir;
    struct chat_template *ct; /* owned, lazily loaded */
    int vocab_size;
};

/* Parses line (len bytes). On failure e holds "field: problem". index: the
 * request's position, which picks its seed when none is given. */
int generate_request_parse(struct generate_context *ctx, const char *line, size_t len, const struct generate_defaults *d,
                      uint64_t seed_base, int index, struct generate_request *out, struct err *e);
void generate_request_free(struct generate_request *r);

#endif
