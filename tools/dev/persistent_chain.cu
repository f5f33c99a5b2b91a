// Device-side probe (not CI, not part of the build): how fast can one
// persistent kernel stream a decode step's weights when the GEMVs of every
// layer are phases separated by grid barriers, and the weights of the next
// phase are already in flight while a phase ends and the barrier waits?
// Issue 16's design question, asked before building the real kernel.
//
// The model is the batch-1 decode chain without attention (o takes the q
// part of the q|k|v output): per layer q|k|v, o (+ residual), gate|up, down
// (+ residual), then the LM head; RMSNorm without weights, SiLU. Not a
// correct model: the timing is the point.
//
// Streaming: each warp owns a balanced contiguous byte range of each
// matrix; each lane copies its 16-byte pieces with cp.async into its own ring
// slots (no block barrier), S pieces ahead, and the ring runs on across phase
// ends, so a phase's first weights arrive while the last one finishes and the
// barrier waits. Row sums: per lane in registers, per block in shared memory,
// then into an fp32 arena by atomicAdd (nondeterministic order: a probe only).
//
// Modes: persistent (one launch a step) and per-phase (the same kernel
// launched once per phase, captured in one CUDA graph: the kernel-per-op
// shape, without the cross-phase ring). Prints ms a step and GB/s of weights.
//
// Build and run (GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/pc tools/dev/persistent_chain.cu && /tmp/pc
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.cuh"

enum { THREADS = 512, WARPS = THREADS / 32 };
enum { IN_NORM_X, IN_Q, IN_NORM_X_PLUS_O, IN_ACT, IN_NORM_X_PLUS_DOWN };

struct phase {
    const bf16 *w; // [n, k]
    int n, k;
    float *out;    // [n] fp32 arena (zeroed before a step)
    int in_kind;   // how the input vector is made
    const float *a, *b; // inputs of in_kind (previous outputs)
    float *x_in, *x_out; // residual stream before / after this phase's input
    int qd, f;
};

struct chain {
    struct phase *ph;
    int n_phases;
    unsigned *bar;
};

__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// A warp's share of a phase: a contiguous byte range of the weight matrix
// (whole 256-byte units, balanced over all the grid's warps). Lane l takes
// the 16-byte pieces at l*16, l*16 + 512, ... of it.
__device__ __forceinline__ void warp_range(const phase &P, int gw, int n_warps, long &b0, long &b1)
{
    const long units = (long)P.n * P.k / 128;
    b0 = units * gw / n_warps * 256;
    b1 = units * (gw + 1) / n_warps * 256;
}

// The lane's issue position: phase p, byte offset off (< end) in its weights.
struct stream {
    int p;
    long off, end;
    const char *base;
};

// Moves s to the first piece of this lane in phase p or later (p = last: done).
__device__ void stream_from(stream &s, const chain &ch, int p, int last, int gw, int n_warps, int lane)
{
    for (; p < last; p++) {
        long b0, b1;
        warp_range(ch.ph[p], gw, n_warps, b0, b1);
        if (b0 + lane * 16 < b1) {
            s.p = p;
            s.off = b0 + lane * 16;
            s.end = b1;
            s.base = reinterpret_cast<const char *>(ch.ph[p].w);
            return;
        }
    }
    s.p = last;
}

// One piece into the next ring slot (an empty group when the stream is done).
template <int S>
__device__ __forceinline__ void issue(stream &s, const chain &ch, uint4 *ring, unsigned &issued, int last, int gw,
                                      int n_warps, int lane)
{
    if (s.p < last) {
        cp_async16(ring + (issued & (S - 1)) * THREADS + threadIdx.x, s.base + s.off, 16);
        s.off += 512;
        if (s.off >= s.end)
            stream_from(s, ch, s.p + 1, last, gw, n_warps, lane);
    }
    cp_commit();
    issued++;
}

__device__ void grid_barrier(unsigned *bar, unsigned &gen)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(bar, 1u);
        const unsigned target = ++gen * gridDim.x;
        unsigned v;
        do {
            asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(bar));
        } while (v < target);
    }
    __syncthreads();
}

// The phase's input vector into xs (fp32, k values); block 0 stores the new residual stream.
__device__ void make_input(const phase &P, float *xs, float *red)
{
    const int k = P.k;
    if (P.in_kind == IN_Q) {
        for (int i = threadIdx.x; i < k; i += THREADS)
            xs[i] = __ldcg(P.a + i);
        __syncthreads();
        return;
    }
    if (P.in_kind == IN_ACT) {
        for (int i = threadIdx.x; i < k; i += THREADS) {
            const float g = __ldcg(P.a + i), u = __ldcg(P.a + P.f + i);
            xs[i] = g / (1.f + __expf(-g)) * u;
        }
        __syncthreads();
        return;
    }
    float ss = 0.f;
    for (int i = threadIdx.x; i < k; i += THREADS) {
        float v = __ldcg(P.x_in + i);
        if (P.in_kind != IN_NORM_X)
            v += __ldcg(P.a + i);
        xs[i] = v;
        ss += v * v;
        if (blockIdx.x == 0 && P.x_out)
            P.x_out[i] = v;
    }
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = ss;
    __syncthreads();
    float t = 0.f;
    for (int i = 0; i < WARPS; i++)
        t += red[i];
    const float inv = rsqrtf(t / k + 1e-6f);
    __syncthreads();
    for (int i = threadIdx.x; i < k; i += THREADS)
        xs[i] *= inv;
    __syncthreads();
}

// Phases [first, last) of ch; the ring runs S pieces ahead across phase ends.
enum { MAX_BLOCK_ROWS = 4096 };
template <int S>
__global__ void __launch_bounds__(THREADS, 1) chain_kernel(chain ch, int first, int last, int skip)
{
    // skip (ablation, wrong sums): 1 the grid barriers, 2 making each phase's input, 4 the row-sum flush
    static_assert((S & (S - 1)) == 0, "S is a power of two");
    extern __shared__ __align__(16) unsigned char smem[];
    uint4 *ring = reinterpret_cast<uint4 *>(smem);
    float *sacc = reinterpret_cast<float *>(smem + (size_t)S * THREADS * 16); // the block's row sums
    float *xs = sacc + MAX_BLOCK_ROWS;
    __shared__ float red[WARPS];
    const int lane = threadIdx.x & 31, gw = blockIdx.x * WARPS + (threadIdx.x >> 5), n_warps = gridDim.x * WARPS;
    unsigned gen = 0, issued = 0, used = 0;
    stream is;
    stream_from(is, ch, first, last, gw, n_warps, lane);
    for (int i = 0; i < S; i++)
        issue<S>(is, ch, ring, issued, last, gw, n_warps, lane);
    for (int p = first; p < last; p++) {
        const phase &P = ch.ph[p];
        if (p > first && !(skip & 1))
            grid_barrier(ch.bar, gen);
        const long rowbytes = (long)P.k * 2;
        long blk0, blk1, b0, b1;
        warp_range(P, blockIdx.x * WARPS, n_warps, blk0, b1);
        warp_range(P, blockIdx.x * WARPS + WARPS - 1, n_warps, b0, blk1);
        const long row0 = blk0 / rowbytes, rows = blk1 > blk0 ? (blk1 - 1) / rowbytes - row0 + 1 : 0;
        for (int i = threadIdx.x; i < rows; i += THREADS)
            sacc[i] = 0.f;
        if (!(skip & 2))
            make_input(P, xs, red); // ends with __syncthreads
        warp_range(P, gw, n_warps, b0, b1);
        long off = b0 + lane * 16;
        long row = off / rowbytes, colb = off % rowbytes;
        float acc = 0.f;
        for (; off < b1; off += 512) {
            cp_wait<S - 1>();
            const uint4 wv = ring[(used & (S - 1)) * THREADS + threadIdx.x];
            used++;
            issue<S>(is, ch, ring, issued, last, gw, n_warps, lane);
            const bf16 *wb = reinterpret_cast<const bf16 *>(&wv);
            const float *x = xs + colb / 2;
            const float4 x0 = *reinterpret_cast<const float4 *>(x), x1 = *reinterpret_cast<const float4 *>(x + 4);
            acc += __bfloat162float(wb[0]) * x0.x + __bfloat162float(wb[1]) * x0.y + __bfloat162float(wb[2]) * x0.z +
                   __bfloat162float(wb[3]) * x0.w + __bfloat162float(wb[4]) * x1.x + __bfloat162float(wb[5]) * x1.y +
                   __bfloat162float(wb[6]) * x1.z + __bfloat162float(wb[7]) * x1.w;
            colb += 512;
            if (colb >= rowbytes) {
                atomicAdd(sacc + (row - row0), acc);
                acc = 0.f;
                colb -= rowbytes;
                row++;
            }
        }
        if (acc != 0.f)
            atomicAdd(sacc + (row - row0), acc);
        if (!(skip & 4)) {
            __syncthreads();
            for (int i = threadIdx.x; i < rows; i += THREADS)
                atomicAdd(P.out + row0 + i, sacc[i]); // rows at the block's ends are shared with its neighbours
            __syncthreads(); // sacc and xs are rewritten by the next phase
        }
    }
    cp_wait<0>();
}

// Device weights from a repeated 32 Mi-value random pattern (timing only).
static bf16 *rand_weights(size_t n)
{
    enum { PAT = 1 << 25 };
    static uint16_t *pat;
    if (!pat) {
        pat = (uint16_t *)malloc((size_t)PAT * 2);
        probe_pattern(pat, PAT, 12345);
    }
    return probe_upload_repeated(pat, PAT, n);
}

template <int S> static void run(const model_shape &m, int sms)
{
    const int L = m.layers, n_ph = 4 * L + 1, qkv = m.qd + 2 * m.kvd;
    size_t wbytes = 0;
    phase *ph = (phase *)calloc(n_ph, sizeof(phase));
    size_t arena_n = 0;
    for (int l = 0; l < L; l++)
        arena_n += qkv + m.d + 2 * m.f + m.d;
    arena_n += m.vocab;
    float *arena, *xs_buf;
    CK(cudaMalloc(&arena, arena_n * 4));
    CK(cudaMalloc(&xs_buf, (size_t)(2 * L + 1) * m.d * 4));
    CK(cudaMemset(xs_buf, 0, (size_t)(2 * L + 1) * m.d * 4));
    float *init_x;
    {
        float *h = (float *)malloc(m.d * 4);
        for (int i = 0; i < m.d; i++)
            h[i] = (float)((i * 37) % 17) / 17.f - 0.5f;
        init_x = xs_buf;
        CK(cudaMemcpy(init_x, h, m.d * 4, cudaMemcpyHostToDevice));
        free(h);
    }
    float *a = arena;
    float *x = init_x; // the residual stream as of the next norm
    const float *last_down = NULL;
    int xi = 1;
    for (int l = 0; l < L; l++) {
        phase *q = &ph[4 * l], *o = q + 1, *gu = q + 2, *dn = q + 3;
        *q = (phase){rand_weights((size_t)qkv * m.d), qkv, m.d, a, l ? IN_NORM_X_PLUS_DOWN : IN_NORM_X, last_down, NULL, x, NULL, m.qd, m.f};
        if (l) {
            q->x_out = xs_buf + (size_t)xi++ * m.d;
            x = q->x_out;
        }
        a += qkv;
        *o = (phase){rand_weights((size_t)m.d * m.qd), m.d, m.qd, a, IN_Q, q->out, NULL, NULL, NULL, m.qd, m.f};
        a += m.d;
        float *x_mid = xs_buf + (size_t)xi++ * m.d;
        *gu = (phase){rand_weights((size_t)2 * m.f * m.d), 2 * m.f, m.d, a, IN_NORM_X_PLUS_O, o->out, NULL, x, x_mid, m.qd, m.f};
        x = x_mid;
        a += 2 * m.f;
        *dn = (phase){rand_weights((size_t)m.d * m.f), m.d, m.f, a, IN_ACT, gu->out, NULL, NULL, NULL, m.qd, m.f};
        a += m.d;
        last_down = dn->out;
    }
    ph[4 * L] = (phase){rand_weights((size_t)m.vocab * m.d), m.vocab, m.d, a, IN_NORM_X_PLUS_DOWN, last_down, NULL, x, xs_buf + (size_t)xi++ * m.d, m.qd, m.f};
    for (int p = 0; p < n_ph; p++) {
        wbytes += (size_t)ph[p].n * ph[p].k * 2;
    }
    phase *dph;
    CK(cudaMalloc(&dph, n_ph * sizeof(phase)));
    CK(cudaMemcpy(dph, ph, n_ph * sizeof(phase), cudaMemcpyHostToDevice));
    unsigned *bar;
    CK(cudaMalloc(&bar, 4));
    chain ch = {dph, n_ph, bar};
    int max_k = 0;
    for (int p = 0; p < n_ph; p++)
        max_k = ph[p].k > max_k ? ph[p].k : max_k;
    const size_t smem = (size_t)S * THREADS * 16 + (size_t)(MAX_BLOCK_ROWS + max_k + 8) * 4;
    for (int p = 0; p < n_ph; p++) {
        const long per_block = (long)ph[p].n * ph[p].k * 2 / sms / ((long)ph[p].k * 2) + 2;
        if (per_block > MAX_BLOCK_ROWS) {
            fprintf(stderr, "phase %d: %ld rows a block\n", p, per_block);
            exit(1);
        }
    }
    CK(cudaFuncSetAttribute(chain_kernel<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    // per-phase launches in one graph
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int p = 0; p < n_ph; p++)
        chain_kernel<S><<<sms, THREADS, smem, st>>>(ch, p, p + 1, 0);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));

    // modes: 0 persistent, 1 per-phase graph, 2 persistent without barriers
    // (wrong sums: the barriers' cost), 3 the LM head alone (one phase: the
    // streaming rate without phase ends), 4 without barriers and phase inputs,
    // 5 without barriers, inputs and row-sum flushes (the bare stream)
    const int reps = 20;
    float best[6] = {1e9f, 1e9f, 1e9f, 1e9f, 1e9f, 1e9f}, logit0 = 0.f;
    static const int skips[6] = {0, 0, 1, 0, 3, 7};
    for (int mode = 0; mode < 6; mode++)
        for (int r = 0; r < reps + 2; r++) {
            CK(cudaMemsetAsync(arena, 0, arena_n * 4, st));
            CK(cudaMemsetAsync(bar, 0, 4, st));
            CK(cudaEventRecord(e0, st));
            if (mode != 1) {
                int f0 = mode == 3 ? n_ph - 1 : 0, f1 = n_ph, sk = skips[mode];
                void *args[] = {&ch, &f0, &f1, &sk};
                CK(cudaLaunchCooperativeKernel((void *)chain_kernel<S>, sms, THREADS, args, smem, st));
            } else {
                CK(cudaGraphLaunch(ge, st));
            }
            CK(cudaEventRecord(e1, st));
            CK(cudaStreamSynchronize(st));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 2 && ms < best[mode])
                best[mode] = ms;
            if (mode == 1 && r == reps + 1)
                CK(cudaMemcpy(&logit0, ph[4 * L].out, 4, cudaMemcpyDeviceToHost));
        }

    const double head = (double)ph[4 * L].n * ph[4 * L].k * 2;
    printf("%-14s S=%2d weights %.1f MB: persistent %.3f ms (%.0f GB/s), per-phase graph %.3f ms (%.0f GB/s), "
           "no barriers %.3f ms, also no inputs %.3f, also no flushes %.3f ms (%.0f GB/s), LM head alone %.3f ms "
           "(%.0f GB/s); floor at 3.02 TB/s %.3f ms; logit[0] %.3g\n",
           m.name, S, wbytes / 1e6, best[0], wbytes / best[0] / 1e6, best[1], wbytes / best[1] / 1e6, best[2],
           best[4], best[5], wbytes / best[5] / 1e6, best[3], head / best[3] / 1e6, wbytes / 3.02e9, logit0);
    for (int p = 0; p < n_ph; p++)
        CK(cudaFree((void *)ph[p].w));
    CK(cudaFree(arena));
    CK(cudaFree(xs_buf));
    CK(cudaFree(dph));
    CK(cudaFree(bar));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(st));
    free(ph);
}

int main(int argc, char **argv)
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const char *only = probe_filter(argc, argv);
    for (int i = 0; i < PROBE_MODELS; i++) {
        if (!probe_picked(probe_models[i], only))
            continue;
        run<8>(probe_models[i], prop.multiProcessorCount);
        run<16>(probe_models[i], prop.multiProcessorCount);
    }
    return 0;
}
