/* The GPU communicator of a split model (backend/comm.h): NCCL for what
 * crosses machines, and one- and two-shot all-reduces and the logits'
 * gather over CUDA IPC buffers between the GPUs of one host (the kernels:
 * backend/cuda/allreduce.h, logits_gather.h).
 *
 * NCCL is loaded when a group is made (dlopen of libnccl.so.2), so a CUDA
 * build runs on one GPU where NCCL is not installed.
 *
 * Which all-reduce a message takes (docs/dist.md): on one host, IPC up to
 * the tuning's one-shot size (parallel/tuning.h) and NCCL above; with
 * --batch-invariant, IPC for every size (in buffer-sized pieces), since its
 * sums are in rank order whatever the message size. Across hosts NCCL, or
 * with --batch-invariant an all-gather and a rank-order sum. The tuning's
 * NCCL-only setting takes NCCL for every sum and the gather. */
#ifndef INFER_PARALLEL_CUDA_COMM_CUDA_H
#define INFER_PARALLEL_CUDA_COMM_CUDA_H

#include <stddef.h>

#include "backend/comm.h"
#include "backend/ops.h"
#include "core/error.h"
#include "parallel/tuning.h"

enum { CUDA_COMM_MAX_RANKS = 8 }; /* the one-shot all-reduce's limit */

/* Rank 0: a new NCCL unique id, as text to send to the other ranks. */
int cuda_comm_unique_id(char *out, size_t size, struct err *e);

/* Joins the group named by id (cuda_comm_unique_id's text) as rank of size,
 * on be's device; every rank calls it at about the same time (it blocks
 * until all have), with the same tuning. ranks_per_host ranks share each
 * host (IPC needs 2 or more on one). NULL with e set on failure. */
struct comm *cuda_comm_create(struct backend *be, const char *id, int rank, int size, int ranks_per_host,
                              const struct parallel_tuning *tuning, struct err *e);

#endif
