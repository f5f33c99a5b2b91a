/* Runs one sequence through the model over the paged KV cache: the simplest
 * user of the forward batch, used by `infer generate` until the engine's
 * scheduler arrives, and by the parity tests. Tokens fed in one call are
 * split into chunks of at most the workspace's row count (chunked prefill). */
#ifndef INFER_ENGINE_SEQ_RUNNER_H
#define INFER_ENGINE_SEQ_RUNNER_H

#include "kvcache/block_pool.h"
#include "kvcache/seq_blocks.h"
#include "model/forward.h"

struct seq_runner {
    const struct model *m; /* borrowed */
    struct forward_ws ws;
    struct kv_store kv;
    struct block_pool pool;
    struct seq_blocks blocks;
    int block_size;
    int max_context;
    int n_cached; /* positions already in the cache */
    /* host staging for one chunk */
    int32_t *positions, *slots, *seq_of, *logit_rows;
    int32_t query_start[2], kv_len[1];
};

struct seq_runner_opts {
    int max_context;  /* tokens the sequence may reach */
    int chunk_tokens; /* rows of one step (prefill chunk) */
    int max_logits;   /* rows that get logits in one step */
    int block_size;   /* tokens per KV block */
    double gpu_memory_utilization; /* device backends: share of the memory left for the KV cache */
};

/* Sizes the workspace and metadata, then the KV cache (on a device backend:
 * gpu_memory_utilization of what is left, which must hold max_context; on
 * the CPU: max_context), and prints the plan on stderr on a device backend.
 * Free with seq_runner_free. */
int seq_runner_init_opts(struct seq_runner *r, const struct model *m, const struct seq_runner_opts *o,
                         struct err *e);

/* Sizes the cache for max_context tokens (+ one reserved scratch block) and
 * the workspace for chunk_tokens rows, of which at most max_logits get
 * logits in one step (chunk_tokens to feed with all_rows, else 1).
 * Free with seq_runner_free. */
int seq_runner_init(struct seq_runner *r, const struct model *m, int max_context, int chunk_tokens,
                    int max_logits, int block_size, struct err *e);
void seq_runner_free(struct seq_runner *r);

/* Appends n tokens at the next positions. With all_rows, logits of every fed
 * token go to logits_out ([n, vocab]); otherwise only the last token's
 * ([1, vocab]). logits_out or argmax_out may be NULL. */
int seq_runner_feed(struct seq_runner *r, const int32_t *tokens, int n, int all_rows,
                    float *logits_out, int32_t *argmax_out, struct err *e);

/* Prepares (without running) the forward batch that appends one token at
 * the next position: blocks are reserved, b points into r's staging. Used
 * to capture and time a decode step. */
int seq_runner_prepare_step(struct seq_runner *r, const int32_t *token, struct fwd_batch *b, struct err *e);

/* Forgets the sequence and returns its blocks to the pool. */
void seq_runner_reset(struct seq_runner *r);

#endif
