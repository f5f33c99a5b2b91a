/* Golden parity: the CPU forward pass (the reference backend, and the fast
 * one) against Hugging Face transformers.
 *
 * tests/fixtures/tiny-<arch>/golden.safetensors holds transformers' float32,
 * eager-attention logits (tools/make_golden.py) for a 48-token prompt and 8
 * greedy decode steps. The engine prefills the prompt through the paged
 * cache (in chunks of 16, blocks of 8), then is fed the same decode tokens
 * one at a time (engine_score: the path `infer logits` runs).
 *
 * Error measure, per logits row: max_i |ours_i - hf_i| / max_i |hf_i|.
 * Bound: 1e-3. In practice the reference backend is within ~1e-6 (both
 * sides fp32 from the same bf16 weights), the fast one within 6-9e-4 (its
 * f16 KV cache, other sum orders). Greedy tokens must agree too. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/score.h"
#include "io/safetensors.h"
#include "test_util.h"

#define MAX_REL_ERR 1e-3

static const struct st_tensor *need(const struct st_file *f, const char *name, enum dtype dtype)
{
    const struct st_tensor *t = st_find(f, name);
    cr_assert(t, "%s: no tensor '%s'", f->path, name);
    cr_assert_eq(t->dtype, dtype, "%s: tensor '%s' has the wrong dtype", f->path, name);
    return t;
}

static void check_golden_on(const char *fixture, enum backend_kind kind, int fused)
{
    struct backend *be;
    struct model *m = test_load_model_on(fixture, kind, fused, &be);
    const int V = m->cfg.vocab_size;
    char path[4200];
    snprintf(path, sizeof path, "%s/golden.safetensors", fixture_path(fixture));
    struct err e = {{0}};
    struct st_file *g = st_open(path, &e);
    cr_assert(g, "%s", e.msg);
    const struct st_tensor *pid = need(g, "prompt_ids", DTYPE_I32), *did = need(g, "decode_ids", DTYPE_I32),
                           *pl = need(g, "prompt_logits", DTYPE_F32), *dl = need(g, "decode_logits", DTYPE_F32);
    const int P = (int)pid->numel, S = (int)did->numel;
    cr_assert(P >= 40 && S >= 8, "golden must cover >= 40 prompt tokens and >= 8 decode steps");
    cr_assert_eq(pl->numel, (int64_t)P * V);
    cr_assert_eq(dl->numel, (int64_t)S * V);
    const int32_t *prompt = pid->data, *decode = did->data;

    struct engine_opts o = engine_opts_default();
    o.max_batched_tokens = 16;
    o.block_size = 8;
    o.max_context = P + S + 1;
    o.max_seqs = 1;
    int32_t *ids = malloc((size_t)(P + S) * sizeof(int32_t));
    memcpy(ids, prompt, (size_t)P * sizeof(int32_t));
    memcpy(ids + P, decode, (size_t)S * sizeof(int32_t));
    float *logits = malloc((size_t)(P + S) * V * sizeof(float));
    cr_assert_eq(engine_score(m, &o, ids, P + S, P, logits, &e), 0, "%s", e.msg);
    double worst = 0;
    for (int t = 0; t < P + S; t++) {
        const float *want = t < P ? (const float *)pl->data + (size_t)t * V : (const float *)dl->data + (size_t)(t - P) * V;
        double err = max_rel_err(logits + (size_t)t * V, want, V);
        worst = err > worst ? err : worst;
        cr_assert(err <= MAX_REL_ERR, "%s: %s %d: rel err %.3g > %g", fixture, t < P ? "prompt position" : "decode step",
                  t < P ? t : t - P, err, MAX_REL_ERR);
        /* the greedy token after position t is transformers' next decode token */
        if (t >= P - 1 && t + 1 < P + S) {
            int best = 0;
            for (int v = 1; v < V; v++)
                best = logits[(size_t)t * V + v] > logits[(size_t)t * V + best] ? v : best;
            cr_assert_eq(best, decode[t + 1 - P], "%s: greedy token after position %d: %d, transformers %d", fixture,
                         t, best, decode[t + 1 - P]);
        }
    }
    cr_log_info("%s on %s%s: max relative error over %d prompt rows and %d decode steps: %.3g", fixture,
                be->ops->name, fused ? " (fused q|k|v, gate|up)" : "", P, S, worst);
    free(logits);
    free(ids);
    st_close(g);
    test_free_model(m, be);
}

static void check_golden(const char *fixture, int fused) { check_golden_on(fixture, BACKEND_KIND_CPU_REFERENCE, fused); }

Test(golden, llama_matches_transformers) { check_golden("tiny-llama", 0); }
Test(golden, qwen3_matches_transformers) { check_golden("tiny-qwen3", 0); }
Test(golden, gemma3_matches_transformers) { check_golden("tiny-gemma3", 0); }
/* the forward pass's fused-weight branches (what the CUDA backend runs) */
Test(golden, llama_fused_weights_match_transformers) { check_golden("tiny-llama", 1); }
Test(golden, qwen3_fused_weights_match_transformers) { check_golden("tiny-qwen3", 1); }
Test(golden, gemma3_fused_weights_match_transformers) { check_golden("tiny-gemma3", 1); }
/* the fast CPU backend (backend/cpu_fast) on the same bf16 weights: f32 products in another order */
Test(golden, llama_fast_cpu_matches_transformers) { check_golden_on("tiny-llama", BACKEND_KIND_CPU, 0); }
Test(golden, qwen3_fast_cpu_matches_transformers) { check_golden_on("tiny-qwen3", BACKEND_KIND_CPU, 0); }
Test(golden, gemma3_fast_cpu_matches_transformers) { check_golden_on("tiny-gemma3", BACKEND_KIND_CPU, 0); }
