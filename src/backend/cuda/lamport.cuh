// Words that are their own signal (the Lamport scheme of TensorRT-LLM's
// low-latency all-reduce): a receiving buffer holds AR_EMPTY in every 32-bit
// word until a peer's data lands there, so the receiver polls the words it
// reads until none is AR_EMPTY and writes AR_EMPTY back for the next use.
// A sender's word that looks like AR_EMPTY goes out as 0x80000000 (for f32,
// -0.0 for a negative denormal; for bf16 pairs, +0.0 for the first -0.0).
// Used by the all-reduce (allreduce.cu) and the logits' gather
// (logits_gather.cu), which also count their calls alike (count_call).
#ifndef INFER_BACKEND_CUDA_LAMPORT_CUH
#define INFER_BACKEND_CUDA_LAMPORT_CUH

#include <stdint.h>

#include "backend/cuda/allreduce.h"

__device__ __forceinline__ uint32_t push_word(uint32_t w) { return w == AR_EMPTY ? 0x80000000u : w; }
__device__ __forceinline__ uint4 push_word(uint4 v)
{
    return make_uint4(push_word(v.x), push_word(v.y), push_word(v.z), push_word(v.w));
}
__device__ __forceinline__ bool arrived(uint4 v)
{
    return v.x != AR_EMPTY && v.y != AR_EMPTY && v.z != AR_EMPTY && v.w != AR_EMPTY;
}

// One poll of a slot's vector (volatile: each reads L2, where the peer's
// stores land).
__device__ __forceinline__ uint4 await_first(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

// A peer's vector at p once there (v: a poll already made), its slot
// emptied for the next use.
__device__ __forceinline__ uint4 take_vec(uint4 *p, uint4 v)
{
    while (!arrived(v))
        v = await_first(p);
    *p = make_uint4(AR_EMPTY, AR_EMPTY, AR_EMPTY, AR_EMPTY);
    return v;
}

// Counts a call in epoch[n_blocks], a counter per block of the largest grid:
// this block's own, and (block 0) those of the blocks this call does not
// launch, so every block's count stays the same whatever the grid. Thread 0
// gets the call's number, the others 0.
__device__ __forceinline__ uint32_t count_call(uint32_t *epoch, unsigned n_blocks)
{
    if (blockIdx.x == 0)
        for (unsigned b = gridDim.x + threadIdx.x; b < n_blocks; b += blockDim.x)
            epoch[b]++;
    return threadIdx.x == 0 ? ++epoch[blockIdx.x] : 0;
}

#endif
