/* Request fields: the generation fields of one JSON request object (the
 * prompt, "n", "max_tokens", sampling, "stop", "logit_bias", log-probs,
 * "ignore_eos") parsed and validated into an engine request. The one parser
 * for everything that takes requests as JSON: the OpenAI server's bodies
 * (src/server/oai_request.c) and the lines of `infer generate --input`
 * (src/cli/generate_request.c). The rules are the server's (OpenAI's, as
 * vLLM applies them): null is "not given", integer fields take integral
 * reals (2.0), ranges as OpenAI documents them, and every refusal names its
 * field. What differs between callers comes in the options: the defaults,
 * whether unknown fields are refused, which prompt forms are allowed, the
 * limits. Pure functions: no I/O, no engine. */
#ifndef INFER_ENGINE_REQUEST_FIELDS_H
#define INFER_ENGINE_REQUEST_FIELDS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/chat_format.h"
#include "chat/chat_template.h"
#include "engine/engine.h"
#include "engine/request_tools.h"

struct grammar_cache;

/* Where a request's prompt may come from (a bit set). With several allowed,
 * exactly one must be given; with one, it is required. */
enum request_prompt_form {
    REQUEST_PROMPT_TEXT = 1,   /* "prompt": a string */
    REQUEST_PROMPT_OPENAI = 2, /* "prompt": a string, token ids, or a list of one of those (completions) */
    REQUEST_PROMPT_IDS = 4,    /* "prompt_ids": token ids */
    REQUEST_MESSAGES = 8,      /* "messages": a conversation, through the chat template */
};

/* The caller's policy, defaults and limits; pointers borrowed. */
struct request_fields_opts {
    int refuse_unknown;    /* a field not read here is refused (unknown field "x"); else ignored */
    unsigned prompt_forms; /* enum request_prompt_form bits */
    int chat_logprobs;   /* read "logprobs" (true/false) and "top_logprobs"; 0: the caller reads "logprobs" */
    int template_inputs; /* read "tools" and "chat_template_kwargs" for the chat template */
    /* what an absent (or null) field gets; the bias and top_logprobs of sampling are not used */
    struct sampling_params sampling;
    int max_tokens; /* see max_context */
    int ignore_eos;
    /* limits */
    int max_n;
    int max_stop, max_stop_len; /* stop strings: how many, how many bytes each */
    int max_top_logprobs;
    int vocab_size; /* token ids (prompts, logit_bias keys) must be below it */
    /* > 0: prompt + max_tokens must fit, and an absent max_tokens is what the
     * context leaves, capped by max_tokens when that is > 0; 0: no check (the
     * engine cuts), an absent max_tokens is max_tokens */
    int max_context;
    const struct tokenizer *tok;   /* NULL: text prompts, messages and stop strings are refused */
    const char *no_tokenizer_hint; /* ends that refusal: "the model has no tokenizer; <hint>" */
    /* The chat template for "messages" (borrowed), or NULL with e set (the
     * message becomes the refusal of "messages"). Called only for a request
     * whose messages are well formed, so a caller may load it lazily. */
    const struct chat_template *(*chat_template)(void *arg, struct err *e);
    void *chat_template_arg;
    /* Compiles output constraints (request_constraint.h) for the model's
     * vocabulary; NULL: a constraint is refused. */
    struct grammar_cache *grammars;
};

/* A parsed request: submit goes to engine_submit and points into the owned
 * arrays. request_fields_free frees them; a caller that keeps them (the
 * server moves them into its own request) takes them over instead. */
struct request_fields {
    struct engine_request submit;
    int32_t *prompt;         /* submit.n_prompt ids */
    char **stop;             /* submit.n_stop strings */
    struct logit_bias *bias; /* submit.sampling.n_bias entries */
    char *prompt_text;       /* the text given, the rendered messages, or the ids decoded; NULL without one */
    int logprobs;            /* "logprobs": true (chat_logprobs); top_logprobs is in submit.sampling */
    int max_tokens_given;    /* "max_tokens" or "max_completion_tokens" was given */
    struct grammar_ref *grammar; /* the output constraint (submit.grammar), a reference, or NULL */
    char **warnings;             /* what a "strict": false schema had ignored ("keyword at /path") */
    int n_warnings;
    /* chat (template_inputs): the tool fields, and how the output reads
     * back (chat/chat_output.h): the template's format (borrowed from the
     * template, NULL without messages), whether calls are read (tools
     * rendered; calls_held: by the tools' constraint), reasoning read (the format
     * marks it), and whether the prompt left the model inside the reasoning */
    struct request_tools tools;
    const struct chat_format *format;
    int read_calls, calls_held, read_reasoning, in_reasoning;
    int32_t call_token; /* a special token that opens a call (Llama 3's <|python_tag|>), or -1 */
};

/* A refusal: the offending field as the client wrote it ("temperature",
 * "messages[2].content", "stop[1]"; "" for the object as a whole) and a
 * message, which names the field where it is not the prompt as a whole. */
struct request_field_error {
    char field[96];
    char message[512];
};

/* Parses and validates obj's request fields into out. Returns 0, or -1
 * with err set and out emptied (nothing to free). */
int request_fields_parse(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                         struct request_field_error *err);

/* request_fields_parse in its three steps, in this order, for a caller that
 * checks fields of its own in between (the server, whose first refusal of
 * a body with several bad fields stays the same so). Each returns 0, or -1
 * with err set and out emptied.
 * - begin: fills out with the defaults; unknown fields, "n", "max_tokens",
 *   "max_completion_tokens" (which wins), sampling, "seed", log-probs;
 * - output: "speculative", "ignore_eos", "stop", "logit_bias", the output constraint
 *   (request_constraint.h: compiled here, so this step may take a while);
 * - prompt: the prompt (the template render and the tokenizer: the costly
 *   part, last), its tokens against the vocabulary, max_tokens against the
 *   context, and the engine's own check of the sampling parameters. */
int request_fields_begin(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                         struct request_field_error *err);
int request_fields_output(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                          struct request_field_error *err);
int request_fields_prompt(const struct request_fields_opts *o, const json_t *obj, struct request_fields *out,
                          struct request_field_error *err);

void request_fields_free(struct request_fields *r);

/* The same rules for a caller's own fields. key's value, or NULL when it is
 * absent or null: */
const json_t *request_field_get(const json_t *obj, const char *key);
/* An integer in [lo, hi] (integral reals count) into *dst, and *given = 1
 * (given may be NULL); absent: nothing changes. Returns 0, or -1 with err. */
int request_field_int(const json_t *obj, const char *key, long long lo, long long hi, long long *dst,
                      int *given, struct request_field_error *err);
/* true or false into *dst; absent: nothing changes. Returns 0, or -1 with err. */
int request_field_bool(const json_t *obj, const char *key, int *dst, struct request_field_error *err);
/* Fills err (message formatted) and returns -1. */
int request_field_error_set(struct request_field_error *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether JSON text nests arrays and objects deeper than max_depth: a scan
 * with no stack, so that a hostile body never drives jansson's recursive
 * parser (or json_decref, or the template) deep. Invalid JSON is left to
 * the parser. Tool calls' "arguments" strings are refused past
 * REQUEST_FIELDS_MAX_DEPTH so. */
enum { REQUEST_FIELDS_MAX_DEPTH = 64 };
int request_fields_too_deep(const char *s, size_t len, int max_depth);

#endif
