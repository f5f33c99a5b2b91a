/* The server's state, shared by its files: server.c (lifecycle, HTTP
 * plumbing), routes.c (the small routes), completions.c (the OpenAI
 * completion routes) and inflight.c (requests in flight). */
#ifndef INFER_SERVER_SERVER_INTERNAL_H
#define INFER_SERVER_SERVER_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>

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
    struct MHD_Daemon *daemon;
    pthread_mutex_t mu;
    struct inflight *live; /* requests in flight the HTTP side still holds */
    int n_live;
    int draining; /* SIGTERM: new work gets 503 */
    int stopping; /* the daemon is going down: waits end now */
    unsigned long next_id;
    long started; /* time(NULL) at start, for /v1/models */
};

/* One HTTP request's state across the library's calls. */
struct conn {
    char *body;
    size_t len, cap;
    int too_big;
    int close; /* the response ends the connection (framing we cannot trust) */
    unsigned long long received; /* body bytes seen, kept or not */
    const char *route; /* for the metrics: a known route, or "other" */
    int status;        /* of the response queued */
    double arrived_at;
};

/* Queues a response with a JSON body (json is stolen) or an OpenAI error. */
enum MHD_Result server_reply_json(struct conn *c, struct MHD_Connection *conn, int status, json_t *json);
enum MHD_Result server_reply_error(struct conn *c, struct MHD_Connection *conn, const struct oai_error *err);
enum MHD_Result server_reply_text(struct conn *c, struct MHD_Connection *conn, int status, const char *type,
                                  char *text, size_t len);

/* routes.c */
enum MHD_Result route_health(struct server *s, struct conn *c, struct MHD_Connection *conn);
enum MHD_Result route_models(struct server *s, struct conn *c, struct MHD_Connection *conn);
enum MHD_Result route_model(struct server *s, struct conn *c, struct MHD_Connection *conn, const char *id);
enum MHD_Result route_metrics(struct server *s, struct conn *c, struct MHD_Connection *conn);
enum MHD_Result route_tokenize(struct server *s, struct conn *c, struct MHD_Connection *conn);
enum MHD_Result route_detokenize(struct server *s, struct conn *c, struct MHD_Connection *conn);

/* completions.c */
enum MHD_Result route_completion(struct server *s, struct conn *c, struct MHD_Connection *conn, enum oai_kind kind);

/* The list of requests in flight (server.c). */
void server_inflight_attach(struct server *s, struct inflight *j);
void server_inflight_detach(struct server *s, struct inflight *j);

#endif
