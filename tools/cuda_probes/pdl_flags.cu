// What one kernel boundary of a decode step costs when the next kernel
// waits for its predecessor with `griddepcontrol.wait` (PDL, as the
// engine's kernels do), against waiting on a counter the predecessor's
// blocks bump with a release as they finish (the next kernel launched
// early by PDL all the same), and against plain launches. A decode layer is
// ~7 kernels, so this bounds what fusing kernels or a persistent kernel can
// save (docs/kernels/persistent-decode.md, docs/graphs.md).
//
// A chain of NK kernels in one CUDA graph; each has G blocks of 128 threads;
// every block reads the whole input vector (as a GEMV does), streams its
// share of BYTES of "weights" (read after the wait, first chunk before it),
// and writes its slice of the output vector, which the next kernel reads.
// The chain's result is the same in every mode (checked).
//
// Build: make cuda-probes (build/cuda_probes/pdl_flags); run on the GPU machine.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                                      \
    do {                                                                                                           \
        cudaError_t e_ = (x);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                    \
            exit(1);                                                                                               \
        }                                                                                                          \
    } while (0)


enum { THREADS = 128, VEC = 2048 };
enum { MODE_PLAIN, MODE_WAIT, MODE_FLAG, MODE_FLAG_LATE, MODE_WAIT_EARLY };

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void red_release(unsigned *p)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p) : "memory");
}

__device__ __forceinline__ uint4 ld_stream(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Kernel k of the chain: in -> out. wait_on: the counter of kernel k-1
// (MODE_FLAG), its target the previous grid's block count; signal: kernel k's.
__global__ void __launch_bounds__(THREADS) link(const float *in, float *out, const uint4 *w, size_t w_per_block,
                                                int mode, const unsigned *wait_on, unsigned target, unsigned *signal)
{
    __shared__ float part[THREADS / 32];
    __shared__ float total;
    const uint4 *mine = w + (size_t)blockIdx.x * w_per_block;
    // the first weight chunk in flight before the wait, as the engine's GEMV does
    uint4 acc = {0, 0, 0, 0};
    uint4 first = threadIdx.x < w_per_block ? ld_stream(mine + threadIdx.x) : acc;
    if (mode == MODE_WAIT) {
        asm volatile("griddepcontrol.wait;" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;");
    } else if (mode == MODE_WAIT_EARLY) {
        asm volatile("griddepcontrol.launch_dependents;");
        asm volatile("griddepcontrol.wait;" ::: "memory");
    } else if (mode == MODE_FLAG || mode == MODE_FLAG_LATE) {
        if (mode == MODE_FLAG)
            asm volatile("griddepcontrol.launch_dependents;");
        if (wait_on) {
            if (threadIdx.x == 0)
                while (ld_acquire(wait_on) < target)
                    ;
            __syncthreads();
        }
        if (mode == MODE_FLAG_LATE)
            asm volatile("griddepcontrol.launch_dependents;");
    }
    acc.x ^= first.x;
    for (size_t i = THREADS + threadIdx.x; i < w_per_block; i += THREADS) {
        uint4 v = ld_stream(mine + i);
        acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
    }
    float s = 0.f;
    for (int i = threadIdx.x; i < VEC; i += THREADS)
        s += in[i];
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(~0u, s, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0)
        total = part[0] + part[1] + part[2] + part[3];
    __syncthreads();
    // weights' bits fold in as 0 unless they are a NaN pattern: keeps the loads live
    const float keep = (acc.x == 0x7fc00001u && acc.y == 1u && acc.z == 2u && acc.w == 3u) ? 1.f : 0.f;
    const int per = (VEC + gridDim.x - 1) / gridDim.x;
    for (int i = blockIdx.x * per + threadIdx.x; i < min(VEC, (int)(blockIdx.x + 1) * per); i += THREADS)
        out[i] = in[i] * 0.5f + total * (1.f / VEC) + keep;
    if (mode == MODE_FLAG || mode == MODE_FLAG_LATE) {
        __syncthreads();
        if (threadIdx.x == 0)
            red_release(signal);
    }
}

static void launch(cudaStream_t st, int mode, int grid, const float *in, float *out, const uint4 *w,
                   size_t w_per_block, const unsigned *wait_on, unsigned target, unsigned *signal)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(THREADS);
    cfg.stream = st;
    if (mode != MODE_PLAIN) {
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    CK(cudaLaunchKernelEx(&cfg, link, in, out, w, w_per_block, mode, wait_on, target, signal));
}

int main(int argc, char **argv)
{
    const int NK = argc > 1 ? atoi(argv[1]) : 256;
    const int grids[] = {132, 264, 528};
    const size_t bytes_list[] = {0, 2u << 20, 8u << 20};
    const size_t max_bytes = 8u << 20;
    // rotate over enough weight copies that L2 does not serve them
    const int copies = 64;
    uint4 *w;
    CK(cudaMalloc(&w, max_bytes * copies));
    CK(cudaMemset(w, 0, max_bytes * copies));
    float *buf[2], *init;
    CK(cudaMalloc(&init, VEC * sizeof(float)));
    CK(cudaMalloc(&buf[0], VEC * sizeof(float)));
    CK(cudaMalloc(&buf[1], VEC * sizeof(float)));
    unsigned *cnt;
    CK(cudaMalloc(&cnt, (NK + 1) * sizeof(unsigned)));
    float *host0 = (float *)malloc(VEC * sizeof(float)), *host = (float *)malloc(VEC * sizeof(float)),
          *ref = (float *)malloc(VEC * sizeof(float));
    for (int i = 0; i < VEC; i++)
        host0[i] = (float)(i % 17) * 0.25f;
    CK(cudaMemcpy(init, host0, VEC * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const char *names[] = {"plain", "wait", "flag", "flag_late", "wait_early"};
    for (size_t bi = 0; bi < sizeof bytes_list / sizeof bytes_list[0]; bi++)
        for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
            const int G = grids[gi];
            const size_t per = bytes_list[bi] / 16 / G;
            for (int mode = MODE_PLAIN; mode <= MODE_WAIT_EARLY; mode++) {
                cudaGraph_t g;
                cudaGraphExec_t ge;
                CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
                CK(cudaMemcpyAsync(buf[0], init, VEC * sizeof(float), cudaMemcpyDeviceToDevice, st));
                if (mode == MODE_FLAG || mode == MODE_FLAG_LATE)
                    CK(cudaMemsetAsync(cnt, 0, (NK + 1) * sizeof(unsigned), st));
                for (int k = 0; k < NK; k++) {
                    const uint4 *wk = w + (size_t)(k % copies) * (max_bytes / 16);
                    launch(st, mode, G, buf[k & 1], buf[(k + 1) & 1], wk, per, k ? cnt + k - 1 : NULL,
                           (unsigned)G, cnt + k);
                }
                CK(cudaStreamEndCapture(st, &g));
                CK(cudaGraphInstantiate(&ge, g, 0));
                CK(cudaGraphLaunch(ge, st));
                CK(cudaStreamSynchronize(st));
                float best = 1e30f;
                for (int r = 0; r < 20; r++) {
                    CK(cudaEventRecord(e0, st));
                    CK(cudaGraphLaunch(ge, st));
                    CK(cudaEventRecord(e1, st));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    best = ms < best ? ms : best;
                }
                CK(cudaMemcpy(host, buf[NK & 1], VEC * sizeof(float), cudaMemcpyDeviceToHost));
                if (mode == MODE_PLAIN)
                    memcpy(ref, host, VEC * sizeof(float));
                const int same = !memcmp(ref, host, VEC * sizeof(float));
                printf("bytes %5zu KiB grid %4d %-5s: %.2f us a kernel (%.3f ms / %d)%s\n", bytes_list[bi] >> 10, G,
                       names[mode], best * 1000.f / NK, best, NK, same ? "" : "  RESULT DIFFERS");
                CK(cudaGraphExecDestroy(ge));
                CK(cudaGraphDestroy(g));
            }
        }
    return 0;
}
