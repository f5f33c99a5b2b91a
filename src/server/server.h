/* `infer serve`: an OpenAI-compatible HTTP server (its own HTTP/1.1 layer,
 * http.h: a thread per connection) in front of one engine. HTTP threads parse, validate,
 * template and tokenize; they reach the engine only through engine_submit /
 * engine_abort and its event callback (docs/architecture.md, sections 1 and 2). */
#ifndef INFER_SERVER_SERVER_H
#define INFER_SERVER_SERVER_H

#include <stddef.h>

#include "core/error.h"
#include "engine/engine.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

struct server_opts {
    const char *host;        /* "127.0.0.1" */
    int port;                /* 8000; 0 picks a free one (printed) */
    const char *api_key;     /* NULL: no authentication */
    const char *served_name; /* the "model" clients name */
    int max_queued;          /* waiting requests beyond which new ones get 429 */
    size_t max_body;         /* bytes of a request body (413 beyond) */
    int max_connections;
    double drain_seconds;    /* SIGTERM: how long in-flight requests may take to finish */
    /* host:port bound by server_listen; server_run takes it */
    struct http_server *listener;
};

struct server_opts server_opts_default(void);

struct http_server;

/* Binds so->host:so->port into so->listener, before the model loads, so
 * that a bad address or a port in use fails at once; e names both. */
int server_listen(struct server_opts *so, struct err *e);
/* Closes so->listener where server_run will not run (it takes it). */
void server_unlisten(struct server_opts *so);

/* Starts the engine and the HTTP server on a loaded model, prints
 * "infer: serving <name> on http://host:port" to stderr once the port
 * accepts connections, and runs until SIGTERM or SIGINT: then new requests
 * get 503, in-flight ones finish (at most drain_seconds), and it returns 0.
 * The caller must have blocked SIGTERM and SIGINT in every thread
 * (server_block_signals before creating any) and bound the address
 * (server_listen): server_run takes so->listener. */
int server_run(struct model *m, const struct tokenizer *tok, const struct chat_template *ct,
               const struct engine_opts *eo, const struct server_opts *so, struct err *e);

/* Blocks SIGTERM, SIGINT (and ignores SIGPIPE) in the calling thread and the
 * threads it creates from now on. */
void server_block_signals(void);

#endif
