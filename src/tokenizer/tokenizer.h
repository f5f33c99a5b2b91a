/* A Hugging Face tokenizer.json, run as the tokenizers library runs it:
 * added tokens split out of the raw text, normalizer, added tokens of the
 * normalized text, pre-tokenizer, BPE, post-processor (BOS and friends);
 * decoding through the decoder chain. Safe to use from several threads. */
#ifndef INFER_TOKENIZER_TOKENIZER_H
#define INFER_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct tokenizer;
struct gguf_file;

struct token_ids {
    int32_t *ids;
    int n, cap;
};

/* path: a directory holding tokenizer.json, the file itself, or a .gguf file
 * (its tokenizer.ggml.* metadata). Returns NULL with e naming the file and
 * the unsupported component or malformed field. Free with tokenizer_free. */
struct tokenizer *tokenizer_load(const char *path, struct err *e);
/* The tokenizer of an open GGUF file (tokenizer_gguf.c). */
struct tokenizer *tokenizer_from_gguf(const struct gguf_file *f, struct err *e);
void tokenizer_free(struct tokenizer *t);

/* Appends the ids of text to out. add_special applies the post-processor's
 * template (e.g. BOS); special-token strings in the text are matched either
 * way, as tokenizers does. Fails (naming the byte offset) on invalid UTF-8. */
int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, int add_special,
                     struct token_ids *out, struct err *e);
void token_ids_free(struct token_ids *ids);

/* Decodes ids to a malloc'ed NUL-terminated string. Ids with no token (a
 * model's padded vocabulary) are skipped, as tokenizers does. */
int tokenizer_decode(const struct tokenizer *t, const int32_t *ids, int n, int skip_special, char **text,
                     size_t *len, struct err *e);

/* Ids run 0 .. size - 1 (the model vocabulary and added tokens). */
int32_t tokenizer_vocab_size(const struct tokenizer *t);
int tokenizer_is_special(const struct tokenizer *t, int32_t id);
/* Whether id is a byte-fallback token ("<0xNN>"), whose bytes the decoder
 * groups with its neighbours'. */
int tokenizer_is_byte_token(const struct tokenizer *t, int32_t id);
/* The bytes id adds to a decoded text in the middle of it (a byte token's
 * one byte, a word piece with its leading space), malloc'ed into *bytes;
 * what a grammar matches tokens by. Ids without a token get 0 bytes. */
void tokenizer_token_bytes(const struct tokenizer *t, int32_t id, char **bytes, size_t *len);

#endif
