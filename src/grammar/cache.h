/* Compiled constraints, shared and cached: a request's grammar_spec
 * compiled for one vocabulary once, and handed out as a reference that
 * requests hold while they decode. The cache keeps the most recently used
 * ones by their text (kind, options, text), up to a count and a byte
 * budget; a reference keeps its grammar alive after the cache drops it.
 * Thread-safe: the server's request threads compile (the engine thread
 * never waits for a compile), the engine thread only reads references. */
#ifndef INFER_GRAMMAR_CACHE_H
#define INFER_GRAMMAR_CACHE_H

#include <stddef.h>

#include "grammar/grammar.h"
#include "grammar/spec.h"

struct grammar_cache;
struct grammar_ref; /* a compiled constraint */

/* The bounds: a schema of a few properties over a 262k-token vocabulary
 * takes about 170 KB (heaptrack, tools/soak.py's schemas), so the count
 * binds for those (~43 MB) and the bytes for large ones. */
enum { GRAMMAR_CACHE_ENTRIES = 256 };
#define GRAMMAR_CACHE_BYTES ((size_t)64 << 20)

/* A cache for tok's vocabulary as n_vocab ids with these EOS ids (tok
 * borrowed; it must outlive the cache). The vocabulary's bytes and trie
 * are built on the first compile, not here: a server that never sees a
 * constraint never pays for them. The cache must outlive every
 * reference it hands out. */
struct tokenizer;
struct grammar_cache *grammar_cache_new(const struct tokenizer *tok, int n_vocab, const int32_t *eos, int n_eos,
                                        int max_entries, size_t max_bytes);
void grammar_cache_free(struct grammar_cache *c);

/* The compiled spec: from the cache, or compiled now and cached. Returns
 * a new reference, or NULL with e naming the problem (compile errors are
 * not cached). *notes (may be NULL) receives what strict = 0 ignored, as
 * a copy the caller frees. */
struct grammar_ref *grammar_cache_get(struct grammar_cache *c, const struct grammar_spec *spec,
                                      struct json_schema_notes *notes, struct err *e);

void grammar_ref_retain(struct grammar_ref *r);
void grammar_ref_release(struct grammar_ref *r);
const struct grammar_tokens *grammar_ref_tokens(const struct grammar_ref *r);

struct grammar_cache_stats {
    long hits, misses, entries;
    size_t bytes;
};
void grammar_cache_get_stats(struct grammar_cache *c, struct grammar_cache_stats *out);

#endif
