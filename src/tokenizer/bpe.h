/* Byte-pair encoding as Hugging Face tokenizers' BPE model does it: the
 * characters of a word become symbols (unknown ones via byte fallback
 * "<0xNN>" tokens or the unk token), then the adjacent pair of lowest merge
 * rank is merged, leftmost first among equals, until no pair merges. */
#ifndef INFER_TOKENIZER_BPE_H
#define INFER_TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "tokenizer/strmap.h"

struct bpe_merge_slot {
    uint64_t pair; /* (left id << 32) | right id; 0 = empty (pair (0,0) stored +1 below) */
    int32_t rank;
    int32_t new_id;
};

struct bpe_cache;

struct bpe {
    struct strmap vocab; /* token -> id */
    char **id_to_token;  /* [n_ids] NUL-terminated, owned; NULL for gaps */
    size_t *id_len;
    int32_t n_ids;
    struct bpe_merge_slot *merges; /* open addressing on pair */
    size_t n_merge_slots;
    int32_t unk_id;      /* -1 = none */
    int fuse_unk;
    int byte_fallback;
    int ignore_merges;
    int32_t byte_ids[256]; /* "<0xNN>" ids when byte_fallback, else -1 */
    struct bpe_cache *cache;
};

/* Adds a merge "left right" (by token strings). Returns -1 with e set when a
 * part or the merged token is not in the vocabulary. */
int bpe_add_merge(struct bpe *b, const char *left, size_t left_len, const char *right, size_t right_len,
                  int32_t rank, struct err *e);
/* Call after the vocabulary and merges are in place. */
void bpe_finish(struct bpe *b);
void bpe_free(struct bpe *b);

/* Appends the ids of one word to *ids (growing it; *cap is its capacity). */
void bpe_encode_word(const struct bpe *b, const char *word, size_t len, int32_t **ids, int *n, int *cap);

#endif
