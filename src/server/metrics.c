#include "server/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"

/* Distinct (route, status) pairs kept by name; later pairs, and routes that
 * are empty, longer than METRICS_ROUTE_MAX bytes, not UTF-8 or literally
 * "other", count under route="other" (one counter per status), so a client
 * inventing paths cannot grow the table or the page. */
#define METRICS_MAX_PAIRS 64
#define METRICS_ROUTE_MAX 64
/* Statuses outside 100..599 are recorded as status="0". */
#define METRICS_STATUS_LIMIT 600
#define METRICS_MAX_BOUNDS 24

/* Upper bounds (seconds) of the histogram buckets, +Inf implied; vLLM's
 * schedules, shifted down where a GPU step takes milliseconds. */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
                                     0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
static const double itl_bounds[] = {0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
                                    0.04,   0.05,  0.075, 0.1,   0.15,  0.2,    0.3,  0.5,   1.0,  2.5};
static const double e2e_bounds[] = {0.01, 0.025, 0.05, 0.1,  0.25, 0.5,  0.75, 1.0,   1.5,   2.0,
                                    2.5,  5.0,   10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0};
static const double queue_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,   0.25,  0.5,  1.0,
                                      2.5,   5.0,    10.0,  20.0, 40.0,  80.0, 160.0, 300.0, 600.0};

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const struct hist_spec {
    const char *name, *help;
    const double *bounds;
    int n_bounds;
} hist_specs[METRICS_HIST_COUNT_] = {
    [METRICS_TTFT] = {"infer_time_to_first_token_seconds",
                      "Time from a request's arrival to its first output token, in seconds.", ttft_bounds,
                      COUNT_OF(ttft_bounds)},
    [METRICS_ITL] = {"infer_inter_token_latency_seconds",
                     "Time between consecutive output tokens of one choice, in seconds.", itl_bounds,
                     COUNT_OF(itl_bounds)},
    [METRICS_E2E] = {"infer_e2e_request_latency_seconds",
                     "Time from a request's arrival to the last byte of its response, in seconds.",
                     e2e_bounds, COUNT_OF(e2e_bounds)},
    [METRICS_QUEUE] = {"infer_request_queue_time_seconds",
                       "Time from a request's arrival to the first engine step that runs it, in seconds.",
                       queue_bounds, COUNT_OF(queue_bounds)},
};

struct route_pair {
    char route[METRICS_ROUTE_MAX + 1];
    int status;
    long count;
};

struct hist {
    long buckets[METRICS_MAX_BOUNDS + 1]; /* per bucket, not cumulative; the last is (last bound, +Inf) */
    long count;
    double sum;
};

/* Everything the mutex guards; render copies it whole. */
struct metrics_state {
    struct route_pair pairs[METRICS_MAX_PAIRS];
    int n_pairs;
    long other[METRICS_STATUS_LIMIT]; /* route="other", by status */
    long prompt_tokens, generation_tokens;
    struct hist hist[METRICS_HIST_COUNT_];
};

struct metrics {
    pthread_mutex_t mu;
    char *model_label; /* the model name, escaped as a label value */
    struct metrics_state s;
};

/* A growing, NUL-terminated output buffer. */
struct out {
    char *p;
    size_t len, cap;
};

static void out_reserve(struct out *o, size_t extra)
{
    if (o->len + extra + 1 <= o->cap)
        return;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + extra + 1)
        cap *= 2;
    o->p = xrealloc(o->p, cap);
    o->cap = cap;
}

static void out_put(struct out *o, const char *s, size_t n)
{
    out_reserve(o, n);
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    CHECK(n >= 0);
    out_reserve(o, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(o->p + o->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    o->len += (size_t)n;
}

/* A label value as the text format wants it: \ " and newline escaped. */
static void out_label_value(struct out *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            out_put(o, "\\\\", 2);
        else if (*s == '"')
            out_put(o, "\\\"", 2);
        else if (*s == '\n')
            out_put(o, "\\n", 2);
        else
            out_put(o, s, 1);
    }
}

/* The shortest text that reads back as v, without an exponent for ordinary
 * magnitudes: 0.1 prints "0.1", 80 prints "80", 0.0005 prints "0.0005". */
static void format_double(char *buf, size_t size, double v)
{
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(buf, size, "%.*e", prec - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* %g writes an exponent when it is >= the precision: 80 would read "8e+01" */
    snprintf(buf, size, "%.*e", prec - 1, v);
    int exp10 = atoi(strchr(buf, 'e') + 1);
    if (exp10 >= prec && exp10 < 17)
        prec = exp10 + 1;
    snprintf(buf, size, "%.*g", prec, v);
}

static void out_header(struct out *o, const char *name, const char *type, const char *help)
{
    out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void out_long_metric(struct out *o, const char *model, const char *name, const char *type,
                            const char *help, long v)
{
    out_header(o, name, type, help);
    out_printf(o, "%s{model_name=\"%s\"} %ld\n", name, model, v);
}

/* A gauge of part / whole (0 when whole is 0). */
static void out_double_metric(struct out *o, const char *model, const char *name, const char *help, double v)
{
    char num[40];
    out_header(o, name, "gauge", help);
    format_double(num, sizeof num, v);
    out_printf(o, "%s{model_name=\"%s\"} %s\n", name, model, num);
}

static void out_ratio_metric(struct out *o, const char *model, const char *name, const char *help, double part,
                             double whole)
{
    out_double_metric(o, model, name, help, whole > 0 ? part / whole : 0.0);
}

struct metrics *metrics_create(const char *model_name)
{
    struct metrics *m = xcalloc(1, sizeof *m);
    CHECK(pthread_mutex_init(&m->mu, NULL) == 0);
    struct out o = {0};
    out_put(&o, "", 0);
    out_label_value(&o, model_name ? model_name : "");
    m->model_label = o.p;
    for (int h = 0; h < METRICS_HIST_COUNT_; h++)
        CHECK(hist_specs[h].n_bounds <= METRICS_MAX_BOUNDS);
    return m;
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m->model_label);
    free(m);
}

/* The updates below do nothing when m is NULL (a server without metrics). */

void metrics_request(struct metrics *m, const char *route, int status)
{
    if (!m)
        return;
    if (status < 100 || status >= METRICS_STATUS_LIMIT)
        status = 0;
    int named = route && route[0] && strlen(route) <= METRICS_ROUTE_MAX && strcmp(route, "other") != 0 &&
                utf8_valid_prefix(route, strlen(route)) == strlen(route);
    pthread_mutex_lock(&m->mu);
    struct metrics_state *s = &m->s;
    int done = 0;
    if (named) {
        for (int i = 0; i < s->n_pairs && !done; i++) {
            if (s->pairs[i].status == status && !strcmp(s->pairs[i].route, route)) {
                s->pairs[i].count++;
                done = 1;
            }
        }
        if (!done && s->n_pairs < METRICS_MAX_PAIRS) {
            struct route_pair *p = &s->pairs[s->n_pairs++];
            memcpy(p->route, route, strlen(route) + 1);
            p->status = status;
            p->count = 1;
            done = 1;
        }
    }
    if (!done)
        s->other[status]++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_tokens(struct metrics *m, long prompt_tokens, long generation_tokens)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (prompt_tokens > 0)
        m->s.prompt_tokens += prompt_tokens;
    if (generation_tokens > 0)
        m->s.generation_tokens += generation_tokens;
    pthread_mutex_unlock(&m->mu);
}

void metrics_observe(struct metrics *m, enum metrics_hist h, double seconds)
{
    CHECK((int)h >= 0 && h < METRICS_HIST_COUNT_);
    if (!m || !isfinite(seconds) || seconds < 0)
        return;
    const struct hist_spec *spec = &hist_specs[h];
    int b = 0;
    while (b < spec->n_bounds && seconds > spec->bounds[b])
        b++;
    pthread_mutex_lock(&m->mu);
    struct hist *hs = &m->s.hist[h];
    hs->buckets[b]++;
    hs->count++;
    hs->sum += seconds;
    pthread_mutex_unlock(&m->mu);
}

static int pair_cmp(const void *a, const void *b)
{
    const struct route_pair *x = a, *y = b;
    int c = strcmp(x->route, y->route);
    return c ? c : (x->status > y->status) - (x->status < y->status);
}

char *metrics_render(struct metrics *m, const struct metrics_gauges *g, size_t *len)
{
    CHECK(m);
    struct metrics_state *s = xmalloc(sizeof *s);
    pthread_mutex_lock(&m->mu);
    *s = m->s;
    pthread_mutex_unlock(&m->mu);
    struct metrics_gauges zero = {0};
    if (!g)
        g = &zero;
    const char *model = m->model_label;
    struct out o = {0};
    char num[64];

    out_header(&o, "infer_requests_total", "counter", "Finished HTTP requests, by route and status.");
    qsort(s->pairs, (size_t)s->n_pairs, sizeof s->pairs[0], pair_cmp);
    for (int i = 0; i < s->n_pairs; i++) {
        out_printf(&o, "infer_requests_total{model_name=\"%s\",route=\"", model);
        out_label_value(&o, s->pairs[i].route);
        out_printf(&o, "\",status=\"%d\"} %ld\n", s->pairs[i].status, s->pairs[i].count);
    }
    for (int st = 0; st < METRICS_STATUS_LIMIT; st++)
        if (s->other[st])
            out_printf(&o, "infer_requests_total{model_name=\"%s\",route=\"other\",status=\"%d\"} %ld\n",
                       model, st, s->other[st]);

    out_long_metric(&o, model, "infer_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
                    s->prompt_tokens);
    out_long_metric(&o, model, "infer_generation_tokens_total", "counter", "Generated tokens.",
                    s->generation_tokens);
    out_long_metric(&o, model, "infer_num_requests_running", "gauge", "Requests in the running batch.",
                    g->running);
    out_long_metric(&o, model, "infer_num_requests_waiting", "gauge", "Requests waiting to be scheduled.",
                    g->waiting);
    out_long_metric(&o, model, "infer_kv_cache_blocks_used", "gauge", "KV cache blocks in use.",
                    g->kv_blocks_used);
    out_long_metric(&o, model, "infer_kv_cache_blocks_total", "gauge", "KV cache blocks in the pool.",
                    g->kv_blocks_total);
    out_ratio_metric(&o, model, "infer_kv_cache_usage_perc", "Fraction of KV cache blocks in use (1 means 100 percent).",
                     g->kv_blocks_used, g->kv_blocks_total);
    out_long_metric(&o, model, "infer_prefix_cache_hits_total", "counter",
                    "Prompt tokens found in the prefix cache.", g->prefix_hit_tokens);
    out_long_metric(&o, model, "infer_prefix_cache_queries_total", "counter",
                    "Prompt tokens looked up in the prefix cache.", g->prefix_lookup_tokens);
    out_ratio_metric(&o, model, "infer_prefix_cache_hit_rate",
                     "Share of looked-up prompt tokens the prefix cache held, since start (0 before any lookup).",
                     (double)g->prefix_hit_tokens, (double)g->prefix_lookup_tokens);
    out_long_metric(&o, model, "infer_preemptions_total", "counter",
                    "Running requests preempted for KV cache space (their blocks freed, recomputed later).",
                    g->preemptions);
    out_long_metric(&o, model, "infer_spec_verify_steps_total", "counter",
                    "Speculative decoding: steps of a request that checked proposed tokens.", g->spec_steps);
    out_long_metric(&o, model, "infer_spec_proposed_tokens_total", "counter",
                    "Speculative decoding: tokens proposed and checked.", g->spec_proposed);
    out_long_metric(&o, model, "infer_spec_accepted_tokens_total", "counter",
                    "Speculative decoding: proposed tokens the model's own draws agreed with (kept).",
                    g->spec_accepted);
    out_header(&o, "infer_spec_method_info", "gauge",
               "Speculative decoding: the proposer the counters above are of (1, labelled by method).");
    out_printf(&o, "infer_spec_method_info{model_name=\"%s\",method=\"%s\"} 1\n", model,
               g->spec_method ? g->spec_method : "none");
    out_long_metric(&o, model, "infer_graph_replays_total", "counter",
                    "Engine steps run as a CUDA graph replay.", g->graph_replays);
    out_long_metric(&o, model, "infer_eager_steps_total", "counter", "Engine steps run eagerly.",
                    g->eager_steps);
    out_long_metric(&o, model, "infer_tensor_parallel_size", "gauge",
                    "GPUs (one process each) the model is split over.", g->ranks > 0 ? g->ranks : 1);
    out_double_metric(&o, model, "infer_graph_capture_seconds", "Seconds rank 0 took to capture its CUDA graphs.",
                      g->graph_capture_s);
    out_long_metric(&o, model, "infer_graph_memory_bytes", "gauge",
                    "Device memory rank 0's CUDA graphs took (each rank logs its own).", g->graph_bytes);

    for (int h = 0; h < METRICS_HIST_COUNT_; h++) {
        const struct hist_spec *spec = &hist_specs[h];
        const struct hist *hs = &s->hist[h];
        out_header(&o, spec->name, "histogram", spec->help);
        long cum = 0;
        for (int b = 0; b <= spec->n_bounds; b++) {
            cum += hs->buckets[b];
            if (b < spec->n_bounds)
                format_double(num, sizeof num, spec->bounds[b]);
            else
                snprintf(num, sizeof num, "+Inf");
            out_printf(&o, "%s_bucket{model_name=\"%s\",le=\"%s\"} %ld\n", spec->name, model, num, cum);
        }
        format_double(num, sizeof num, hs->sum);
        out_printf(&o, "%s_sum{model_name=\"%s\"} %s\n", spec->name, model, num);
        out_printf(&o, "%s_count{model_name=\"%s\"} %ld\n", spec->name, model, hs->count);
    }
    free(s);
    if (len)
        *len = o.len;
    return o.p;
}
