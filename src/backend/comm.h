/* The collectives a backend runs when a model is split over ranks (tensor
 * parallelism): the interface only. src/parallel makes communicators (the CPU
 * one for tests over shared memory; NCCL and CUDA IPC on GPUs) and hands one
 * to the backend (be->comm); the forward pass reaches them through the
 * backend's all_reduce and gather_cols ops. A collective never fails
 * quietly: a peer that died ends the process (the group's watchdog, parallel/group.h). */
#ifndef INFER_BACKEND_COMM_H
#define INFER_BACKEND_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

struct comm;

/* What moves with a gather besides the columns: each row's n records of 16
 * bytes (any bits: a sampler's statistics of the row), rank r's at at +
 * row * stride + [0, n) where it sends from, and at at + row * stride +
 * r * n on rank 0 (rank 0's own are left where they are). */
struct comm_records {
    void *at;
    int stride; /* records from one row to the next */
    int n;      /* records a row a rank */
};

struct comm_ops {
    /* buf (n elements of dt, in the backend's memory) := its sum over the
     * ranks, the same bits on every rank; queued on stream (NULL on the
     * CPU), so a graph can capture it. */
    void (*all_reduce)(struct comm *c, void *buf, size_t n, enum dtype dt, void *stream);
    /* Rank 0's out[rows, cols * size] := every rank's in[rows, cols] (f32)
     * side by side in rank order; the other ranks' out is not written. */
    void (*gather_cols)(struct comm *c, float *out, const float *in, int rows, int cols, void *stream);
    /* Optional (NULL, or records_fit 0: gather_cols alone): gather_cols
     * with each row's records (device memory, struct comm_records), the
     * columns only where *want_cols (device memory, the step's metadata) is
     * not 0, in one exchange. */
    int (*records_fit)(struct comm *c, int rows, int cols, int n_recs);
    void (*gather_records)(struct comm *c, float *out, const float *in, struct comm_records recs,
                           const int32_t *want_cols, int rows, int cols, void *stream);
    void (*free)(struct comm *c);
};

struct comm {
    const struct comm_ops *ops;
    int rank, size;
    void *impl;
};

#endif
