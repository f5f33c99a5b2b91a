/* The CUDA sampler (sampler_ops.h), its host side: buffers sized once by init, the
 * per-call packing of rows into mapped pinned memory, and the launch.
 *
 * Layout of the pinned host memory, which the kernels read and write in
 * place (mapped: no copy in either direction):
 *   rows  [max_rows] struct sample_row_dev
 *   seen  [max_rows * SAMPLE_MAX_SEEN] struct sample_seen (rows' lists, packed)
 *   bias  [max_rows * SAMPLE_MAX_BIAS] struct logit_bias (packed, each row's
 *         sorted by token, stable: the kernel applies a token's biases in order)
 *   out   [max_rows] struct sample_result
 *   masks [max_rows * ceil(vocab / 32)] uint32_t: the grammar masks of the
 *         rows that have one (sample_row_dev.mask_at)
 *   gate  struct sample_mask_gate: the masks are written (masks_ready)
 * and on the device only z, [max_rows, vocab] floats of scratch, the
 * rows' spans' statistics and draws, [max_rows, SAMPLE_STATS_MAX_SPLITS] each,
 * and the gate's verdict (gate_open)
 * (the statistics of max_logit_rows on a split model, where every rank's
 * gather leaves them there: cuda_op_gather_logits).
 * A call is three parts, so that a graph can hold the middle one:
 * - stage packs the rows (padding rows up to the graph bucket's count draw
 *   greedily and are ignored) — the previous call has finished, so nothing
 *   reads them;
 * - enqueue launches the kernels, which read the rows where stage left
 *   them and write the results into `out`: fixed addresses, so a captured
 *   graph replays it on the next stage's rows. Why no copies: a copy node
 *   in a graph step ends the chain of programmatic launches and costs a
 *   node of its own on each side of the sampler; the kernels read a row's
 *   parameters before waiting for the logits, so the link's latency is
 *   hidden behind the LM head;
 * - masks_ready copies the rows' grammar masks in and opens the gate the
 *   mask kernel waits at (after the logits): the engine writes the masks
 *   while the forward pass runs, so they cost the step nothing unless
 *   they take longer than it;
 * - finish waits for the stream and hands the results over. */
#include <math.h>
#include <string.h>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/sampling.h"
#include "core/log.h"

struct cuda_sampler {
    int max_rows, vocab;
    size_t at_seen, at_bias, at_out, at_masks, at_gate, staged; /* byte offsets; staged: bytes of the staged part */
    int mask_words;
    const struct sample_row *rows; /* the staged rows, for masks_ready */
    int n_rows, row_words;           /* ... and the words of their masks (the call's vocabulary) */
    uint32_t ticket; /* the last staged step's, in the gate */
    char *host;                              /* pinned and mapped, staged bytes */
    char *host_dev;                          /* the same memory as the device addresses it */
    char *dev;                               /* z, then stats, then draws */
    float *z;
    struct sample_stats *stats; /* [stats_rows, SAMPLE_STATS_MAX_SPLITS] */
    int stats_rows;
    struct sample_draw *draws;
    uint32_t *gate_open; /* device memory: gate_kernel's verdict for the mask kernel (sampling.h) */
};

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

int cuda_sample_split(const struct backend *be) { return be->comm && be->comm->size > 1; }

struct sample_stats *cuda_sample_gather_stats(struct backend *be, int rows)
{
    const struct cuda_sampler *s = cuda_impl(be)->sampler;
    if (!s || rows > s->stats_rows) {
        fprintf(stderr, "infer: fatal: the logits' gather of %d rows before the sampler's init sized %d\n", rows,
                s ? s->stats_rows : 0);
        abort();
    }
    return s->stats;
}

/* Rank 0 needs a row's logit columns unless it draws the plain greedy row,
 * whose token and log-probability the spans' statistics give. */
int cuda_sample_needs_logit_cols(const struct sampling_params *p, int masked)
{
    return masked || !sampling_params_plain_greedy(p);
}

int cuda_op_sample_init(struct backend *be, int max_rows, int max_logit_rows, int vocab, struct err *e)
{
    struct cuda_backend *cb = cuda_impl(be);
    cuda_sample_release(be); /* sized again: the old buffers go */
    if (max_rows < 0 || max_logit_rows < max_rows || vocab < 1)
        return err_set(e, "cuda backend: the sampler needs a vocabulary and 0 <= rows <= logit rows, got %d, %d "
                          "and %d", vocab, max_rows, max_logit_rows);
    struct cuda_sampler *s = xcalloc(1, sizeof *s);
    const size_t R = (size_t)max_rows, stats_rows = cuda_sample_split(be) ? (size_t)max_logit_rows : R;
    s->max_rows = max_rows;
    s->vocab = vocab;
    s->at_seen = align256(R * sizeof(struct sample_row_dev));
    s->at_bias = s->at_seen + align256(R * SAMPLE_MAX_SEEN * sizeof(struct sample_seen));
    s->at_out = s->at_bias + align256(R * SAMPLE_MAX_BIAS * sizeof(struct logit_bias));
    s->at_masks = s->at_out + align256(R * sizeof(struct sample_result));
    s->mask_words = (vocab + 31) / 32;
    s->at_gate = s->at_masks + align256(R * (size_t)s->mask_words * sizeof(uint32_t));
    s->staged = s->at_gate + align256(sizeof(struct sample_mask_gate));
    const size_t z_bytes = align256(R * (size_t)vocab * sizeof(float));
    const size_t stats_bytes = align256(stats_rows * SAMPLE_STATS_MAX_SPLITS * sizeof(struct sample_stats));
    const size_t draws_bytes = align256(R * SAMPLE_STATS_MAX_SPLITS * sizeof(struct sample_draw));
    size_t bytes = z_bytes + stats_bytes + draws_bytes + sizeof(uint32_t); /* then the gate's verdict */
    cudaError_t rc = cudaMalloc((void **)&s->dev, bytes);
    if (rc != cudaSuccess) {
        free(s);
        return err_set(e, "cudaMalloc of %zu bytes for the sampler failed: %s", bytes, cudaGetErrorString(rc));
    }
    cb->n_device_allocs++;
    s->z = (float *)s->dev;
    s->stats = (struct sample_stats *)(s->dev + z_bytes);
    s->stats_rows = (int)stats_rows;
    s->draws = (struct sample_draw *)(s->dev + z_bytes + stats_bytes);
    s->gate_open = (uint32_t *)(s->dev + z_bytes + stats_bytes + draws_bytes);
    rc = cudaHostAlloc((void **)&s->host, s->staged ? s->staged : 256, cudaHostAllocMapped);
    if (rc == cudaSuccess)
        rc = cudaHostGetDevicePointer((void **)&s->host_dev, s->host, 0);
    if (rc != cudaSuccess) {
        size_t staged = s->staged;
        cudaFree(s->dev);
        if (s->host)
            cudaFreeHost(s->host);
        free(s);
        return err_set(e, "mapped cudaHostAlloc of %zu bytes for the sampler failed: %s", staged,
                       cudaGetErrorString(rc));
    }
    cb->sampler = s;
    log_info("cuda: sampler %.1f MiB (%d rows of %d logits)", (double)bytes / (1 << 20), max_rows, vocab);
    return 0;
}

void cuda_sample_release(struct backend *be)
{
    struct cuda_sampler *s = cuda_impl(be)->sampler;
    if (!s)
        return;
    cudaFree(s->dev);
    cudaFreeHost(s->host);
    free(s);
    cuda_impl(be)->sampler = NULL;
}

/* Copies n biases sorted by token, stable (insertion sort: lists are short). */
static void put_bias_sorted(struct logit_bias *dst, const struct logit_bias *src, int n)
{
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && dst[j - 1].token > src[i].token) {
            dst[j] = dst[j - 1];
            j--;
        }
        dst[j] = src[i];
    }
}

/* n_rows: the rows of the call (padding included); rows[n_check]: those to check. */
static int check_call(const struct cuda_sampler *s, int n_rows, int vocab, const struct sample_row *rows,
                      int n_check, struct err *e)
{
    if (!s)
        return err_set(e, "cuda backend: sample before the sampler's init");
    if (n_rows > s->max_rows || vocab > s->vocab || (size_t)n_rows * vocab > (size_t)s->max_rows * s->vocab)
        return err_set(e, "sample: %d rows of %d logits exceed the sampler's %d of %d", n_rows, vocab, s->max_rows,
                       s->vocab);
    for (int r = 0; r < n_check; r++)
        if (rows[r].n_seen > SAMPLE_MAX_SEEN || rows[r].params->n_bias > SAMPLE_MAX_BIAS)
            return err_set(e, "sample: row %d has %d seen tokens and %d biases (at most %d and %d)", r,
                           rows[r].n_seen, rows[r].params->n_bias, SAMPLE_MAX_SEEN, SAMPLE_MAX_BIAS);
    return 0;
}

int cuda_op_sample_stage(struct backend *be, int n_rows, int pad_rows, int vocab, const struct sample_row *rows,
                         struct err *e)
{
    struct cuda_sampler *s = cuda_impl(be)->sampler;
    if (check_call(s, pad_rows, vocab, rows, n_rows, e))
        return -1;
    if (n_rows > pad_rows)
        return err_set(e, "sample: %d rows padded to %d", n_rows, pad_rows);
    struct sample_row_dev *hr = (struct sample_row_dev *)s->host;
    struct sample_seen *hs = (struct sample_seen *)(s->host + s->at_seen);
    struct logit_bias *hb = (struct logit_bias *)(s->host + s->at_bias);
    int n_seen = 0, n_bias = 0;
    for (int r = 0; r < n_rows; r++) {
        const struct sampling_params *p = rows[r].params;
        hr[r] = (struct sample_row_dev){
            .temperature = p->temperature, .top_p = p->top_p, .min_p = p->min_p,
            .log_min_p = p->min_p > 0.f ? logf(p->min_p) : 0.f, .repetition = p->repetition_penalty,
            .presence = p->presence_penalty, .frequency = p->frequency_penalty, .top_k = p->top_k,
            .top_logprobs = p->top_logprobs, .seen_at = n_seen, .n_seen = rows[r].n_seen, .bias_at = n_bias,
            .n_bias = p->n_bias, .mask_at = -1, .seed = p->seed, .step = rows[r].step};
        if (rows[r].mask) /* copied in by masks_ready */
            hr[r].mask_at = r * s->mask_words;
        if (rows[r].n_seen)
            memcpy(hs + n_seen, rows[r].seen, (size_t)rows[r].n_seen * sizeof *hs);
        put_bias_sorted(hb + n_bias, p->bias, p->n_bias);
        n_seen += rows[r].n_seen;
        n_bias += p->n_bias;
    }
    for (int r = n_rows; r < pad_rows; r++) /* padding rows of a graph's bucket: greedy, nothing else */
        hr[r] = (struct sample_row_dev){.top_p = 1.f, .repetition = 1.f, .mask_at = -1};
    s->rows = rows;
    s->n_rows = n_rows;
    s->row_words = (vocab + 31) / 32;
    struct sample_mask_gate *gate = (struct sample_mask_gate *)(s->host + s->at_gate);
    gate->ticket = ++s->ticket; /* the previous step has finished: nothing reads the gate now */
    return 0;
}

/* The kernel reads the gate with acquire loads at system scope; the
 * release store here orders the masks' writes before it. */
int cuda_op_sample_masks_ready(struct backend *be, struct err *e)
{
    struct cuda_sampler *s = cuda_impl(be)->sampler;
    if (!s)
        return err_set(e, "cuda backend: sample before the sampler's init");
    for (int r = 0; r < s->n_rows; r++)
        if (s->rows[r].mask)
            memcpy((uint32_t *)(s->host + s->at_masks) + (size_t)r * s->mask_words, s->rows[r].mask,
                   (size_t)s->row_words * sizeof(uint32_t));
    struct sample_mask_gate *gate = (struct sample_mask_gate *)(s->host + s->at_gate);
    __atomic_store_n(&gate->ready, s->ticket, __ATOMIC_RELEASE);
    return 0;
}

/* A split model's statistics are there already, left by
 * cuda_op_gather_logits for each of the comm's shards; else the sampler
 * finds them over the whole row. */
int cuda_op_sample_enqueue(struct backend *be, const float *logits, int pad_rows, int vocab, struct err *e)
{
    struct cuda_sampler *s = cuda_impl(be)->sampler;
    if (check_call(s, pad_rows, vocab, NULL, 0, e))
        return -1;
    if (pad_rows == 0)
        return 0;
    const int split = cuda_sample_split(be), shards = split ? be->comm->size : 1;
    CUDA_TRY(launch_sample(logits, s->z, s->stats, split, shards,
                           s->draws, pad_rows, vocab, (const struct sample_row_dev *)s->host_dev,
                           (const struct sample_seen *)(s->host_dev + s->at_seen),
                           (const struct logit_bias *)(s->host_dev + s->at_bias),
                           (const uint32_t *)(s->host_dev + s->at_masks),
                           (struct sample_mask_gate *)(s->host_dev + s->at_gate), s->gate_open,
                           (struct sample_result *)(s->host_dev + s->at_out), cuda_stream(be)),
             e);
    return 0;
}

int cuda_op_sample_finish(struct backend *be, int n_rows, struct sample_result *out, struct err *e)
{
    struct cuda_sampler *s = cuda_impl(be)->sampler;
    if (!s)
        return err_set(e, "cuda backend: sample before the sampler's init");
    CUDA_TRY(cudaStreamSynchronize(cuda_stream(be)), e);
    struct sample_mask_gate *gate = (struct sample_mask_gate *)(s->host + s->at_gate);
    s->rows = NULL;
    s->n_rows = 0;
    if (gate->timed_out) {
        gate->timed_out = 0;
        return err_set(e, "cuda sampler: the grammar masks were not written within %.0f s of the logits "
                          "(masks_ready not called)", SAMPLE_MASK_WAIT_NS / 1e9);
    }
    memcpy(out, s->host + s->at_out, (size_t)n_rows * sizeof *out);
    return 0;
}
