/* The all-reduce kernels of a model split over GPUs of one host
 * (cuda_comm.c): every rank writes its partial sums (bf16 or f32) into its
 * slot of each rank's CUDA IPC buffer (peers map each other's), and each
 * rank adds the N slots of its own buffer in rank order in fp32. The result
 * is the same bits on every rank and for every message size, so a step's
 * sums do not depend on the batch they are in (which NCCL's ring, whose
 * order follows the chunking, does not give).
 * A call takes one kernel and no host work: graphs capture it. */
#ifndef INFER_BACKEND_CUDA_ALLREDUCE_H
#define INFER_BACKEND_CUDA_ALLREDUCE_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A call launches as many blocks of AR_THREADS as its 16-byte vectors need
 * (one each), at most AR_BLOCKS (each thread then takes several). */
enum { AR_MAX_RANKS = 8, AR_BLOCKS = 256, AR_THREADS = 512 };

/* Every 32-bit word of an empty slot (allreduce.cu says why a slot is empty
 * when a peer writes it): as bf16, two -0.0; as f32, a negative denormal. */
#define AR_EMPTY 0x80008000u

/* Lives at the start of each rank's IPC buffer: epoch[block] counts this
 * rank's calls (every call counts in every block, launched or not). */
struct ar_signal {
    uint32_t epoch[AR_BLOCKS];
};

/* One rank's view of the group: every rank's IPC buffer (its own included),
 * mapped into this process. A buffer is a struct ar_signal, then two halves
 * of half_bytes for the data, each a slot per rank (half_bytes / size,
 * rounded down to 16): consecutive calls alternate halves, so a call never
 * overwrites what a slower peer may still be reading. Messages larger than
 * a slot go in slot-sized calls. A peer's data is known to be there when no
 * word of it is AR_EMPTY, so the halves start empty (ar_buffer_init) and
 * every call empties what it read. */
struct ar_group {
    char *buf[AR_MAX_RANKS];
    int rank, size;
    size_t half_bytes;
};

/* Bytes of an IPC buffer with halves of half_bytes. */
size_t ar_buffer_bytes(size_t half_bytes);

/* Makes buf (ar_buffer_bytes(half_bytes)) a fresh buffer: no calls counted,
 * every slot empty. Every rank's must be done before any rank's first call. */
cudaError_t ar_buffer_init(void *buf, size_t half_bytes, cudaStream_t stream);

/* Every 32-bit word of p[bytes] (bytes % 4 == 0) := AR_EMPTY. */
cudaError_t ar_fill_empty(void *p, size_t bytes, cudaStream_t stream);

/* Loads the kernels below now. A kernel's first launch otherwise loads it
 * (CUDA's lazy loading), which waits for the device's running kernels: one
 * that polls for the data of a rank whose launch sits behind the load would
 * never end. */
cudaError_t ar_load_kernels(void);

/* out[i] := sum over ranks r (in rank order, fp32) of rank r's in[i], for n
 * bf16 elements; out may equal in (16-byte aligned). Every rank of the group
 * must make the same calls in the same order. A zero may come out with the
 * other sign than the exact sum's (allreduce.cu: data that looks empty is
 * sent as -0.0); every rank gets the same bits. */
cudaError_t launch_ar_one_shot(const struct ar_group *g, void *out, const void *in, size_t n, cudaStream_t stream);
/* The same for f32 elements (no rounding). */
cudaError_t launch_ar_one_shot_f32(const struct ar_group *g, float *out, const float *in, size_t n,
                                   cudaStream_t stream);

/* The same sums (the same bits) in two rounds for large messages: each
 * rank sums a 1/N slice in rank order and sends it to the others, so each
 * rank sends 2 (N - 1) / N of the message instead of N - 1 copies. Needs
 * whole 16-byte vectors, at least N * N of them (ar_two_shot_fits). */
int ar_two_shot_fits(const struct ar_group *g, size_t n, size_t elem_bytes);
cudaError_t launch_ar_two_shot(const struct ar_group *g, void *out, const void *in, size_t n, cudaStream_t stream);
cudaError_t launch_ar_two_shot_f32(const struct ar_group *g, float *out, const float *in, size_t n,
                                   cudaStream_t stream);

/* out[i] := sum over r < size (in rank order, fp32) of parts[r * n + i]: the
 * local half of an all-reduce done as an all-gather (several machines). */
cudaError_t launch_ar_sum_parts(void *out, const void *parts, int size, size_t n, cudaStream_t stream);
cudaError_t launch_ar_sum_parts_f32(float *out, const float *parts, int size, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
