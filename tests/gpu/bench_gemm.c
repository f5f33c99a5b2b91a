/* The GEMM benchmarks (run by hand on the GPU machine: gpu_tests bench_gemm;
 * docs/kernels/gemm.md keeps the figures). Each path runs through
 * gemm_paths.h.
 * - bench_gemm_gemv_variants: every GEMV variant and cuBLASLt on each
 *   model's decode shapes at M = 1, 8, 16 (microseconds);
 * - bench_gemm_decode_shapes: per shape at M = 1, 8, 16 the automatic path
 *   (its choice printed), the same without PDL and cuBLASLt, with % of
 *   3.02 TB/s; then per model a whole decode step's GEMMs (every layer with
 *   its own weights, lm_head once) in one graph: back to back (automatic,
 *   without PDL, cuBLASLt, q/k/v and gate/up fused) and between the step's
 *   other kernels (RMSNorms, gated activation) as in a real step;
 * - bench_gemm_prefill: cuBLASLt TFLOP/s on Llama-3.2-3B shapes at
 *   M = 512, 2048, 8192.
 * - bench_gemm_gated: gate|up + activation per model at M = 1, 8, 16,
 *   matmul + gated_act against gated_matmul and the gated GEMV's variants.
 * Shapes are timed as graphs of many calls that rotate over enough weight
 * copies (>= 256 MB) that L2 (50 MB) never holds them; medians of replays. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/kernels.h"
#include "gemm_paths.h"
#include "gpu_test.h"

#define PEAK_GBS 3020.0
#define ROTATE_BYTES ((size_t)256 << 20)

struct model_shapes {
    const char *name;
    int n_layers, hidden, q, kv, inter, vocab;
};

static const struct model_shapes models[] = {
    {"Llama-3.2-3B", 28, 3072, 3072, 1024, 8192, 128256},
    {"Qwen3-4B", 36, 2560, 4096, 1024, 9728, 151936},
    {"Gemma-3-1B", 26, 1152, 1024, 256, 6912, 262144},
};
#define N_MODELS 3

enum { OP_Q, OP_KV, OP_O, OP_GATE_UP, OP_DOWN, OP_LM_HEAD, OP_QKV_FUSED, OP_GATE_UP_FUSED, N_OPS };
static const char *const op_names[N_OPS] = {"q",    "k|v",     "o",    "gate|up",
                                            "down", "lm_head", "qkv*", "gate_up*"};

/* N, K of an op, and how many of it a decode step runs (fused ops: 0, info only) */
static void op_shape(const struct model_shapes *md, int op, int64_t *n, int64_t *k, int *count)
{
    const int64_t h = md->hidden, L = md->n_layers;
    switch (op) {
    case OP_Q:
        *n = md->q, *k = h, *count = (int)L;
        break;
    case OP_KV:
        *n = md->kv, *k = h, *count = 2 * (int)L;
        break;
    case OP_O:
        *n = h, *k = md->q, *count = (int)L;
        break;
    case OP_GATE_UP:
        *n = md->inter, *k = h, *count = 2 * (int)L;
        break;
    case OP_DOWN:
        *n = h, *k = md->inter, *count = (int)L;
        break;
    case OP_LM_HEAD:
        *n = md->vocab, *k = h, *count = 1;
        break;
    case OP_QKV_FUSED:
        *n = md->q + 2 * md->kv, *k = h, *count = 0;
        break;
    default:
        *n = 2 * (int64_t)md->inter, *k = h, *count = 0;
        break;
    }
}

/* A device pool of random bf16 values that fills big buffers by copies. */
struct rand_pool {
    void *dev;
    size_t bytes;
};

static struct rand_pool rand_pool_make(struct gpu_ctx *ctx)
{
    const size_t n = (size_t)4 << 20;
    float *h = gpu_rand_f32(ctx, n, 0.05f);
    struct rand_pool p = {gpu_upload_bf16(ctx, h, n), n * 2};
    free(h);
    return p;
}

static void fill_random(const struct rand_pool *p, void *dst, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += p->bytes) {
        size_t len = bytes - off < p->bytes ? bytes - off : p->bytes;
        CHECK(cudaMemcpy((char *)dst + off, p->dev, len, cudaMemcpyDeviceToDevice) == cudaSuccess);
    }
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CHECK(cudaMalloc(&p, bytes) == cudaSuccess);
    return p;
}

static const struct gemm_mode mode_op = {.run = GEMM_RUN_OP},
                              mode_op_no_pdl = {.run = GEMM_RUN_OP, .no_pdl = 1},
                              mode_lt = {.run = GEMM_RUN_LT};

/* One GEMM call per fn() rotating over n_w weight copies, run the way mode
 * says (NULL: the op). */
struct bench_gemm {
    struct backend *be;
    const struct gemm_mode *mode;
    char *w;
    size_t stride; /* bytes between copies */
    int n_w, next, m, logits;
    int64_t n, k;
    void *x, *out;
};

static void bench_gemm_call(void *arg)
{
    struct bench_gemm *b = arg;
    struct weight wt = {b->w + (size_t)b->next * b->stride, DTYPE_BF16, b->n, b->k};
    b->next = (b->next + 1) % b->n_w;
    CHECK(!gemm_mode_matmul(b->be, b->mode ? b->mode : &mode_op, b->out, b->logits, b->x, &wt, b->m, 0.f));
}

struct graph_run {
    cudaGraphExec_t exec;
    cudaStream_t stream;
};

static void graph_launch(void *arg)
{
    struct graph_run *g = arg;
    CHECK(cudaGraphLaunch(g->exec, g->stream) == cudaSuccess);
}

/* Microseconds per fn() call: `calls` calls captured in one graph (plans
 * made before, outside the capture), median of `reps` replays. */
static double time_graph_us(struct gpu_ctx *ctx, void (*fn)(void *), void *arg, int calls, int reps)
{
    cudaStream_t s = cuda_stream(ctx->cuda);
    fn(arg);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    cudaGraph_t g;
    struct graph_run gr = {NULL, s};
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    for (int i = 0; i < calls; i++)
        fn(arg);
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess);
    CHECK(cudaGraphInstantiate(&gr.exec, g, 0) == cudaSuccess);
    double ms = gpu_time_ms(ctx, graph_launch, &gr, reps);
    CHECK(cudaGraphExecDestroy(gr.exec) == cudaSuccess);
    CHECK(cudaGraphDestroy(g) == cudaSuccess);
    return ms * 1e3 / calls;
}

/* Weight copies of one shape, x and out for up to max_m rows. */
static struct bench_gemm bench_setup(struct gpu_ctx *ctx, const struct rand_pool *pool, int64_t n, int64_t k,
                                     int max_m, int logits)
{
    struct bench_gemm b = {.be = ctx->cuda, .n = n, .k = k, .logits = logits};
    const size_t bytes = (size_t)(n * k) * 2;
    b.stride = (bytes + 255) & ~(size_t)255;
    b.n_w = (int)((ROTATE_BYTES + bytes - 1) / bytes);
    b.n_w = b.n_w < 2 ? 2 : b.n_w;
    b.w = dev_alloc(b.stride * (size_t)b.n_w);
    fill_random(pool, b.w, b.stride * (size_t)b.n_w);
    b.x = dev_alloc((size_t)max_m * (size_t)k * 2);
    fill_random(pool, b.x, (size_t)max_m * (size_t)k * 2);
    b.out = dev_alloc((size_t)max_m * (size_t)n * (logits ? 4 : 2));
    return b;
}

static void bench_free(struct bench_gemm *b)
{
    CHECK(cudaFree(b->w) == cudaSuccess && cudaFree(b->x) == cudaSuccess && cudaFree(b->out) == cudaSuccess);
}

static double time_path(struct gpu_ctx *ctx, struct bench_gemm *b, int m, const struct gemm_mode *mode)
{
    b->mode = mode;
    b->m = m;
    int calls = b->n_w < 8 ? 8 : b->n_w;
    double us = time_graph_us(ctx, bench_gemm_call, b, calls, 15);
    b->mode = NULL;
    return us;
}

GPU_TEST(bench_gemm_gemv_variants)
{
    static const int ms[] = {1, 8, 16};
    struct rand_pool pool = rand_pool_make(ctx);
    struct gemv_variant vs[N_GEMV_VARIANTS];
    /* first the launcher's own choice, then every variant */
    struct gemm_mode modes[1 + N_GEMV_VARIANTS] = {{.run = GEMM_RUN_GEMV}};
    const int n_modes = 1 + gemv_variants_all(vs, 0);
    for (int c = 1; c < n_modes; c++)
        modes[c] = (struct gemm_mode){.run = GEMM_RUN_GEMV, .variant = &vs[c - 1]};
    printf(
        "GEMV variants, us per call (own: the launcher's choice; T = tiles, U = unroll, HINT = L2::256B)\n");
    printf("%-12s %-8s %6s %6s %2s %6s", "model", "op", "N", "K", "M", "own");
    for (int c = 1; c < n_modes; c++) {
        char vn[32];
        printf(" %16s", gemv_variant_name(&vs[c - 1], vn, sizeof vn));
    }
    printf(" %7s %6s\n", "lt", "best%");
    for (int mi = 0; mi < N_MODELS; mi++)
        for (int op = 0; op < N_OPS; op++) {
            int64_t n, k;
            int count;
            op_shape(&models[mi], op, &n, &k, &count);
            struct bench_gemm b = bench_setup(ctx, &pool, n, k, 16, op == OP_LM_HEAD);
            for (int i = 0; i < 3; i++) {
                printf("%-12s %-8s %6lld %6lld %2d", models[mi].name, op_names[op], (long long)n,
                       (long long)k, ms[i]);
                double best = 1e30;
                for (int c = 0; c < n_modes; c++) {
                    double us = time_path(ctx, &b, ms[i], &modes[c]);
                    best = us < best ? us : best;
                    printf(c ? " %16.1f" : " %6.1f", us);
                }
                double lt = time_path(ctx, &b, ms[i], &mode_lt);
                printf(" %7.1f %5.1f%%\n", lt, 100.0 * (double)(n * k) * 2 / (best * 1e-6) / 1e9 / PEAK_GBS);
                fflush(stdout);
            }
            bench_free(&b);
        }
    return 0;
}

/* The GEMMs of one decode step of a model, every layer with its own
 * weights, wired as in forward.c (q/k/v and gate/up read the normed hidden
 * state, o reads the attention output, down the activation). With `others`
 * the step's other kernels run between them as in a real step (add+RMSNorm
 * before q/k/v and gate/up, two RMSNorms standing in for RoPE and attention,
 * the gated activation, the final norm); `gemms` = 0 runs those alone. */
struct bench_token {
    struct backend *be;
    const struct model_shapes *md;
    char *w; /* per layer q | k | v | o | gate | up | down, then lm_head */
    void *h, *res, *nw, *q, *k, *v, *attn, *o, *gate, *up; /* [16, up to 20480] bf16 each */
    float *logits;                                         /* [16, vocab] */
    int m, fused, gemms, others;
    const struct gemm_mode *mode; /* how the GEMMs run */
};

static size_t layer_bytes(const struct model_shapes *md)
{
    const size_t h = (size_t)md->hidden;
    return 2 * h * ((size_t)md->q + 2 * (size_t)md->kv + (size_t)md->q + 3 * (size_t)md->inter);
}

static void token_mm(struct bench_token *t, void *out, const void *x, const char *w, int64_t n, int64_t k)
{
    struct weight wt = {w, DTYPE_BF16, n, k};
    CHECK(!gemm_mode_matmul(t->be, t->mode, out, 0, x, &wt, t->m, 0.f));
}

static void bench_token_call(void *arg)
{
    struct bench_token *t = arg;
    const struct model_shapes *md = t->md;
    const int64_t h = md->hidden, q = md->q, kv = md->kv, in = md->inter;
    const int M = t->m;
    const cudaStream_t s = cuda_stream(t->be);
    const float eps = 1e-6f;
    char *p = t->w;
    for (int l = 0; l < md->n_layers; l++) {
        char *wq = p, *wk = wq + 2 * q * h, *wv = wk + 2 * kv * h, *wo = wv + 2 * kv * h,
             *wg = wo + 2 * h * q, *wu = wg + 2 * in * h, *wd = wu + 2 * in * h;
        p = wd + 2 * h * in;
        if (t->others)
            CUDA_CHECK(launch_add_rmsnorm(t->res, t->o, t->h, t->nw, M, (int)h, eps, 0, s));
        if (t->gemms && t->fused) {
            token_mm(t, t->q, t->h, wq, q + 2 * kv, h);
        } else if (t->gemms) {
            token_mm(t, t->q, t->h, wq, q, h);
            token_mm(t, t->k, t->h, wk, kv, h);
            token_mm(t, t->v, t->h, wv, kv, h);
        }
        if (t->others) {
            CUDA_CHECK(launch_rmsnorm(t->q, t->q, t->nw, M, (int)q, eps, 0, s));
            CUDA_CHECK(launch_rmsnorm(t->attn, t->q, t->nw, M, (int)q, eps, 0, s));
        }
        if (t->gemms)
            token_mm(t, t->o, t->attn, wo, h, q);
        if (t->others)
            CUDA_CHECK(launch_add_rmsnorm(t->res, t->o, t->h, t->nw, M, (int)h, eps, 0, s));
        if (t->gemms && t->fused) {
            token_mm(t, t->gate, t->h, wg, 2 * in, h);
        } else if (t->gemms) {
            token_mm(t, t->gate, t->h, wg, in, h);
            token_mm(t, t->up, t->h, wu, in, h);
        }
        if (t->others)
            CUDA_CHECK(launch_gated_act(t->gate, t->gate, t->up, M, (int)in, (int)in, 0, s));
        if (t->gemms)
            token_mm(t, t->o, t->gate, wd, h, in);
    }
    if (t->others)
        CUDA_CHECK(launch_rmsnorm(t->h, t->res, t->nw, M, (int)h, eps, 0, s));
    if (t->gemms) {
        struct weight lm = {p, DTYPE_BF16, md->vocab, h};
        CHECK(!gemm_mode_matmul(t->be, t->mode, t->logits, 1, t->h, &lm, M, 0.f));
    }
}

static double time_token(struct gpu_ctx *ctx, struct bench_token *t, int gemms, int others, int fused,
                         const struct gemm_mode *mode)
{
    t->gemms = gemms, t->others = others, t->fused = fused, t->mode = mode;
    return time_graph_us(ctx, bench_token_call, t, 1, 10);
}

struct bench_copy {
    void *src, *dst;
    size_t bytes;
    cudaStream_t stream;
};

static void bench_copy_call(void *arg)
{
    struct bench_copy *c = arg;
    CHECK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->stream) == cudaSuccess);
}

GPU_TEST(bench_gemm_decode_shapes)
{
    static const int ms[] = {1, 8, 16};
    struct rand_pool pool = rand_pool_make(ctx);
    double sum_us[N_MODELS][3][3] = {{{0}}}; /* [model][M][auto, no PDL, lt]: per-shape medians x count */
    {
        const size_t cb = (size_t)1 << 30;
        struct bench_copy c = {dev_alloc(cb), dev_alloc(cb), cb, cuda_stream(ctx->cuda)};
        double ms_copy = gpu_time_ms(ctx, bench_copy_call, &c, 20);
        printf("device-to-device copy of 1 GiB: %.0f GB/s (read + written)\n",
               2.0 * (double)cb / ms_copy / 1e6);
        CHECK(cudaFree(c.src) == cudaSuccess && cudaFree(c.dst) == cudaSuccess);
    }
    printf("Decode GEMMs per shape (graph of rotating weight copies, median; %% of %.0f GB/s)\n", PEAK_GBS);
    printf("%-12s %-8s %13s %7s %2s | %-10s %-17s | %-17s | %-17s | %s\n", "model", "op", "N x K", "MB", "M",
           "auto picks", "auto", "auto without PDL", "cuBLASLt", "lt/auto");
    for (int mi = 0; mi < N_MODELS; mi++)
        for (int op = 0; op < N_OPS; op++) {
            int64_t n, k;
            int count;
            op_shape(&models[mi], op, &n, &k, &count);
            const double bytes = (double)(n * k) * 2;
            struct bench_gemm b = bench_setup(ctx, &pool, n, k, 16, op == OP_LM_HEAD);
            for (int i = 0; i < 3; i++) {
                double g = time_path(ctx, &b, ms[i], &mode_op);
                double np = time_path(ctx, &b, ms[i], &mode_op_no_pdl);
                double l = time_path(ctx, &b, ms[i], &mode_lt);
                sum_us[mi][i][0] += count * g;
                sum_us[mi][i][1] += count * np;
                sum_us[mi][i][2] += count * l;
                char cfg[32];
                const struct weight wt = {b.w, DTYPE_BF16, n, k};
                printf(
                    "%-12s %-8s %6lldx%-6lld %7.2f %2d | %-10s %7.1f us %5.1f%% | %7.1f us %5.1f%% | %7.1f "
                    "us %5.1f%% | "
                    "%.2fx\n",
                    models[mi].name, op_names[op], (long long)n, (long long)k, bytes / 1e6, ms[i],
                    gemm_choice_name(ctx->cuda, b.x, &wt, ms[i], 0, cfg, sizeof cfg), g,
                    100 * bytes / g / 1e3 / PEAK_GBS, np, 100 * bytes / np / 1e3 / PEAK_GBS, l,
                    100 * bytes / l / 1e3 / PEAK_GBS, l / g);
                fflush(stdout);
            }
            bench_free(&b);
        }

    printf("\nDecode step per model: all layers' GEMMs + lm_head in one graph, us and %% of the floor "
           "(weight bytes / "
           "%.0f GB/s)\n",
           PEAK_GBS);
    printf(
        "  sum: per-shape medians x count; gemms: GEMMs back to back; +others: with the step's other kernels "
        "between them (others: those alone)\n");
    printf("%-12s %2s %5s %6s | %-13s %-13s | %-13s %-13s %-13s %-13s | %-13s %-13s %7s\n", "model", "M",
           "GB", "floor", "sum auto", "sum lt", "gemms auto", "gemms noPDL", "gemms lt", "fused auto",
           "+others auto", "+others lt", "others");
    for (int mi = 0; mi < N_MODELS; mi++) {
        const struct model_shapes *md = &models[mi];
        const size_t wbytes =
            layer_bytes(md) * (size_t)md->n_layers + 2 * (size_t)md->vocab * (size_t)md->hidden;
        const size_t act = (size_t)16 * 20480 * 2;
        struct bench_token t = {.be = ctx->cuda, .md = md};
        t.w = dev_alloc(wbytes);
        fill_random(&pool, t.w, wbytes);
        void **bufs[] = {&t.h, &t.res, &t.nw, &t.q, &t.k, &t.v, &t.attn, &t.o, &t.gate, &t.up};
        for (int i = 0; i < 10; i++) {
            *bufs[i] = dev_alloc(act);
            fill_random(&pool, *bufs[i], act);
        }
        t.logits = dev_alloc((size_t)16 * (size_t)md->vocab * 4);
        const double fl = (double)wbytes / PEAK_GBS / 1e3;
        for (int i = 0; i < 3; i++) {
            t.m = ms[i];
            double ga = time_token(ctx, &t, 1, 0, 0, &mode_op);
            double gn = time_token(ctx, &t, 1, 0, 0, &mode_op_no_pdl);
            double gl = time_token(ctx, &t, 1, 0, 0, &mode_lt);
            double gf = time_token(ctx, &t, 1, 0, 1, &mode_op);
            double oa = time_token(ctx, &t, 1, 1, 0, &mode_op);
            double ol = time_token(ctx, &t, 1, 1, 0, &mode_lt);
            double oo = time_token(ctx, &t, 0, 1, 0, &mode_op);
            double sa = sum_us[mi][i][0], sl = sum_us[mi][i][2];
#define PCT(v) (v), 100 * fl / (v)
            printf("%-12s %2d %5.2f %6.0f | %5.0f %5.1f%% %5.0f %5.1f%% | %5.0f %5.1f%% %5.0f %5.1f%% %5.0f "
                   "%5.1f%% "
                   "%5.0f %5.1f%% | %5.0f %5.1f%% %5.0f %5.1f%% %7.0f\n",
                   md->name, ms[i], (double)wbytes / 1e9, fl, PCT(sa), PCT(sl), PCT(ga), PCT(gn), PCT(gl),
                   PCT(gf), PCT(oa - oo), PCT(ol - oo), oo);
#undef PCT
            fflush(stdout);
        }
        for (int i = 0; i < 10; i++)
            CHECK(cudaFree(*bufs[i]) == cudaSuccess);
        CHECK(cudaFree(t.w) == cudaSuccess && cudaFree(t.logits) == cudaSuccess);
    }
    printf("(+others columns: step time minus the other kernels alone)\n");
    return 0;
}

GPU_TEST(bench_gemm_prefill)
{
    static const int ms[] = {512, 2048, 8192};
    const struct model_shapes *md = &models[0];
    struct rand_pool pool = rand_pool_make(ctx);
    printf("Prefill GEMMs, %s shapes, cuBLASLt (graph of 4 calls, 2 weight copies, median)\n", md->name);
    printf("%-8s %13s %5s | %9s %8s\n", "op", "N x K", "M", "us", "TFLOP/s");
    for (int i = 0; i < 3; i++) {
        double flops = 0, us_total = 0;
        for (int op = OP_Q; op <= OP_DOWN; op++) {
            int64_t n, k;
            int count;
            op_shape(md, op, &n, &k, &count);
            struct bench_gemm b = {.be = ctx->cuda, .n = n, .k = k, .m = ms[i], .n_w = 2};
            b.stride = ((size_t)(n * k) * 2 + 255) & ~(size_t)255;
            b.w = dev_alloc(2 * b.stride);
            fill_random(&pool, b.w, 2 * b.stride);
            b.x = dev_alloc((size_t)ms[i] * (size_t)k * 2);
            fill_random(&pool, b.x, (size_t)ms[i] * (size_t)k * 2);
            b.out = dev_alloc((size_t)ms[i] * (size_t)n * 2);
            double us = time_graph_us(ctx, bench_gemm_call, &b, 4, 10);
            double f = 2.0 * ms[i] * (double)n * (double)k;
            flops += f * count;
            us_total += us * count;
            printf("%-8s %6lldx%-6lld %5d | %9.1f %8.1f\n", op_names[op], (long long)n, (long long)k, ms[i],
                   us, f / us / 1e6);
            bench_free(&b);
        }
        printf("%-8s %13s %5d | %9.1f %8.1f   (all %d layers: %.2f ms)\n", "layer", "", ms[i],
               us_total / md->n_layers, flops / us_total / 1e6, md->n_layers, us_total / 1e3);
        fflush(stdout);
    }
    return 0;
}

/* gate|up + activation of the three models at M = 1, 8, 16: the fused GEMM
 * into [M, 2F] then gated_act (as before gated_matmul) against gated_matmul
 * (the op; its choice printed), and the gated GEMV forced to its own choice
 * and to each variant; graphs of rotating weight copies, us per call. */
struct bench_gated {
    struct bench_gemm b;
    void *act_out;
    const struct gemm_mode *mode; /* NULL: matmul + gated_act; else gated_matmul run this way */
};

static void bench_gated_call(void *arg)
{
    struct bench_gated *g = arg;
    struct bench_gemm *b = &g->b;
    struct weight wt = {b->w + (size_t)b->next * b->stride, DTYPE_BF16, b->n, b->k};
    b->next = (b->next + 1) % b->n_w;
    const int F = (int)(b->n / 2);
    if (g->mode) {
        CHECK(!gemm_mode_gated(b->be, g->mode, g->act_out, b->out, b->x, &wt, b->m, ACT_FN_SILU));
    } else {
        b->be->ops->matmul(b->be, b->out, b->x, &wt, b->m);
        b->be->ops->gated_act(b->be, g->act_out, b->out, (char *)b->out + (size_t)F * 2, b->m, F, 2 * F,
                              ACT_FN_SILU);
    }
}

GPU_TEST(bench_gemm_gated)
{
    static const int ms[] = {1, 8, 16};
    struct rand_pool pool = rand_pool_make(ctx);
    struct gemv_variant vs[N_GEMV_VARIANTS];
    /* first the launcher's own choice, then every gated variant */
    struct gemm_mode forced[1 + N_GEMV_VARIANTS] = {{.run = GEMM_RUN_GEMV}};
    const int n_forced = 1 + gemv_variants_all(vs, 1);
    for (int c = 1; c < n_forced; c++)
        forced[c] = (struct gemm_mode){.run = GEMM_RUN_GEMV, .variant = &vs[c - 1]};
    printf(
        "gate|up + activation, us per call: matmul [M, 2F] + gated_act vs gated_matmul (%% of %.0f GB/s)\n",
        PEAK_GBS);
    printf("gated GEMV forced to: own choice");
    for (int c = 1; c < n_forced; c++) {
        char vn[32];
        printf(" %s", gemv_variant_name(&vs[c - 1], vn, sizeof vn));
    }
    printf("\n");
    for (int mi = 0; mi < N_MODELS; mi++) {
        int64_t n, k;
        int count;
        op_shape(&models[mi], OP_GATE_UP_FUSED, &n, &k, &count);
        struct bench_gated g = {.b = bench_setup(ctx, &pool, n, k, 16, 0)};
        g.act_out = dev_alloc((size_t)16 * (size_t)n);
        const double bytes = (double)(n * k) * 2;
        for (int i = 0; i < 3; i++) {
            g.b.m = ms[i];
            const int calls = g.b.n_w < 8 ? 8 : g.b.n_w;
            g.mode = NULL;
            double a = time_graph_us(ctx, bench_gated_call, &g, calls, 15);
            g.mode = &mode_op;
            double f = time_graph_us(ctx, bench_gated_call, &g, calls, 15);
            char cn[32];
            const struct weight wt = {g.b.w, DTYPE_BF16, n, k};
            printf("%-12s %6lldx%-6lld M %2d | matmul+act %6.1f us %5.1f%% | gated_matmul (%s) %6.1f us "
                   "%5.1f%% | "
                   "%.2fx | gated GEMV forced:",
                   models[mi].name, (long long)n, (long long)k, ms[i], a, 100 * bytes / a / 1e3 / PEAK_GBS,
                   gemm_choice_name(ctx->cuda, g.b.x, &wt, ms[i], 1, cn, sizeof cn), f,
                   100 * bytes / f / 1e3 / PEAK_GBS, a / f);
            for (int c = 0; c < n_forced; c++) {
                g.mode = &forced[c];
                printf(" %.1f", time_graph_us(ctx, bench_gated_call, &g, calls, 15));
            }
            printf("\n");
            fflush(stdout);
        }
        CHECK(cudaFree(g.act_out) == cudaSuccess);
        bench_free(&g.b);
    }
    return 0;
}

/* cuBLASLt's own candidates at the skinny M of large-batch decode (issue
 * 15: a TP rank's projections are narrower, so fewer CTAs stream them): the
 * heuristic's first algorithm (what cuda_gemm.c runs) against the fastest of
 * its first 16, per projection of Llama-3.2-3B and Qwen3-4B at TP 1, 2 and 4
 * (out f32 for o and down at TP > 1, as matmul_f32 makes them). */
struct lt_call {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    void *ws;
    size_t ws_bytes;
    cudaStream_t s;
    char *w;
    size_t stride;
    int n_w, next;
    void *x, *out;
};

static void lt_call_run(void *arg)
{
    struct lt_call *c = arg;
    const float one = 1.f, zero = 0.f;
    const char *w = c->w + (size_t)c->next * c->stride;
    c->next = (c->next + 1) % c->n_w;
    CHECK(cublasLtMatmul(c->lt, c->desc, &one, w, c->a, c->x, c->b, &zero, c->out, c->c, c->out, c->c, &c->algo,
                         c->ws, c->ws_bytes, c->s) == CUBLAS_STATUS_SUCCESS);
}

GPU_TEST(bench_gemm_lt_candidates)
{
    enum { MAX_ALGOS = 16 };
    static const int ms[] = {32, 64, 128}, tps[] = {1, 2, 4};
    struct rand_pool pool = rand_pool_make(ctx);
    struct lt_call c = {.s = cuda_stream(ctx->cuda), .ws_bytes = (size_t)32 << 20};
    CHECK(cublasLtCreate(&c.lt) == CUBLAS_STATUS_SUCCESS);
    c.ws = dev_alloc(c.ws_bytes);
    printf("cuBLASLt at skinny M: its first algorithm against the best of its first %d (graph of calls over "
           ">= 256 MB of weight copies, median; GB/s of weights)\n",
           MAX_ALGOS);
    printf("%-13s %2s %-8s %13s %4s | %8s %6s | %8s %6s %4s | %5s\n", "model", "tp", "op", "N x K", "M", "first",
           "GB/s", "best", "GB/s", "#", "gain");
    for (int mi = 0; mi < 2; mi++)
        for (int ti = 0; ti < 3; ti++)
            for (int op = 0; op < 4; op++) {
                const struct model_shapes *md = &models[mi];
                const int tp = tps[ti];
                const int64_t h = md->hidden;
                int64_t n = 0, k = 0;
                int f32 = 0;
                const char *name = op == 0 ? "q|k|v" : op == 1 ? "o" : op == 2 ? "gate|up" : "down";
                if (op == 0)
                    n = (md->q + 2 * md->kv) / tp, k = h;
                else if (op == 1)
                    n = h, k = md->q / tp, f32 = tp > 1;
                else if (op == 2)
                    n = 2 * md->inter / tp, k = h;
                else
                    n = h, k = md->inter / tp, f32 = tp > 1;
                struct bench_gemm b = bench_setup(ctx, &pool, n, k, 128, 1);
                c.w = b.w, c.stride = b.stride, c.n_w = b.n_w, c.next = 0, c.x = b.x, c.out = b.out;
                for (int m_i = 0; m_i < 3; m_i++) {
                    const int m = ms[m_i];
                    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
                    const cudaDataType_t ot = f32 ? CUDA_R_32F : CUDA_R_16BF;
                    CHECK(cublasLtMatmulDescCreate(&c.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
                    CHECK(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t) ==
                          CUBLAS_STATUS_SUCCESS);
                    CHECK(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n) ==
                          CUBLAS_STATUS_SUCCESS);
                    CHECK(cublasLtMatrixLayoutCreate(&c.a, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, k) ==
                          CUBLAS_STATUS_SUCCESS);
                    CHECK(cublasLtMatrixLayoutCreate(&c.b, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k) ==
                          CUBLAS_STATUS_SUCCESS);
                    CHECK(cublasLtMatrixLayoutCreate(&c.c, ot, (uint64_t)n, (uint64_t)m, n) == CUBLAS_STATUS_SUCCESS);
                    cublasLtMatmulPreference_t pref;
                    CHECK(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
                    CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &c.ws_bytes, sizeof c.ws_bytes) ==
                          CUBLAS_STATUS_SUCCESS);
                    cublasLtMatmulHeuristicResult_t res[MAX_ALGOS];
                    int found = 0;
                    CHECK(cublasLtMatmulAlgoGetHeuristic(c.lt, c.desc, c.a, c.b, c.c, c.c, pref, MAX_ALGOS, res,
                                                         &found) == CUBLAS_STATUS_SUCCESS);
                    cublasLtMatmulPreferenceDestroy(pref);
                    double first = 0, best = 1e30;
                    int best_i = -1;
                    for (int i = 0; i < found; i++) {
                        if (res[i].state != CUBLAS_STATUS_SUCCESS)
                            continue;
                        c.algo = res[i].algo;
                        const double us = time_graph_us(ctx, lt_call_run, &c, c.n_w < 8 ? 8 : c.n_w, 10);
                        if (i == 0)
                            first = us;
                        if (us < best)
                            best = us, best_i = i;
                    }
                    const double gb = (double)(n * k) * 2 / 1e3;
                    printf("%-13s %2d %-8s %6lldx%-6lld %4d | %8.2f %6.0f | %8.2f %6.0f %4d | %4.2fx\n", md->name, tp,
                           name, (long long)n, (long long)k, m, first, gb / first, best, gb / best, best_i,
                           first / best);
                    fflush(stdout);
                    cublasLtMatrixLayoutDestroy(c.a), cublasLtMatrixLayoutDestroy(c.b);
                    cublasLtMatrixLayoutDestroy(c.c), cublasLtMatmulDescDestroy(c.desc);
                }
                bench_free(&b);
            }
    CHECK(cudaFree(c.ws) == cudaSuccess);
    cublasLtDestroy(c.lt);
    return 0;
}
