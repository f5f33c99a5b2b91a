/* A GGUF file as a checkpoint (gguf_checkpoint.h): every tensor under its
 * Hugging Face name, in Hugging Face's layout:
 * - shapes: ggml lists the contiguous dimension first, so [cols, rows]
 *   becomes [rows, cols] (the bytes do not move);
 * - matrices are kept as the file has them, pointing into its mapping, when
 *   the caller asks (a backend that takes block types) and their rows are
 *   whole blocks; else dequantised to bf16 (the engine's weight dtype) into
 *   one anonymous mapping, with the vectors (norms), which are always f32;
 * - Gemma: llama.cpp's converter stores RMSNorm weights with the +1 that
 *   Gemma's norm applies folded in; we subtract it again (exact: the
 *   original weights were bf16) and keep the model's (1 + w);
 * - Llama: the converter permutes the rows of q and k within each head
 *   (half-split RoPE pairs to adjacent pairs, for ggml's RoPE); we put
 *   them back. Its rope_freqs.weight (Llama 3's RoPE scaling) is read
 *   into the config, not loaded as a weight. */
#include "io/gguf_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "io/gguf_quant.h"

/* GGUF tensor name -> Hugging Face name ("model.layers.N.<suffix>"). */
static const struct {
    const char *gguf, *hf_gemma, *hf_other;
} layer_names[] = {
    {"attn_norm.weight", "input_layernorm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight", "self_attn.k_norm.weight"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight", NULL},
    /* the MLP's input norm: Gemma's pre_feedforward_layernorm, Llama's and Qwen's post_attention_layernorm */
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight", "post_attention_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight", NULL},
    {"ffn_gate.weight", "mlp.gate_proj.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight", "mlp.down_proj.weight"},
};

/* The Hugging Face name of GGUF tensor name (malloc'd), or NULL. */
static char *hf_name(const char *name, enum model_arch arch)
{
    if (!strcmp(name, "token_embd.weight"))
        return xstrdup("model.embed_tokens.weight");
    if (!strcmp(name, "output_norm.weight"))
        return xstrdup("model.norm.weight");
    if (!strcmp(name, "output.weight"))
        return xstrdup("lm_head.weight");
    int layer, at = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &at) != 1 || at == 0 || layer < 0)
        return NULL;
    for (size_t i = 0; i < sizeof layer_names / sizeof layer_names[0]; i++)
        if (!strcmp(name + at, layer_names[i].gguf)) {
            const char *hf = arch == MODEL_ARCH_GEMMA3 ? layer_names[i].hf_gemma : layer_names[i].hf_other;
            if (!hf)
                return NULL;
            char buf[160];
            snprintf(buf, sizeof buf, "model.layers.%d.%s", layer, hf);
            return xstrdup(buf);
        }
    return NULL;
}

static int is_norm(const char *gguf_name)
{
    size_t n = strlen(gguf_name);
    return n > 12 && !strcmp(gguf_name + n - 12, "_norm.weight");
}

/* Llama: rows r of head h were written at h*D + 2*(r % (D/2)) + r / (D/2);
 * moves them back (rows of row_bytes, n_heads heads of D rows). */
static void unpermute_rows(char *w, int64_t rows, size_t row_bytes, int n_heads)
{
    const int64_t D = rows / n_heads, half = D / 2;
    char *tmp = xmalloc((size_t)D * row_bytes);
    for (int h = 0; h < n_heads; h++) {
        char *head = w + (size_t)(h * D) * row_bytes;
        for (int64_t r = 0; r < D; r++) /* GGUF row 2i + j holds HF row j*half + i */
            memcpy(tmp + (size_t)((r % 2) * half + r / 2) * row_bytes, head + (size_t)r * row_bytes, row_bytes);
        memcpy(head, tmp, (size_t)D * row_bytes);
    }
    free(tmp);
}

/* Llama's q and k, whose rows the converter permuted (n_heads of them), or 0. */
static int permuted_heads(const char *gname, const struct model_config *cfg)
{
    const size_t n = strlen(gname);
    if (cfg->arch != MODEL_ARCH_LLAMA || n <= 13)
        return 0;
    return !strcmp(gname + n - 13, "attn_q.weight")   ? cfg->n_heads
           : !strcmp(gname + n - 13, "attn_k.weight") ? cfg->n_kv_heads
                                                       : 0;
}

enum plan_how {
    PLAN_DEQUANT, /* to f32 (vectors) or bf16 (matrices) in the arena */
    PLAN_KEEP,    /* as the file has it, in the file's mapping */
    PLAN_COPY,    /* as the file has it, copied into the arena (rows to unpermute) */
};

struct plan {
    const struct gguf_tensor *src;
    char *name;
    int is_vector;
    enum plan_how how;
    enum dtype dtype;
    size_t offset, bytes;
};

/* Puts tensor p in place (base + p->offset unless kept) and fixes its layout. */
static int convert(const struct gguf_file *f, const struct model_config *cfg, const struct plan *p, char *base,
                   struct st_tensor *t, struct err *e)
{
    const struct gguf_tensor *g = p->src;
    void *dst = p->how == PLAN_KEEP ? (void *)g->data : base + p->offset;
    int rc = 0;
    if (p->how == PLAN_COPY)
        memcpy(dst, g->data, p->bytes);
    else if (p->how == PLAN_DEQUANT)
        rc = p->is_vector ? gguf_dequant_f32(g->type, g->data, g->numel, dst, e)
                          : gguf_dequant_bf16(g->type, g->data, g->numel, dst, e);
    if (rc)
        return err_prefix(e, "%s: tensor %.*s", f->path, (int)g->name.len, g->name.s);
    char gname[128];
    snprintf(gname, sizeof gname, "%.*s", (int)g->name.len, g->name.s);
    if (p->is_vector && cfg->arch == MODEL_ARCH_GEMMA3 && is_norm(gname))
        for (int64_t i = 0; i < g->numel; i++)
            ((float *)dst)[i] -= 1.0f;
    const int64_t rows = g->n_dims == 2 ? g->dims[1] : g->dims[0], cols = g->dims[0];
    const int heads = g->n_dims == 2 ? permuted_heads(gname, cfg) : 0;
    if (heads) {
        CHECK(p->how != PLAN_KEEP);
        unpermute_rows(dst, rows, dtype_row_bytes(p->dtype, cols), heads);
    }
    *t = (struct st_tensor){.name = p->name, .dtype = p->dtype, .ndim = g->n_dims, .numel = g->numel,
                            .data = dst, .nbytes = p->bytes};
    if (g->n_dims == 2)
        t->shape[0] = rows, t->shape[1] = cols;
    else
        t->shape[0] = g->dims[0];
    return 0;
}

/* How tensor g goes in (keep_blocks: the caller's backend takes block types). */
static void plan_tensor(struct plan *p, const struct model_config *cfg, int keep_blocks)
{
    const struct gguf_tensor *g = p->src;
    char gname[128];
    snprintf(gname, sizeof gname, "%.*s", (int)g->name.len, g->name.s);
    enum dtype dt;
    const int keep = keep_blocks && !p->is_vector && gguf_type_dtype(g->type, &dt) &&
                     g->dims[0] % dtype_block_elems(dt) == 0;
    if (keep) {
        p->how = permuted_heads(gname, cfg) ? PLAN_COPY : PLAN_KEEP;
        p->dtype = dt;
        p->bytes = dtype_row_bytes(dt, g->dims[0]) * (size_t)g->dims[1];
    } else {
        p->how = PLAN_DEQUANT;
        p->dtype = p->is_vector ? DTYPE_F32 : DTYPE_BF16;
        p->bytes = (size_t)g->numel * dtype_size(p->dtype);
    }
}

struct checkpoint *checkpoint_open_gguf(struct gguf_file *f, const struct model_config *cfg, int keep_blocks,
                                        struct err *e)
{
    struct plan *plan = xcalloc((size_t)f->n_tensors + 1, sizeof *plan);
    size_t total = 0;
    int n = 0;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        const struct gguf_tensor *g = &f->tensors[i];
        char gname[128];
        snprintf(gname, sizeof gname, "%.*s", (int)g->name.len, g->name.s);
        if (!strcmp(gname, "rope_freqs.weight"))
            continue; /* Llama 3's RoPE factors: the config's (gguf_config.c), no weight */
        char *name = hf_name(gname, cfg->arch);
        const char *why = !name                           ? "has no counterpart in this architecture"
                          : g->n_dims > 2                   ? "has more than 2 dims"
                          : !gguf_quant_supported(g->type) ? "has a type that is not supported"
                                                            : NULL;
        if (why) {
            err_set(e, "%s: tensor %s (%s) %s (%s)", f->path, gname, ggml_type_name(g->type), why,
                    cfg->arch_name);
            free(name);
            goto fail;
        }
        plan[n] = (struct plan){.src = g, .name = name, .is_vector = g->n_dims == 1};
        plan_tensor(&plan[n], cfg, keep_blocks);
        plan[n].offset = total;
        if (plan[n].how != PLAN_KEEP)
            total += (plan[n].bytes + 255) & ~(size_t)255;
        n++;
    }
    void *arena = mmap(NULL, total ? total : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arena == MAP_FAILED) {
        err_set(e, "%s: no memory for %zu bytes of dequantised weights", f->path, total);
        goto fail;
    }
    struct st_file *sf = xcalloc(1, sizeof *sf);
    sf->path = xstrdup(f->path);
    sf->map = arena; /* st_close unmaps it */
    sf->map_size = total ? total : 1;
    int kept = 0;
    for (int i = 0; i < n; i++)
        kept |= plan[i].how == PLAN_KEEP;
    if (kept) /* tensors point into the file's mapping: it lives as long as they do */
        sf->map2 = gguf_take_map(f, &sf->map2_size);
    sf->tensors = xcalloc((size_t)n + 1, sizeof *sf->tensors);
    for (int i = 0; i < n; i++) {
        if (convert(f, cfg, &plan[i], arena, &sf->tensors[i], e)) {
            for (int j = i; j < n; j++)
                free(plan[j].name);
            sf->n_tensors = i;
            st_close(sf);
            free(plan);
            return NULL;
        }
        sf->tensors[i].file = sf;
        sf->n_tensors = i + 1;
    }
    free(plan);
    return checkpoint_wrap(f->path, sf, e);
fail:
    for (int j = 0; j < n; j++)
        free(plan[j].name);
    free(plan);
    return NULL;
}
