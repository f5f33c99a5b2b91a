/* A completion request in flight between the HTTP thread that serves it
 * and the engine thread that runs it. The engine's event callback
 * (inflight_on_event) appends each choice's text, log-probs and finish
 * under its lock and wakes the HTTP thread, which formats what arrived
 * (JSON or SSE) outside the engine thread. Two references: the HTTP side's and the engine's (held
 * until every choice has finished, aborted ones included), so neither side
 * can free it under the other. */
#ifndef INFER_SERVER_INFLIGHT_H
#define INFER_SERVER_INFLIGHT_H

#include <pthread.h>
#include <stddef.h>

#include "server/oai.h"

struct server;

struct inflight_choice {
    char *text; /* what the engine has streamed; at the finish, its final (stop-cut) text */
    size_t len, cap;
    struct oai_token_logprob *lp; /* one per token, when the request asked */
    int n_lp, cap_lp;
    int finished;
    enum finish_reason finish;
    int completion_tokens;
    double last_token_at;
    /* streaming: how much has gone out */
    size_t sent_len;
    int sent_lp, opened, closed;
    /* chat read back (chat/chat_output.h): where in text the request's
     * call token came (the detokenizer drops special tokens; SIZE_MAX:
     * none), and while streaming the parser and how much of text it has */
    size_t call_token_at;
    struct chat_output *parser;
    size_t parsed_len;
    int call_token_fed;
};

struct inflight {
    struct server *srv;
    struct oai_completion_request req;
    char id[48];
    long created;
    double arrived_at, submitted_at, first_token_at;
    long engine_id;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    struct inflight_choice *ch; /* [req.submit.n] */
    int n_finished, prompt_tokens;
    /* streaming output not yet taken by the HTTP layer */
    char *out;
    size_t out_len, out_pos, out_cap;
    int usage_sent, done_sent;
    int client_fd; /* to notice a client that left while we wait; -1 unknown */
    struct inflight *next_live; /* the server's list of requests in flight (shutdown wakes them) */
};

/* A request in flight for a parsed request (moved into it: r is zeroed). Two refs. */
struct inflight *inflight_new(struct server *srv, struct oai_completion_request *r, double arrived_at);
/* Drops one reference; frees at zero. */
void inflight_unref(struct inflight *j);

/* The engine's event callback (ctx: the server; ev->user: the request in flight). */
void inflight_on_event(void *ctx, const struct engine_event *ev);

/* Whether the client's socket is closed (peer hung up). */
int inflight_client_gone(const struct inflight *j);

/* Waits (j->mu held) until something arrives or timeout_s passes. */
void inflight_wait(struct inflight *j, double timeout_s);

/* Whether the request's chat output is read back (calls, reasoning). */
int inflight_reads_back(const struct inflight *j);
/* Feeds choice i's text that the parser has not read (its parser made on
 * first use), then, when it finished, the end; fn gets the pieces (j->mu held). */
struct chat_piece;
void inflight_read_back(struct inflight *j, int i, void (*fn)(void *arg, const struct chat_piece *p), void *arg);

#endif
