/* A run's summary as one JSON line: what bench-serve prints and what its
 * report (report.h) reads back. */
#ifndef INFER_LOADGEN_SUMMARY_JSON_H
#define INFER_LOADGEN_SUMMARY_JSON_H

#include <stdio.h>

#include "loadgen/scrape.h"
#include "loadgen/stats.h"

struct run_info {
    const char *label;     /* the server configuration, as the user names it ("" if none) */
    const char *workload;
    const char *url;
    double rate;           /* requests per second; 0: all at once */
    int max_concurrency;   /* 0: no limit */
    const char *samples;   /* the file of this run's TTFT / ITL samples, relative to the report folder, or NULL */
};

/* One line (ends with '\n'); before / after NULL: the server has no /metrics. */
void summary_json_write(FILE *f, const struct run_info *run, const struct lg_summary *s, const struct scrape *before,
                        const struct scrape *after);

#endif
