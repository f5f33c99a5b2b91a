/* An open-addressing hash map from byte strings to int32 values (token ->
 * id). Keys are copied into one arena; the map never shrinks. */
#ifndef INFER_TOKENIZER_STRMAP_H
#define INFER_TOKENIZER_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap {
    uint32_t *slots; /* index + 1 into entries; 0 = empty */
    size_t n_slots;  /* power of two */
    struct strmap_entry {
        uint32_t off; /* into arena */
        uint32_t len;
        uint64_t hash;
        int32_t value;
    } *entries;
    size_t n, cap;
    char *arena;
    size_t arena_len, arena_cap;
};

void strmap_init(struct strmap *m, size_t expected);
void strmap_free(struct strmap *m);
/* Inserts or overwrites. */
void strmap_put(struct strmap *m, const char *key, size_t len, int32_t value);
/* Returns the value, or -1 when absent. */
int32_t strmap_get(const struct strmap *m, const char *key, size_t len);
uint64_t strmap_hash(const char *key, size_t len);

#endif
