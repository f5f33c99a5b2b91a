/* Prometheus metrics: the rendered page is parsed line by line (HELP and TYPE
 * once per family, before its samples; every sample's labels and value well
 * formed) and exact values are read back: counters, cumulative histogram
 * buckets with +Inf == _count and the exact _sum, gauges, label escaping,
 * the cap on (route, status) pairs, ignored NaN / negative observations, and
 * exact totals after threads update at once while another renders. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/metrics.h"

static const char *const families[][2] = {
    {"infer_requests_total", "counter"},
    {"infer_prompt_tokens_total", "counter"},
    {"infer_generation_tokens_total", "counter"},
    {"infer_num_requests_running", "gauge"},
    {"infer_num_requests_waiting", "gauge"},
    {"infer_kv_cache_blocks_used", "gauge"},
    {"infer_kv_cache_blocks_total", "gauge"},
    {"infer_kv_cache_usage_perc", "gauge"},
    {"infer_prefix_cache_hits_total", "counter"},
    {"infer_prefix_cache_queries_total", "counter"},
    {"infer_prefix_cache_hit_rate", "gauge"},
    {"infer_preemptions_total", "counter"},
    {"infer_spec_verify_steps_total", "counter"},
    {"infer_spec_proposed_tokens_total", "counter"},
    {"infer_spec_accepted_tokens_total", "counter"},
    {"infer_spec_method_info", "gauge"},
    {"infer_graph_replays_total", "counter"},
    {"infer_eager_steps_total", "counter"},
    {"infer_tensor_parallel_size", "gauge"},
    {"infer_graph_capture_seconds", "gauge"},
    {"infer_graph_memory_bytes", "gauge"},
    {"infer_time_to_first_token_seconds", "histogram"},
    {"infer_inter_token_latency_seconds", "histogram"},
    {"infer_e2e_request_latency_seconds", "histogram"},
    {"infer_request_queue_time_seconds", "histogram"},
};
enum { N_FAMILIES = sizeof families / sizeof families[0] };

static int family_of(const char *name, size_t n, int *is_hist_part)
{
    for (int f = 0; f < N_FAMILIES; f++) {
        size_t fl = strlen(families[f][0]);
        if (n < fl || memcmp(name, families[f][0], fl))
            continue;
        const char *rest = name + fl;
        size_t rl = n - fl;
        int hist = !strcmp(families[f][1], "histogram");
        *is_hist_part = rl > 0;
        if (rl == 0 ||
            (hist && ((rl == 7 && !memcmp(rest, "_bucket", 7)) || (rl == 4 && !memcmp(rest, "_sum", 4)) ||
                      (rl == 6 && !memcmp(rest, "_count", 6)))))
            return f;
    }
    return -1;
}

static size_t name_len(const char *s)
{
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || s[n] == '_' || s[n] == ':' ||
           (n > 0 && s[n] >= '0' && s[n] <= '9'))
        n++;
    return n;
}

/* How many samples are exactly "<series> value"; *v gets the last value. */
static int find(const char *text, const char *series, double *v)
{
    size_t n = strlen(series);
    int hits = 0;
    for (const char *line = text; *line; line = strchr(line, '\n') + 1)
        if (!strncmp(line, series, n) && line[n] == ' ')
            hits++, *v = strtod(line + n + 1, NULL);
    return hits;
}

/* Checks the whole page against the text format, line by line. */
static void check_format(const char *text, size_t len)
{
    cr_assert_eq(strlen(text), len);
    cr_assert(len > 0 && text[len - 1] == '\n', "the page ends with a newline");
    int help[N_FAMILIES] = {0}, type[N_FAMILIES] = {0};
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        cr_assert(eol && eol > line, "no empty or unterminated line");
        int part;
        if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7)) {
            const char *name = line + 7;
            size_t n = name_len(name);
            int f = family_of(name, n, &part);
            cr_assert(f >= 0 && !part && name[n] == ' ' && name + n + 1 < eol, "%.*s", (int)(eol - line),
                      line);
            if (line[2] == 'H') {
                help[f]++;
            } else {
                type[f]++;
                cr_assert(!strncmp(name + n + 1, families[f][1], strlen(families[f][1])) &&
                              name + n + 1 + strlen(families[f][1]) == eol,
                          "%.*s", (int)(eol - line), line);
            }
        } else {
            size_t n = name_len(line);
            int f = family_of(line, n, &part);
            cr_assert(f >= 0 && part == !strcmp(families[f][1], "histogram"),
                      "sample of an unknown family: %.*s", (int)(eol - line), line);
            cr_assert(help[f] == 1 && type[f] == 1, "HELP and TYPE precede %.*s", (int)(eol - line), line);
            const char *p = line + n;
            cr_assert(!strncmp(p, "{model_name=\"", 13), "model_name is the first label: %.*s",
                      (int)(eol - line), line);
            p++;
            for (;;) {
                size_t ln = name_len(p);
                cr_assert(ln > 0 && p[ln] == '=' && p[ln + 1] == '"', "%.*s", (int)(eol - line), line);
                for (p += ln + 2; *p != '"'; p++) {
                    cr_assert(*p != '\n' && *p != '\0');
                    if (*p == '\\') {
                        p++;
                        cr_assert(*p == '\\' || *p == '"' || *p == 'n', "escape \\%c", *p);
                    }
                }
                p++;
                if (*p == '}')
                    break;
                cr_assert(*p == ',', "%.*s", (int)(eol - line), line);
                p++;
            }
            cr_assert(p[1] == ' ' && p[2] != ' ');
            char *end;
            strtod(p + 2, &end);
            cr_assert(end == eol, "value of %.*s", (int)(eol - line), line);
            char series[512];
            snprintf(series, sizeof series, "%.*s", (int)(p + 1 - line), line);
            cr_assert_eq(find(text, series, &(double){0}), 1, "one sample per series: %s", series);
        }
        line = eol + 1;
    }
    for (int f = 0; f < N_FAMILIES; f++)
        cr_assert(help[f] == 1 && type[f] == 1, "%s: %d HELP, %d TYPE", families[f][0], help[f], type[f]);
}

static char *render(struct metrics *m, const struct metrics_gauges *g)
{
    size_t len = 0;
    char *text = metrics_render(m, g, &len);
    check_format(text, len);
    return text;
}

/* The value of the one sample whose series (name and labels) is the formatted text. */
static double value(const char *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static double value(const char *text, const char *fmt, ...)
{
    char series[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(series, sizeof series, fmt, ap);
    va_end(ap);
    double v = NAN;
    cr_assert_eq(find(text, series, &v), 1, "exactly one sample %s", series);
    return v;
}

static double requests(const char *text, const char *model, const char *route, int status)
{
    return value(text, "infer_requests_total{model_name=\"%s\",route=\"%s\",status=\"%d\"}", model, route,
                 status);
}

/* Buckets cumulative with increasing bounds, +Inf last and == _count == want_count, _sum == want_sum. */
static void check_hist(const char *text, const char *name, const char *model, long want_count,
                       double want_sum)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s_bucket{model_name=\"%s\",le=\"", name, model);
    double last_le = -1, last = 0;
    int n = 0, inf = 0;
    for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
        if (strncmp(line, prefix, strlen(prefix)))
            continue;
        cr_assert(!inf, "+Inf is the last bucket");
        char *end;
        double le = strtod(line + strlen(prefix), &end);
        cr_assert(!strncmp(end, "\"} ", 3) && le > last_le, "%s: bounds increase", name);
        double v = strtod(end + 3, NULL);
        cr_assert(v >= last, "%s: buckets are cumulative", name);
        inf = isinf(le), last_le = le, last = v, n++;
    }
    cr_assert(inf && n >= 16 && n <= 22, "%s: %d buckets, +Inf present", name, n);
    cr_assert_eq(value(text, "%s_count{model_name=\"%s\"}", name, model), (double)want_count);
    cr_assert_eq(last, (double)want_count, "%s: +Inf bucket == count", name);
    cr_assert_eq(value(text, "%s_sum{model_name=\"%s\"}", name, model), want_sum);
}

Test(metrics, counters_histograms_and_gauges)
{
    struct metrics *m = metrics_create("llama");
    char *text = render(m, NULL);
    cr_assert_eq(value(text, "infer_prompt_tokens_total{model_name=\"llama\"}"), 0);
    cr_assert_eq(value(text, "infer_kv_cache_usage_perc{model_name=\"llama\"}"), 0);
    cr_assert_eq(value(text, "infer_spec_method_info{model_name=\"llama\",method=\"none\"}"), 1);
    check_hist(text, "infer_time_to_first_token_seconds", "llama", 0, 0);
    free(text);

    metrics_request(m, "/v1/chat/completions", 200);
    metrics_request(m, "/v1/chat/completions", 200);
    metrics_request(m, "/v1/chat/completions", 400);
    metrics_request(m, "/metrics", 200);
    metrics_tokens(m, 10, 4);
    metrics_tokens(m, 5, 0);
    metrics_tokens(m, -3, -1); /* counters never go down */
    const double obs[] = {0, 0.001, 0.0015, 0.5, 0.25, 100, NAN, -1, INFINITY, -INFINITY};
    for (int i = 0; i < 10; i++)
        metrics_observe(m, METRICS_TTFT, obs[i]);
    metrics_observe(m, METRICS_QUEUE, 600);
    struct metrics_gauges g = {3, 5, 25, 100, 40, 160, 7, 2, 4, 1.5, 1 << 20, 9, 11, 30, 17, "suffix"};
    text = render(m, &g);
    cr_assert_eq(requests(text, "llama", "/v1/chat/completions", 200), 2);
    cr_assert_eq(requests(text, "llama", "/v1/chat/completions", 400), 1);
    cr_assert_eq(requests(text, "llama", "/metrics", 200), 1);
    static const struct {
        const char *name;
        double want;
    } scalars[] = {
        {"prompt_tokens_total", 15},   {"generation_tokens_total", 4},  {"num_requests_running", 3},
        {"num_requests_waiting", 5},   {"kv_cache_blocks_used", 25},    {"kv_cache_blocks_total", 100},
        {"kv_cache_usage_perc", 0.25}, {"prefix_cache_hits_total", 40}, {"prefix_cache_queries_total", 160},
        {"prefix_cache_hit_rate", 0.25},
        {"graph_replays_total", 7},    {"eager_steps_total", 2},        {"tensor_parallel_size", 4},
        {"graph_capture_seconds", 1.5}, {"graph_memory_bytes", 1 << 20}, {"preemptions_total", 9},
        {"spec_verify_steps_total", 11}, {"spec_proposed_tokens_total", 30}, {"spec_accepted_tokens_total", 17}};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        cr_assert_eq(value(text, "infer_%s{model_name=\"llama\"}", scalars[i].name), scalars[i].want, "%s",
                     scalars[i].name);
    cr_assert_eq(value(text, "infer_spec_method_info{model_name=\"llama\",method=\"suffix\"}"), 1);
    /* 0 and 0.001 (on the bound) in le=0.001, 0.0015 next, 100 in +Inf only; no NaN, < 0 or inf */
    const char *les[] = {"0.001", "0.005", "0.25", "0.5", "80", "+Inf"};
    const double want[] = {2, 3, 4, 5, 5, 6};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(
            value(text, "infer_time_to_first_token_seconds_bucket{model_name=\"llama\",le=\"%s\"}", les[i]),
            want[i], "le=%s", les[i]);
    check_hist(text, "infer_time_to_first_token_seconds", "llama", 6,
               0.0 + 0.001 + 0.0015 + 0.5 + 0.25 + 100);
    check_hist(text, "infer_request_queue_time_seconds", "llama", 1, 600);
    cr_assert_eq(value(text, "infer_request_queue_time_seconds_bucket{model_name=\"llama\",le=\"300\"}"), 0);
    cr_assert_eq(value(text, "infer_request_queue_time_seconds_bucket{model_name=\"llama\",le=\"600\"}"), 1);
    check_hist(text, "infer_inter_token_latency_seconds", "llama", 0, 0);
    check_hist(text, "infer_e2e_request_latency_seconds", "llama", 0, 0);
    free(text);
    metrics_free(m);
}

Test(metrics, label_escaping)
{
    struct metrics *m = metrics_create("a\"b\\c\nd");
    metrics_request(m, "/x\"y\\z", 404);
    char *text = render(m, NULL);
    cr_assert_eq(requests(text, "a\\\"b\\\\c\\nd", "/x\\\"y\\\\z", 404), 1);
    cr_assert_eq(value(text, "infer_eager_steps_total{model_name=\"a\\\"b\\\\c\\nd\"}"), 0);
    free(text);
    metrics_free(m);
}

static long requests_sum(const char *text, int *n_series)
{
    long sum = 0;
    *n_series = 0;
    for (const char *line = text; *line; line = strchr(line, '\n') + 1)
        if (!strncmp(line, "infer_requests_total{", 21))
            sum += strtol(strchr(line, '}') + 2, NULL, 10), ++*n_series;
    return sum;
}

Test(metrics, route_cap)
{
    struct metrics *m = metrics_create("m");
    char route[32];
    metrics_request(m, "other", 200); /* one series, not two */
    for (int i = 0; i < 100; i++) {
        snprintf(route, sizeof route, "/r%03d", i);
        metrics_request(m, route, 200);
    }
    metrics_request(m, "/r000", 200); /* a pair already kept still counts by name */
    metrics_request(m, "/new", 404);  /* a new pair once full: other */
    char long_route[200];
    memset(long_route, 'x', sizeof long_route - 1);
    long_route[sizeof long_route - 1] = '\0';
    metrics_request(m, long_route, 200);
    metrics_request(m, "\xff\xfe", 200); /* not UTF-8 */
    char *text = render(m, NULL);
    int n_series;
    cr_assert_eq(requests_sum(text, &n_series), 105);
    cr_assert_eq(n_series, 64 + 2, "64 pairs by name, then route=\"other\" for 200 and 404");
    cr_assert_eq(requests(text, "m", "/r000", 200), 2);
    cr_assert_eq(requests(text, "m", "/r063", 200), 1);
    cr_assert_eq(
        find(text, "infer_requests_total{model_name=\"m\",route=\"/r064\",status=\"200\"}", &(double){0}), 0);
    cr_assert_eq(requests(text, "m", "other", 200), 36 + 3);
    cr_assert_eq(requests(text, "m", "other", 404), 1);
    size_t len1 = strlen(text);
    free(text);
    /* a flood of invented paths adds no series and no memory */
    for (int i = 0; i < 20000; i++) {
        snprintf(route, sizeof route, "/flood/%d", i);
        metrics_request(m, route, 404);
    }
    text = render(m, NULL);
    cr_assert_eq(requests_sum(text, &n_series), 20105);
    cr_assert_eq(n_series, 66);
    cr_assert(strlen(text) <= len1 + 8, "the page grew from %zu to %zu bytes", len1, strlen(text));
    free(text);
    metrics_free(m);
}

enum { N_THREADS = 4, N_ITERS = 20000 };

struct hammer {
    struct metrics *m;
    int id;
    atomic_int *stop;
    int bad_snapshots, renders;
};

static void *hammer_main(void *arg)
{
    struct hammer *h = arg;
    for (int i = 0; i < N_ITERS; i++) {
        metrics_observe(h->m, METRICS_ITL, 0.25);
        metrics_observe(h->m, METRICS_E2E, (i + h->id) % 2 ? 0.5 : 2.0);
        metrics_request(h->m, i % 2 ? "/a" : "/b", 200);
        metrics_tokens(h->m, 1, 3);
    }
    return NULL;
}

/* Renders while the others update: within one histogram the snapshot is consistent. */
static void *render_main(void *arg)
{
    struct hammer *h = arg;
    while (!atomic_load(h->stop)) {
        size_t len;
        char *text = metrics_render(h->m, NULL, &len);
        double n = 0, inf = 0, sum = 0;
        find(text, "infer_inter_token_latency_seconds_count{model_name=\"t\"}", &n);
        find(text, "infer_inter_token_latency_seconds_bucket{model_name=\"t\",le=\"+Inf\"}", &inf);
        find(text, "infer_inter_token_latency_seconds_sum{model_name=\"t\"}", &sum);
        h->bad_snapshots += n != inf || sum != 0.25 * n || text[len - 1] != '\n';
        h->renders++;
        free(text);
    }
    return NULL;
}

Test(metrics_threads, exact_totals)
{
    struct metrics *m = metrics_create("t");
    atomic_int stop = 0;
    struct hammer hs[N_THREADS + 1];
    pthread_t th[N_THREADS + 1];
    for (int t = 0; t <= N_THREADS; t++) {
        hs[t] = (struct hammer){m, t, &stop, 0, 0};
        cr_assert_eq(pthread_create(&th[t], NULL, t < N_THREADS ? hammer_main : render_main, &hs[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++)
        pthread_join(th[t], NULL);
    atomic_store(&stop, 1);
    pthread_join(th[N_THREADS], NULL);
    cr_assert_eq(hs[N_THREADS].bad_snapshots, 0, "%d of %d renders inconsistent", hs[N_THREADS].bad_snapshots,
                 hs[N_THREADS].renders);
    char *text = render(m, NULL);
    const long n = (long)N_THREADS * N_ITERS;
    check_hist(text, "infer_inter_token_latency_seconds", "t", n, 0.25 * n);
    check_hist(text, "infer_e2e_request_latency_seconds", "t", n, 0.5 * (n / 2) + 2.0 * (n / 2));
    cr_assert_eq(value(text, "infer_e2e_request_latency_seconds_bucket{model_name=\"t\",le=\"0.5\"}"), n / 2);
    cr_assert_eq(requests(text, "t", "/a", 200), n / 2);
    cr_assert_eq(requests(text, "t", "/b", 200), n / 2);
    cr_assert_eq(value(text, "infer_prompt_tokens_total{model_name=\"t\"}"), n);
    cr_assert_eq(value(text, "infer_generation_tokens_total{model_name=\"t\"}"), 3 * n);
    free(text);
    metrics_free(m);
}
