#include "tokenizer/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

uint64_t strmap_hash(const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)key[i]) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

void strmap_init(struct strmap *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    m->n_slots = 16;
    while (m->n_slots < expected * 2)
        m->n_slots *= 2;
    m->slots = xcalloc(m->n_slots, sizeof *m->slots);
}

void strmap_free(struct strmap *m)
{
    free(m->slots);
    free(m->entries);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

static void grow(struct strmap *m)
{
    free(m->slots);
    m->n_slots *= 2;
    m->slots = xcalloc(m->n_slots, sizeof *m->slots);
    for (size_t i = 0; i < m->n; i++) {
        size_t s = m->entries[i].hash & (m->n_slots - 1);
        while (m->slots[s])
            s = (s + 1) & (m->n_slots - 1);
        m->slots[s] = (uint32_t)i + 1;
    }
}

static size_t find_slot(const struct strmap *m, const char *key, size_t len, uint64_t h)
{
    size_t s = h & (m->n_slots - 1);
    while (m->slots[s]) {
        const struct strmap_entry *e = &m->entries[m->slots[s] - 1];
        if (e->hash == h && e->len == len && !memcmp(m->arena + e->off, key, len))
            return s;
        s = (s + 1) & (m->n_slots - 1);
    }
    return s;
}

void strmap_put(struct strmap *m, const char *key, size_t len, int32_t value)
{
    uint64_t h = strmap_hash(key, len);
    size_t s = find_slot(m, key, len, h);
    if (m->slots[s]) {
        m->entries[m->slots[s] - 1].value = value;
        return;
    }
    if ((m->n + 1) * 2 > m->n_slots) {
        grow(m);
        s = find_slot(m, key, len, h);
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 1024;
        m->entries = xrealloc(m->entries, m->cap * sizeof *m->entries);
    }
    if (!m->arena || m->arena_len + len > m->arena_cap) { /* an empty first key too: no offset on NULL */
        m->arena_cap = (m->arena_len + len) * 2 + 4096;
        m->arena = xrealloc(m->arena, m->arena_cap);
    }
    CHECK(m->arena_len + len < UINT32_MAX);
    memcpy(m->arena + m->arena_len, key, len);
    m->entries[m->n] = (struct strmap_entry){(uint32_t)m->arena_len, (uint32_t)len, h, value};
    m->arena_len += len;
    m->slots[s] = (uint32_t)++m->n;
}

int32_t strmap_get(const struct strmap *m, const char *key, size_t len)
{
    if (!m->slots)
        return -1;
    size_t s = find_slot(m, key, len, strmap_hash(key, len));
    return m->slots[s] ? m->entries[m->slots[s] - 1].value : -1;
}
