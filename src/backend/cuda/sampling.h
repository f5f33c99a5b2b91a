/* The CUDA sampler's launcher and the per-row parameters it reads from
 * device memory (filled by cuda_sampling.c from pinned staging, so that a
 * captured graph can replay the launch with new values). */
#ifndef INFER_BACKEND_CUDA_SAMPLING_H
#define INFER_BACKEND_CUDA_SAMPLING_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "sampling/sample_seen.h"
#include "sampling/sampling.h"

/* One row's parameters, as sample_token reads them from sampling_params. */
struct sample_row_dev {
    float temperature, top_p, min_p;
    float log_min_p; /* logf(min_p) computed on the host, as sample_token does */
    float repetition, presence, frequency;
    int32_t top_k, top_logprobs;
    int32_t seen_at, n_seen; /* the row's entries in the seen array */
    int32_t bias_at, n_bias; /* ... in the bias array, sorted by token (stable: a token's biases in order) */
    int32_t mask_at;         /* the row's grammar mask in the masks array (words), -1: none */
    uint64_t seed, step;
};

/* The gate between the host writing a step's grammar masks (mapped host
 * memory) and the mask kernel reading them: the host stages ticket before
 * the launch and sets ready = ticket once the masks are written, which the
 * kernel waits for after the logits (so the host writes them while the
 * forward pass runs). One thread waits (sampling.cu: gate_kernel) and
 * leaves its verdict in device memory (gate_open) for the mask kernel's
 * blocks: a system-scope acquire in every block cost ~2 us a block,
 * serialised (32 rows of 262,144 logits: 1,024 blocks, 2 ms), and a read
 * of a verdict left in mapped host memory ~30 us. A wait past
 * SAMPLE_MASK_WAIT_NS sets timed_out and leaves the rows unmasked; the
 * host's finish reports it as an error. */
struct sample_mask_gate {
    uint32_t ticket, ready, timed_out;
};
#define SAMPLE_MASK_WAIT_NS 2000000000ull

/* One span of a logits row (sampling.cu: stats_kernel): its best element
 * (value descending, id ascending) and the sum of exp(l - m) over it. */
struct sample_stats {
    float m;
    int32_t i;
    double s;
};

/* A span's best Gumbel-max draw (sampling.cu: stats_kernel, for a row that
 * draws there): its value m and token i (named as sample_stats' best), i =
 * -1 where no element of the span can be drawn; for a top-p row, z_mass: the
 * sum over the span of exp(z - the span's best z), z = l / T. */
struct sample_draw {
    float m;
    int32_t i;
    double z_mass;
};

/* Spans a row of vocab logits is cut into for the stats (each ~8192 logits, at most 64). */
#define SAMPLE_STATS_MAX_SPLITS 64
#define SAMPLE_STATS_SPLITS(vocab)                                                                                     \
    ((vocab) / 8192 < 1 ? 1 : (vocab) / 8192 > SAMPLE_STATS_MAX_SPLITS ? SAMPLE_STATS_MAX_SPLITS : (vocab) / 8192)
/* Spans of each of a row's `shards` equal parts (a split model's ranks'
 * columns, cols each), so that all of them fit SAMPLE_STATS_MAX_SPLITS. */
#define SAMPLE_STATS_SHARD_SPLITS(cols, shards)                                                                        \
    (SAMPLE_STATS_SPLITS(cols) * (shards) > SAMPLE_STATS_MAX_SPLITS ? SAMPLE_STATS_MAX_SPLITS / (shards)               \
                                                                     : SAMPLE_STATS_SPLITS(cols))

#ifdef __cplusplus
extern "C" {
#endif

/* Each row's statistics over its spans (stats_kernel), for the sampler:
 * logits[rows] of `pitch` floats hold shards x cols logits side by side
 * (a split model's rank columns; shards = 1 and cols = vocab otherwise),
 * each shard cut into SAMPLE_STATS_SHARD_SPLITS(cols, ranks) spans (ranks:
 * the split model's, shards where rank 0 runs it over the gathered row, 1
 * alone); row r's span j
 * goes to stats[r * SAMPLE_STATS_MAX_SPLITS + j], its ids offset by
 * id_base. A rank of a split model runs it over its own columns (shards 1,
 * id_base its first column) and puts the result at span rank *
 * that count: the same numbers rank 0 gets over the
 * gathered row with shards = size. */
cudaError_t launch_logit_stats(const float *logits, size_t pitch, int rows, int cols, int shards, int ranks,
                               int id_base, struct sample_stats *stats, cudaStream_t stream);

/* out[r] = sample_token(logits[r], rows[r], ...): the row's max and
 * log-sum-exp from its spans' statistics (have_stats: already in stats, as
 * a split model's gather leaves them; else launch_logit_stats with this
 * shards count first), then one block per row, with z (the penalised,
 * tempered logits) kept in scratch[n_rows, vocab]. draws (n_rows *
 * SAMPLE_STATS_MAX_SPLITS of them, or NULL): where the statistics are found
 * here, a plainly tempered row (no bias, penalties, top-k, top-p or min-p:
 * the OpenAI API's defaults) makes its Gumbel-max draw with them, over all
 * their blocks, instead of in its one block (the same token; calls of up
 * to 32 rows). A plain greedy row (temperature 0, no bias, no seen tokens,
 * no top log-probs) never reads its logits, so a split model's rank 0 need
 * not gather them. masks (mapped host memory, or NULL): each row with
 * mask_at >= 0 first gets the logits its grammar's mask refuses set to
 * -inf, in place (then its statistics are made here, on a split model
 * too), once gate (mapped host memory) says they are written. The kernels
 * launch with PDL; rows, seen, bias and out may be mapped host memory (no
 * kernel may write rows, seen or bias: the draw reads its row before
 * waiting). */
cudaError_t launch_sample(const float *logits, float *scratch, struct sample_stats *stats, int have_stats, int shards,
                          struct sample_draw *draws, int n_rows, int vocab, const struct sample_row_dev *rows,
                          const struct sample_seen *seen, const struct logit_bias *bias, const uint32_t *masks,
                          struct sample_mask_gate *gate, uint32_t *gate_open, struct sample_result *out,
                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
