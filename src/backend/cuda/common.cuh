// Device helpers shared by the kernels: bf16 conversion, programmatic
// dependent launch (the device side and the launch), warp and block reductions.
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ float to_f32(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ bf16 to_bf16(float x) { return __float2bfloat16(x); }
// Rounds through bf16, as a bf16 model's intermediate tensors do.
__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

// Programmatic dependent launch (PDL): a kernel launched with launch_pdl (or
// launch_kernel_ex with pdl) may start while the previous kernel on the
// stream finishes; it must call pdl_wait() before touching memory that kernel
// wrote (before it, only memory no kernel writes, such as weights), and calls
// pdl_launch_dependents() to let the next kernel start early in turn (which
// is safe: that kernel waits for this one's memory the same way).
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;"); }

// Launches kernel with, as asked, programmatic dependent launch (pdl) and
// thread-block clusters of cluster_x blocks along x
// (cluster_x > 1).
template <typename... Params, typename... Args>
static cudaError_t launch_kernel_ex(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                    cudaStream_t stream, int cluster_x, int pdl, Args... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (cluster_x > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = (unsigned)cluster_x;
        attr[n].val.clusterDim.y = 1;
        attr[n].val.clusterDim.z = 1;
        n++;
    }
    if (pdl) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n].val.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    cfg.attrs = attr;
    cfg.numAttrs = n;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
}

// Launches kernel with PDL (launch_kernel_ex without clusters).
template <typename... Params, typename... Args>
static cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                              Args... args)
{
    return launch_kernel_ex(kernel, grid, block, smem, stream, 1, 1, args...);
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. Uses 33 floats of shared memory.
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float partial[33];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads(); // partial may still be read by a previous call
    if (lane == 0)
        partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.f;
        t = warp_sum(t);
        if (lane == 0)
            partial[32] = t;
    }
    __syncthreads();
    return partial[32];
}
