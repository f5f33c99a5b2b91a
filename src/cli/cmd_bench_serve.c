/* infer bench-serve: a load generator for any OpenAI-compatible server
 * (src/loadgen/): a named workload of streaming completions, open-loop
 * arrivals, every stream timed and checked; a summary line (JSON) on
 * stdout, and with --report DIR one line per run appended to
 * DIR/results.jsonl. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "loadgen/loadgen.h"
#include "loadgen/scrape.h"
#include "loadgen/stats.h"
#include "loadgen/workload.h"

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
        fprintf(f, "%s\"%s\": %.17g", first ? "" : ", ", name, v);
        first = 0;
        if (counter && (ends_with(name, "generation_tokens_total") || ends_with(name, "prompt_tokens_total"))) {
            const long long ours = ends_with(name, "generation_tokens_total") ? s->output_tokens : s->prompt_tokens;
            checked = 1;
            agree &= (long long)llround(v) == ours;
        }
    }
    fprintf(f, "}, \"metrics_agree\": %s, ", !checked ? "null" : agree ? "true" : "false");
}

static void print_summary(FILE *f, const struct workload *w, const char *url, double rate, int max_c,
                          const struct lg_summary *s, const struct scrape *before, const struct scrape *after)
{
    fprintf(f, "{\"workload\": \"%s\", \"url\": \"%s\", \"request_rate\": ", w->name, url);
    if (rate > 0)
        fprintf(f, "%g", rate);
    else
        fprintf(f, "\"inf\"");
    fprintf(f, ", \"max_concurrency\": %d, \"requests\": %d, \"completed\": %d, \"failed\": %d, \"failures\": {",
            max_c, s->requests, s->completed, s->failed);
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

int cmd_bench_serve(int argc, char **argv)
{
    const char *url = "http://127.0.0.1:8000", *model = NULL, *api_key = NULL, *workload = "continuous_batching";
    const char *report = NULL;
    int num_prompts = 0, max_concurrency = 0, vocab = 32000, max_context = 0, warmup = 2, ignore_eos = 1;
    int progress = 0;
    uint64_t seed = 0;
    double rate = 0, time_limit = 600, slo_ttft_ms = 0, slo_tpot_ms = 0;
    struct cli_opt opts[] = {
        {"url", CLI_OPT_STRING, &url, 0, 0, 0, "the server (http://host:port[/prefix]; default http://127.0.0.1:8000)", 0},
        {"model", CLI_OPT_STRING, &model, 1, 0, 0, "the model name to send", 0},
        {"api-key", CLI_OPT_STRING, &api_key, 0, 0, 0, "sent as 'Authorization: Bearer KEY'", 0},
        {"workload", CLI_OPT_STRING, &workload, 0, 0, 0,
         "baseline, continuous_batching (default), paged_attention, chunked_prefill, prefix_caching, sharegpt", 0},
        {"num-prompts", CLI_OPT_INT, &num_prompts, 0, 0, 1000000, "requests (default: the workload's own)", 0},
        {"request-rate", CLI_OPT_DOUBLE, &rate, 0, 0, 0, "requests per second, Poisson arrivals (default 0: all at once)", 0},
        {"max-concurrency", CLI_OPT_INT, &max_concurrency, 0, 0, 100000, "requests in flight at most (default: no limit)", 0},
        {"seed", CLI_OPT_U64, &seed, 0, 0, 0, "the workload's random seed (default 0)", 0},
        {"vocab", CLI_OPT_INT, &vocab, 0, 2, 10000000, "prompt ids are drawn from [1, N) (default 32000)", 0},
        {"max-context", CLI_OPT_INT, &max_context, 0, 0, 100000000,
         "prompt + output tokens at most: longer requests are scaled down (default 0: as drawn)", 0},
        {"warmup", CLI_OPT_INT, &warmup, 0, 0, 1000, "requests run first and not counted (default 2)", 0},
        {"ignore-eos", CLI_OPT_INT, &ignore_eos, 0, 0, 1,
         "1 (default): ask for exactly max_tokens and check the usage says so; 0: let the model stop", 0},
        {"time-limit", CLI_OPT_DOUBLE, &time_limit, 0, 0, 0, "seconds; requests still running then fail (default 600)", 0},
        {"slo-ttft-ms", CLI_OPT_DOUBLE, &slo_ttft_ms, 0, 0, 0, "goodput: time to first token at most (default: none)", 0},
        {"slo-tpot-ms", CLI_OPT_DOUBLE, &slo_tpot_ms, 0, 0, 0, "goodput: time per output token at most (default: none)", 0},
        {"report", CLI_OPT_STRING, &report, 0, 0, 0, "a folder: the run's summary is appended to DIR/results.jsonl", 0},
        {"progress", CLI_OPT_FLAG, &progress, 0, 0, 0, "a progress line on stderr", 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    struct err e = {0};
    const int parsed = cli_parse(argc, argv, "bench-serve", opts, n_opts, &e);
    if (parsed > 0) {
        printf("\nworkloads:\n");
        for (int i = 0; workload_names[i]; i++)
            printf("  %-20s %s\n", workload_names[i], workload_describe(workload_names[i]));
        return 0;
    }
    if (parsed < 0) {
        fprintf(stderr, "infer bench-serve: %s\n", e.msg);
        return 2;
    }
    const struct {
        const char *flag;
        double v, max;
        int zero_ok;
    } checks[] = {{"--request-rate", rate, 1e6, 1}, {"--time-limit", time_limit, 1e7, 0},
                  {"--slo-ttft-ms", slo_ttft_ms, 1e9, 1}, {"--slo-tpot-ms", slo_tpot_ms, 1e9, 1}};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!isfinite(checks[i].v) || checks[i].v < 0 || checks[i].v > checks[i].max ||
            (!checks[i].zero_ok && checks[i].v == 0)) {
            fprintf(stderr, "infer bench-serve: %s %g: must be %s and at most %g\n", checks[i].flag, checks[i].v,
                    checks[i].zero_ok ? "0 or more" : "more than 0", checks[i].max);
            return 2;
        }
    struct lg_target t = {.model = model, .api_key = api_key};
    struct workload w, wu;
    const struct workload_opts wo = {.name = workload, .num_prompts = num_prompts, .request_rate = rate, .seed = seed,
                                     .vocab = vocab, .max_context = max_context};
    if (lg_target_parse(&t, url, &e) || workload_make(&w, &wo, &e)) {
        fprintf(stderr, "infer bench-serve: %s\n", e.msg);
        return 2;
    }
    if (report && mkdir(report, 0755) && errno != EEXIST) {
        fprintf(stderr, "infer bench-serve: --report %s: cannot create it: %s\n", report, strerror(errno));
        workload_free(&w);
        return 2;
    }
    const int max_c = w.max_concurrency ? w.max_concurrency : max_concurrency;
    const struct lg_options lo = {.max_concurrency = max_c, .time_limit = time_limit, .ignore_eos = ignore_eos,
                                  .progress = progress};
    int rc = 0;
    if (warmup > 0) { /* the same kind of requests, another seed, all at once */
        const struct workload_opts uo = {.name = workload, .num_prompts = warmup, .seed = seed + 0x9e3779b9,
                                         .vocab = vocab, .max_context = max_context};
        struct lg_record *ur = xcalloc((size_t)warmup, sizeof *ur);
        CHECK(workload_make(&wu, &uo, &e) == 0);
        if (lg_run(&t, wu.req, wu.n, &(struct lg_options){.max_concurrency = max_c, .time_limit = time_limit,
                                                          .ignore_eos = ignore_eos},
                   ur, &e))
            rc = 1;
        int bad = 0;
        for (int i = 0; i < warmup; i++)
            bad += ur[i].failure != LG_OK;
        if (!rc && bad == warmup) {
            fprintf(stderr, "infer bench-serve: every warm-up request failed (%s: %s); is %s serving model '%s'?\n",
                    lg_failure_names[ur[0].failure], ur[0].why, url, model);
            rc = 1;
        }
        for (int i = 0; i < warmup; i++)
            lg_record_free(&ur[i]);
        free(ur);
        workload_free(&wu);
    }
    struct lg_record *rec = xcalloc((size_t)w.n, sizeof *rec);
    struct scrape before, after;
    struct err se;
    int scraped = !rc && !scrape_metrics(&t, &before, &se);
    if (!rc && lg_run(&t, w.req, w.n, &lo, rec, &e))
        rc = 1;
    if (scraped && scrape_metrics(&t, &after, &se)) {
        scrape_free(&before);
        scraped = 0;
    }
    if (rc) {
        if (e.msg[0])
            fprintf(stderr, "infer bench-serve: %s\n", e.msg);
    } else {
        struct lg_summary s;
        lg_summarize(rec, w.n, slo_ttft_ms / 1e3, slo_tpot_ms / 1e3, &s);
        print_summary(stdout, &w, url, rate, max_c, &s, scraped ? &before : NULL, scraped ? &after : NULL);
        fflush(stdout);
        for (int i = 0, shown = 0; i < w.n && shown < 3; i++)
            if (rec[i].failure != LG_OK)
                fprintf(stderr, "infer bench-serve: request %d failed (%s): %s\n", i, lg_failure_names[rec[i].failure],
                        rec[i].why),
                    shown++;
        fprintf(stderr,
                "bench-serve %s: %d/%d requests in %.2f s, %.1f output tok/s, TTFT p50 %.1f ms p99 %.1f ms, ITL p50 "
                "%.2f ms p99 %.2f ms, %d failed\n",
                w.name, s.completed, s.requests, s.duration, s.output_tok_s, s.ttft.p50 * 1e3, s.ttft.p99 * 1e3,
                s.itl.p50 * 1e3, s.itl.p99 * 1e3, s.failed);
        if (report) {
            char path[4096];
            snprintf(path, sizeof path, "%s/results.jsonl", report);
            FILE *f = fopen(path, "a");
            if (!f) {
                fprintf(stderr, "infer bench-serve: --report: cannot append to %s: %s\n", path, strerror(errno));
                rc = 1;
            } else {
                print_summary(f, &w, url, rate, max_c, &s, scraped ? &before : NULL, scraped ? &after : NULL);
                if (fclose(f)) {
                    fprintf(stderr, "infer bench-serve: --report: writing %s failed\n", path);
                    rc = 1;
                }
            }
        }
        if (s.failed)
            rc = rc ? rc : 3;
    }
    if (scraped)
        scrape_free(&before), scrape_free(&after);
    for (int i = 0; i < w.n; i++)
        lg_record_free(&rec[i]);
    free(rec);
    workload_free(&w);
    return rc;
}
