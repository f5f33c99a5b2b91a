/* Whole-model checks on the GPU: the tiny fixture models of the three
 * architectures scored through the engine (engine_score: prefill in chunks
 * through the paged cache, then decode steps, full CUDA graphs on the GPU)
 * on CUDA and on the CPU reference; logits agree within bf16 tolerance.
 * And no device memory is allocated by steps: runs with more steps
 * allocate exactly as much as runs with fewer (start-up alone). */
#include <math.h>
#include <stdlib.h>

#include "engine/score.h"
#include "gpu_test.h"
#include "model/model.h"

long cuda_backend_device_allocs(const struct backend *be);

static const char *fixture(const char *name)
{
    static char buf[512];
    const char *root = getenv("INFER_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/fixtures/%s", root ? root : ".", name);
    return buf;
}

/* Logits of every position: prompt rows from chunked prefill, then decode
 * rows; *allocs: cudaMalloc calls during the run (CUDA only). */
static int run_model(struct backend *be, const char *name, const int32_t *ids, int n, int prefill,
                     float *logits, long *allocs, char *msg, size_t msg_size)
{
    struct err e = {{0}};
    struct model *m = model_load(fixture(name), be, &e);
    const int cuda = be->ops->graph_begin != NULL;
    struct engine_opts o = engine_opts_default();
    o.max_batched_tokens = 16;
    o.block_size = 4;
    o.max_seqs = 1;
    o.max_context = n + 1;
    o.graph.mode = cuda ? GRAPH_MODE_FULL : GRAPH_MODE_NONE;
    const long before = cuda ? cuda_backend_device_allocs(be) : 0;
    int rc = !m || engine_score(m, &o, ids, n, prefill, logits, &e);
    if (allocs)
        *allocs = cuda ? cuda_backend_device_allocs(be) - before : 0;
    if (rc)
        snprintf(msg, msg_size, "%s: %.400s", name, e.msg);
    model_free(m);
    return rc;
}

static int check_arch(struct gpu_ctx *ctx, const char *name, int vocab)
{
    enum { N = 60, PREFILL = 44 };
    int32_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = (int32_t)(rng_next(&ctx->rng) % (uint64_t)vocab);
    float *cpu = malloc((size_t)N * vocab * sizeof(float)), *gpu = malloc((size_t)N * vocab * sizeof(float));
    long allocs_few = -1, allocs_many = -1;
    if (run_model(ctx->cpu, name, ids, N, PREFILL, cpu, NULL, ctx->msg, sizeof ctx->msg)) {
        free(cpu), free(gpu);
        return 1;
    }
    /* a fresh CUDA backend: the model reserves its own regions */
    struct err e = {{0}};
    struct backend *be = backend_create(BACKEND_KIND_CUDA, 0, &e);
    int rc = run_model(be, name, ids, N, PREFILL, gpu, &allocs_few, ctx->msg, sizeof ctx->msg);
    float *again = malloc((size_t)N * vocab * sizeof(float));
    rc = rc ||
         run_model(be, name, ids, N, 8, again, &allocs_many, ctx->msg, sizeof ctx->msg); /* 52 decode steps */
    free(again);
    backend_free(be);
    double worst = 0;
    int agree = 0;
    for (int t = 0; t < N && !rc; t++) {
        const float *a = gpu + (size_t)t * vocab, *b = cpu + (size_t)t * vocab;
        double err = gpu_rel_err(a, b, (size_t)vocab);
        worst = err > worst ? err : worst;
        int ia = 0, ib = 0;
        for (int v = 1; v < vocab; v++) {
            ia = a[v] > a[ia] ? v : ia;
            ib = b[v] > b[ib] ? v : ib;
        }
        agree += ia == ib;
    }
    free(cpu), free(gpu);
    if (rc)
        return 1;
    printf("    %s: max rel err %.3g over %d rows, argmax agrees on %d/%d, device allocations per run %ld "
           "(16 decode steps) and %ld (52)\n",
           name, worst, N, agree, N, allocs_few, allocs_many);
    if (worst > 3e-2)
        GPU_FAIL("%s: rel err %.3g > 3e-2", name, worst);
    if (allocs_many != allocs_few)
        GPU_FAIL("%s: %ld cudaMalloc calls in a run of 52 decode steps, %ld in one of 16: steps allocate",
                 name, allocs_many, allocs_few);
    return 0;
}

GPU_TEST(model_tiny_llama_matches_cpu) { return check_arch(ctx, "tiny-llama", 1024); }
GPU_TEST(model_tiny_qwen3_matches_cpu) { return check_arch(ctx, "tiny-qwen3", 1024); }
GPU_TEST(model_tiny_gemma3_matches_cpu) { return check_arch(ctx, "tiny-gemma3", 1024); }
