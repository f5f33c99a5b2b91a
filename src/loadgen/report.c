/* The report folder (report.h). */
#include "loadgen/report.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/fs.h"
#include "loadgen/stats.h"

void report_slug(char *out, size_t size, const char *name)
{
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < size; p++) {
        const char c = *p;
        out[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-'
                       ? c
                       : '_';
    }
    out[k] = 0;
}

/* s as a gnuplot single-quoted string. */
static void gp_str(FILE *gp, const char *s)
{
    fputc('\'', gp);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', gp);
        if (*s != '\n')
            fputc(*s, gp);
    }
    fputc('\'', gp);
}

static int write_cdf(const char *path, double *v, int n, struct err *e)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return err_set(e, "--report: cannot write %s: %s", path, strerror(errno));
    lg_sort(v, (size_t)n);
    for (int i = 0; i < n; i++)
        fprintf(f, "%.4f\t%.6f\n", v[i] * 1e3, (double)(i + 1) / (double)n);
    return fclose(f) ? err_set(e, "--report: writing %s failed", path) : 0;
}

int report_write_samples(const char *dir, const char *name, const struct lg_record *rec, int n, struct err *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/samples", dir);
    if (fs_mkdir_p(path, e))
        return err_prefix(e, "--report");
    double *ttft, *itl;
    int a, b;
    lg_latency_samples(rec, n, &ttft, &a, &itl, &b);
    snprintf(path, sizeof path, "%s/samples/%s.ttft.tsv", dir, name);
    int rc = write_cdf(path, ttft, a, e);
    snprintf(path, sizeof path, "%s/samples/%s.itl.tsv", dir, name);
    rc = rc ? rc : write_cdf(path, itl, b, e);
    free(ttft);
    free(itl);
    return rc;
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static double pct(const json_t *o, const char *dist, const char *p)
{
    return num(json_object_get(o, dist), p);
}

static const char *str(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

/* A server counter's increase over the run (any server's prefix), found: 0/1. */
static double server(const json_t *o, const char *suffix, int *found)
{
    const json_t *m = json_object_get(o, "server_metrics");
    const char *k;
    const json_t *v;
    *found = 0;
    json_object_foreach((json_t *)m, k, v)
    {
        const size_t n = strlen(k), s = strlen(suffix);
        if (n >= s && !strcmp(k + n - s, suffix) && json_is_number(v)) {
            *found = 1;
            return json_number_value(v);
        }
    }
    return 0;
}

static double rate_of(const json_t *o)
{
    const json_t *r = json_object_get(o, "request_rate");
    return json_is_number(r) ? json_number_value(r) : 1e30; /* "inf": all at once, the right end */
}

/* Runs grouped as series: the same label and workload. */
static int same_series(const json_t *a, const json_t *b)
{
    return !strcmp(str(a, "label"), str(b, "label")) && !strcmp(str(a, "workload"), str(b, "workload"));
}

static int cmp_rate(const void *a, const void *b)
{
    const double x = rate_of(*(json_t *const *)a), y = rate_of(*(json_t *const *)b);
    return (x > y) - (x < y);
}

/* A run's request rate as text: "R<unit>", or "all at once". */
static void rate_text(const json_t *o, const char *unit, char *out, size_t size)
{
    if (json_is_number(json_object_get(o, "request_rate")))
        snprintf(out, size, "%g%s", num(o, "request_rate"), unit);
    else
        snprintf(out, size, "all at once");
}

static void write_table(FILE *md, json_t **runs, size_t n)
{
    fprintf(md, "| label | workload | rate (req/s) | ok / failed | req/s | output tok/s | TTFT p50 / p99 (ms) | "
                "ITL p50 / p99 (ms) | TPOT p50 (ms) | E2E p50 / p99 (ms) | prefix-cache hits | preemptions | graph "
                "replays / eager steps | graph memory (MiB) |\n");
    fprintf(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = runs[i];
        char rate[32];
        rate_text(o, "", rate, sizeof rate);
        int fh, fq, fr, fe, fm, fp;
        const double hits = server(o, "prefix_cache_hits_total", &fh), queries = server(o, "prefix_cache_queries_total", &fq);
        const double replays = server(o, "graph_replays_total", &fr), eager = server(o, "eager_steps_total", &fe);
        const double mem = server(o, "graph_memory_bytes", &fm), preempted = server(o, "preemptions_total", &fp);
        char hit[48] = "-", steps[64] = "-", gm[32] = "-", pre[32] = "-";
        if (fh && fq && queries > 0)
            snprintf(hit, sizeof hit, "%.1f %%", 100 * hits / queries);
        if (fr && fe)
            snprintf(steps, sizeof steps, "%.0f / %.0f", replays, eager);
        if (fm)
            snprintf(gm, sizeof gm, "%.0f", mem / (1 << 20));
        if (fp)
            snprintf(pre, sizeof pre, "%.0f", preempted);
        fprintf(md,
                "| %s | %s | %s | %.0f / %.0f | %.2f | %.1f | %.1f / %.1f | %.2f / %.2f | %.2f | %.0f / %.0f | %s | "
                "%s | %s | %s |\n",
                str(o, "label")[0] ? str(o, "label") : "-", str(o, "workload"), rate, num(o, "completed"),
                num(o, "failed"), num(o, "requests_per_s"), num(o, "output_tok_s"), pct(o, "ttft_ms", "p50"),
                pct(o, "ttft_ms", "p99"), pct(o, "itl_ms", "p50"), pct(o, "itl_ms", "p99"), pct(o, "tpot_ms", "p50"),
                pct(o, "e2e_ms", "p50"), pct(o, "e2e_ms", "p99"), hit, pre, steps, gm);
    }
}

/* Whether DIR/SAMPLES.KIND.tsv has a sample (a run whose requests all
 * failed has none, and gnuplot refuses an empty file). */
static int has_lines(const char *dir, const char *samples, const char *kind)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s.tsv", dir, samples, kind);
    struct stat st;
    return !stat(path, &st) && st.st_size > 0;
}

/* The workloads of the runs, in the order they first appear (at most
 * MAX_WORKLOADS; bench-serve has six). */
enum { MAX_WORKLOADS = 16 };
static int distinct_workloads(json_t **runs, size_t n, const char **out)
{
    int k = 0;
    for (size_t i = 0; i < n && k < MAX_WORKLOADS; i++) {
        int seen = 0;
        for (int j = 0; j < k; j++)
            seen |= !strcmp(out[j], str(runs[i], "workload"));
        if (!seen)
            out[k++] = str(runs[i], "workload");
    }
    return k;
}

/* The CDF plot of one kind ("ttft", "itl") for a workload: its file name, the
 * workload's name made safe for a path and gnuplot's quotes. */
static void cdf_png(char *out, size_t size, const char *kind, const char *workload)
{
    char slug[128];
    report_slug(slug, sizeof slug, workload);
    snprintf(out, size, "%s_cdf_%s.png", kind, slug);
}

/* plots.gp and its data files; returns how many plots it draws. */
static int write_plots(const char *dir, json_t **runs, size_t n, struct err *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/plots", dir);
    if (fs_mkdir_p(path, e))
        return err_prefix(e, "--report");
    snprintf(path, sizeof path, "%s/plots.gp", dir);
    FILE *gp = fopen(path, "w");
    if (!gp)
        return err_set(e, "--report: cannot write %s: %s", path, strerror(errno));
    fprintf(gp, "# drawn by infer bench-serve --report from results.jsonl; run with: cd DIR && gnuplot plots.gp\n"
                "set terminal pngcairo size 1000,720 noenhanced\nset grid\nset key below\n");
    /* latency against throughput: a line per series (label and workload), runs in rate order; only
     * the series with several rates (the sweeps) when there are such, or the key buries the plot */
    json_t **sorted = xmalloc((n ? n : 1) * sizeof *sorted);
    memcpy(sorted, runs, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_rate);
    int n_series = 0, any_sweep = 0;
    char *done = xcalloc(n ? n : 1, 1);
    for (size_t i = 0; i < n && !any_sweep; i++)
        for (size_t j = i + 1; j < n && !any_sweep; j++)
            any_sweep = same_series(sorted[i], sorted[j]);
    fprintf(gp, "set output 'latency_throughput.png'\nset title 'End-to-end latency (p50) against output "
                "throughput%s'\nset xlabel 'output tokens/s'\nset ylabel 'ms'\nset logscale y\nplot ",
            any_sweep ? ", request-rate sweeps" : "");
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        int points = 0;
        for (size_t j = i; j < n; j++)
            points += !done[j] && same_series(sorted[i], sorted[j]);
        if (any_sweep && points < 2)
            continue;
        char dat[4096];
        snprintf(dat, sizeof dat, "%s/plots/series%d.dat", dir, n_series);
        FILE *f = fopen(dat, "w");
        if (!f)
            break;
        for (size_t j = i; j < n; j++)
            if (!done[j] && same_series(sorted[i], sorted[j])) {
                done[j] = 1;
                fprintf(f, "%.3f\t%.3f\t%.3f\t%.3f\n", num(sorted[j], "output_tok_s"), pct(sorted[j], "e2e_ms", "p50"),
                        pct(sorted[j], "ttft_ms", "p50"), pct(sorted[j], "itl_ms", "p50"));
            }
        fclose(f);
        char title[512];
        snprintf(title, sizeof title, "%s %s", str(sorted[i], "label"), str(sorted[i], "workload"));
        fprintf(gp, "%s'plots/series%d.dat' using 1:2 with linespoints title ", n_series ? ", \\\n     " : "",
                n_series);
        gp_str(gp, title);
        n_series++;
    }
    /* an empty plot: a line outside its y range (gnuplot stops the whole script at a plot of
     * undefined points, and draws nothing after it) */
    fprintf(gp, "%s\nunset logscale y\n", n_series ? "" : "[1:10][1:10] 100 title 'no runs'");
    /* TTFT and ITL distributions, a plot per workload with a line per run that has samples */
    const char *workloads[MAX_WORKLOADS];
    const int n_workloads = distinct_workloads(runs, n, workloads);
    static const char *const what[2][2] = {{"ttft", "Time to first token"}, {"itl", "Inter-token latency"}};
    for (int wl = 0; wl < n_workloads; wl++)
        for (int w = 0; w < 2; w++) {
            char png[200], heading[300];
            cdf_png(png, sizeof png, what[w][0], workloads[wl]);
            snprintf(heading, sizeof heading, "%s, %s (cumulative)", what[w][1], workloads[wl]);
            fprintf(gp, "set output ");
            gp_str(gp, png);
            fprintf(gp, "\nset title ");
            gp_str(gp, heading);
            fprintf(gp, "\nset xlabel 'ms'\nset ylabel 'fraction'\nset logscale x\nplot ");
            int k = 0;
            for (size_t i = 0; i < n; i++) {
                const char *s = str(runs[i], "samples");
                if (strcmp(str(runs[i], "workload"), workloads[wl]) || !s[0] || !has_lines(dir, s, what[w][0]))
                    continue;
                char rate[32];
                rate_text(runs[i], " req/s", rate, sizeof rate);
                char file[600], title[600];
                snprintf(file, sizeof file, "%s.%s.tsv", s, what[w][0]);
                snprintf(title, sizeof title, "%s, %s", str(runs[i], "label"), rate);
                fprintf(gp, "%s", k ? ", \\\n     " : "");
                gp_str(gp, file);
                fprintf(gp, " using 1:2 with lines title ");
                gp_str(gp, title);
                k++;
            }
            fprintf(gp, "%s\nunset logscale x\n", k ? "" : "[1:10][0:1] 2 title 'no samples'");
        }
    /* output throughput per workload: a bar per label, its best run */
    snprintf(path, sizeof path, "%s/plots/workloads.dat", dir);
    FILE *f = fopen(path, "w");
    int n_labels = 0;
    const char *labels[16];
    if (f) {
        for (size_t i = 0; i < n && n_labels < 16; i++) {
            int seen = 0;
            for (int l = 0; l < n_labels; l++)
                seen |= !strcmp(labels[l], str(runs[i], "label"));
            if (!seen)
                labels[n_labels++] = str(runs[i], "label");
        }
        fprintf(f, "workload");
        for (int l = 0; l < n_labels; l++) {
            char slug[128];
            report_slug(slug, sizeof slug, labels[l][0] ? labels[l] : "-");
            fprintf(f, "\t%s", slug);
        }
        fprintf(f, "\n");
        memset(done, 0, n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            if (done[i])
                continue;
            fprintf(f, "%s", str(runs[i], "workload"));
            for (int l = 0; l < n_labels; l++) {
                double best = 0;
                for (size_t j = 0; j < n; j++)
                    if (!strcmp(str(runs[j], "workload"), str(runs[i], "workload")) &&
                        !strcmp(str(runs[j], "label"), labels[l])) {
                        done[j] = 1;
                        best = num(runs[j], "output_tok_s") > best ? num(runs[j], "output_tok_s") : best;
                    }
                fprintf(f, "\t%.3f", best);
            }
            fprintf(f, "\n");
        }
        fclose(f);
        fprintf(gp, "set output 'workloads.png'\nset title 'Output throughput per workload (best run)'\nset xlabel ''\n"
                    "set ylabel 'output tokens/s'\nset style data histograms\nset style histogram clustered\n"
                    "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset xtics rotate by -20\n"
                    "plot for [c=2:%d] 'plots/workloads.dat' using c:xtic(1) title columnheader(c)\n",
                n_labels + 1);
    }
    free(sorted);
    free(done);
    return fclose(gp) ? err_set(e, "--report: writing plots.gp failed") : 2 + 2 * n_workloads;
}

int report_render(const char *dir, struct err *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return err_set(e, "--report: cannot read %s: %s", path, strerror(errno));
    json_t **runs = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t line_cap = 0;
    while (getline(&line, &line_cap, in) > 0) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!json_is_object(o)) {
            json_decref(o);
            continue; /* not a summary line: skipped, not fatal */
        }
        if (n == cap)
            runs = xrealloc(runs, (cap = cap ? 2 * cap : 16) * sizeof *runs);
        runs[n++] = o;
    }
    free(line);
    fclose(in);
    int rc = write_plots(dir, runs, n, e);
    int drawn = 0;
    if (rc > 0) {
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "command -v gnuplot >/dev/null 2>&1 && cd '%s' && gnuplot plots.gp >plots.log 2>&1",
                 dir);
        drawn = strchr(dir, '\'') == NULL && system(cmd) == 0;
        rc = 0;
    }
    snprintf(path, sizeof path, "%s/report.md", dir);
    FILE *md = rc ? NULL : fopen(path, "w");
    if (!rc && !md)
        rc = err_set(e, "--report: cannot write %s: %s", path, strerror(errno));
    if (md) {
        char when[64];
        const time_t now = time(NULL);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
        fprintf(md, "# infer bench-serve report\n\n%zu runs from results.jsonl, written %s. Each row is one run of "
                    "`infer bench-serve`: a workload against the server at a request rate; the label names the "
                    "server's configuration as the run was told it. Latencies are client-side (TTFT: send to the "
                    "first chunk with text; ITL: between chunks with text; TPOT: (last chunk - first) / (output "
                    "tokens - 1); E2E: send to the stream's end); server columns come from its /metrics, read "
                    "before and after the run.\n\n",
                n, when);
        write_table(md, runs, n);
        if (drawn) {
            fprintf(md, "\n![latency against throughput](latency_throughput.png)\n\n"
                        "![throughput per workload](workloads.png)\n");
            const char *workloads[MAX_WORKLOADS];
            const int n_workloads = distinct_workloads(runs, n, workloads);
            for (int w = 0; w < n_workloads; w++) {
                char ttft[200], itl[200];
                cdf_png(ttft, sizeof ttft, "ttft", workloads[w]);
                cdf_png(itl, sizeof itl, "itl", workloads[w]);
                fprintf(md, "\n![TTFT, %s](%s) ![ITL, %s](%s)\n", workloads[w], ttft, workloads[w], itl);
            }
        } else
            fprintf(md, "\nPlots not drawn: gnuplot is missing or failed (plots.log says which; `apt-get install "
                        "gnuplot-nox`, then `cd DIR && gnuplot plots.gp`).\n");
        if (fclose(md))
            rc = err_set(e, "--report: writing %s failed", path);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(runs[i]);
    free(runs);
    return rc;
}
