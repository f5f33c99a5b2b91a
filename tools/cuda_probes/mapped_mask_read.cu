// What a grammar mask costs the sampler to read, by where it lives: R rows
// of a 262,144-token mask (8,192 words, 32 KB a row) applied to R rows of
// logits, the way the CUDA sampler's mask_kernel does it (blocks of 1024
// threads over 8,192 logits, a row's span's 256 words loaded first), with the
// words read
//   mapped4:  from mapped pinned host memory, 4 bytes a thread (mask_kernel today)
//   mapped16: from mapped pinned host memory, 16 bytes a thread
//   copy+dev: copied in first by cudaMemcpyAsync, then read from device memory
//   dev:      from device memory alone (the floor)
// Median of 50 timed runs (CUDA events) after 5 untimed, for R = 1, 8, 32.
// Usage: mapped_mask_read
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                                         \
    do {                                                                                                 \
        cudaError_t rc_ = (x);                                                                           \
        if (rc_ != cudaSuccess) {                                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(rc_));         \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

enum { NT = 1024, SPAN = NT * 8, VOCAB = 262144, WORDS = VOCAB / 32, MAX_ROWS = 32 };

template <int WIDE>
__global__ void __launch_bounds__(NT) apply_mask(float *logits, const uint32_t *masks)
{
    const int r = blockIdx.y, t0 = blockIdx.x * SPAN;
    __shared__ __align__(16) uint32_t words[SPAN / 32];
    const uint32_t *m = masks + (size_t)r * WORDS + t0 / 32;
    if (WIDE) {
        if (threadIdx.x < SPAN / 128)
            reinterpret_cast<uint4 *>(words)[threadIdx.x] = __ldcv(reinterpret_cast<const uint4 *>(m) + threadIdx.x);
    } else if (threadIdx.x < SPAN / 32) {
        words[threadIdx.x] = __ldcv(m + threadIdx.x);
    }
    __syncthreads();
    float *l = logits + (size_t)r * VOCAB;
    for (int t = t0 + threadIdx.x; t < t0 + SPAN; t += NT)
        if (!(words[(t - t0) >> 5] >> (t & 31) & 1u))
            l[t] = -INFINITY;
}

static float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main()
{
    float *logits;
    uint32_t *host, *host_dev, *dev;
    CHECK(cudaMalloc(&logits, (size_t)MAX_ROWS * VOCAB * sizeof(float)));
    CHECK(cudaMalloc(&dev, (size_t)MAX_ROWS * WORDS * sizeof(uint32_t)));
    CHECK(cudaHostAlloc(&host, (size_t)MAX_ROWS * WORDS * sizeof(uint32_t), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer(&host_dev, host, 0));
    srand(1);
    for (size_t i = 0; i < (size_t)MAX_ROWS * WORDS; i++)
        host[i] = (uint32_t)rand() * 2654435761u; // not zeros: every row's bits vary
    CHECK(cudaMemcpy(dev, host, (size_t)MAX_ROWS * WORDS * sizeof(uint32_t), cudaMemcpyHostToDevice));
    cudaStream_t st;
    CHECK(cudaStreamCreate(&st));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    printf("%-10s %5s %10s\n", "mask from", "rows", "us median");
    const int rows_list[] = {1, 8, 32};
    for (int ri = 0; ri < 3; ri++) {
        const int R = rows_list[ri];
        const dim3 grid(VOCAB / SPAN, R);
        for (int mode = 0; mode < 4; mode++) {
            std::vector<float> t;
            for (int rep = 0; rep < 55; rep++) {
                CHECK(cudaEventRecord(a, st));
                if (mode == 0)
                    apply_mask<0><<<grid, NT, 0, st>>>(logits, host_dev);
                else if (mode == 1)
                    apply_mask<1><<<grid, NT, 0, st>>>(logits, host_dev);
                else {
                    if (mode == 2)
                        CHECK(cudaMemcpyAsync(dev, host, (size_t)R * WORDS * sizeof(uint32_t), cudaMemcpyHostToDevice, st));
                    apply_mask<1><<<grid, NT, 0, st>>>(logits, dev);
                }
                CHECK(cudaGetLastError());
                CHECK(cudaEventRecord(b, st));
                CHECK(cudaEventSynchronize(b));
                float ms;
                CHECK(cudaEventElapsedTime(&ms, a, b));
                if (rep >= 5)
                    t.push_back(ms * 1000.f);
            }
            const char *name[] = {"mapped4", "mapped16", "copy+dev", "dev"};
            printf("%-10s %5d %10.1f\n", name[mode], R, median(t));
        }
    }
    return 0;
}
