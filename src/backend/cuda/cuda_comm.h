/* The GPU communicator of a split model (backend/comm.h): NCCL for what
 * crosses machines and for gathering the logits, and a one-shot all-reduce
 * over CUDA IPC buffers (allreduce.h) between the GPUs of one host.
 *
 * NCCL is loaded when a group is made (dlopen of libnccl.so.2), so a CUDA
 * build runs on one GPU where NCCL is not installed.
 *
 * Which all-reduce a message takes (docs/dist.md): on one host, IPC up to
 * INFER_AR_ONE_SHOT_MAX bytes (default below) and NCCL above; with
 * --batch-invariant, IPC for every size (in buffer-sized pieces), since its
 * sums are in rank order whatever the message size. Across hosts NCCL, or
 * with --batch-invariant an all-gather and a rank-order sum.
 * INFER_ALLREDUCE=ipc|nccl|gather|off forces one for measurements (off
 * skips the sums: wrong results, for timing the rest of a step);
 * INFER_AR_FOLD=1 folds the residual add and norm into the one-shot
 * kernel (the same bits, a kernel fewer, but slower: off by default). */
#ifndef INFER_BACKEND_CUDA_COMM_H
#define INFER_BACKEND_CUDA_COMM_H

#include <stddef.h>

#include "backend/comm.h"
#include "backend/cuda/logits_gather.h"
#include "backend/ops.h"
#include "core/error.h"

enum { CUDA_COMM_MAX_RANKS = 8 }; /* the one-shot all-reduce's limit */

/* Rank 0: a new NCCL unique id, as text to send to the other ranks. */
int cuda_comm_unique_id(char *out, size_t size, struct err *e);

/* Joins the group named by id (cuda_comm_unique_id's text) as rank of size,
 * on be's device; every rank calls it at about the same time (it blocks
 * until all have). ranks_per_host ranks share each host (IPC needs 2 or
 * more on one). NULL with e set on failure. */
struct comm *cuda_comm_create(struct backend *be, const char *id, int rank, int size, int ranks_per_host,
                              struct err *e);

/* The all-reduce of f32 partial[rows, d] folded into the residual
 * (launch_ar_fold) when a message of that size takes the one-shot path:
 * 1 when done; 0 when it does not, and the caller all-reduces and folds. */
int cuda_comm_all_reduce_fold(struct comm *c, void *residual, const float *partial, const void *w_delta, void *out,
                              const void *w, int rows, int d, float eps, int plus_one, void *stream);

/* Whether the logits' gather of rows x cols floats a rank goes over CUDA
 * IPC with recs records a row a rank (logits_gather.h): then
 * cuda_comm_gather_logits moves the records, and the columns only where
 * *want_cols (device memory) is not 0. Otherwise the caller gathers the
 * columns (comm_ops.gather_cols: NCCL between hosts, or past the landing). */
int cuda_comm_gathers_records(struct comm *c, int rows, int cols, int recs);
void cuda_comm_gather_logits(struct comm *c, float *out, const float *in, struct lg_records recs,
                             const int32_t *want_cols, int rows, int cols, void *stream);

#endif
