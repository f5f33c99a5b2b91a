/* tokenizer.json loading and the encode / decode pipelines. */
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "io/gguf.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/json_scan.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer_impl.h"
#include "core/utf8.h"

void tokenizer_free(struct tokenizer *t)
{
    if (!t)
        return;
    bpe_free(&t->bpe);
    added_tokens_free(&t->added);
    normalizer_free(t->normalizer);
    pretokenizer_free(t->pre);
    decoder_free(t->decoder);
    post_processor_free(&t->post);
    free(t->spm_scores);
    free(t);
}

int tokenizer_set_token(struct bpe *b, int32_t id, const char *s, size_t len)
{
    if (id < 0 || id >= b->n_ids)
        return -1;
    free(b->id_to_token[id]);
    b->id_to_token[id] = xmalloc(len + 1);
    memcpy(b->id_to_token[id], s, len);
    b->id_to_token[id][len] = '\0';
    b->id_len[id] = len;
    return 0;
}

static int load_added(struct tokenizer *t, const json_t *list, struct err *e)
{
    size_t i;
    const json_t *a;
    t->added.v = xcalloc(json_array_size(list) + 1, sizeof *t->added.v);
    json_array_foreach(list, i, a)
    {
        const json_t *content = json_object_get(a, "content"), *id = json_object_get(a, "id");
        if (!json_is_string(content) || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= (1 << 26))
            return err_set(e, "added_tokens[%zu]: needs a string 'content' and a non-negative integer 'id'",
                           i);
        struct added_token *tok = &t->added.v[t->added.n++];
        tok->len = json_string_length(content);
        tok->content = xmalloc(tok->len + 1);
        memcpy(tok->content, json_string_value(content), tok->len + 1);
        tok->id = (int32_t)json_integer_value(id);
        tok->special = json_is_true(json_object_get(a, "special"));
        tok->lstrip = json_is_true(json_object_get(a, "lstrip"));
        tok->rstrip = json_is_true(json_object_get(a, "rstrip"));
        tok->single_word = json_is_true(json_object_get(a, "single_word"));
        const json_t *norm = json_object_get(a, "normalized");
        tok->normalized = norm ? json_is_true(norm) : !tok->special;
    }
    return 0;
}

/* Where the vocabulary and merges sit in the file's text. */
struct big_ranges {
    const char *text;
    size_t vocab_start, vocab_end, merges_start, merges_end;
};

static int scan_error(struct json_scan *j, const char *what, struct err *e)
{
    return err_set(e, "%s: %s at byte %zu", what, j->error ? j->error : "malformed", j->error_pos);
}

static int scan_vocab(struct bpe *b, const struct big_ranges *r, struct err *e)
{
    struct json_scan j = {r->text + r->vocab_start, r->vocab_end - r->vocab_start, 0, NULL, 0};
    char *key = NULL;
    size_t cap = 0;
    int rc = 0;
    if (!json_scan_char(&j, '{'))
        rc = err_set(e, "model.vocab must be an object");
    else if (!json_scan_char(&j, '}'))
        do {
            int64_t id;
            long klen = json_scan_string(&j, &key, &cap);
            if (klen < 0 || !json_scan_char(&j, ':') || json_scan_int(&j, &id)) {
                rc = scan_error(&j, "model.vocab", e);
                break;
            }
            if (id < 0 || id >= b->n_ids) {
                rc = err_set(e, "model.vocab['%s']: id %lld is out of range", key, (long long)id);
                break;
            }
            if (strmap_get(&b->vocab, key, (size_t)klen) >= 0) {
                rc = err_set(e, "model.vocab: token '%s' appears twice", key);
                break;
            }
            strmap_put(&b->vocab, key, (size_t)klen, (int32_t)id);
            tokenizer_set_token(b, (int32_t)id, key, (size_t)klen);
        } while (json_scan_char(&j, ','));
    free(key);
    return rc;
}

/* First pass: the largest id, to size the tables. */
static int scan_max_id(const struct big_ranges *r, int32_t *max_id, int64_t *count, struct err *e)
{
    struct json_scan j = {r->text + r->vocab_start, r->vocab_end - r->vocab_start, 0, NULL, 0};
    char *key = NULL;
    size_t cap = 0;
    *count = 0;
    if (!json_scan_char(&j, '{'))
        return err_set(e, "model.vocab must be an object");
    if (json_scan_char(&j, '}'))
        return 0;
    do {
        int64_t id;
        if (json_scan_string(&j, &key, &cap) < 0 || !json_scan_char(&j, ':') || json_scan_int(&j, &id)) {
            free(key);
            return scan_error(&j, "model.vocab", e);
        }
        if (id < 0 || id >= (1 << 26)) {
            err_set(e, "model.vocab['%s']: id must be in [0, 2^26)", key);
            free(key);
            return -1;
        }
        *max_id = id > *max_id ? (int32_t)id : *max_id;
        (*count)++;
    } while (json_scan_char(&j, ','));
    free(key);
    return json_scan_char(&j, '}') ? 0 : scan_error(&j, "model.vocab", e);
}

static int scan_merges(struct bpe *b, const struct big_ranges *r, struct err *e)
{
    struct json_scan j = {r->text + r->merges_start, r->merges_end - r->merges_start, 0, NULL, 0};
    char *l = NULL, *rt = NULL;
    size_t lcap = 0, rcap = 0;
    int rc = 0;
    if (!json_scan_char(&j, '['))
        return err_set(e, "model.merges must be a list");
    int empty = json_scan_char(&j, ']');
    if (!empty)
        for (int32_t rank = 0;; rank++) {
            long ll, rl;
            if (json_scan_char(&j, '[')) { /* ["left", "right"] */
                ll = json_scan_string(&j, &l, &lcap);
                rl = ll >= 0 && json_scan_char(&j, ',') ? json_scan_string(&j, &rt, &rcap) : -1;
                if (rl < 0 || !json_scan_char(&j, ']')) {
                    rc = err_set(e, "model.merges[%d]: expected [\"a\", \"b\"]", rank);
                    break;
                }
            } else { /* "left right" */
                long n = json_scan_string(&j, &l, &lcap);
                char *sp = n >= 0 ? memchr(l, ' ', (size_t)n) : NULL;
                if (!sp || memchr(sp + 1, ' ', (size_t)(l + n - sp - 1))) {
                    rc = n < 0 ? scan_error(&j, "model.merges", e)
                               : err_set(e, "model.merges[%d]: '%s' is not two tokens separated by one space",
                                         rank, l);
                    break;
                }
                ll = sp - l;
                rl = n - ll - 1;
                if (rcap < (size_t)rl + 1) {
                    rcap = (size_t)rl + 64;
                    rt = xrealloc(rt, rcap);
                }
                memcpy(rt, sp + 1, (size_t)rl);
            }
            if (bpe_add_merge(b, l, (size_t)ll, rt, (size_t)rl, rank, e)) {
                rc = err_prefix(e, "model.merges");
                break;
            }
            if (!json_scan_char(&j, ','))
                break;
        }
    if (!rc && !empty && !json_scan_char(&j, ']'))
        rc = scan_error(&j, "model.merges", e);
    free(l);
    free(rt);
    return rc;
}

static int load_model(struct tokenizer *t, const json_t *model, const struct big_ranges *r, struct err *e)
{
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "BPE"))
        return err_set(e, "model type '%s' is not supported (BPE is)", type ? type : "(none)");
    if (!r->vocab_end || !r->merges_end)
        return err_set(e, "model: BPE needs a 'vocab' object and a 'merges' list");
    static const char *affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const char *a = json_string_value(json_object_get(model, affixes[i]));
        if (a && *a)
            return err_set(e, "model.%s '%s' is not supported", affixes[i], a);
    }
    if (json_is_number(json_object_get(model, "dropout")) &&
        json_number_value(json_object_get(model, "dropout")) > 0)
        return err_set(e, "model.dropout is not supported (inference is deterministic)");
    struct bpe *b = &t->bpe;
    int32_t max_id = -1;
    int64_t count;
    if (scan_max_id(r, &max_id, &count, e))
        return -1;
    for (int i = 0; i < t->added.n; i++)
        max_id = t->added.v[i].id > max_id ? t->added.v[i].id : max_id;
    b->n_ids = max_id + 1;
    b->id_to_token = xcalloc((size_t)b->n_ids, sizeof *b->id_to_token);
    b->id_len = xcalloc((size_t)b->n_ids, sizeof *b->id_len);
    strmap_init(&b->vocab, (size_t)count);
    if (scan_vocab(b, r, e))
        return -1;
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    b->unk_id = unk ? strmap_get(&b->vocab, unk, strlen(unk)) : -1;
    if (unk && b->unk_id < 0)
        return err_set(e, "model.unk_token '%s' is not in the vocabulary", unk);
    b->fuse_unk = json_is_true(json_object_get(model, "fuse_unk"));
    b->byte_fallback = json_is_true(json_object_get(model, "byte_fallback"));
    b->ignore_merges = json_is_true(json_object_get(model, "ignore_merges"));
    if (scan_merges(b, r, e))
        return -1;
    bpe_finish(b);
    return 0;
}

/* Finds model.vocab and model.merges in the text without building them. */
static int locate_big_ranges(const char *text, size_t len, struct big_ranges *r, struct err *e)
{
    memset(r, 0, sizeof *r);
    r->text = text;
    struct json_scan j = {text, len, 0, NULL, 0};
    char *key = NULL;
    size_t cap = 0;
    int rc = 0;
    if (!json_scan_char(&j, '{'))
        return err_set(e, "expected a JSON object");
    if (!json_scan_char(&j, '}'))
        do {
            if (json_scan_string(&j, &key, &cap) < 0 || !json_scan_char(&j, ':')) {
                rc = -1;
                break;
            }
            json_scan_ws(&j);
            if (strcmp(key, "model") || !json_scan_char(&j, '{')) {
                if ((rc = json_scan_skip(&j)))
                    break;
                continue;
            }
            if (!json_scan_char(&j, '}'))
                do {
                    if (json_scan_string(&j, &key, &cap) < 0 || !json_scan_char(&j, ':')) {
                        rc = -1;
                        break;
                    }
                    json_scan_ws(&j);
                    size_t start = j.pos;
                    if ((rc = json_scan_skip(&j)))
                        break;
                    if (!strcmp(key, "vocab")) {
                        r->vocab_start = start;
                        r->vocab_end = j.pos;
                    } else if (!strcmp(key, "merges")) {
                        r->merges_start = start;
                        r->merges_end = j.pos;
                    }
                } while (json_scan_char(&j, ','));
            if (rc || !json_scan_char(&j, '}')) {
                rc = -1;
                break;
            }
        } while (json_scan_char(&j, ','));
    free(key);
    if (rc || !json_scan_char(&j, '}'))
        return scan_error(&j, "JSON", e);
    return 0;
}

/* The text with the vocabulary and merges emptied, for the DOM parser. */
static char *strip_big_ranges(const struct big_ranges *r, size_t len, size_t *out_len)
{
    char *o = xmalloc(len + 8);
    size_t k = 0, at = 0;
    size_t starts[2] = {r->vocab_start, r->merges_start}, ends[2] = {r->vocab_end, r->merges_end};
    const char *empty[2] = {"{}", "[]"};
    int order[2] = {0, 1};
    if (starts[1] < starts[0]) {
        order[0] = 1;
        order[1] = 0;
    }
    for (int i = 0; i < 2; i++) {
        int w = order[i];
        if (!ends[w])
            continue;
        memcpy(o + k, r->text + at, starts[w] - at);
        k += starts[w] - at;
        memcpy(o + k, empty[w], 2);
        k += 2;
        at = ends[w];
    }
    memcpy(o + k, r->text + at, len - at);
    k += len - at;
    *out_len = k;
    return o;
}

static int load_json(struct tokenizer *t, json_t *root, const struct big_ranges *r, struct err *e)
{
    int failed = 0;
    if (load_added(t, json_object_get(root, "added_tokens"), e) ||
        load_model(t, json_object_get(root, "model"), r, e))
        return -1;
    /* added tokens' strings take precedence in decoding */
    for (int i = 0; i < t->added.n; i++)
        tokenizer_set_token(&t->bpe, t->added.v[i].id, t->added.v[i].content, t->added.v[i].len);
    added_tokens_build(&t->added);
    t->size = t->bpe.n_ids;
    t->normalizer = normalizer_parse(json_object_get(root, "normalizer"), e, &failed);
    if (!failed)
        t->pre = pretokenizer_parse(json_object_get(root, "pre_tokenizer"), e, &failed);
    if (!failed)
        t->decoder = decoder_parse(json_object_get(root, "decoder"), e, &failed);
    if (failed || post_processor_parse(json_object_get(root, "post_processor"), &t->post, e))
        return -1;
    for (int i = 0; i < t->post.n_prefix + t->post.n_suffix; i++) {
        int32_t id = i < t->post.n_prefix ? t->post.prefix[i] : t->post.suffix[i - t->post.n_prefix];
        if (id < 0 || id >= t->size)
            return err_set(e, "post_processor: special token id %d is outside the vocabulary", id);
    }
    return 0;
}

struct tokenizer *tokenizer_load(const char *path, struct err *e)
{
    if (gguf_is_path(path)) {
        struct gguf_file *f = gguf_open(path, e);
        struct tokenizer *t = f ? tokenizer_from_gguf(f, e) : NULL;
        gguf_close(f);
        return t;
    }
    char file[4096];
    snprintf(file, sizeof file, "%s", path);
    if (!strstr(path, ".json"))
        snprintf(file, sizeof file, "%s/tokenizer.json", path);
    char *text;
    size_t len;
    if (fs_read_file(file, (size_t)1 << 30, &text, &len, e))
        return NULL;
    struct big_ranges r;
    struct tokenizer *t = NULL;
    json_t *root = NULL;
    size_t slen;
    char *stripped = NULL;
    json_error_t jerr;
    int rc = locate_big_ranges(text, len, &r, e);
    if (!rc) {
        stripped = strip_big_ranges(&r, len, &slen);
        root = json_loadb(stripped, slen, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
            rc = err_set(e, "invalid JSON at line %d: %s", jerr.line, jerr.text);
    }
    if (!rc) {
        t = xcalloc(1, sizeof *t);
        t->bpe.unk_id = -1;
        rc = load_json(t, root, &r, e);
    }
    json_decref(root);
    free(stripped);
    free(text);
    if (rc) {
        err_prefix(e, "%s", file);
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

void token_ids_free(struct token_ids *ids)
{
    free(ids->ids);
    memset(ids, 0, sizeof *ids);
}

static void ids_push(struct token_ids *out, int32_t id)
{
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->ids = xrealloc(out->ids, (size_t)out->cap * sizeof *out->ids);
    }
    out->ids[out->n++] = id;
}

int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, int add_special,
                     struct token_ids *out, struct err *e)
{
    size_t valid = utf8_valid_prefix(text, len);
    if (valid != len)
        return err_set(e, "text is not valid UTF-8 (at byte %zu)", valid);
    struct pieces raw = {0}, cur = {0}, tmp = {0};
    added_tokens_split(&t->added, 0, text, len, &raw);
    for (int i = 0; i < raw.n; i++) {
        if (raw.v[i].id >= 0) {
            pieces_push(&cur, piece_str(&raw, i), raw.v[i].len, raw.v[i].id);
            continue;
        }
        size_t nlen;
        char *norm = normalizer_apply(t->normalizer, piece_str(&raw, i), raw.v[i].len, &nlen);
        added_tokens_split(&t->added, 1, norm, nlen, &cur);
        free(norm);
    }
    pretokenizer_apply(t->pre, &cur, &tmp);
    if (add_special)
        for (int i = 0; i < t->post.n_prefix; i++)
            ids_push(out, t->post.prefix[i]);
    for (int i = 0; i < cur.n; i++) {
        if (cur.v[i].id >= 0)
            ids_push(out, cur.v[i].id);
        else if (t->spm_scores)
            spm_encode(&t->bpe, t->spm_scores, piece_str(&cur, i), cur.v[i].len, &out->ids, &out->n, &out->cap);
        else
            bpe_encode_word(&t->bpe, piece_str(&cur, i), cur.v[i].len, &out->ids, &out->n, &out->cap);
    }
    if (add_special)
        for (int i = 0; i < t->post.n_suffix; i++)
            ids_push(out, t->post.suffix[i]);
    pieces_free(&raw);
    pieces_free(&cur);
    pieces_free(&tmp);
    return 0;
}

int tokenizer_decode(const struct tokenizer *t, const int32_t *ids, int n, int skip_special, char **text,
                     size_t *len, struct err *e)
{
    (void)e;
    struct pieces toks = {0}, tmp = {0};
    for (int i = 0; i < n; i++) {
        /* ids without a token (a model's padded vocabulary) are skipped, as
         * tokenizers does */
        if (ids[i] < 0 || ids[i] >= t->size || !t->bpe.id_to_token[ids[i]])
            continue;
        if (skip_special && tokenizer_is_special(t, ids[i]))
            continue;
        pieces_push_kept(&toks, t->bpe.id_to_token[ids[i]], t->bpe.id_len[ids[i]]);
    }
    decoder_apply(t->decoder, &toks, &tmp);
    /* without a decoder, tokenizers joins the tokens with spaces */
    const int sep = t->decoder ? 0 : 1;
    size_t total = 0;
    for (int i = 0; i < toks.n; i++)
        total += toks.v[i].len + (size_t)sep;
    char *s = xmalloc(total + 1);
    size_t k = 0;
    for (int i = 0; i < toks.n; i++) {
        if (sep && i > 0)
            s[k++] = ' ';
        memcpy(s + k, piece_str(&toks, i), toks.v[i].len);
        k += toks.v[i].len;
    }
    s[k] = '\0';
    pieces_free(&toks);
    pieces_free(&tmp);
    *text = s;
    *len = k;
    return 0;
}

void tokenizer_token_bytes(const struct tokenizer *t, int32_t id, char **bytes, size_t *len)
{
    *len = 0;
    *bytes = xmalloc(1);
    if (id < 0 || id >= t->size || !t->bpe.id_to_token[id])
        return;
    struct pieces toks = {0}, tmp = {0};
    pieces_push_kept(&toks, t->bpe.id_to_token[id], t->bpe.id_len[id]);
    decoder_apply_raw(t->decoder, &toks, &tmp); /* as tokenizer_decode does, every token through the chain */
    size_t n = 0;
    for (int i = 0; i < toks.n; i++)
        n += toks.v[i].len;
    *bytes = xrealloc(*bytes, n + 1);
    for (int i = 0; i < toks.n; i++) {
        memcpy(*bytes + *len, piece_str(&toks, i), toks.v[i].len);
        *len += toks.v[i].len;
    }
    pieces_free(&toks);
    pieces_free(&tmp);
}

int32_t tokenizer_vocab_size(const struct tokenizer *t) { return t->size; }

int tokenizer_is_special(const struct tokenizer *t, int32_t id)
{
    const struct added_token *a = added_tokens_by_id(&t->added, id);
    return a && a->special;
}

int tokenizer_is_byte_token(const struct tokenizer *t, int32_t id)
{
    if (!t->bpe.byte_fallback || id < 0 || id >= t->size || t->bpe.id_len[id] != 6)
        return 0;
    const char *s = t->bpe.id_to_token[id];
    return !memcmp(s, "<0x", 3) && s[5] == '>';
}
