/* The server's state, shared by its files: server.c (lifecycle, request
 * handling), routes.c (the small routes), completions.c (the OpenAI
 * completion routes) and inflight.c (requests in flight). */
#ifndef INFER_SERVER_SERVER_INTERNAL_H
#define INFER_SERVER_SERVER_INTERNAL_H

#include <pthread.h>

#include "server/http.h"
#include "server/inflight.h"
#include "server/metrics.h"
#include "server/server.h"

struct server {
    struct model *m;
    const struct tokenizer *tok;
    const struct chat_template *ct;
    struct server_opts o;
    struct engine *eng;
    struct grammar_cache *grammars; /* compiled output constraints (with a tokenizer) */
    struct metrics *metrics;
    struct oai_context octx;
    const char *names[1];
    struct http_server *http;
    pthread_mutex_t mu;
    struct inflight *live; /* requests in flight the HTTP side still holds */
    int n_live;
    int draining; /* SIGTERM: new work gets 503 */
    int stopping; /* the drain is over: waits end now */
    unsigned long next_id;
    long started; /* time(NULL) at start, for /v1/models */
};

/* One HTTP request being answered. */
struct conn {
    struct http_request *rq;
    const char *body; /* the body kept (NUL-terminated), NULL when none came */
    size_t len;
    int too_big;       /* announced or sent beyond --max-body-mb */
    const char *route; /* for the metrics: a known route, or "other" */
    int status;        /* of the response sent */
    double arrived_at;
};

/* Sends a response with a JSON body (json is stolen), an OpenAI error, or
 * text (malloc'ed, freed). Each returns 0, or -1 when the client is gone. */
int server_reply_json(struct conn *c, int status, json_t *json);
int server_reply_error(struct conn *c, const struct oai_error *err);
int server_reply_text(struct conn *c, int status, const char *type, char *text, size_t len);

/* routes.c */
int route_health(struct server *s, struct conn *c);
int route_models(struct server *s, struct conn *c);
int route_model(struct server *s, struct conn *c, const char *id);
int route_metrics(struct server *s, struct conn *c);
int route_tokenize(struct server *s, struct conn *c);
int route_detokenize(struct server *s, struct conn *c);

/* completions.c */
int route_completion(struct server *s, struct conn *c, enum oai_kind kind);

/* The list of requests in flight (server.c). */
void server_inflight_attach(struct server *s, struct inflight *j);
void server_inflight_detach(struct server *s, struct inflight *j);

#endif
