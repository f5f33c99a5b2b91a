/* A model's output read back into an assistant message: reasoning (the
 * text inside <think>...</think>), content, and tool calls, as the chat
 * format (chat_format.h) writes them. Incremental: text arrives in pieces
 * of any size (a stream's deltas) and comes out as pieces as soon as their
 * kind is certain, so a streamed response and a whole one are the same
 * pieces joined.
 *
 * What is held back until it is certain: a possible start of a marker
 * (<tool_call>, </think>) at the end of the text so far, blank space
 * before a call or at the end of the reasoning, and a call's JSON until its
 * name and the start of its arguments are read (a call is announced with
 * its whole name, then its arguments stream as they are written). Text that
 * opens like a call but turns out not to be one (not a JSON object with a
 * name and arguments) is content, as written. A call still open when the
 * output ends (cut by max_tokens) is a call once its name was read, with
 * what its arguments got. */
#ifndef INFER_CHAT_CHAT_OUTPUT_H
#define INFER_CHAT_CHAT_OUTPUT_H

#include <stddef.h>

#include "chat/chat_format.h"

enum chat_piece_kind {
    CHAT_PIECE_CONTENT,
    CHAT_PIECE_REASONING,
    CHAT_PIECE_CALL, /* call number `call` opens; text: its name */
    CHAT_PIECE_ARGS, /* a fragment of call `call`'s arguments (JSON text) */
};

struct chat_piece {
    enum chat_piece_kind kind;
    int call;
    const char *text;
    size_t len;
};

typedef void (*chat_piece_fn)(void *arg, const struct chat_piece *p);

struct chat_output_opts {
    const struct chat_format *format;
    int calls;        /* read tool calls (the request had tools) */
    int reasoning;    /* read reasoning (the format has markers) */
    int in_reasoning; /* the output starts inside the reasoning (chat_format_prompt_in_reasoning) */
    int calls_held;   /* a grammar held the calls (tool_choice required, named, or auto once a call
                         opens), so an opened call is one: cut before its name, it is dropped,
                         not shown as content */
};

struct chat_output;

struct chat_output *chat_output_new(const struct chat_output_opts *o);
void chat_output_free(struct chat_output *p);
/* Reads n more bytes of output; fn gets each piece that is certain now. */
void chat_output_feed(struct chat_output *p, const char *s, size_t n, chat_piece_fn fn, void *arg);
/* The output ended: what was held back goes out. */
void chat_output_finish(struct chat_output *p, chat_piece_fn fn, void *arg);
/* Calls opened so far. */
int chat_output_calls(const struct chat_output *p);

/* A whole message collected from pieces (chat_message_add as the fn). */
struct chat_message_call {
    char *name;
    char *args;
    size_t args_len;
};
struct chat_message {
    char *content, *reasoning; /* NUL-terminated; NULL when none came */
    size_t content_len, reasoning_len;
    struct chat_message_call *calls;
    int n_calls;
};
void chat_message_add(void *msg, const struct chat_piece *p);
void chat_message_free(struct chat_message *m);

#endif
