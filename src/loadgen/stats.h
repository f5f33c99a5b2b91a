/* What a run of the load generator measured: throughput, latency
 * percentiles (TTFT, ITL, TPOT, end to end), failures by kind, goodput
 * under an SLO. */
#ifndef INFER_LOADGEN_STATS_H
#define INFER_LOADGEN_STATS_H

#include <stddef.h>

#include "loadgen/loadgen.h"

struct lg_dist {
    int n;
    double mean, p50, p90, p99, max; /* seconds */
};

struct lg_summary {
    int requests, completed, failed;
    int failures[LG_N_FAILURES];
    double duration;                   /* first send to last end, seconds */
    long long prompt_tokens, output_tokens; /* of completed requests, from their usage */
    long long chunks;                  /* chunks with text, of completed requests */
    double request_rate, output_tok_s, total_tok_s, chunks_per_s;
    struct lg_dist ttft, itl, tpot, e2e;
    double slo_ttft, slo_tpot;         /* seconds; 0: not set */
    int good;                          /* completed requests within the SLO */
    double goodput;                    /* good requests per second */
};

/* Sorts v[0..n) ascending. */
void lg_sort(double *v, size_t n);

/* p in [0, 100] of v[0..n) (sorted in place), linearly interpolated. */
double lg_percentile(double *v, int n, double p);

/* The completed requests' latency samples, seconds, in request order (free
 * both): TTFT of each that had text, every gap between chunks with text. */
void lg_latency_samples(const struct lg_record *rec, int n, double **ttft, int *n_ttft, double **itl, int *n_itl);

void lg_summarize(const struct lg_record *rec, int n, double slo_ttft, double slo_tpot, struct lg_summary *s);

#endif
