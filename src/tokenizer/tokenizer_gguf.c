/* A tokenizer from GGUF metadata, as llama.cpp builds it (llama-vocab.cpp):
 *
 * - tokenizer.ggml.model "llama": SentencePiece by score (spm.h) with byte
 *   fallback; spaces become "▁" (and one is prepended to each run of text
 *   when tokenizer.ggml.add_space_prefix, default true).
 * - "gpt2": byte-level BPE with tokenizer.ggml.merges, text split first by
 *   the regex tokenizer.ggml.pre names (llama-bpe / llama3 / llama-v3,
 *   qwen2, gpt-2; a file without it is refused, where llama.cpp would
 *   guess a generic split).
 *
 * Tokens of type CONTROL and UNKNOWN are special tokens, USER_DEFINED ones
 * plain added tokens: both are found whole in the raw text before the model
 * sees it. BOS / EOS are added per tokenizer.ggml.add_bos_token /
 * add_eos_token. The normalizer, pre-tokenizer and decoder are the
 * tokenizer.json components that do the same thing, so one pipeline runs
 * both kinds of file. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

/* llama.cpp's token types */
enum { TOKEN_NORMAL = 1, TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4 };

#define MAX_TOKENS (1 << 26)

/* The split regexes of the pre-tokenizers we know, by tokenizer.ggml.pre
 * (those of the models' own tokenizer.json files). */
static const char LLAMA3_SPLIT[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
                                   "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char QWEN2_SPLIT[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
                                  "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const struct pre_kind {
    const char *name;
    const char *split; /* NULL: GPT-2's own split (ByteLevel's regex) */
    int ignore_merges, add_bos;
} PRE_KINDS[] = {
    {"llama-bpe", LLAMA3_SPLIT, 1, 1}, {"llama3", LLAMA3_SPLIT, 1, 1}, {"llama-v3", LLAMA3_SPLIT, 1, 1},
    {"qwen2", QWEN2_SPLIT, 0, 0},      {"gpt-2", NULL, 0, 0},
};

/* *out: the array key (NULL when absent and not required) of strings or of
 * numbers (want), with exactly *n elements (*n < 0: any count, stored). */
static int array_kv(const struct gguf_file *f, const char *key, enum gguf_value_type want, int64_t *n,
                    int required, const struct gguf_kv **out, struct err *e)
{
    const struct gguf_kv *kv = *out = gguf_find_kv(f, key);
    if (!kv)
        return required ? err_set(e, "%s is missing", key) : 0;
    int numeric = want != GGUF_TYPE_STRING;
    int ok = kv->type == GGUF_TYPE_ARRAY &&
             (numeric ? kv->arr_type != GGUF_TYPE_STRING && kv->arr_type != GGUF_TYPE_ARRAY : kv->arr_type == want);
    if (!ok)
        return err_set(e, "%s must be an array of %s", key, numeric ? "numbers" : "strings");
    if (*n >= 0 && (int64_t)kv->arr_n != *n)
        return err_set(e, "%s has %llu elements; tokenizer.ggml.tokens has %lld", key,
                       (unsigned long long)kv->arr_n, (long long)*n);
    *n = (int64_t)kv->arr_n;
    return 0;
}

/* An optional token id key: -1 when absent; an error when it is not an
 * integer (gguf_get_token_id) or not an id of the vocabulary. */
static int token_id(const struct gguf_file *f, const char *key, int32_t n_tokens, int32_t *out, struct err *e)
{
    *out = -1;
    if (!gguf_find_kv(f, key))
        return 0;
    int64_t v;
    if (gguf_get_token_id(f, key, &v, e))
        return -1;
    if (v < 0 || v >= n_tokens)
        return err_set(e, "%s: %lld is not a token id (the vocabulary has %d)", key, (long long)v, n_tokens);
    *out = (int32_t)v;
    return 0;
}

static int opt_bool(const struct gguf_file *f, const char *key, int dflt, int *out, struct err *e)
{
    *out = dflt;
    return gguf_find_kv(f, key) ? gguf_get_bool(f, key, out, e) : 0;
}

/* The vocabulary, every id's string, and the added (special and
 * user-defined) tokens. */
static void load_tokens(struct tokenizer *t, const struct gguf_kv *toks, const struct gguf_kv *types)
{
    struct bpe *b = &t->bpe;
    b->n_ids = (int32_t)toks->arr_n;
    b->id_to_token = xcalloc((size_t)b->n_ids, sizeof *b->id_to_token);
    b->id_len = xcalloc((size_t)b->n_ids, sizeof *b->id_len);
    strmap_init(&b->vocab, (size_t)b->n_ids);
    t->added.v = xcalloc((size_t)b->n_ids + 1, sizeof *t->added.v);
    for (int32_t id = 0; id < b->n_ids; id++) {
        const struct gguf_str *s = &toks->arr_strs[id];
        strmap_put(&b->vocab, s->s, s->len, id); /* a repeated string keeps its last id, as in llama.cpp */
        tokenizer_set_token(b, id, s->s, s->len);
        int64_t type = types ? gguf_arr_int(types, (uint64_t)id) : TOKEN_NORMAL;
        if (type != TOKEN_CONTROL && type != TOKEN_UNKNOWN && type != TOKEN_USER_DEFINED)
            continue;
        if (s->len == 0)
            continue;
        struct added_token *a = &t->added.v[t->added.n++];
        a->content = xmalloc(s->len + 1);
        memcpy(a->content, s->s, s->len);
        a->content[s->len] = '\0';
        a->len = s->len;
        a->id = id;
        a->special = type != TOKEN_USER_DEFINED;
        a->normalized = 0;
    }
    added_tokens_build(&t->added);
    t->size = b->n_ids;
}

/* The tokenizer.json components of one kind of file, parsed by the same
 * parsers as tokenizer.json's. */
static int build_components(struct tokenizer *t, json_t *normalizer, json_t *pre, json_t *decoder, struct err *e)
{
    int failed = 0;
    t->normalizer = normalizer_parse(normalizer, e, &failed);
    if (!failed)
        t->pre = pretokenizer_parse(pre, e, &failed);
    if (!failed)
        t->decoder = decoder_parse(decoder, e, &failed);
    json_decref(normalizer);
    json_decref(pre);
    json_decref(decoder);
    return failed ? -1 : 0;
}

static int load_spm(struct tokenizer *t, const struct gguf_file *f, int64_t n, struct err *e)
{
    const struct gguf_kv *scores;
    if (array_kv(f, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, &n, 0, &scores, e))
        return -1;
    int space_prefix;
    if (opt_bool(f, "tokenizer.ggml.add_space_prefix", 1, &space_prefix, e))
        return -1;
    t->spm_scores = xcalloc((size_t)n, sizeof *t->spm_scores); /* no scores: all equal, leftmost first */
    for (int64_t i = 0; scores && i < n; i++)
        t->spm_scores[i] = (float)gguf_arr_float(scores, (uint64_t)i);
    t->bpe.byte_fallback = 1;
    json_t *norm = json_pack("{s:s, s:[]}", "type", "Sequence", "normalizers");
    if (space_prefix)
        json_array_append_new(json_object_get(norm, "normalizers"),
                              json_pack("{s:s, s:s}", "type", "Prepend", "prepend", "\xe2\x96\x81"));
    json_array_append_new(json_object_get(norm, "normalizers"),
                          json_pack("{s:s, s:{s:s}, s:s}", "type", "Replace", "pattern", "String", " ", "content",
                                    "\xe2\x96\x81"));
    json_t *dec = json_pack("{s:s, s:[{s:s, s:{s:s}, s:s}, {s:s}, {s:s}]}", "type", "Sequence", "decoders", "type",
                            "Replace", "pattern", "String", "\xe2\x96\x81", "content", " ", "type", "ByteFallback",
                            "type", "Fuse");
    if (space_prefix)
        json_array_append_new(json_object_get(dec, "decoders"),
                              json_pack("{s:s, s:s, s:i, s:i}", "type", "Strip", "content", " ", "start", 1, "stop", 0));
    return build_components(t, norm, NULL, dec, e);
}

static int load_bpe(struct tokenizer *t, const struct gguf_file *f, int *add_bos_default, struct err *e)
{
    /* without the key llama.cpp falls back to a generic split ("default")
     * that is not the model's own: refused rather than silently different */
    if (!gguf_find_kv(f, "tokenizer.ggml.pre"))
        return err_set(e, "tokenizer.ggml.pre is missing: the file does not say how its text is split "
                          "(llama-bpe, llama3, llama-v3, qwen2 and gpt-2 are supported)");
    char *pre_name = gguf_get_string(f, "tokenizer.ggml.pre", e);
    if (!pre_name)
        return -1;
    const struct pre_kind *pk = NULL;
    for (size_t i = 0; i < sizeof PRE_KINDS / sizeof PRE_KINDS[0]; i++)
        if (!strcmp(pre_name, PRE_KINDS[i].name))
            pk = &PRE_KINDS[i];
    if (!pk) {
        err_set(e, "tokenizer.ggml.pre '%s' is not supported (llama-bpe, llama3, llama-v3, qwen2 and gpt-2 are)", pre_name);
        free(pre_name);
        return -1;
    }
    free(pre_name);
    *add_bos_default = pk->add_bos;
    struct bpe *b = &t->bpe;
    b->ignore_merges = pk->ignore_merges;
    int64_t n_merges = -1;
    const struct gguf_kv *merges;
    if (array_kv(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &n_merges, 1, &merges, e))
        return -1;
    if (n_merges >= MAX_TOKENS * 4LL)
        return err_set(e, "tokenizer.ggml.merges: %lld merges is too many", (long long)n_merges);
    for (int64_t i = 0; i < n_merges; i++) {
        const struct gguf_str *m = &merges->arr_strs[i];
        /* "left right": the first space after the first character splits it */
        const char *sp = m->len > 1 ? memchr(m->s + 1, ' ', m->len - 1) : NULL;
        if (!sp)
            return err_set(e, "tokenizer.ggml.merges[%lld]: '%.*s' is not two tokens separated by a space",
                           (long long)i, (int)(m->len < 64 ? m->len : 64), m->s);
        size_t ll = (size_t)(sp - m->s);
        if (bpe_add_merge(b, m->s, ll, sp + 1, m->len - ll - 1, (int32_t)i, e))
            return err_prefix(e, "tokenizer.ggml.merges");
    }
    json_t *pre = pk->split
                      ? json_pack("{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b}]}", "type", "Sequence",
                                  "pretokenizers", "type", "Split", "pattern", "Regex", pk->split, "behavior",
                                  "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 0, "use_regex", 0)
                      : json_pack("{s:s, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0, "use_regex", 1);
    json_t *dec = json_pack("{s:s}", "type", "ByteLevel");
    return build_components(t, NULL, pre, dec, e);
}

static int load(struct tokenizer *t, const struct gguf_file *f, struct err *e)
{
    if (!gguf_find_kv(f, "tokenizer.ggml.model"))
        return err_set(e, "no tokenizer: tokenizer.ggml.model is missing");
    char *model = gguf_get_string(f, "tokenizer.ggml.model", e);
    if (!model)
        return -1;
    int is_spm = !strcmp(model, "llama"), is_bpe = !strcmp(model, "gpt2");
    if (!is_spm && !is_bpe) {
        err_set(e, "tokenizer.ggml.model '%s' is not supported (llama and gpt2 are)", model);
        free(model);
        return -1;
    }
    free(model);
    int64_t n = -1;
    const struct gguf_kv *toks, *types;
    if (array_kv(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &n, 1, &toks, e))
        return -1;
    if (n < 1 || n > MAX_TOKENS)
        return err_set(e, "tokenizer.ggml.tokens: %lld tokens is not in [1, 2^26]", (long long)n);
    if (array_kv(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &n, 0, &types, e))
        return -1;
    load_tokens(t, toks, types);
    int32_t unk, bos, eos;
    int add_bos_default = 1, add_bos, add_eos;
    if (token_id(f, "tokenizer.ggml.unknown_token_id", t->size, &unk, e) ||
        token_id(f, "tokenizer.ggml.bos_token_id", t->size, &bos, e) ||
        token_id(f, "tokenizer.ggml.eos_token_id", t->size, &eos, e))
        return -1;
    t->bpe.unk_id = is_spm ? unk : -1;
    if (is_spm ? load_spm(t, f, n, e) : load_bpe(t, f, &add_bos_default, e))
        return -1;
    bpe_finish(&t->bpe);
    if (opt_bool(f, "tokenizer.ggml.add_bos_token", add_bos_default, &add_bos, e) ||
        opt_bool(f, "tokenizer.ggml.add_eos_token", 0, &add_eos, e))
        return -1;
    if ((add_bos && bos < 0) || (add_eos && eos < 0))
        return err_set(e, "tokenizer.ggml.add_%s_token is set but tokenizer.ggml.%s_token_id is missing",
                       add_bos && bos < 0 ? "bos" : "eos", add_bos && bos < 0 ? "bos" : "eos");
    if (add_bos) {
        t->post.prefix = xmalloc(sizeof *t->post.prefix);
        t->post.prefix[t->post.n_prefix++] = bos;
    }
    if (add_eos) {
        t->post.suffix = xmalloc(sizeof *t->post.suffix);
        t->post.suffix[t->post.n_suffix++] = eos;
    }
    return 0;
}

struct tokenizer *tokenizer_from_gguf(const struct gguf_file *f, struct err *e)
{
    struct tokenizer *t = xcalloc(1, sizeof *t);
    t->bpe.unk_id = -1;
    if (load(t, f, e)) {
        if (strncmp(e->msg, f->path, strlen(f->path))) /* the gguf_get_* messages name the file already */
            err_prefix(e, "%s", f->path);
        tokenizer_free(t);
        return NULL;
    }
    return t;
}
