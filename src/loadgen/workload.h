/* The named workloads of `infer bench-serve` (the seed plan's, and a
 * ShareGPT-like length mix), each defined in workload.c in one place: how
 * prompt and output lengths are drawn, whether prompts share prefixes, and
 * how requests arrive. Prompts are token ids drawn at random, so a length
 * is exact on any server. */
#ifndef INFER_LOADGEN_WORKLOAD_H
#define INFER_LOADGEN_WORKLOAD_H

#include <stdint.h>

#include "core/error.h"
#include "loadgen/loadgen.h"

struct workload_opts {
    const char *name;
    int num_prompts;      /* 0: the workload's own count */
    double request_rate;  /* requests per second, Poisson arrivals; 0: all at once */
    uint64_t seed;        /* the lengths, arrivals and token ids */
    uint64_t variant;     /* another variant of one seed: the same lengths and arrivals, other token ids
                           * (a sweep's rates: alike, yet none finds another's prompts in a prefix cache) */
    int vocab;            /* ids are drawn from [1, vocab) */
    int max_context;      /* prompt + output tokens at most (lengths are scaled down to fit); 0: no cap */
};

struct workload {
    const char *name;
    struct lg_request *req;
    int n;
    int max_concurrency;  /* the workload's own limit (baseline: 1), 0: none */
};

/* The names, NULL-terminated, and a line on each for --help. */
extern const char *const workload_names[];
const char *workload_describe(const char *name);

int workload_make(struct workload *w, const struct workload_opts *o, struct err *e);
void workload_free(struct workload *w);

#endif
