// Element type conversion to bf16 on the device: checkpoints stored in f32 or
// f16 are uploaded as they are and converted in place of a host pass.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/dtype.h"

template <typename T> __device__ float to_float(T x);
template <> __device__ float to_float<float>(float x) { return x; }
template <> __device__ float to_float<__half>(__half x) { return __half2float(x); }

template <typename T>
__global__ void convert_to_bf16_kernel(__nv_bfloat16 *dst, const T *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16(to_float(src[i]));
}

extern "C" cudaError_t cuda_convert_to_bf16(void *dst, const void *src, enum dtype dtype, size_t n,
                                            cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    unsigned blocks = (unsigned)((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535);
    if (dtype == DTYPE_F32)
        convert_to_bf16_kernel<<<blocks, 256, 0, stream>>>((__nv_bfloat16 *)dst, (const float *)src, n);
    else if (dtype == DTYPE_F16)
        convert_to_bf16_kernel<<<blocks, 256, 0, stream>>>((__nv_bfloat16 *)dst, (const __half *)src, n);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
