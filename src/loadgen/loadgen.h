/* The load generator of `infer bench-serve`: many concurrent streaming
 * completion requests against any OpenAI-compatible server over HTTP/1.1,
 * on one thread and one epoll loop. Requests start at their arrival times
 * (open loop) as far as max_concurrency allows; each is timed chunk by
 * chunk and checked: status 200, a well-formed stream of JSON chunks that
 * ends with [DONE], and a usage chunk whose counts agree with the request.
 * Knows nothing of the engine. */
#ifndef INFER_LOADGEN_LOADGEN_H
#define INFER_LOADGEN_LOADGEN_H

#include <stdint.h>

#include "core/error.h"

struct lg_target {
    char host[256];
    char port[16];
    char path[256]; /* "/v1/completions" */
    const char *model;
    const char *api_key; /* NULL: no Authorization header */
};

/* "http://host:port[/prefix]" into t (path = prefix + "/v1/completions"). */
int lg_target_parse(struct lg_target *t, const char *url, struct err *e);

struct lg_request {
    int32_t *prompt;    /* token ids */
    int n_prompt;
    char *text;         /* or a text prompt (prompt NULL; n_prompt its size in tokens, about: the server counts) */
    int max_tokens;
    double arrival;     /* seconds after the start */
};

enum lg_failure {
    LG_OK,
    LG_FAIL_CONNECT,    /* connection refused or reset before a response */
    LG_FAIL_STATUS,     /* an HTTP status other than 200 */
    LG_FAIL_HTTP,       /* a malformed HTTP response */
    LG_FAIL_CHUNK,      /* a stream event that is not a completion chunk */
    LG_FAIL_CUT,        /* the stream ended before [DONE] */
    LG_FAIL_USAGE,      /* no usage chunk, or counts that disagree with the request */
    LG_FAIL_TIMEOUT,    /* still running at the time limit */
    LG_N_FAILURES,
};
extern const char *const lg_failure_names[LG_N_FAILURES];

struct lg_record {
    double sent, first, end;   /* seconds after the start; first: the first chunk with text */
    double *chunk_at;          /* when each chunk with text arrived */
    int n_chunks, cap_chunks;
    int prompt_tokens, completion_tokens; /* the usage chunk's */
    int status;
    enum lg_failure failure;
    char why[200];
};

struct lg_options {
    int max_concurrency;   /* requests in flight at most */
    double time_limit;     /* seconds; requests still running then fail (timeout) */
    int ignore_eos;        /* ask for exactly max_tokens (and check the usage says so) */
    int progress;          /* a progress line on stderr */
};

/* Runs the n requests; rec[i] gets request i's record (free with
 * lg_record_free). Returns 0, or -1 with e set when nothing could run (the
 * address does not resolve). Failed requests are counted, not errors. */
int lg_run(const struct lg_target *t, const struct lg_request *req, int n, const struct lg_options *o,
           struct lg_record *rec, struct err *e);
void lg_record_free(struct lg_record *r);

#endif
