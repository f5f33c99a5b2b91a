/* config.json parsing: the three families' conventions, both ways of writing
 * RoPE settings, and refusals that name the field. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "io/model_config.h"
#include "model/rope.h"
#include "test_util.h"

static int parse(const char *json, struct model_config *c, struct err *e)
{
    return model_config_parse(json, strlen(json), "config.json", c, e);
}

#define BASE "\"vocab_size\": 100, \"hidden_size\": 64, \"intermediate_size\": 128, " \
             "\"num_hidden_layers\": 12, \"num_attention_heads\": 4"

Test(model_config, llama_defaults_and_llama3_rope)
{
    struct model_config c;
    struct err e;
    cr_assert_eq(parse("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"num_key_value_heads\": 2,"
                       "\"rope_theta\": 500000, \"eos_token_id\": [7, 9], \"rope_scaling\": {\"rope_type\": \"llama3\","
                       "\"factor\": 32, \"low_freq_factor\": 1, \"high_freq_factor\": 4,"
                       "\"original_max_position_embeddings\": 8192}}",
                       &c, &e),
                 0, "%s", e.msg);
    cr_assert_eq(c.arch, MODEL_ARCH_LLAMA);
    cr_assert_eq(c.head_dim, 16);
    cr_assert_eq(c.n_kv_heads, 2);
    cr_assert(!c.qk_norm && !c.norm_plus_one && !c.sandwich_norms && !c.tie_embeddings);
    cr_assert_eq(c.rope_global.type, ROPE_TYPE_LLAMA3);
    cr_assert_eq(c.n_eos, 2);
    cr_assert_eq(c.eos_ids[1], 9);
    cr_assert_float_eq(c.attn_scale, 0.25, 1e-12);
    /* llama3 frequencies: high frequencies untouched, low ones divided by 32 */
    float f[8];
    rope_inv_freq(&c.rope_global, 16, f);
    cr_assert_float_eq(f[0], 1.0f, 1e-7);
    cr_assert_float_eq(f[7], (float)(pow(500000.0, -14.0 / 16) / 32), 1e-12);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(c.layer_sliding[i], 0);
}

Test(model_config, gemma3_pattern_scales_and_local_rope)
{
    struct model_config c;
    struct err e;
    cr_assert_eq(parse("{\"architectures\": [\"Gemma3ForCausalLM\"], " BASE ", \"head_dim\": 24,"
                       "\"query_pre_attn_scalar\": 32, \"sliding_window\": 16, \"sliding_window_pattern\": 6,"
                       "\"rope_local_base_freq\": 10000, \"final_logit_softcapping\": 30.0}",
                       &c, &e),
                 0, "%s", e.msg);
    cr_assert_eq(c.arch, MODEL_ARCH_GEMMA3);
    cr_assert(c.qk_norm && c.norm_plus_one && c.sandwich_norms && c.tie_embeddings);
    cr_assert_eq(c.act, MODEL_ACT_GELU_TANH);
    cr_assert_float_eq(c.embed_scale, 8.0, 1e-12);
    cr_assert_float_eq(c.attn_scale, 1 / sqrt(32.0), 1e-12);
    cr_assert_float_eq(c.final_softcap, 30.0, 1e-12);
    cr_assert_float_eq(c.rope_global.theta, 1e6, 1e-6);
    cr_assert_float_eq(c.rope_local.theta, 1e4, 1e-6);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(c.layer_sliding[i], (i + 1) % 6 != 0, "layer %d", i);
}

Test(model_config, gemma3_layer_types_and_rope_parameters)
{
    struct model_config c;
    struct err e;
    cr_assert_eq(parse("{\"model_type\": \"gemma3_text\", \"vocab_size\": 100, \"hidden_size\": 64,"
                       "\"intermediate_size\": 128, \"num_hidden_layers\": 3, \"num_attention_heads\": 4,"
                       "\"layer_types\": [\"full_attention\", \"sliding_attention\", \"full_attention\"],"
                       "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 8,"
                       "\"rope_theta\": 1000000}, \"sliding_attention\": {\"rope_type\": \"default\","
                       "\"rope_theta\": 10000}}}",
                       &c, &e),
                 0, "%s", e.msg);
    cr_assert_eq(c.arch, MODEL_ARCH_GEMMA3);
    cr_assert(!c.layer_sliding[0] && c.layer_sliding[1] && !c.layer_sliding[2]);
    cr_assert_eq(c.rope_global.type, ROPE_TYPE_LINEAR);
    cr_assert_float_eq(c.rope_global.factor, 8, 1e-12);
    cr_assert_eq(c.rope_local.type, ROPE_TYPE_DEFAULT);
    cr_assert_float_eq(c.rope_local.theta, 1e4, 1e-6);
}

Test(model_config, qwen3_flat_rope_parameters)
{
    struct model_config c;
    struct err e;
    cr_assert_eq(parse("{\"architectures\": [\"Qwen3ForCausalLM\"], " BASE ", \"head_dim\": 32,"
                       "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000},"
                       "\"tie_word_embeddings\": true}",
                       &c, &e),
                 0, "%s", e.msg);
    cr_assert(c.qk_norm && !c.norm_plus_one && c.tie_embeddings);
    cr_assert_float_eq(c.rope_global.theta, 1e6, 1e-6);
}

static void expect_error(const char *json, const char *needle)
{
    struct model_config c;
    struct err e = {{0}};
    cr_assert_eq(parse(json, &c, &e), -1, "expected an error mentioning '%s'", needle);
    cr_assert(strstr(e.msg, needle), "message '%s' should mention '%s'", e.msg, needle);
    cr_assert(strstr(e.msg, "config.json"), "message '%s' should name the file", e.msg);
}

Test(model_config, refusals_name_the_problem)
{
    expect_error("{\"architectures\": [\"MistralForCausalLM\"], " BASE "}", "MistralForCausalLM");
    expect_error("{\"architectures\": [\"Gemma3ForConditionalGeneration\"]}", "Gemma3ForConditionalGeneration");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64}", "vocab_size");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"num_key_value_heads\": 3}",
                 "num_key_value_heads");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"attention_bias\": true}",
                 "attention_bias");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_scaling\": {\"rope_type\": \"yarn\","
                 "\"factor\": 4}}",
                 "yarn");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_scaling\": {\"rope_type\": \"llama3\","
                 "\"factor\": 4}}",
                 "low_freq_factor");
    expect_error("{\"architectures\": [\"Qwen3ForCausalLM\"], " BASE ", \"use_sliding_window\": true}",
                 "use_sliding_window");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"hidden_act\": \"relu\"}", "relu");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"hidden_size\": \"64\"}", "hidden_size");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"num_hidden_layers\": 100000}",
                 "num_hidden_layers");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"head_dim\": 15}", "head_dim");
    expect_error("{\"vocab_size\": 1, \"vocab_size\": 2}", "duplicate");
    expect_error("[1, 2]", "object");
    expect_error("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"eos_token_id\": 100}", "eos_token_id");
}

Test(model_config, fixtures_load)
{
    const char *names[] = {"tiny-llama", "tiny-qwen3", "tiny-gemma3"};
    for (int i = 0; i < 3; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/config.json", fixture_path(names[i]));
        struct model_config c;
        struct err e;
        cr_assert_eq(model_config_load(path, &c, &e), 0, "%s", e.msg);
    }
    struct model_config c;
    struct err e;
    cr_assert_eq(model_config_load("/nonexistent/config.json", &c, &e), -1);
    cr_assert(strstr(e.msg, "/nonexistent/config.json"), "%s", e.msg);
}
