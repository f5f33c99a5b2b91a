/* bench-serve's report folder: results.jsonl (one summary line per run,
 * appended by every invocation), samples/ (each run's TTFT and ITL samples
 * as cumulative distributions), report.md (a table of every run) and PNG
 * plots drawn by gnuplot (plots.gp kept beside them): latency against
 * throughput per label and workload (a request-rate sweep draws a curve),
 * TTFT and ITL distributions, output throughput per workload. */
#ifndef INFER_LOADGEN_REPORT_H
#define INFER_LOADGEN_REPORT_H

#include "core/error.h"
#include "loadgen/loadgen.h"

/* A file name part made of name's [A-Za-z0-9.-] (others become '_'). */
void report_slug(char *out, size_t size, const char *name);

/* DIR/samples/NAME.ttft.tsv and NAME.itl.tsv: "ms<TAB>fraction" lines,
 * sorted, for the completed requests of rec[0..n). */
int report_write_samples(const char *dir, const char *name, const struct lg_record *rec, int n, struct err *e);

/* Reads DIR/results.jsonl and writes DIR/report.md and the plots; the
 * plots are skipped, and the report says so, where gnuplot is missing. */
int report_render(const char *dir, struct err *e);

#endif
