/* config.json parsing. Each architecture's defaults follow the matching
 * transformers configuration class, so a field left out means what it means
 * there. */
#include "io/model_config.h"

#include "core/fs.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cfg_ctx {
    json_t *root;
    const char *source;
    struct err *e;
};

const char *model_arch_name(enum model_arch a)
{
    switch (a) {
    case MODEL_ARCH_LLAMA: return "llama";
    case MODEL_ARCH_QWEN3: return "qwen3";
    case MODEL_ARCH_GEMMA3: return "gemma3";
    }
    return "?";
}

static int field_err(struct cfg_ctx *c, const char *field, const char *what)
{
    return err_set(c->e, "%s: field '%s' %s", c->source, field, what);
}

/* Optional integer: absent or null gives def. */
static int get_int(struct cfg_ctx *c, json_t *obj, const char *field, long long def, long long lo,
                   long long hi, long long *out)
{
    json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
        fabs(json_real_value(v)) < 9e15) {
        *out = (long long)json_real_value(v);
    } else if (json_is_integer(v)) {
        *out = json_integer_value(v);
    } else {
        return field_err(c, field, "must be an integer");
    }
    if (*out < lo || *out > hi) {
        char msg[128];
        snprintf(msg, sizeof msg, "is %lld, outside [%lld, %lld]", *out, lo, hi);
        return field_err(c, field, msg);
    }
    return 0;
}

static int get_required_int(struct cfg_ctx *c, json_t *obj, const char *field, long long lo,
                            long long hi, int *out)
{
    json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v))
        return field_err(c, field, "is required");
    long long x;
    if (get_int(c, obj, field, 0, lo, hi, &x))
        return -1;
    *out = (int)x;
    return 0;
}

static int get_double(struct cfg_ctx *c, json_t *obj, const char *field, double def, double *out)
{
    json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v))
        return field_err(c, field, "must be a number");
    *out = json_number_value(v);
    if (!isfinite(*out))
        return field_err(c, field, "must be finite");
    return 0;
}

static int get_bool(struct cfg_ctx *c, json_t *obj, const char *field, int def, int *out)
{
    json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return field_err(c, field, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

static const char *get_string(json_t *obj, const char *field)
{
    json_t *v = json_object_get(obj, field);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Reads one RoPE description: either a legacy rope_scaling object (theta
 * given separately) or a rope_parameters entry that carries rope_theta. */
static int parse_rope(struct cfg_ctx *c, json_t *obj, const char *field, double theta_default,
                      struct rope_config *r)
{
    memset(r, 0, sizeof *r);
    r->type = ROPE_TYPE_DEFAULT;
    r->theta = theta_default;
    r->factor = 1.0;
    if (!obj || json_is_null(obj))
        return 0;
    if (!json_is_object(obj))
        return field_err(c, field, "must be an object or null");
    if (get_double(c, obj, "rope_theta", theta_default, &r->theta))
        return -1;
    const char *type = get_string(obj, "rope_type");
    if (!type)
        type = get_string(obj, "type");
    if (!type || !strcmp(type, "default"))
        return 0;
    if (!strcmp(type, "linear")) {
        r->type = ROPE_TYPE_LINEAR;
        if (get_double(c, obj, "factor", 1.0, &r->factor))
            return -1;
    } else if (!strcmp(type, "llama3")) {
        r->type = ROPE_TYPE_LLAMA3;
        const char *need[] = {"factor", "low_freq_factor", "high_freq_factor",
                              "original_max_position_embeddings"};
        double *dst[] = {&r->factor, &r->low_freq_factor, &r->high_freq_factor,
                         &r->original_max_positions};
        for (int i = 0; i < 4; i++) {
            if (!json_is_number(json_object_get(obj, need[i]))) {
                char f[128];
                snprintf(f, sizeof f, "%s.%s", field, need[i]);
                return field_err(c, f, "is required for rope_type llama3 and must be a number");
            }
            *dst[i] = json_number_value(json_object_get(obj, need[i]));
        }
        if (r->high_freq_factor <= r->low_freq_factor)
            return field_err(c, field, "needs high_freq_factor > low_freq_factor");
    } else {
        char msg[160];
        snprintf(msg, sizeof msg, "has rope_type '%s', which is not supported (default, linear, llama3 are)",
                 type);
        return field_err(c, field, msg);
    }
    if (!(r->factor > 0))
        return field_err(c, field, "needs factor > 0");
    return 0;
}

static int parse_arch(struct cfg_ctx *c, struct model_config *cfg)
{
    const char *arch = NULL;
    json_t *archs = json_object_get(c->root, "architectures");
    if (json_is_array(archs) && json_array_size(archs) > 0)
        arch = json_string_value(json_array_get(archs, 0));
    const char *mt = get_string(c->root, "model_type");
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", mt ? mt : "");
    if (!arch) {
        if (!mt)
            return err_set(c->e, "%s: neither 'architectures' nor 'model_type' is set", c->source);
        arch = !strcmp(mt, "llama")         ? "LlamaForCausalLM"
               : !strcmp(mt, "qwen3")       ? "Qwen3ForCausalLM"
               : !strcmp(mt, "gemma3_text") ? "Gemma3ForCausalLM"
                                            : mt;
    }
    snprintf(cfg->arch_name, sizeof cfg->arch_name, "%s", arch);
    if (!strcmp(arch, "LlamaForCausalLM"))
        cfg->arch = MODEL_ARCH_LLAMA;
    else if (!strcmp(arch, "Qwen3ForCausalLM"))
        cfg->arch = MODEL_ARCH_QWEN3;
    else if (!strcmp(arch, "Gemma3ForCausalLM"))
        cfg->arch = MODEL_ARCH_GEMMA3;
    else if (!strcmp(arch, "Gemma3ForConditionalGeneration"))
        return err_set(c->e,
                       "%s: architecture Gemma3ForConditionalGeneration (text + vision) is not "
                       "supported; use a text-only Gemma3ForCausalLM checkpoint",
                       c->source);
    else
        return err_set(c->e,
                       "%s: architecture '%s' is not supported (LlamaForCausalLM, "
                       "Qwen3ForCausalLM, Gemma3ForCausalLM are)",
                       c->source, arch);
    return 0;
}

static int parse_dims(struct cfg_ctx *c, struct model_config *cfg)
{
    json_t *r = c->root;
    long long x;
    if (get_required_int(c, r, "vocab_size", 1, 1 << 24, &cfg->vocab_size) ||
        get_required_int(c, r, "hidden_size", 1, 1 << 16, &cfg->hidden_size) ||
        get_required_int(c, r, "intermediate_size", 1, 1 << 20, &cfg->intermediate_size) ||
        get_required_int(c, r, "num_hidden_layers", 1, MODEL_MAX_LAYERS, &cfg->n_layers) ||
        get_required_int(c, r, "num_attention_heads", 1, 1024, &cfg->n_heads))
        return -1;
    if (get_int(c, r, "num_key_value_heads", cfg->n_heads, 1, 1024, &x))
        return -1;
    cfg->n_kv_heads = (int)x;
    if (cfg->n_heads % cfg->n_kv_heads)
        return field_err(c, "num_key_value_heads", "must divide num_attention_heads");
    long long head_default = cfg->arch == MODEL_ARCH_GEMMA3 ? 256 : cfg->hidden_size / cfg->n_heads;
    if (get_int(c, r, "head_dim", head_default, 2, 1024, &x))
        return -1;
    cfg->head_dim = (int)x;
    if (cfg->head_dim % 2)
        return field_err(c, "head_dim", "must be even (RoPE rotates pairs)");
    if (get_int(c, r, "max_position_embeddings", 2048, 1, 1 << 30, &x))
        return -1;
    cfg->max_positions = (int)x;
    if (get_double(c, r, "rms_norm_eps", 1e-6, &cfg->rms_norm_eps) ||
        get_double(c, r, "initializer_range", 0.02, &cfg->initializer_range))
        return -1;
    if (!(cfg->rms_norm_eps > 0))
        return field_err(c, "rms_norm_eps", "must be > 0");
    return 0;
}

static int parse_token_ids(struct cfg_ctx *c, struct model_config *cfg)
{
    long long x;
    if (get_int(c, c->root, "bos_token_id", -1, -1, cfg->vocab_size - 1, &x))
        return -1;
    cfg->bos_id = (int)x;
    json_t *eos = json_object_get(c->root, "eos_token_id");
    cfg->n_eos = 0;
    if (json_is_integer(eos)) {
        eos = json_pack("[O]", eos);
    } else if (json_is_array(eos)) {
        json_incref(eos);
    } else if (!eos || json_is_null(eos)) {
        return 0;
    } else {
        return field_err(c, "eos_token_id", "must be an integer or a list of integers");
    }
    size_t i;
    json_t *v;
    int rc = 0;
    json_array_foreach(eos, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= cfg->vocab_size || cfg->n_eos == MODEL_MAX_EOS) {
            rc = field_err(c, "eos_token_id", "must hold at most 8 ids inside the vocabulary");
            break;
        }
        cfg->eos_ids[cfg->n_eos++] = (int)json_integer_value(v);
    }
    json_decref(eos);
    return rc;
}

static int parse_activation(struct cfg_ctx *c, struct model_config *cfg)
{
    const char *field = cfg->arch == MODEL_ARCH_GEMMA3 ? "hidden_activation" : "hidden_act";
    const char *act = get_string(c->root, field);
    if (!act && cfg->arch == MODEL_ARCH_GEMMA3)
        act = get_string(c->root, "hidden_act");
    if (!act)
        act = cfg->arch == MODEL_ARCH_GEMMA3 ? "gelu_pytorch_tanh" : "silu";
    if (!strcmp(act, "silu") || !strcmp(act, "swish"))
        cfg->act = MODEL_ACT_SILU;
    else if (!strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_tanh"))
        cfg->act = MODEL_ACT_GELU_TANH;
    else {
        char msg[128];
        snprintf(msg, sizeof msg, "is '%s', which is not supported (silu, gelu_pytorch_tanh are)", act);
        return field_err(c, field, msg);
    }
    return 0;
}

/* Features of other variants that our forward does not implement. */
static int reject_unsupported(struct cfg_ctx *c, struct model_config *cfg)
{
    static const char *must_be_false[] = {"attention_bias", "mlp_bias"};
    for (int i = 0; i < 2; i++) {
        int b = 0;
        if (get_bool(c, c->root, must_be_false[i], 0, &b))
            return -1;
        if (b)
            return field_err(c, must_be_false[i], "is true; biases are not supported");
    }
    if (cfg->arch == MODEL_ARCH_QWEN3) {
        int b = 0;
        if (get_bool(c, c->root, "use_sliding_window", 0, &b))
            return -1;
        if (b)
            return field_err(c, "use_sliding_window", "is true; Qwen3 sliding-window layers are not supported");
    }
    return 0;
}

/* Which layers slide: layer_types when given, else Gemma's
 * sliding_window_pattern (every pattern-th layer is global). */
static int parse_layer_types(struct cfg_ctx *c, struct model_config *cfg)
{
    memset(cfg->layer_sliding, 0, sizeof cfg->layer_sliding);
    json_t *types = json_object_get(c->root, "layer_types");
    int any_sliding = 0;
    if (types && !json_is_null(types)) {
        if (!json_is_array(types) || (int)json_array_size(types) != cfg->n_layers)
            return field_err(c, "layer_types", "must be a list with one entry per layer");
        for (int i = 0; i < cfg->n_layers; i++) {
            const char *t = json_string_value(json_array_get(types, (size_t)i));
            if (t && !strcmp(t, "sliding_attention"))
                cfg->layer_sliding[i] = 1;
            else if (!t || strcmp(t, "full_attention"))
                return field_err(c, "layer_types",
                                 "may hold only \"sliding_attention\" and \"full_attention\"");
            any_sliding |= cfg->layer_sliding[i];
        }
    } else if (cfg->arch == MODEL_ARCH_GEMMA3) {
        long long pattern;
        if (get_int(c, c->root, "sliding_window_pattern", 6, 1, 1 << 20, &pattern))
            return -1;
        for (int i = 0; i < cfg->n_layers; i++)
            cfg->layer_sliding[i] = ((i + 1) % pattern) != 0;
        any_sliding = 1;
    }
    if (any_sliding && cfg->arch != MODEL_ARCH_GEMMA3)
        return field_err(c, "layer_types", "has sliding-window layers, supported for Gemma 3 only");
    if (cfg->arch == MODEL_ARCH_GEMMA3) {
        long long w;
        if (get_int(c, c->root, "sliding_window", 4096, 1, 1 << 30, &w))
            return -1;
        cfg->sliding_window = (int)w;
    }
    return 0;
}

static int parse_ropes(struct cfg_ctx *c, struct model_config *cfg)
{
    double theta_default = cfg->arch == MODEL_ARCH_GEMMA3 ? 1e6 : 10000.0;
    double theta, local_theta;
    if (get_double(c, c->root, "rope_theta", theta_default, &theta) ||
        get_double(c, c->root, "rope_local_base_freq", 10000.0, &local_theta))
        return -1;
    json_t *params = json_object_get(c->root, "rope_parameters");
    if (params && json_is_object(params)) {
        json_t *full = json_object_get(params, "full_attention");
        json_t *local = json_object_get(params, "sliding_attention");
        if (full || local) { /* per-layer-type form (Gemma 3) */
            if (parse_rope(c, full, "rope_parameters.full_attention", theta, &cfg->rope_global) ||
                parse_rope(c, local, "rope_parameters.sliding_attention", local_theta, &cfg->rope_local))
                return -1;
        } else {
            if (parse_rope(c, params, "rope_parameters", theta, &cfg->rope_global))
                return -1;
            cfg->rope_local = cfg->rope_global;
            cfg->rope_local.theta = local_theta;
            cfg->rope_local.type = ROPE_TYPE_DEFAULT;
        }
    } else {
        if (params && !json_is_null(params))
            return field_err(c, "rope_parameters", "must be an object");
        if (parse_rope(c, json_object_get(c->root, "rope_scaling"), "rope_scaling", theta,
                       &cfg->rope_global))
            return -1;
        /* Gemma 3's local layers always use plain RoPE at the local base */
        parse_rope(c, NULL, "rope_local", local_theta, &cfg->rope_local);
    }
    if (cfg->arch != MODEL_ARCH_GEMMA3)
        cfg->rope_local = cfg->rope_global;
    if (!(cfg->rope_global.theta > 0) || !(cfg->rope_local.theta > 0))
        return field_err(c, "rope_theta", "must be > 0");
    return 0;
}

static int parse_family(struct cfg_ctx *c, struct model_config *cfg)
{
    int gemma = cfg->arch == MODEL_ARCH_GEMMA3;
    if (get_bool(c, c->root, "tie_word_embeddings", gemma, &cfg->tie_embeddings))
        return -1;
    cfg->qk_norm = cfg->arch != MODEL_ARCH_LLAMA;
    cfg->norm_plus_one = gemma;
    cfg->sandwich_norms = gemma;
    cfg->embed_scale = gemma ? sqrt((double)cfg->hidden_size) : 1.0;
    cfg->attn_scale = 1.0 / sqrt((double)cfg->head_dim);
    cfg->attn_softcap = 0;
    cfg->final_softcap = 0;
    if (gemma) {
        double q;
        if (get_double(c, c->root, "query_pre_attn_scalar", 256, &q))
            return -1;
        if (!(q > 0))
            return field_err(c, "query_pre_attn_scalar", "must be > 0");
        cfg->attn_scale = 1.0 / sqrt(q);
        if (get_double(c, c->root, "attn_logit_softcapping", 0, &cfg->attn_softcap) ||
            get_double(c, c->root, "final_logit_softcapping", 0, &cfg->final_softcap))
            return -1;
        if (cfg->attn_softcap < 0 || cfg->final_softcap < 0)
            return field_err(c, "final_logit_softcapping", "must be positive or null");
    }
    return 0;
}

int model_config_parse(const char *json, size_t len, const char *source, struct model_config *cfg,
                       struct err *e)
{
    memset(cfg, 0, sizeof *cfg);
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return err_set(e, "%s: invalid JSON at line %d: %s", source, jerr.line, jerr.text);
    struct cfg_ctx c = {root, source, e};
    int rc = -1;
    if (!json_is_object(root))
        err_set(e, "%s: expected a JSON object", source);
    else if (!parse_arch(&c, cfg) && !parse_dims(&c, cfg) && !parse_token_ids(&c, cfg) &&
             !parse_activation(&c, cfg) && !reject_unsupported(&c, cfg) &&
             !parse_layer_types(&c, cfg) && !parse_ropes(&c, cfg) && !parse_family(&c, cfg))
        rc = 0;
    json_decref(root);
    return rc;
}

int model_config_load(const char *path, struct model_config *cfg, struct err *e)
{
    char *buf;
    size_t len;
    if (fs_read_file(path, 64u << 20, &buf, &len, e))
        return -1;
    int rc = model_config_parse(buf, len, path, cfg, e);
    free(buf);
    return rc;
}
