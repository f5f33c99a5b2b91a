/* A GGUF file's chat template: tokenizer.chat_template (and named ones,
 * tokenizer.chat_template.<name>, e.g. tool_use), with bos_token /
 * eos_token / unk_token / pad_token taken from the token ids. A file
 * without a template (base models, such as the embedded default Gemma 3
 * 270M) gets its architecture's turn format, as llama.cpp falls back to a
 * built-in one. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "chat/chat_template.h"

/* Gemma: user / model turns; a system message opens the first user turn. */
static const char GEMMA_TURNS[] =
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first = messages[0]['content'] | trim + '\\n\\n' -%}{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set first = '' -%}{%- set turns = messages -%}{%- endif -%}"
    "{%- for m in turns -%}"
    "{%- if (m['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\\n' + "
    "(first if loop.first else '') + m['content'] | trim + '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}";

/* Qwen: ChatML. */
static const char CHATML_TURNS[] =
    "{%- for m in messages -%}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}";

/* Llama 3: header-delimited turns. */
static const char LLAMA3_TURNS[] =
    "{{ bos_token }}"
    "{%- for m in messages -%}"
    "{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif -%}";

static const char *builtin_for(const char *arch)
{
    if (!strcmp(arch, "gemma3") || !strcmp(arch, "gemma2") || !strcmp(arch, "gemma"))
        return GEMMA_TURNS;
    if (!strcmp(arch, "qwen3") || !strcmp(arch, "qwen2"))
        return CHATML_TURNS;
    if (!strcmp(arch, "llama"))
        return LLAMA3_TURNS;
    return NULL;
}

static json_t *kv_string(const struct gguf_kv *kv)
{
    return kv->type == GGUF_TYPE_STRING ? json_stringn(kv->v.str.s, kv->v.str.len) : NULL;
}

/* The templates of the file, as tokenizer_config.json's "chat_template"
 * would hold them: one string, or a list of {name, template}. */
static json_t *templates_of(const struct gguf_file *f)
{
    static const char prefix[] = "tokenizer.chat_template";
    json_t *named = json_array(), *plain = NULL;
    for (int64_t i = 0; i < f->n_kv; i++) {
        const struct gguf_kv *kv = &f->kvs[i];
        size_t n = sizeof prefix - 1;
        if (kv->key.len < n || memcmp(kv->key.s, prefix, n))
            continue;
        json_t *src = kv_string(kv);
        if (!src)
            continue;
        if (kv->key.len == n) {
            json_decref(plain);
            plain = src;
        } else if (kv->key.s[n] == '.' && kv->key.len > n + 1) {
            json_array_append_new(named, json_pack("{s:s%, s:o}", "name", kv->key.s + n + 1,
                                                   (size_t)(kv->key.len - n - 1), "template", src));
        } else {
            json_decref(src);
        }
    }
    if (json_array_size(named) == 0) {
        json_decref(named);
        return plain;
    }
    if (plain)
        json_array_append_new(named, json_pack("{s:s, s:o}", "name", "default", "template", plain));
    return named;
}

/* config["<name>_token"] = the string of the token id at key, when present and valid. */
static void add_special(json_t *config, const struct gguf_file *f, const char *name, const char *key)
{
    const struct gguf_kv *toks = gguf_find_kv(f, "tokenizer.ggml.tokens");
    int64_t id;
    struct err ignored;
    if (!toks || toks->type != GGUF_TYPE_ARRAY || toks->arr_type != GGUF_TYPE_STRING || !gguf_find_kv(f, key) ||
        gguf_get_int(f, key, &id, &ignored) || id < 0 || (uint64_t)id >= toks->arr_n)
        return;
    json_object_set_new(config, name, json_stringn(toks->arr_strs[id].s, toks->arr_strs[id].len));
}

struct chat_template *chat_template_from_gguf(const struct gguf_file *f, struct err *e)
{
    json_t *config = json_object(), *tpl = templates_of(f);
    if (!tpl) {
        char *arch = gguf_find_kv(f, "general.architecture") ? gguf_get_string(f, "general.architecture", e) : NULL;
        const char *builtin = arch ? builtin_for(arch) : NULL;
        if (!builtin) {
            err_set(e, "%s: no tokenizer.chat_template, and no built-in turn format for architecture '%s'",
                    f->path, arch ? arch : "(none)");
            free(arch);
            json_decref(config);
            return NULL;
        }
        free(arch);
        tpl = json_string(builtin);
    }
    json_object_set_new(config, "chat_template", tpl);
    add_special(config, f, "bos_token", "tokenizer.ggml.bos_token_id");
    add_special(config, f, "eos_token", "tokenizer.ggml.eos_token_id");
    add_special(config, f, "unk_token", "tokenizer.ggml.unknown_token_id");
    add_special(config, f, "pad_token", "tokenizer.ggml.padding_token_id");
    struct chat_template *ct = chat_template_from_config(config, NULL, e);
    if (!ct)
        err_prefix(e, "%s", f->path);
    json_decref(config);
    return ct;
}
