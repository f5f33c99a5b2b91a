/* OpenAI's request and response shapes for POST /v1/chat/completions and
 * POST /v1/completions, as pure functions (no sockets, no engine): a body
 * becomes a validated engine request (template rendered, prompt tokenized,
 * limits enforced; its request fields through engine/request_fields.h, the
 * parser `infer generate --input` uses too) or an OpenAI error; results
 * become response objects and SSE chunks. The HTTP side (server.c) owns the
 * I/O and the engine. */
#ifndef INFER_SERVER_OAI_H
#define INFER_SERVER_OAI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/request_fields.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

enum oai_kind { OAI_CHAT, OAI_COMPLETION };

/* An error as OpenAI returns it: HTTP status and
 * {"error": {"message", "type", "param", "code"}}. type: "invalid_request_error" (400),
 * "authentication_error" (401), "not_found_error" (404), "rate_limit_error" (429),
 * "server_error" (500/503). param: the offending field ("messages[2].content",
 * "temperature", ...) or empty. */
struct oai_error {
    int status;
    const char *type;
    char param[96];
    char message[512];
};

/* What parsing needs from the server; all borrowed. */
struct oai_context {
    const struct tokenizer *tok;    /* required for text prompts, stop strings and token strings */
    const struct chat_template *ct; /* NULL: chat requests get 400 "the model has no chat template" */
    const char *const *model_names; /* accepted "model" values (served names); n_model_names >= 1 */
    int n_model_names;
    int vocab_size;
    int max_context;    /* prompt + max_tokens must fit: else 400 naming the lengths */
    int max_n;          /* largest "n" (e.g. 16) */
    int max_stop;       /* most stop strings (e.g. 16), each at most max_stop_len bytes */
    int max_stop_len;
    int default_max_tokens; /* when the body gives none: what the context leaves, capped by this */
    struct grammar_cache *grammars; /* compiles output constraints; NULL (no tokenizer): they are refused */
};

/* A parsed request. f.submit is what goes to engine_submit (it points into
 * the arrays f owns); f.submit.sampling.top_logprobs is chat's
 * "top_logprobs", or the N of completions' "logprobs" (0..5); f.prompt_text
 * is the prompt as text (completions, for echo) or the rendered messages
 * (chat), "" when there is none. */
struct oai_completion_request {
    enum oai_kind kind;
    char *model;               /* as given (one of the served names) */
    int stream, include_usage; /* "stream", "stream_options": {"include_usage"} */
    int logprobs;              /* chat: "logprobs": true; completions: "logprobs": N >= 0 given */
    int echo;                  /* completions "echo": the prompt text before the completion */
    struct request_fields f;   /* the shared parser's request (engine/request_fields.h) */
};

/* Parses and validates a body (len bytes, not NUL-terminated) for kind.
 * Returns 0, or -1 with err filled (status 400 for anything wrong with the
 * body: invalid JSON or UTF-8, not an object, nesting deeper than 64, unknown
 * model, missing / wrongly typed / out-of-range fields, NaN or infinite
 * numbers, empty prompt, prompt + max_tokens longer than the context, token
 * ids outside the vocabulary, template errors). Unknown fields are ignored
 * (clients send many), except ones whose meaning we would silently change
 * ("best_of" > n, "suffix", "tools" on completions, "logprobs" > 5 on
 * completions): those are 400; so are output constraints that do not
 * compile (engine/request_constraint.h), naming the path. seed: "seed", else
 * seed_if_absent. */
int oai_request_parse(const struct oai_context *ctx, enum oai_kind kind, const char *body, size_t len,
                      uint64_t seed_if_absent, struct oai_completion_request *out, struct oai_error *err);
void oai_request_free(struct oai_completion_request *r);

/* One token's log-probs, as the engine reports them (sample_result). */
struct oai_token_logprob {
    int32_t token;
    float logprob;
    int n_top;
    int32_t top_ids[20];
    float top_logprobs[20];
};

/* One choice's finished result. */
struct chat_message;
struct chat_piece;
struct oai_choice {
    const char *text; /* the generated text (cut at a stop string) */
    size_t text_len;
    enum finish_reason finish; /* ABORT renders as "abort" but is never sent to a client that left */
    const struct oai_token_logprob *lp; /* [n_lp] when r->logprobs, else NULL */
    int n_lp;
    /* chat: the text read back (chat/chat_output.h) into content,
     * reasoning_content and tool_calls; NULL: the text is the content */
    const struct chat_message *msg;
};

/* The finish of a choice that ended (stop) after tool calls: "tool_calls". */
enum { OAI_FINISH_TOOL_CALLS = 100 };

/* The id of tool call `call` of choice `index` in the response `id`
 * ("call_" and 24 hex digits), the same in a stream and a whole response. */
void oai_tool_call_id(const char *id, int index, int call, char out[32]);

/* The whole non-streaming response object: {"id", "object": "chat.completion" |
 * "text_completion", "created", "model", "choices": [...], "usage": {prompt_tokens,
 * completion_tokens, total_tokens}}. Chat choices carry {"index", "message": {"role":
 * "assistant", "content" (null when there are tool calls and no text), "reasoning_content"
 * (when there was reasoning), "tool_calls" (when there were calls: [{"id", "type":
 * "function", "function": {"name", "arguments"}}])}, "logprobs": null | {"content": [{"token", "logprob", "bytes",
 * "top_logprobs": [...]}]}, "finish_reason"}; completion choices {"index", "text",
 * "logprobs": null | {"tokens", "token_logprobs", "top_logprobs", "text_offset"},
 * "finish_reason"}. Token strings are each token decoded alone (tok). When the
 * schema had keywords ignored ("strict": false, or unknown keywords), "warnings":
 * ["keyword at /path (why)", ...] (also on each choice's first chunk when streamed). */
json_t *oai_response(const struct oai_completion_request *r, const struct tokenizer *tok, const char *id, long created,
                     const struct oai_choice *choices, int n_choices, int prompt_tokens, int completion_tokens);

/* One SSE event's data for a streamed choice ("chat.completion.chunk" /
 * "text_completion"): a text delta with its tokens' log-probs (lp may be NULL),
 * or, when finish >= 0, the choice's last chunk with "finish_reason". Chat
 * streams open each choice with a {"role": "assistant"} delta (first = 1).
 * Returns a malloc'ed "data: {...}\n\n" string. */
char *oai_chunk(const struct oai_completion_request *r, const struct tokenizer *tok, const char *id, long created, int index,
                int first, const char *delta, size_t delta_len, const struct oai_token_logprob *lp, int n_lp,
                int finish);
/* One SSE event for a piece of a chat choice read back (chat/chat_output.h):
 * a "content" or "reasoning_content" delta, a tool call's opening
 * ({"tool_calls": [{"index", "id", "type": "function", "function":
 * {"name", "arguments": ""}}]}) or a fragment of its arguments
 * ({"tool_calls": [{"index", "function": {"arguments"}}]}); lp as in
 * oai_chunk. Returns a malloc'ed "data: {...}\n\n" string. */
char *oai_chunk_piece(const struct oai_completion_request *r, const struct tokenizer *tok, const char *id,
                      long created, int index, const struct chat_piece *p, const struct oai_token_logprob *lp,
                      int n_lp);
/* The last chunk when include_usage: "choices": [] and "usage". */
char *oai_usage_chunk(const struct oai_completion_request *r, const char *id, long created, int prompt_tokens,
                      int completion_tokens);

/* {"error": {...}} for err. */
json_t *oai_error_json(const struct oai_error *err);
/* Fills err (message formatted) and returns -1. */
int oai_error_set(struct oai_error *err, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
