// Host time of cudaGraphLaunch for a graph of 300 small kernels, by launch
// attribute: plain, PDL, a cluster of 4, both: what a step's graph launch
// costs the host as its node count grows (docs/graphs.md).
// Build: make cuda-probes (build/cuda_probes/graph_launch_cost); run on the GPU machine.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void tiny(float *p) { p[blockIdx.x * blockDim.x + threadIdx.x] += 1.f; }

static double launch_us(int cluster, int pdl, int nodes, float *buf, int copy, int blocks)
{
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaLaunchAttribute attr[2];
    unsigned na = 0;
    if (cluster > 1) {
        attr[na].id = cudaLaunchAttributeClusterDimension;
        attr[na].val.clusterDim.x = cluster, attr[na].val.clusterDim.y = 1, attr[na].val.clusterDim.z = 1;
        na++;
    }
    if (pdl) {
        attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[na].val.programmaticStreamSerializationAllowed = 1;
        na++;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks, 1, 1), cfg.blockDim = dim3(128, 1, 1), cfg.stream = s, cfg.attrs = attr, cfg.numAttrs = na;
    cudaGraph_t g;
    cudaGraphExec_t x;
    static float *pinned;
    if (!pinned)
        cudaHostAlloc(&pinned, 4096, cudaHostAllocDefault);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (copy) /* the step's metadata upload, as the engine's graphs begin */
        cudaMemcpyAsync(buf, pinned, 4096, cudaMemcpyHostToDevice, s);
    for (int i = 0; i < nodes; i++)
        cudaLaunchKernelEx(&cfg, tiny, buf);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&x, g, 0);
    cudaGraphUpload(x, s);
    cudaStreamSynchronize(s);
    double total = 0;
    const int reps = 200;
    for (int r = 0; r < reps + 10; r++) {
        auto t0 = std::chrono::steady_clock::now();
        cudaGraphLaunch(x, s);
        auto t1 = std::chrono::steady_clock::now();
        cudaStreamSynchronize(s);
        if (r >= 10)
            total += std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    cudaError_t rc = cudaGetLastError();
    if (rc != cudaSuccess)
        printf("error %s\n", cudaGetErrorString(rc));
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    return total / reps;
}

int main()
{
    float *buf;
    cudaMalloc(&buf, 1024 * 128 * sizeof(float));
    for (int copy : {0, 1})
        for (int blocks : {8, 512})
            for (int cluster : {1, 8})
                for (int pdl : {0, 1})
                    printf("300 nodes of %d blocks, cluster %d, pdl %d, copy node %d: cudaGraphLaunch %.1f us\n",
                           blocks, cluster, pdl, copy, launch_us(cluster, pdl, 300, buf, copy, blocks));
    return 0;
}
