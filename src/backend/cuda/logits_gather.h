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
 * denormal logit as -0.0); rank 0's own columns are copied as they are.
 * Records go as two vectors each, every 16 bits of them in a word of its
 * own under a tag bit (never AR_EMPTY), so they arrive bit for bit.
 *
 * The columns are optional a call (a word the step's metadata holds): a
 * split model's sampler needs only each row's span statistics (the
 * records) when every row draws plain greedy tokens, and the columns,
 * rows x vocabulary floats, are most of the bytes. */
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
enum { GATHER_LANDING_BYTES = 64 << 20, GATHER_MAX_BLOCKS = 1024 };

/* Each rank's sync words (zeroed before the first call, in memory its
 * peers map). */
struct gather_sync {
    uint32_t done;        /* a peer: calls rank 0 has finished placing (rank 0 writes it) */
    uint32_t blocks_done; /* rank 0: blocks of its current call that have finished */
    uint32_t calls;       /* rank 0: its calls */
    uint32_t pad;
    uint32_t epoch[GATHER_MAX_BLOCKS]; /* a peer: its calls, counted by every block */
};

/* One rank's view: every rank's sync words and rank 0's landing, as mapped here. */
struct gather_group {
    struct gather_sync *sync[AR_MAX_RANKS];
    float *landing;
    int rank, size;
};

/* What moves besides the columns: each row's `recs` records of 16 bytes
 * (any bits; the sampler's span statistics), rank r's at recs + row *
 * stride + [0, n) where it pushes from, and at out + row * stride + r * n
 * on rank 0 (rank 0's own are left where they are). */
struct gather_records {
    void *at;   /* NULL: none */
    int stride; /* records from one row to the next */
    int n;      /* records a row a rank */
};

/* Whether a gather of rows x cols floats and recs records a row a rank
 * over size ranks fits a landing of landing_bytes and the kernels' 16-byte
 * vectors. */
int gather_fits(int size, int rows, int cols, int recs, size_t landing_bytes);

/* A peer (rank >= 1): its records, and its in[rows, cols] unless
 * *want_cols (device memory; NULL: always) is 0, into its part of rank 0's
 * landing. */
cudaError_t launch_gather_push(const struct gather_group *g, const float *in, struct gather_records recs,
                           const int32_t *want_cols, int rows, int cols, cudaStream_t stream);

/* Rank 0: the peers' records into recs, and out[rows, size * cols] :=
 * rank r's rows in columns [r * cols, (r + 1) * cols) unless *want_cols is
 * 0 (then out is not written): its own from in, the others' from the
 * landing once there, which is left empty again. Every peer decides the
 * same from the same word (the step's metadata). */
cudaError_t launch_gather_place(const struct gather_group *g, float *out, const float *in, struct gather_records recs,
                            const int32_t *want_cols, int rows, int cols, cudaStream_t stream);

/* Loads both kernels now (ar_load_kernels says why). */
cudaError_t gather_load_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
