/* Whole-model checks on the GPU: the tiny fixture models of the three
 * architectures run on CUDA and on the CPU reference (prefill in chunks
 * through the paged cache, then decode steps); logits agree within bf16
 * tolerance, and no device memory is allocated once start-up is over. */
#include <math.h>
#include <stdlib.h>

#include "engine/seq_runner.h"
#include "gpu_test.h"

long cuda_backend_device_allocs(const struct backend *be);

static const char *fixture(const char *name)
{
    static char buf[512];
    const char *root = getenv("INFER_ROOT");
    snprintf(buf, sizeof buf, "%s/tests/fixtures/%s", root ? root : ".", name);
    return buf;
}

/* Logits of every position: prompt rows from chunked prefill, then decode rows. */
static int run_model(struct backend *be, const char *name, const int32_t *ids, int n, int prefill, float *logits,
                     long *allocs_during_steps, char *msg, size_t msg_size)
{
    struct err e = {{0}};
    struct model *m = model_load(fixture(name), be, &e);
    struct seq_runner r;
    if (!m || seq_runner_init(&r, m, n, 16, 16, 4, &e)) {
        snprintf(msg, msg_size, "%s: %.400s", name, e.msg);
        model_free(m);
        return 1;
    }
    const int V = m->cfg.vocab_size;
    long before = be->ops->name[0] == 'c' && be->ops->name[1] == 'u' ? cuda_backend_device_allocs(be) : 0;
    int rc = seq_runner_feed(&r, ids, prefill, 1, logits, NULL, &e);
    for (int i = prefill; i < n && !rc; i++)
        rc = seq_runner_feed(&r, ids + i, 1, 1, logits + (size_t)i * V, NULL, &e);
    if (allocs_during_steps)
        *allocs_during_steps = cuda_backend_device_allocs(be) - before;
    if (rc)
        snprintf(msg, msg_size, "%s: %.400s", name, e.msg);
    seq_runner_free(&r);
    model_free(m);
    return rc ? 1 : 0;
}

static int check_arch(struct gpu_ctx *ctx, const char *name, int vocab)
{
    enum { N = 60, PREFILL = 44 };
    int32_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = (int32_t)(rng_next(&ctx->rng) % (uint64_t)vocab);
    float *cpu = malloc((size_t)N * vocab * sizeof(float)), *gpu = malloc((size_t)N * vocab * sizeof(float));
    long allocs = -1;
    if (run_model(ctx->cpu, name, ids, N, PREFILL, cpu, NULL, ctx->msg, sizeof ctx->msg)) {
        free(cpu), free(gpu);
        return 1;
    }
    /* a fresh CUDA backend: the model reserves its own regions */
    struct err e = {{0}};
    struct backend *be = backend_create(BACKEND_KIND_CUDA, 0, &e);
    int rc = run_model(be, name, ids, N, PREFILL, gpu, &allocs, ctx->msg, sizeof ctx->msg);
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
    printf("    %s: max rel err %.3g over %d rows, argmax agrees on %d/%d, device allocations during steps %ld\n",
           name, worst, N, agree, N, allocs);
    if (worst > 3e-2)
        GPU_FAIL("%s: rel err %.3g > 3e-2", name, worst);
    if (allocs != 0)
        GPU_FAIL("%s: %ld cudaMalloc calls after start-up", name, allocs);
    return 0;
}

GPU_TEST(model_tiny_llama_matches_cpu) { return check_arch(ctx, "tiny-llama", 1024); }
GPU_TEST(model_tiny_qwen3_matches_cpu) { return check_arch(ctx, "tiny-qwen3", 1024); }
GPU_TEST(model_tiny_gemma3_matches_cpu) { return check_arch(ctx, "tiny-gemma3", 1024); }
