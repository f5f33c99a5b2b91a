/* The server's Prometheus metrics (GET /metrics, text exposition format
 * 0.0.4): counters and histograms updated from any thread (HTTP threads and
 * the engine thread's event callback), gauges read from the engine when the
 * page is rendered. Every name starts with "infer_" and carries the label
 * model_name="<served name>". */
#ifndef INFER_SERVER_METRICS_H
#define INFER_SERVER_METRICS_H

#include <stddef.h>

enum metrics_hist {
    METRICS_TTFT,        /* infer_time_to_first_token_seconds: arrival to first output token */
    METRICS_ITL,         /* infer_inter_token_latency_seconds: between output tokens of a choice */
    METRICS_E2E,         /* infer_e2e_request_latency_seconds: arrival to the last byte of the response */
    METRICS_QUEUE,       /* infer_request_queue_time_seconds: arrival to the first step that runs it */
    METRICS_HIST_COUNT_,
};

/* What the engine says at render time. */
struct metrics_gauges {
    int running, waiting;            /* infer_num_requests_running / _waiting */
    int kv_blocks_used, kv_blocks_total; /* infer_kv_cache_blocks_used / _total, and infer_kv_cache_usage_perc */
    long prefix_hit_tokens, prefix_lookup_tokens; /* infer_prefix_cache_hits_total / _queries_total (tokens),
                                                     and their ratio infer_prefix_cache_hit_rate */
    long graph_replays, eager_steps;  /* infer_graph_replays_total / infer_eager_steps_total */
    int ranks;                        /* infer_tensor_parallel_size */
    double graph_capture_s;           /* infer_graph_capture_seconds (rank 0) */
    long graph_bytes;                 /* infer_graph_memory_bytes (rank 0) */
    long preemptions;                 /* infer_preemptions_total */
    long spec_steps, spec_proposed, spec_accepted; /* infer_spec_verify_steps_total, _proposed_tokens_total,
                                                      _accepted_tokens_total */
    const char *spec_method; /* infer_spec_method_info's method label: "ngram", "suffix" ("none" when NULL) */
};

struct metrics;

struct metrics *metrics_create(const char *model_name);
void metrics_free(struct metrics *m);

/* infer_requests_total{route="/v1/chat/completions",status="200"}: one per
 * finished HTTP request (every route, errors included). */
void metrics_request(struct metrics *m, const char *route, int status);
/* infer_prompt_tokens_total, infer_generation_tokens_total */
void metrics_tokens(struct metrics *m, long prompt_tokens, long generation_tokens);
void metrics_observe(struct metrics *m, enum metrics_hist h, double seconds);

/* The exposition text (malloc'ed, NUL-terminated; *len its length). */
char *metrics_render(struct metrics *m, const struct metrics_gauges *g, size_t *len);

#endif
