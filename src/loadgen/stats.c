/* Summaries of a run (stats.h). */
#include "loadgen/stats.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void lg_sort(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }

double lg_percentile(double *v, int n, double p)
{
    if (n <= 0)
        return 0;
    lg_sort(v, (size_t)n);
    const double at = p / 100.0 * (n - 1);
    const int lo = (int)at;
    const double f = at - lo;
    return lo + 1 < n ? v[lo] + f * (v[lo + 1] - v[lo]) : v[n - 1];
}

static void dist(double *v, int n, struct lg_dist *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (!n)
        return;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    d->mean = sum / n;
    d->p50 = lg_percentile(v, n, 50);
    d->p90 = lg_percentile(v, n, 90);
    d->p99 = lg_percentile(v, n, 99);
    d->max = v[n - 1];
}

void lg_latency_samples(const struct lg_record *rec, int n, double **ttft, int *n_ttft, double **itl, int *n_itl)
{
    size_t gaps = 0;
    for (int i = 0; i < n; i++)
        gaps += rec[i].failure == LG_OK && rec[i].n_chunks > 1 ? (size_t)rec[i].n_chunks - 1 : 0;
    *ttft = xmalloc((size_t)(n ? n : 1) * sizeof(double));
    *itl = xmalloc((gaps ? gaps : 1) * sizeof(double));
    *n_ttft = *n_itl = 0;
    for (int i = 0; i < n; i++) {
        const struct lg_record *r = &rec[i];
        if (r->failure != LG_OK || !r->n_chunks)
            continue;
        (*ttft)[(*n_ttft)++] = r->first - r->sent;
        for (int c = 1; c < r->n_chunks; c++)
            (*itl)[(*n_itl)++] = r->chunk_at[c] - r->chunk_at[c - 1];
    }
}

void lg_summarize(const struct lg_record *rec, int n, double slo_ttft, double slo_tpot, struct lg_summary *s)
{
    memset(s, 0, sizeof *s);
    s->requests = n;
    s->slo_ttft = slo_ttft;
    s->slo_tpot = slo_tpot;
    double *ttft, *itl;
    int n_ttft, n_itl;
    lg_latency_samples(rec, n, &ttft, &n_ttft, &itl, &n_itl);
    double *tpot = xmalloc((size_t)(n ? n : 1) * sizeof(double)), *e2e = xmalloc((size_t)(n ? n : 1) * sizeof(double));
    int n_tpot = 0, n_e2e = 0;
    double start = 0, end = 0;
    for (int i = 0; i < n; i++) {
        const struct lg_record *r = &rec[i];
        s->failures[r->failure]++;
        if (i == 0 || r->sent < start)
            start = r->sent;
        if (r->end > end)
            end = r->end;
        if (r->failure != LG_OK)
            continue;
        s->completed++;
        s->prompt_tokens += r->prompt_tokens;
        s->output_tokens += r->completion_tokens;
        s->chunks += r->n_chunks;
        e2e[n_e2e++] = r->end - r->sent;
        double this_tpot = 0;
        if (r->completion_tokens > 1 && r->n_chunks > 1) {
            this_tpot = (r->chunk_at[r->n_chunks - 1] - r->first) / (r->completion_tokens - 1);
            tpot[n_tpot++] = this_tpot;
        }
        if ((!slo_ttft || (r->n_chunks && r->first - r->sent <= slo_ttft)) && (!slo_tpot || this_tpot <= slo_tpot))
            s->good++;
    }
    s->failed = n - s->completed;
    s->duration = end > start ? end - start : 0;
    if (s->duration > 0) {
        s->request_rate = s->completed / s->duration;
        s->output_tok_s = (double)s->output_tokens / s->duration;
        s->total_tok_s = (double)(s->output_tokens + s->prompt_tokens) / s->duration;
        s->chunks_per_s = (double)s->chunks / s->duration;
        s->goodput = s->good / s->duration;
    }
    dist(ttft, n_ttft, &s->ttft);
    dist(itl, n_itl, &s->itl);
    dist(tpot, n_tpot, &s->tpot);
    dist(e2e, n_e2e, &s->e2e);
    free(ttft), free(tpot), free(e2e), free(itl);
}
