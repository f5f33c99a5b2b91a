/* A run's summary as one JSON line (summary_json.h). */
#include "loadgen/summary_json.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loadgen/workload.h"

/* s as a JSON string (quoted and escaped). */
static void put_string(FILE *f, const char *s)
{
    json_t *j = json_string(s);
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(text ? text : "\"\"", f); /* not UTF-8: an empty string */
    free(text);
    json_decref(j);
}

static void print_dist(FILE *f, const char *name, const struct lg_dist *d, int last)
{
    fprintf(f, "\"%s_ms\": {\"n\": %d, \"mean\": %.3f, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}%s",
            name, d->n, d->mean * 1e3, d->p50 * 1e3, d->p90 * 1e3, d->p99 * 1e3, d->max * 1e3, last ? "" : ", ");
}

static int ends_with(const char *s, const char *end)
{
    const size_t n = strlen(s), k = strlen(end);
    return n >= k && !strcmp(s + n - k, end);
}

/* What the server's /metrics counted over the run: every counter's
 * (*_total) increase, the graph gauges as they end, and whether its token
 * counters agree with the streams' usage (NULL pages: it has no /metrics). */
static void print_server(FILE *f, const struct scrape *a, const struct scrape *b, const struct lg_summary *s)
{
    if (!a || !b) {
        fprintf(f, "\"server_metrics\": null, \"metrics_agree\": null, ");
        return;
    }
    fprintf(f, "\"server_metrics\": {");
    int first = 1, agree = 1, checked = 0;
    for (int i = 0; i < b->n; i++) {
        const char *name = b->names[i];
        int found = 0;
        const double before = scrape_get(a, name, &found), after = b->values[i];
        const int counter = ends_with(name, "_total");
        if (!(counter && found) && !strstr(name, "graph_memory_bytes") && !strstr(name, "graph_capture_seconds") &&
            !strstr(name, "tensor_parallel_size"))
            continue;
        const double v = counter ? after - before : after;
        fputs(first ? "" : ", ", f);
        put_string(f, name);
        fprintf(f, ": %.17g", v);
        first = 0;
        if (counter && (ends_with(name, "generation_tokens_total") || ends_with(name, "prompt_tokens_total"))) {
            const long long ours = ends_with(name, "generation_tokens_total") ? s->output_tokens : s->prompt_tokens;
            checked = 1;
            agree &= (long long)llround(v) == ours;
        }
    }
    fprintf(f, "}, \"metrics_agree\": %s, ", !checked ? "null" : agree ? "true" : "false");
}

void summary_json_write(FILE *f, const struct run_info *run, const struct lg_summary *s, const struct scrape *before,
                        const struct scrape *after)
{
    fprintf(f, "{\"label\": ");
    put_string(f, run->label ? run->label : "");
    fprintf(f, ", \"workload\": ");
    put_string(f, run->workload);
    fprintf(f, ", \"url\": ");
    put_string(f, run->url);
    fprintf(f, ", \"request_rate\": ");
    if (run->rate > 0)
        fprintf(f, "%g", run->rate);
    else
        fprintf(f, "\"inf\"");
    fprintf(f, ", \"samples\": ");
    if (run->samples)
        put_string(f, run->samples);
    else
        fprintf(f, "null");
    fprintf(f, ", \"max_concurrency\": %d, \"requests\": %d, \"completed\": %d, \"failed\": %d, \"failures\": {",
            run->max_concurrency, s->requests, s->completed, s->failed);
    int first = 1;
    for (int k = 1; k < LG_N_FAILURES; k++)
        if (s->failures[k])
            fprintf(f, "%s\"%s\": %d", first ? "" : ", ", lg_failure_names[k], s->failures[k]), first = 0;
    fprintf(f, "}, \"duration_s\": %.3f, \"prompt_tokens\": %lld, \"output_tokens\": %lld, \"requests_per_s\": %.3f, "
               "\"output_tok_s\": %.2f, \"total_tok_s\": %.2f, \"chunks\": %lld, \"chunks_per_s\": %.1f, ",
            s->duration, s->prompt_tokens, s->output_tokens, s->request_rate, s->output_tok_s, s->total_tok_s,
            s->chunks, s->chunks_per_s);
    print_dist(f, "ttft", &s->ttft, 0);
    print_dist(f, "itl", &s->itl, 0);
    print_dist(f, "tpot", &s->tpot, 0);
    print_dist(f, "e2e", &s->e2e, 0);
    print_server(f, before, after, s);
    struct timespec res = {0, 0};
    clock_getres(CLOCK_MONOTONIC, &res);
    fprintf(f,
            "\"slo\": {\"ttft_ms\": %g, \"tpot_ms\": %g}, \"good\": %d, \"goodput_req_s\": %.3f, "
            "\"clock\": \"CLOCK_MONOTONIC, read as each chunk is parsed after the read that brought it\", "
            "\"clock_resolution_ns\": %ld}\n",
            s->slo_ttft * 1e3, s->slo_tpot * 1e3, s->good, s->goodput, (long)(res.tv_sec * 1000000000L + res.tv_nsec));
}
