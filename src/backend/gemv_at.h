/* INFER_GEMV_AT, the CUDA backend's A/B switch that forces the one-row GEMV
 * variant of named weight shapes (docs/testing.md): parsed here, in plain C,
 * so that the CPU tests check its refusals; cuda_gemm.c reads it when a CUDA
 * backend is created and applies it. */
#ifndef INFER_BACKEND_GEMV_AT_H
#define INFER_BACKEND_GEMV_AT_H

#include <stdint.h>

#include "core/error.h"

#define GEMV_AT_MAX 16

/* One entry N:K:T:U:H — the N x K weights (gated gate|up: N = 2F) take tiles
 * T (1|2), unroll U (2|4) and the prefetch hint H (0|1). */
struct gemv_at {
    int64_t n, k;
    int tiles, unroll, l2_hint;
};

/* Parses a comma-separated list of entries into out[GEMV_AT_MAX]: the
 * count (0 for NULL or ""), or -1 with an error naming INFER_GEMV_AT and
 * the entry that is not N:K:T:U:H with those values, or the list too long. */
int gemv_at_parse(const char *s, struct gemv_at *out, struct err *e);

#endif
