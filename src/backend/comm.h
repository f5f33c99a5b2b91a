/* The collectives a backend runs when a model is split over ranks (tensor
 * parallelism): the interface only. src/dist makes communicators (the CPU
 * one for tests over shared memory; NCCL and CUDA IPC on GPUs) and hands one
 * to the backend (be->comm); the forward pass reaches them through the
 * backend's all_reduce and gather_cols ops. A collective never fails
 * quietly: a peer that died ends the process (the dist watchdog). */
#ifndef INFER_BACKEND_COMM_H
#define INFER_BACKEND_COMM_H

#include <stddef.h>

#include "core/dtype.h"

struct comm;

struct comm_ops {
    /* buf (n elements of dt, in the backend's memory) := its sum over the
     * ranks, the same bits on every rank; queued on stream (NULL on the
     * CPU), so a graph can capture it. */
    void (*all_reduce)(struct comm *c, void *buf, size_t n, enum dtype dt, void *stream);
    /* Rank 0's out[rows, cols * size] := every rank's in[rows, cols] (f32)
     * side by side in rank order; the other ranks' out is not written. */
    void (*gather_cols)(struct comm *c, float *out, const float *in, int rows, int cols, void *stream);
    void (*destroy)(struct comm *c);
};

struct comm {
    const struct comm_ops *ops;
    int rank, size;
    void *impl;
};

#endif
