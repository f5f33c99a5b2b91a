/* The server's Prometheus /metrics, read before and after a run (GET over
 * one blocking connection): each metric's value summed over its labels, so
 * a run can report what the server counted (tokens, prefix-cache hits,
 * graph replays) beside what the streams showed. Any server's names. */
#ifndef INFER_LOADGEN_SCRAPE_H
#define INFER_LOADGEN_SCRAPE_H

#include "core/error.h"
#include "loadgen/loadgen.h"

struct scrape {
    int n;
    char **names;
    double *values;
};

/* 0, or -1 with e set (no answer, not 200, or not the text format). */
int scrape_metrics(const struct lg_target *t, struct scrape *s, struct err *e);
/* Parses the text exposition format (exposed for tests). */
void scrape_parse(struct scrape *s, const char *text);
/* The value of name (summed over labels); found says whether it was there. */
double scrape_get(const struct scrape *s, const char *name, int *found);
void scrape_free(struct scrape *s);

#endif
