/* The logits' gather of a model split over the GPUs of one host, over CUDA
 * IPC (cuda_comm.c picks it where it fits, NCCL otherwise): each rank's LM
 * head leaves rows x cols logits of its vocabulary shard; rank 0 needs them
 * side by side, [rows, size * cols]. Every other rank pushes its shard into
 * its part of rank 0's landing space (mapped by the peers like the
 * all-reduce's buffers), Lamport style (lamport.cuh): rank 0's kernel polls
 * each word until it is no longer AR_EMPTY, places it, and empties it again.
 * One crossing of the link and one kernel a rank, where NCCL's send and
 * receive went through a staging buffer and a copy per rank.
 *
 * Why the landing is empty when a peer pushes into it: the last block of
 * rank 0's placing kernel to finish counts the call done in every peer's
 * sync words, and a peer's push of call k waits until rank 0 has counted
 * call k - 1 (back-to-back gathers, as a capture's warm-ups make, are safe).
 * A pushed word that looks like AR_EMPTY arrives as 0x80000000 (a negative
 * denormal logit as -0.0); rank 0's own columns are copied as they are. */
#ifndef INFER_BACKEND_CUDA_LOGITS_GATHER_H
#define INFER_BACKEND_CUDA_LOGITS_GATHER_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cuda/allreduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rank 0's landing space: a batch-64 gather of Gemma-3's 262144-entry
 * vocabulary over 4 ranks (48 MiB) fits. */
enum { LG_LANDING_BYTES = 64 << 20, LG_MAX_BLOCKS = 1024 };

/* Each rank's sync words (zeroed before the first call, in memory its
 * peers map). */
struct lg_sync {
    uint32_t done;        /* a peer: calls rank 0 has finished placing (rank 0 writes it) */
    uint32_t blocks_done; /* rank 0: blocks of its current call that have finished */
    uint32_t calls;       /* rank 0: its calls */
    uint32_t pad;
    uint32_t epoch[LG_MAX_BLOCKS]; /* a peer: its calls, counted by every block */
};

/* One rank's view: every rank's sync words and rank 0's landing, as mapped here. */
struct lg_group {
    struct lg_sync *sync[AR_MAX_RANKS];
    float *landing;
    int rank, size;
};

/* Whether a gather of rows x cols floats a rank over size ranks fits a
 * landing of landing_bytes and the kernels' 16-byte vectors. */
int lg_fits(int size, int rows, int cols, size_t landing_bytes);

/* A peer (rank >= 1): its in[rows, cols] into its part of rank 0's landing. */
cudaError_t launch_lg_push(const struct lg_group *g, const float *in, int rows, int cols,
                           cudaStream_t stream);

/* Rank 0: out[rows, size * cols] := rank r's rows in columns [r * cols,
 * (r + 1) * cols): its own from in, the others' from the landing once there,
 * which is left empty again. */
cudaError_t launch_lg_place(const struct lg_group *g, float *out, const float *in, int rows, int cols,
                            cudaStream_t stream);

/* Loads both kernels now (ar_load_kernels says why). */
cudaError_t lg_load_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
