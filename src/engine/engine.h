/* The engine: the only way anything (CLI, server, benchmarks) runs the
 * model. A thread owns the step runner (src/runner) and the scheduler
 * (src/sched) and runs steps while there is work, fed by a thread-safe
 * submission queue. Callers submit requests from any thread and receive
 * each choice's tokens, text deltas and finish through a callback that runs
 * on the engine thread as tokens are produced (llama.cpp's server_queue /
 * server_response split): the callback must be quick and must not call back
 * into the engine except engine_abort. */
#ifndef INFER_ENGINE_ENGINE_H
#define INFER_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "runner/graph_opts.h"
#include "sampling/sampling.h"
#include "sched/sequence.h"
#include "spec/ngram.h"
#include "spec/suffix.h"
#include "tokenizer/tokenizer.h"

struct model;
struct relay;

struct engine;

/* Speculative decoding's proposer (--speculative): none, prompt lookup,
 * suffix decoding or a draft model. */
enum spec_method { SPEC_METHOD_NONE, SPEC_METHOD_NGRAM, SPEC_METHOD_SUFFIX, SPEC_METHOD_DRAFT };

/* The most tokens a step proposes for a sequence unless told: prompt
 * lookup 8, suffix decoding (whose proposals are as long as their match
 * supports) 16 (docs/benchmarks.md has the runs that chose them), a draft
 * model 4 (each costs a draft step). */
static inline int spec_k_default(enum spec_method m)
{
    return m == SPEC_METHOD_SUFFIX ? 16 : m == SPEC_METHOD_DRAFT ? 4 : 8;
}

/* "none", "ngram", "suffix", "draft": --speculative's value. */
static inline const char *spec_method_name(enum spec_method m)
{
    return m == SPEC_METHOD_NGRAM ? "ngram" : m == SPEC_METHOD_SUFFIX ? "suffix" : m == SPEC_METHOD_DRAFT ? "draft" : "none";
}

struct engine_opts {
    int max_batched_tokens; /* token budget of one step (--max-num-batched-tokens) */
    int max_seqs;           /* sequences in one step (--max-num-seqs) */
    int block_size;         /* tokens per KV block */
    int max_context;        /* tokens one sequence may reach (--max-model-len); 0: the model's positions (at most
                               4096 on the host) */
    int kv_blocks;     /* KV blocks (block 0 included): a host's count, a device's most; 0: a host four full contexts */
    double gpu_memory_utilization; /* share of the device memory left for the KV cache */
    int prefix_caching;            /* reuse the KV blocks of shared prompt prefixes */
    int return_logits;   /* requests may ask for their logits (sizes every step for a full chunk of rows) */
    int check_integrity; /* run the cache's integrity check after every step; a violation aborts */
    enum spec_method spec_method;     /* --speculative */
    int spec_k; /* the most proposals one step checks for a sequence (--num-speculative-tokens; 0: spec_k_default) */
    struct spec_ngram_opts spec_ngram; /* prompt lookup's n-gram lengths */
    struct spec_suffix_opts spec_suffix; /* suffix decoding's match depth, lengths, cache */
    const char *spec_model;              /* the draft model's checkpoint (--speculative-model) */
    struct graph_opts graph; /* --cuda-graph-mode and its buckets */
    const struct relay *relay; /* a split model's other ranks, driven step by step (src/parallel), or NULL */
};

/* The defaults, the one source the command-line flags take theirs from:
 * 2048 tokens and 64 sequences a step, blocks of 16, 90% of the free device
 * memory, prefix caching on, no graphs (the CLI picks full graphs where the
 * backend has them), decode buckets up to 256 with padding. */
struct engine_opts engine_opts_default(void);

struct engine_request {
    const int32_t *prompt; /* copied */
    int n_prompt;
    int max_tokens;                  /* cut to what the context leaves */
    int n;                           /* choices, 1..128 */
    struct sampling_params sampling; /* the logit bias is copied; choice i draws from stream (seed, i) */
    char *const *stop;               /* copied; matched on the text (needs the tokenizer) */
    int n_stop;
    int ignore_eos;
    int no_speculation; /* "speculative": false: the server's speculative decoding skips this request */
    const int32_t *forced; /* copied: the first n_forced output tokens are these instead of draws (scoring a
                              given continuation); no eos ends them */
    int n_forced;
    int return_logits; /* events carry the logits of every position (needs engine_opts.return_logits; n = 1) */
    /* A compiled constraint (src/grammar/cache.h) over the model's
     * vocabulary, or NULL: every choice's tokens are drawn under its masks
     * and a choice finishes with stop once the grammar is complete. The
     * engine holds its own reference while the request runs. */
    struct grammar_ref *grammar;
    void *user; /* handed back in every event */
};

/* One choice's progress: a token (with its text, possibly empty while a
 * character or a possible stop string is incomplete), and on the last
 * event of the choice, finished and the finish reason. An aborted choice
 * gets a last event without a token. */
struct engine_event {
    long request_id;
    void *user;
    int choice;
    int has_token;
    const struct sample_result *sample; /* the token and its log-probs, when has_token */
    const char *text;                   /* new text, not NUL-terminated; NULL without a tokenizer */
    size_t text_len;
    int finished;
    enum finish_reason finish;
    const char *full_text; /* when finished: the choice's whole text, cut at a stop string */
    size_t full_text_len;
    const int32_t *ids; /* when finished: every output token (an eos that stopped it included) */
    int prompt_tokens, completion_tokens;
    double queued_seconds; /* from engine_submit to the first step that ran the request */
    /* return_logits requests: an event of its own (no token) after each
     * step, with the f32 logits [n_logits, vocab] that the tokens fed at
     * positions logits_from .. logits_from + n_logits - 1 produced; valid
     * during the callback */
    const float *logits;
    int n_logits, logits_from;
};

typedef void (*engine_event_fn)(void *ctx, const struct engine_event *ev);

struct engine_stats {
    long requests, steps, prompt_tokens, completion_tokens;
    long prefix_hit_tokens, prefix_lookup_tokens, prefix_hit_blocks, prefix_lookup_blocks;
    long computed_tokens, preemptions, evicted_blocks, forked_blocks;
    long graph_replays, eager_steps; /* forward steps replayed as a CUDA graph, run eagerly */
    long spec_steps, spec_proposed, spec_accepted; /* verify entries, the tokens they proposed, those accepted */
    const char *spec_method;                       /* spec_method_name of --speculative */
    /* seconds of the engine thread in each part of its steps: planning,
     * running the step (building the batch, the launch, waiting for the
     * draws), committing the draws (events included) */
    double plan_s, run_s, commit_s;
    double launch_s, wait_s; /* run_s in two: the host's part (build, relay, launch), the wait for the draws */
    double relay_s, enqueue_s; /* of launch_s: sending the step to the other ranks, the graph (or eager) launch */
    double mask_s;             /* writing grammar masks (on a device, within wait_s: while the step runs) */
    int kv_blocks;
    int max_context; /* tokens one sequence may reach (prompt + output) */
    int ranks;       /* GPUs (processes) the model is split over */
    double graph_capture_s; /* this rank's (rank 0's) CUDA graph capture; the others log theirs */
    long graph_bytes;       /* device memory the capture took on this rank */
    /* now (as of the engine thread's last loop): choices running and
     * waiting (submitted ones not yet scheduled included); KV blocks held
     * by sequences, held by the prefix cache alone, and free */
    int running, waiting, kv_blocks_used, kv_blocks_cached, kv_blocks_free;
};

/* Sizes the KV cache and workspace and starts the thread. model and tok
 * (NULL: no text, no stop strings) are borrowed and must outlive the
 * engine. Free with engine_free. */
struct engine *engine_create(struct model *m, const struct tokenizer *tok, const struct engine_opts *o,
                             engine_event_fn on_event, void *ctx, struct err *e);

/* Validates and queues a request (any thread). Returns its id (> 0), or -1
 * with e naming the bad field. */
long engine_submit(struct engine *eng, const struct engine_request *req, struct err *e);

/* Cancels a request (any thread): its choices end with FINISH_REASON_ABORT
 * and their blocks are freed. Unknown or finished ids are ignored. */
void engine_abort(struct engine *eng, long request_id);

/* The model's vocabulary size (any thread). */
int engine_vocab_size(const struct engine *eng);

/* A snapshot of the counters (any thread). */
void engine_get_stats(struct engine *eng, struct engine_stats *out);

/* Stops the thread (requests still running end aborted, with their events)
 * and frees everything. */
void engine_free(struct engine *eng);

#endif
