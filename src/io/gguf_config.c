/* GGUF metadata -> struct model_config (gguf_config.h). The keys are
 * llama.cpp's ("<arch>.embedding_length", ...); what GGUF does not record
 * for an architecture (Gemma 3's local RoPE base, its sliding-window
 * pattern, its attention scale) takes the value the architecture fixes, as
 * llama.cpp does. */
#include "io/gguf_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<arch>.<name>" */
static const char *key(const char *arch, const char *name)
{
    static char buf[160];
    snprintf(buf, sizeof buf, "%s.%s", arch, name);
    return buf;
}

static int get_pos_int(const struct gguf_file *f, const char *arch, const char *name, int *out, struct err *e)
{
    int64_t v;
    if (gguf_get_int(f, key(arch, name), &v, e))
        return -1;
    if (v < 1 || v > (1 << 30))
        return err_set(e, "%s: %s must be in [1, 2^30], got %lld", f->path, key(arch, name), (long long)v);
    *out = (int)v;
    return 0;
}

/* An optional key: leaves *out alone when absent. */
static int opt_int(const struct gguf_file *f, const char *arch, const char *name, int *out, struct err *e)
{
    return gguf_find_kv(f, key(arch, name)) ? get_pos_int(f, arch, name, out, e) : 0;
}

static int opt_float(const struct gguf_file *f, const char *arch, const char *name, double *out, struct err *e)
{
    if (!gguf_find_kv(f, key(arch, name)))
        return 0;
    if (gguf_get_float(f, key(arch, name), out, e))
        return -1;
    if (!isfinite(*out))
        return err_set(e, "%s: %s is not finite", f->path, key(arch, name));
    return 0;
}

/* RoPE scaling as llama.cpp's converter writes it: rope.scaling.type "linear"
 * with rope.scaling.factor (or "none"), or Llama 3's scaling as one factor
 * per frequency in tensor rope_freqs.weight (f32, head_dim / 2 of them, each
 * finite and positive). Any other scaling type is refused by name. */
static int rope_scaling(const struct gguf_file *f, const char *arch, struct model_config *c, struct err *e)
{
    if (gguf_find_kv(f, key(arch, "rope.scaling.type"))) {
        char *type = gguf_get_string(f, key(arch, "rope.scaling.type"), e);
        if (!type)
            return -1;
        int rc = 0;
        if (!strcmp(type, "linear")) {
            double factor = 0;
            if (opt_float(f, arch, "rope.scaling.factor", &factor, e))
                rc = -1;
            else if (!(factor >= 1 && factor <= 1e6))
                rc = err_set(e, "%s: %s is %g (a linear factor in [1, 1e6])", f->path, key(arch, "rope.scaling.factor"),
                             factor);
            else
                c->rope_global.type = ROPE_TYPE_LINEAR, c->rope_global.factor = factor;
        } else if (strcmp(type, "none")) {
            rc = err_set(e, "%s: %s '%s' is not supported (linear or none; Llama 3's scaling comes as rope_freqs.weight)",
                         f->path, key(arch, "rope.scaling.type"), type);
        }
        free(type);
        if (rc)
            return rc;
    }
    const struct gguf_tensor *t = gguf_find_tensor(f, "rope_freqs.weight");
    if (!t)
        return 0;
    const int pairs = c->head_dim / 2;
    if (t->type != GGML_TYPE_F32 || t->n_dims != 1 || t->dims[0] != pairs || pairs > ROPE_MAX_PAIRS)
        return err_set(e, "%s: tensor rope_freqs.weight is %s [%lld], not F32 [%d] (head_dim / 2)", f->path,
                       ggml_type_name(t->type), (long long)t->dims[0], pairs);
    if (c->rope_global.type != ROPE_TYPE_DEFAULT)
        return err_set(e, "%s: rope_freqs.weight and %s both scale RoPE", f->path, key(arch, "rope.scaling.type"));
    memcpy(c->rope_global.freq_factors, t->data, (size_t)pairs * sizeof(float));
    for (int i = 0; i < pairs; i++)
        if (!(c->rope_global.freq_factors[i] > 0 && c->rope_global.freq_factors[i] < 1e30f))
            return err_set(e, "%s: rope_freqs.weight[%d] is %g (a factor must be finite and positive)", f->path, i,
                           c->rope_global.freq_factors[i]);
    c->rope_global.type = ROPE_TYPE_FACTORS;
    return 0;
}

/* An optional token id: -1 when absent; an error when it is stored under a
 * type other than an integer or is not an id of the model's vocabulary. */
static int token_id(const struct gguf_file *f, const char *k, int vocab, int *out, struct err *e)
{
    int64_t v;
    *out = -1;
    if (!gguf_find_kv(f, k))
        return 0;
    if (gguf_get_token_id(f, k, &v, e))
        return -1;
    if (v < 0 || v >= vocab)
        return err_set(e, "%s: %s %lld is not a token id (the vocabulary has %d)", f->path, k, (long long)v, vocab);
    *out = (int)v;
    return 0;
}

static int arch_of(const char *name, enum model_arch *a)
{
    if (!strcmp(name, "llama"))
        *a = MODEL_ARCH_LLAMA;
    else if (!strcmp(name, "qwen3"))
        *a = MODEL_ARCH_QWEN3;
    else if (!strcmp(name, "gemma3"))
        *a = MODEL_ARCH_GEMMA3;
    else
        return -1;
    return 0;
}

/* Gemma 3: every sixth layer global, local RoPE base 10000, attention scale
 * query_pre_attn_scalar^-0.5 with the scalar = head_dim (the 270M, 1B, 4B
 * and 12B configs), embeddings times sqrt(hidden). */
static void gemma3_fixed(struct model_config *c)
{
    c->act = MODEL_ACT_GELU_TANH;
    c->qk_norm = 1;
    c->norm_plus_one = 1; /* the loader undoes the converter's folded +1 (gguf_checkpoint.c) */
    c->sandwich_norms = 1; /* tied embeddings unless the file has output.weight, as in llama.cpp */
    c->embed_scale = sqrt((double)c->hidden_size);
    c->rope_local = (struct rope_config){.type = ROPE_TYPE_DEFAULT, .theta = 10000.0};
    for (int i = 0; i < c->n_layers; i++)
        c->layer_sliding[i] = c->sliding_window > 0 && (i + 1) % 6 != 0;
    snprintf(c->arch_name, sizeof c->arch_name, "Gemma3ForCausalLM");
    snprintf(c->model_type, sizeof c->model_type, "gemma3_text");
}

int model_config_from_gguf(const struct gguf_file *f, struct model_config *c, struct err *e)
{
    memset(c, 0, sizeof *c);
    char *arch = gguf_get_string(f, "general.architecture", e);
    if (!arch)
        return -1;
    int rc = -1;
    if (arch_of(arch, &c->arch)) {
        err_set(e, "%s: general.architecture '%s' is not supported (llama, qwen3 or gemma3)", f->path, arch);
        goto done;
    }
    c->rms_norm_eps = 1e-6;
    c->rope_global = (struct rope_config){.type = ROPE_TYPE_DEFAULT, .theta = 10000.0};
    if (get_pos_int(f, arch, "embedding_length", &c->hidden_size, e) ||
        get_pos_int(f, arch, "block_count", &c->n_layers, e) ||
        get_pos_int(f, arch, "feed_forward_length", &c->intermediate_size, e) ||
        get_pos_int(f, arch, "attention.head_count", &c->n_heads, e) ||
        get_pos_int(f, arch, "context_length", &c->max_positions, e))
        goto done;
    c->n_kv_heads = c->n_heads;
    c->head_dim = c->hidden_size / c->n_heads;
    int v_len = 0;
    double eps = c->rms_norm_eps;
    if (opt_int(f, arch, "attention.head_count_kv", &c->n_kv_heads, e) ||
        opt_int(f, arch, "attention.key_length", &c->head_dim, e) ||
        opt_int(f, arch, "attention.value_length", &v_len, e) ||
        opt_float(f, arch, "attention.layer_norm_rms_epsilon", &eps, e) ||
        opt_float(f, arch, "rope.freq_base", &c->rope_global.theta, e) ||
        opt_int(f, arch, "attention.sliding_window", &c->sliding_window, e))
        goto done;
    c->rms_norm_eps = eps;
    if (c->n_layers > MODEL_MAX_LAYERS) {
        err_set(e, "%s: %s is %d, at most %d layers are supported", f->path, key(arch, "block_count"),
                c->n_layers, MODEL_MAX_LAYERS);
        goto done;
    }
    if (v_len && v_len != c->head_dim) {
        err_set(e, "%s: %s %d differs from %s %d (not supported)", f->path, key(arch, "attention.value_length"),
                v_len, key(arch, "attention.key_length"), c->head_dim);
        goto done;
    }
    if (c->n_heads % c->n_kv_heads) {
        err_set(e, "%s: %d heads are not a multiple of %d kv heads", f->path, c->n_heads, c->n_kv_heads);
        goto done;
    }
    if (rope_scaling(f, arch, c, e))
        goto done;
    const struct gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
    if (!emb || emb->n_dims != 2 || emb->dims[0] != c->hidden_size) {
        err_set(e, "%s: token_embd.weight is missing or not [%d, vocab]", f->path, c->hidden_size);
        goto done;
    }
    c->vocab_size = (int)emb->dims[1];
    c->tie_embeddings = gguf_find_tensor(f, "output.weight") == NULL;
    c->embed_scale = 1.0;
    c->attn_scale = 1.0 / sqrt((double)c->head_dim);
    c->act = MODEL_ACT_SILU;
    c->bos_id = -1;
    c->initializer_range = 0.02;
    if (c->arch == MODEL_ARCH_GEMMA3) {
        gemma3_fixed(c);
    } else {
        c->qk_norm = c->arch == MODEL_ARCH_QWEN3;
        c->sliding_window = 0;
        snprintf(c->arch_name, sizeof c->arch_name, "%s",
                 c->arch == MODEL_ARCH_QWEN3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM");
        snprintf(c->model_type, sizeof c->model_type, "%s", arch);
    }
    int bos, eos, eot;
    if (token_id(f, "tokenizer.ggml.bos_token_id", c->vocab_size, &bos, e) ||
        token_id(f, "tokenizer.ggml.eos_token_id", c->vocab_size, &eos, e) ||
        token_id(f, "tokenizer.ggml.eot_token_id", c->vocab_size, &eot, e))
        goto done;
    c->bos_id = bos;
    if (eos >= 0)
        c->eos_ids[c->n_eos++] = eos;
    if (eot >= 0 && eot != eos)
        c->eos_ids[c->n_eos++] = eot;
    /* Gemma's chat turns end with <end_of_turn>, which its GGUF files do not
     * list among the end tokens (llama.cpp adds it the same way) */
    const struct gguf_kv *toks = gguf_find_kv(f, "tokenizer.ggml.tokens");
    if (c->arch == MODEL_ARCH_GEMMA3 && toks && toks->type == GGUF_TYPE_ARRAY && toks->arr_type == GGUF_TYPE_STRING)
        for (uint64_t i = 0; i < toks->arr_n && c->n_eos < MODEL_MAX_EOS; i++)
            if (toks->arr_strs[i].len == 13 && !memcmp(toks->arr_strs[i].s, "<end_of_turn>", 13)) {
                c->eos_ids[c->n_eos++] = (int)i;
                break;
            }
    rc = 0;
done:
    free(arch);
    return rc;
}
