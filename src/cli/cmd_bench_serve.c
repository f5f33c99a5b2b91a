/* infer bench-serve: a load generator for any OpenAI-compatible server
 * (src/loadgen/): a named workload of streaming completions, open-loop
 * arrivals at each of the --request-rate values, every stream timed and
 * checked, the server's /metrics read around each run; a summary line
 * (JSON) per run on stdout, and with --report DIR the runs appended to
 * DIR/results.jsonl and the report (report.md, plots) redrawn. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/fs.h"
#include "loadgen/loadgen.h"
#include "loadgen/report.h"
#include "loadgen/scrape.h"
#include "loadgen/summary_json.h"
#include "loadgen/workload.h"

struct flags {
    const char *url, *model, *api_key, *workload, *rates, *report, *label;
    int num_prompts, max_concurrency, vocab, max_context, warmup, ignore_eos, progress, redraw;
    uint64_t seed;
    double time_limit, slo_ttft_ms, slo_tpot_ms;
};

/* "1,2.5,inf" into rates (0: all at once); -1 naming the flag. */
static int parse_rates(const char *s, double *rates, int max, int *n, struct err *e)
{
    *n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        double v;
        if (!strncmp(p, "inf", 3) && (p[3] == ',' || !p[3]))
            v = 0, end = (char *)p + 3;
        else {
            v = strtod(p, &end);
            if (end == p || !isfinite(v) || v < 0 || v > 1e6 || (*end && *end != ','))
                return err_set(e, "--request-rate '%s': a comma-separated list of requests per second (0 to 1e6, "
                                  "or inf: all at once)", s);
        }
        if (*n == max)
            return err_set(e, "--request-rate '%s': at most %d rates", s, max);
        rates[(*n)++] = v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* One run at one rate: the summary line to stdout (and the report). */
static int run_once(const struct flags *f, const struct lg_target *t, uint64_t variant, double rate, int max_c,
                    struct err *e)
{
    struct workload w;
    const struct workload_opts wo = {.name = f->workload, .num_prompts = f->num_prompts, .request_rate = rate,
                                     .seed = f->seed, .variant = variant, .vocab = f->vocab,
                                     .max_context = f->max_context};
    if (workload_make(&w, &wo, e))
        return 2;
    const struct lg_options lo = {.max_concurrency = max_c, /* the flag's, else the workload's (cmd_bench_serve) */
                                  .time_limit = f->time_limit, .ignore_eos = f->ignore_eos, .progress = f->progress};
    struct lg_record *rec = xcalloc((size_t)w.n, sizeof *rec);
    struct scrape before, after;
    struct err se;
    int scraped = !scrape_metrics(t, &before, &se), rc = 0;
    if (lg_run(t, w.req, w.n, &lo, rec, e))
        rc = 1;
    if (scraped && scrape_metrics(t, &after, &se)) {
        scrape_free(&before);
        scraped = 0;
    }
    if (!rc) {
        struct lg_summary s;
        lg_summarize(rec, w.n, f->slo_ttft_ms / 1e3, f->slo_tpot_ms / 1e3, &s);
        char name[300] = "", slug[300], samples[320];
        snprintf(name, sizeof name, "%s_%s_%g", f->label ? f->label : "", w.name, rate);
        report_slug(slug, sizeof slug, name);
        snprintf(samples, sizeof samples, "samples/%s", slug);
        const struct run_info run = {.label = f->label ? f->label : "", .workload = w.name, .url = f->url,
                                     .rate = rate, .max_concurrency = lo.max_concurrency,
                                     .samples = f->report ? samples : NULL};
        summary_json_write(stdout, &run, &s, scraped ? &before : NULL, scraped ? &after : NULL);
        fflush(stdout);
        for (int i = 0, shown = 0; i < w.n && shown < 3; i++)
            if (rec[i].failure != LG_OK)
                fprintf(stderr, "infer bench-serve: request %d failed (%s): %s\n", i, lg_failure_names[rec[i].failure],
                        rec[i].why),
                    shown++;
        char rate_text[32] = "inf";
        if (rate > 0)
            snprintf(rate_text, sizeof rate_text, "%g", rate);
        fprintf(stderr,
                "bench-serve %s at %s req/s: %d/%d requests in %.2f s, %.1f output tok/s, TTFT p50 %.1f ms p99 %.1f "
                "ms, ITL p50 %.2f ms p99 %.2f ms, %d failed\n",
                w.name, rate_text, s.completed, s.requests,
                s.duration, s.output_tok_s, s.ttft.p50 * 1e3, s.ttft.p99 * 1e3, s.itl.p50 * 1e3, s.itl.p99 * 1e3,
                s.failed);
        if (f->report) {
            char path[4096];
            snprintf(path, sizeof path, "%s/results.jsonl", f->report);
            FILE *out = fopen(path, "a");
            if (!out) {
                err_set(e, "--report: cannot append to %s: %s", path, strerror(errno));
                rc = 1;
            } else {
                summary_json_write(out, &run, &s, scraped ? &before : NULL, scraped ? &after : NULL);
                if (fclose(out)) {
                    err_set(e, "--report: writing %s failed", path);
                    rc = 1;
                } else if (report_write_samples(f->report, slug, rec, w.n, e)) {
                    rc = 1;
                }
            }
        }
        if (!rc && s.failed)
            rc = 3;
    }
    if (scraped)
        scrape_free(&before), scrape_free(&after);
    for (int i = 0; i < w.n; i++)
        lg_record_free(&rec[i]);
    free(rec);
    workload_free(&w);
    return rc;
}

/* Warm-up requests (the workload's kind, another seed, all at once); 1
 * when every one failed: nothing serves there. */
static int warm_up(const struct flags *f, const struct lg_target *t, int max_c)
{
    struct workload w;
    struct err e;
    const struct workload_opts uo = {.name = f->workload, .num_prompts = f->warmup, .seed = f->seed + 0x9e3779b9,
                                     .vocab = f->vocab, .max_context = f->max_context};
    CHECK(workload_make(&w, &uo, &e) == 0);
    struct lg_record *r = xcalloc((size_t)w.n, sizeof *r);
    const struct lg_options o = {.max_concurrency = max_c, .time_limit = f->time_limit, .ignore_eos = f->ignore_eos};
    int bad = 0;
    if (lg_run(t, w.req, w.n, &o, r, &e))
        bad = w.n;
    else
        for (int i = 0; i < w.n; i++)
            bad += r[i].failure != LG_OK;
    const int all_failed = bad == w.n;
    if (all_failed)
        fprintf(stderr, "infer bench-serve: every warm-up request failed (%s: %s); is %s serving model '%s'?\n",
                lg_failure_names[r[0].failure], r[0].failure ? r[0].why : e.msg, f->url, f->model);
    for (int i = 0; i < w.n; i++)
        lg_record_free(&r[i]);
    free(r);
    workload_free(&w);
    return all_failed;
}

int cmd_bench_serve(int argc, char **argv)
{
    struct flags f = {.url = "http://127.0.0.1:8000", .workload = "continuous_batching", .rates = "inf",
                      .vocab = 32000, .warmup = 2, .ignore_eos = 1, .time_limit = 600};
    struct cli_opt opts[] = {
        {"url", CLI_OPT_STRING, &f.url, 0, 0, 0, "the server (http://host:port[/prefix]; default http://127.0.0.1:8000)", 0},
        {"model", CLI_OPT_STRING, &f.model, 0, 0, 0, "the model name to send (required, but with --redraw)", 0},
        {"api-key", CLI_OPT_STRING, &f.api_key, 0, 0, 0, "sent as 'Authorization: Bearer KEY'", 0},
        {"workload", CLI_OPT_STRING, &f.workload, 0, 0, 0, "one of the workloads below (default continuous_batching)", 0},
        {"num-prompts", CLI_OPT_INT, &f.num_prompts, 0, 0, 1000000, "requests a run (default: the workload's own)", 0},
        {"request-rate", CLI_OPT_STRING, &f.rates, 0, 0, 0,
         "requests per second, Poisson arrivals; a list (1,2,4,inf) runs a sweep (default inf: all at once)", 0},
        {"max-concurrency", CLI_OPT_INT, &f.max_concurrency, 0, 0, 100000, "requests in flight at most (default: the workload's: 1 for baseline and grounded, else no limit)", 0},
        {"seed", CLI_OPT_U64, &f.seed, 0, 0, 0,
         "the workload's random seed (default 0; each rate of a sweep: its lengths, other token ids)", 0},
        {"vocab", CLI_OPT_INT, &f.vocab, 0, 2, 10000000, "prompt ids are drawn from [1, N) (default 32000)", 0},
        {"max-context", CLI_OPT_INT, &f.max_context, 0, 0, 100000000,
         "prompt + output tokens at most: longer requests are scaled down (default 0: as drawn)", 0},
        {"warmup", CLI_OPT_INT, &f.warmup, 0, 0, 1000, "requests run first and not counted (default 2)", 0},
        {"ignore-eos", CLI_OPT_INT, &f.ignore_eos, 0, 0, 1,
         "1 (default): ask for exactly max_tokens and check the usage says so; 0: let the model stop", 0},
        {"time-limit", CLI_OPT_DOUBLE, &f.time_limit, 0, 0, 0, "seconds a run; requests still running then fail (default 600)", 0},
        {"slo-ttft-ms", CLI_OPT_DOUBLE, &f.slo_ttft_ms, 0, 0, 0, "goodput: time to first token at most (default: none)", 0},
        {"slo-tpot-ms", CLI_OPT_DOUBLE, &f.slo_tpot_ms, 0, 0, 0, "goodput: time per output token at most (default: none)", 0},
        {"report", CLI_OPT_STRING, &f.report, 0, 0, 0,
         "a folder: runs appended to DIR/results.jsonl, DIR/report.md and plots redrawn from all of them", 0},
        {"label", CLI_OPT_STRING, &f.label, 0, 0, 0, "the server's configuration, as the report should name it", 0},
        {"progress", CLI_OPT_FLAG, &f.progress, 0, 0, 0, "a progress line on stderr", 0},
        {"redraw", CLI_OPT_FLAG, &f.redraw, 0, 0, 0, "only redraw --report DIR's report from its results.jsonl", 0},
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
    if (f.redraw) {
        if (!f.report) {
            fprintf(stderr, "infer bench-serve: --redraw needs --report DIR\n");
            return 2;
        }
        if (report_render(f.report, &e)) {
            fprintf(stderr, "infer bench-serve: %s\n", e.msg);
            return 1;
        }
        return 0;
    }
    if (!f.model) {
        fprintf(stderr, "infer bench-serve: --model is required (the name the server serves)\n");
        return 2;
    }
    const struct {
        const char *flag;
        double v, max;
        int zero_ok;
    } checks[] = {{"--time-limit", f.time_limit, 1e7, 0}, {"--slo-ttft-ms", f.slo_ttft_ms, 1e9, 1},
                  {"--slo-tpot-ms", f.slo_tpot_ms, 1e9, 1}};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!isfinite(checks[i].v) || checks[i].v < 0 || checks[i].v > checks[i].max ||
            (!checks[i].zero_ok && checks[i].v == 0)) {
            fprintf(stderr, "infer bench-serve: %s %g: must be %s and at most %g\n", checks[i].flag, checks[i].v,
                    checks[i].zero_ok ? "0 or more" : "more than 0", checks[i].max);
            return 2;
        }
    double rates[64];
    int n_rates = 0;
    struct lg_target t = {.model = f.model, .api_key = f.api_key};
    struct workload probe;
    const struct workload_opts po = {.name = f.workload, .num_prompts = 1, .vocab = f.vocab};
    if (parse_rates(f.rates, rates, 64, &n_rates, &e) || lg_target_parse(&t, f.url, &e) ||
        workload_make(&probe, &po, &e)) {
        fprintf(stderr, "infer bench-serve: %s\n", e.msg);
        return 2;
    }
    const int max_c = f.max_concurrency ? f.max_concurrency : probe.max_concurrency; /* the flag over the workload's */
    workload_free(&probe);
    if (f.report && fs_mkdir_p(f.report, &e)) {
        fprintf(stderr, "infer bench-serve: --report: %s\n", e.msg);
        return 2;
    }
    if (f.warmup > 0 && warm_up(&f, &t, max_c))
        return 1;
    int rc = 0;
    /* A sweep's rate i sends the seed's lengths and arrival draws with token ids of variant i + 1:
     * the rates compare like with like (and with a plain run of the seed, variant 0), and none finds
     * another's prompts, or the plain run's, in the server's prefix cache. */
    for (int i = 0; i < n_rates && rc != 1 && rc != 2; i++) {
        const int r = run_once(&f, &t, n_rates > 1 ? (uint64_t)i + 1 : 0, rates[i], max_c, &e);
        if (r == 1 || r == 2)
            fprintf(stderr, "infer bench-serve: %s\n", e.msg);
        rc = r ? r : rc;
    }
    if (f.report && rc != 1 && rc != 2 && report_render(f.report, &e)) {
        fprintf(stderr, "infer bench-serve: %s\n", e.msg);
        rc = 1;
    }
    return rc;
}
