/* The graph runner: padding, capture and replay (graph_runner.h). */
#include "engine/graph_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"

void graph_runner_init_padding(struct graph_runner *gr, const struct model *m, struct forward_ws *ws,
                               struct kv_store *kv, int max_tokens, int max_seqs, int max_blocks_per_seq)
{
    gr->m = m, gr->ws = ws, gr->kv = kv;
    gr->max_blocks_per_seq = max_blocks_per_seq;
    gr->cap_tokens = max_tokens, gr->cap_seqs = max_seqs;
    const size_t T = (size_t)max_tokens + 1, S = (size_t)max_seqs + 1;
    const size_t L = T > S ? T : S; /* logit rows: at most one a token or a sequence */
    gr->tokens = xmalloc(T * sizeof(int32_t)), gr->positions = xmalloc(T * sizeof(int32_t));
    gr->slots = xmalloc(T * sizeof(int32_t)), gr->seq_of = xmalloc(T * sizeof(int32_t));
    gr->query_start = xmalloc(S * sizeof(int32_t)), gr->kv_len = xmalloc(S * sizeof(int32_t));
    gr->logit_rows = xmalloc(L * sizeof(int32_t));
    gr->tables = xcalloc(S * (size_t)max_blocks_per_seq, sizeof(int32_t));
}

void graph_runner_pad(struct graph_runner *gr, const struct fwd_batch *src, int n_tokens, int n_seqs, int n_logits,
                      struct fwd_batch *b)
{
    const int n = src ? src->n_tokens : 0, ns = src ? src->n_seqs : 0, nl = src ? src->n_logits : 0;
    const int B = gr->max_blocks_per_seq;
    CHECK(n_tokens >= n && n_seqs >= ns && n_logits >= nl && n_tokens <= gr->cap_tokens && n_seqs <= gr->cap_seqs);
    CHECK(n_tokens == n || n_seqs > ns);
    CHECK(!src || src->max_blocks_per_seq <= B);
    if (n) {
        memcpy(gr->tokens, src->token_ids, (size_t)n * 4), memcpy(gr->positions, src->positions, (size_t)n * 4);
        memcpy(gr->slots, src->slot_mapping, (size_t)n * 4), memcpy(gr->seq_of, src->seq_of_token, (size_t)n * 4);
    }
    for (int j = 0; n + j < n_tokens; j++) {
        const int s = ns + j < n_seqs - 1 ? ns + j : n_seqs - 1;
        gr->tokens[n + j] = 0, gr->positions[n + j] = 0, gr->slots[n + j] = -1, gr->seq_of[n + j] = s;
    }
    for (int s = 0; s < ns; s++) {
        gr->query_start[s] = src->query_start[s];
        gr->kv_len[s] = src->kv_len[s];
        int32_t *row = gr->tables + (size_t)s * B;
        memcpy(row, src->block_tables + (size_t)s * src->max_blocks_per_seq,
               (size_t)src->max_blocks_per_seq * sizeof *row);
        memset(row + src->max_blocks_per_seq, 0, (size_t)(B - src->max_blocks_per_seq) * sizeof *row);
    }
    const int pad = n_tokens - n;
    for (int k = 0; ns + k < n_seqs; k++) { /* padding sequence ns + k starts at n + min(k, pad) */
        gr->query_start[ns + k] = n + (k < pad ? k : pad);
        gr->kv_len[ns + k] = 0;
        memset(gr->tables + (size_t)(ns + k) * B, 0, (size_t)B * sizeof *gr->tables);
    }
    gr->query_start[n_seqs] = n_tokens;
    if (nl)
        memcpy(gr->logit_rows, src->logit_rows, (size_t)nl * 4);
    for (int k = nl; k < n_logits; k++) {
        const int t = n + (k - nl);
        gr->logit_rows[k] = t < n_tokens ? t : n_tokens - 1;
    }
    *b = (struct fwd_batch){.n_tokens = n_tokens,
                            .n_seqs = n_seqs,
                            .n_logits = n_logits,
                            .max_blocks_per_seq = B,
                            .token_ids = gr->tokens,
                            .positions = gr->positions,
                            .slot_mapping = gr->slots,
                            .seq_of_token = gr->seq_of,
                            .query_start = gr->query_start,
                            .kv_len = gr->kv_len,
                            .block_tables = gr->tables,
                            .logit_rows = gr->logit_rows,
                            .skip_argmax = 1}; /* the engine draws: inside the graph or after it */
}

/* --- capture --- */

struct progress {
    int done, total, tty;
};

static void progress_tick(struct progress *p)
{
    if (!p->tty)
        return;
    const int width = 30, fill = p->done * width / (p->total ? p->total : 1);
    fprintf(stderr, "\rinfer: capturing cuda graphs [%.*s%*s] %d/%d", fill, "##############################",
            width - fill, "", p->done, p->total);
    p->done++;
}

/* The forward over the padded step b, then (with sample_vocab) the draw of
 * its logit rows. */
static int forward_and_draw(struct graph_runner *gr, const struct fwd_batch *b, struct err *e)
{
    struct backend *be = gr->m->be;
    if (model_forward(gr->m, gr->ws, gr->kv, b, e))
        return -1;
    return gr->sample_vocab ? be->ops->sample_enqueue(be, gr->ws->logits, b->n_logits, gr->sample_vocab, e) : 0;
}

/* The warm-up before a capture: the whole step (cuBLASLt plans for its
 * shapes, lazily loaded kernels), or (logits_only) just its logits and
 * draw, when a step of the same token count has run: then only the logits'
 * row count is new. */
static int warm_up(struct graph_runner *gr, const struct fwd_batch *b, int logits_only, struct err *e)
{
    const struct backend_ops *ops = gr->m->be->ops;
    struct backend *be = gr->m->be;
    if (gr->sample_vocab && ops->sample_stage(be, 0, b->n_logits, gr->sample_vocab, NULL, e))
        return -1;
    if (!logits_only)
        return forward_and_draw(gr, b, e) || ops->synchronize(be, e) ? -1 : 0;
    struct fwd_meta meta;
    if (ops->batch_upload(be, b, &meta, e))
        return -1;
    forward_logits(gr->m, gr->ws, &meta, 1);
    if (gr->sample_vocab && ops->sample_enqueue(be, gr->ws->logits, b->n_logits, gr->sample_vocab, e))
        return -1;
    return ops->synchronize(be, e);
}

/* Captures forward_and_draw over the padded step b into *out, after
 * warm_up (the sampler's rows are greedy padding for it). */
static int capture_whole(struct graph_runner *gr, const struct fwd_batch *b, int logits_only, void **out,
                         struct err *e)
{
    const struct backend_ops *ops = gr->m->be->ops;
    struct backend *be = gr->m->be;
    if (warm_up(gr, b, logits_only, e) || ops->graph_begin(be, e))
        return -1;
    struct err end_err;
    int rc = forward_and_draw(gr, b, e);
    if (ops->graph_end(be, out, &end_err) && !rc) { /* the capture must end either way */
        *e = end_err;
        rc = -1;
    }
    return rc;
}

/* The pieces of token bucket t: a warm-up step, one upload, then each
 * piece in its own capture (the upload is outside them: a replay uploads
 * eagerly, as attention between the pieces needs the metadata). */
static int capture_pieces(struct graph_runner *gr, int t, struct progress *p, struct err *e)
{
    const struct backend_ops *ops = gr->m->be->ops;
    struct backend *be = gr->m->be;
    const int L = gr->m->cfg.n_layers;
    struct fwd_batch b;
    struct fwd_meta meta;
    graph_runner_pad(gr, NULL, gr->tok_buckets[t], 1, 0, &b);
    if (model_forward(gr->m, gr->ws, gr->kv, &b, e) || ops->batch_upload(be, &b, &meta, e) ||
        ops->synchronize(be, e))
        return -1;
    for (int i = 0; i <= L; i++) {
        progress_tick(p);
        if (ops->graph_begin(be, e))
            return -1;
        forward_piece(gr->m, gr->ws, gr->kv, &meta, i);
        if (ops->graph_end(be, &gr->pieces[(size_t)t * (L + 1) + i], e))
            return -1;
    }
    return 0;
}

/* Full graphs: for each token bucket, the sequence buckets up to it and
 * the first one past it (a step's sequences never exceed its tokens). */
static int full_wanted(const struct graph_runner *gr, int t, int s)
{
    return gr->seq_buckets[s] <= gr->tok_buckets[t] || s == 0 || gr->seq_buckets[s - 1] < gr->tok_buckets[t];
}

static int capture_all(struct graph_runner *gr, struct err *e)
{
    const int L = gr->m->cfg.n_layers, NT = gr->n_tok_buckets, NS = gr->n_seq_buckets;
    struct progress p = {0, gr->n_buckets, isatty(2)};
    if (gr->mode == GRAPH_MODE_PIECEWISE)
        p.total += NT * (L + 1);
    for (int t = 0; gr->mode == GRAPH_MODE_FULL && t < NT; t++)
        for (int s = 0; s < NS; s++)
            p.total += full_wanted(gr, t, s);
    gr->n_full_graphs = p.total - gr->n_buckets;
    struct fwd_batch b;
    /* largest first */
    for (int t = NT - 1; gr->mode == GRAPH_MODE_PIECEWISE && t >= 0; t--)
        if (capture_pieces(gr, t, &p, e))
            return err_prefix(e, "capturing the piecewise graphs of %d tokens", gr->tok_buckets[t]);
    for (int t = NT - 1; gr->mode == GRAPH_MODE_FULL && t >= 0; t--) {
        int warmed = 0; /* a step of these tokens ran: only the logits' rows change with s */
        for (int s = NS - 1; s >= 0; s--) {
            if (!full_wanted(gr, t, s))
                continue;
            progress_tick(&p);
            const int S = gr->seq_buckets[s], T = gr->tok_buckets[t];
            graph_runner_pad(gr, NULL, T, S, S < gr->max_logits ? S : gr->max_logits, &b);
            /* S == T takes the decode attention kernel: warm that whole too */
            if (capture_whole(gr, &b, warmed && S != T, &gr->full[(size_t)t * NS + s], e))
                return err_prefix(e, "capturing the full graph of %d tokens, %d sequences", T, S);
            warmed = 1;
        }
    }
    for (int i = gr->n_buckets - 1; i >= 0; i--) {
        progress_tick(&p);
        graph_runner_pad(gr, NULL, gr->buckets[i], gr->buckets[i], gr->buckets[i], &b);
        if (capture_whole(gr, &b, 0, &gr->graphs[i], e))
            return err_prefix(e, "capturing the decode graph of batch size %d", gr->buckets[i]);
    }
    if (p.tty)
        fputc('\r', stderr);
    return 0;
}

/* Sequence-slot buckets of full graphs: powers of two below max_seqs + 1,
 * then max_seqs + 1 (a step of max_seqs sequences may need a padding one). */
static void seq_buckets(struct graph_runner *gr, int max_seqs)
{
    gr->seq_buckets = xmalloc(34 * sizeof *gr->seq_buckets);
    int k = 0;
    for (int s = 1; s < max_seqs + 1; s *= 2)
        gr->seq_buckets[k++] = s;
    gr->seq_buckets[k++] = max_seqs + 1;
    gr->n_seq_buckets = k;
}

static void print_summary(const struct graph_runner *gr)
{
    char what[256];
    int at = snprintf(what, sizeof what, "%d decode (batch %d..%d)", gr->n_buckets, gr->buckets[0],
                      gr->buckets[gr->n_buckets - 1]);
    if (gr->mode == GRAPH_MODE_PIECEWISE)
        snprintf(what + at, sizeof what - (size_t)at, ", %d piecewise (%d token buckets %d..%d x %d pieces)",
                 gr->n_tok_buckets * (gr->m->cfg.n_layers + 1), gr->n_tok_buckets, gr->tok_buckets[0],
                 gr->tok_buckets[gr->n_tok_buckets - 1], gr->m->cfg.n_layers + 1);
    else if (gr->mode == GRAPH_MODE_FULL)
        snprintf(what + at, sizeof what - (size_t)at, ", %d full (tokens %d..%d x sequences %d..%d)",
                 gr->n_full_graphs, gr->tok_buckets[0], gr->tok_buckets[gr->n_tok_buckets - 1], gr->seq_buckets[0],
                 gr->seq_buckets[gr->n_seq_buckets - 1]);
    fprintf(stderr,
            "infer: cuda graphs: %s captured in %.2f s; device memory free %.2f GiB before, %.2f GiB after "
            "(%.1f MiB for graphs)\n",
            what, gr->capture_seconds, (double)gr->free_before / (1 << 30), (double)gr->free_after / (1 << 30),
            ((double)gr->free_before - (double)gr->free_after) / (1 << 20));
}

int graph_runner_init(struct graph_runner *gr, const struct model *m, struct forward_ws *ws, struct kv_store *kv,
                      const struct graph_opts *o, int max_seqs, int max_tokens, int max_blocks_per_seq,
                      struct err *e)
{
    memset(gr, 0, sizeof *gr);
    gr->m = m, gr->ws = ws, gr->kv = kv, gr->mode = o->mode, gr->padding = o->padding;
    gr->max_blocks_per_seq = max_blocks_per_seq;
    if (o->mode == GRAPH_MODE_NONE)
        return 0;
    const struct backend_ops *ops = m->be->ops;
    gr->sample_vocab = ops->sample_enqueue ? o->sample_vocab : 0;
    if (!ops->graph_begin || !ops->batch_stage)
        return err_set(e, "--cuda-graph-mode %s needs --device cuda (this backend has no graphs; use none)",
                       graph_mode_name(o->mode));
    if (graph_buckets(o, max_seqs, max_tokens, &gr->buckets, &gr->n_buckets, e))
        return -1;
    int cap_tokens = gr->buckets[gr->n_buckets - 1], cap_seqs = cap_tokens;
    if (o->mode == GRAPH_MODE_PIECEWISE || o->mode == GRAPH_MODE_FULL) {
        if (graph_token_buckets(o, max_tokens, &gr->tok_buckets, &gr->n_tok_buckets, e)) {
            graph_runner_free(gr);
            return -1;
        }
        const int top = gr->tok_buckets[gr->n_tok_buckets - 1];
        cap_tokens = top > cap_tokens ? top : cap_tokens;
        cap_seqs = max_seqs + 1 > cap_seqs ? max_seqs + 1 : cap_seqs;
    }
    graph_runner_init_padding(gr, m, ws, kv, cap_tokens, cap_seqs, max_blocks_per_seq);
    gr->max_logits = ws->max_logits;
    gr->graphs = xcalloc((size_t)gr->n_buckets, sizeof *gr->graphs);
    if (o->mode == GRAPH_MODE_PIECEWISE)
        gr->pieces = xcalloc((size_t)gr->n_tok_buckets * (m->cfg.n_layers + 1), sizeof *gr->pieces);
    if (o->mode == GRAPH_MODE_FULL) {
        seq_buckets(gr, max_seqs);
        gr->full = xcalloc((size_t)gr->n_tok_buckets * gr->n_seq_buckets, sizeof *gr->full);
    }
    size_t total = 0;
    ops->mem_info(m->be, &gr->free_before, &total);
    const double t0 = clock_now();
    if (capture_all(gr, e)) {
        if (isatty(2))
            fputc('\n', stderr);
        graph_runner_free(gr);
        return -1;
    }
    gr->capture_seconds = clock_now() - t0;
    ops->mem_info(m->be, &gr->free_after, &total);
    print_summary(gr);
    return 0;
}

/* --- replay --- */

/* The smallest bucket of v[n] that holds x (exactly x without padding), or -1. */
static int bucket_index(const int *v, int n, int x, int padding)
{
    for (int i = 0; i < n; i++)
        if (v[i] >= x)
            return padding || v[i] == x ? i : -1;
    return -1;
}

static int is_decode(const struct fwd_batch *b)
{
    if (b->n_tokens != b->n_seqs || b->n_logits != b->n_tokens)
        return 0;
    for (int i = 0; i < b->n_tokens; i++)
        if (b->seq_of_token[i] != i || b->query_start[i] != i || b->logit_rows[i] != i)
            return 0;
    return 1;
}

/* Stages the padded step p and the draws (rows, or greedy padding when the
 * host draws this step), then replays g; 1 when the graph drew. */
static int stage_and_replay(struct graph_runner *gr, const struct fwd_batch *p, void *g, const struct sample_row *rows,
                            int n_rows, struct err *e)
{
    struct backend *be = gr->m->be;
    if (gr->sample_vocab &&
        be->ops->sample_stage(be, rows ? n_rows : 0, p->n_logits, gr->sample_vocab, rows, e))
        return -1;
    if (be->ops->batch_stage(be, p, e) || be->ops->graph_replay(be, g, e))
        return -1;
    return gr->sample_vocab && rows ? 1 : 0;
}

static int replay_decode(struct graph_runner *gr, const struct fwd_batch *b, int i, const struct sample_row *rows,
                         int n_rows, struct err *e)
{
    struct fwd_batch p;
    const int bs = gr->buckets[i];
    graph_runner_pad(gr, b, bs, bs, bs, &p);
    return stage_and_replay(gr, &p, gr->graphs[i], rows, n_rows, e);
}

static int replay_pieces(struct graph_runner *gr, const struct fwd_batch *b, int t, struct err *e)
{
    struct backend *be = gr->m->be;
    const int L = gr->m->cfg.n_layers, T = gr->tok_buckets[t];
    struct fwd_batch p;
    struct fwd_meta meta;
    graph_runner_pad(gr, b, T, b->n_seqs + (T > b->n_tokens), b->n_logits, &p);
    if (be->ops->batch_upload(be, &p, &meta, e))
        return -1;
    struct fwd_meta real = meta; /* attention and logits see the step as it is */
    real.n_tokens = b->n_tokens, real.n_seqs = b->n_seqs, real.n_logits = b->n_logits;
    for (int i = 0; i <= L; i++) {
        if (be->ops->graph_replay(be, gr->pieces[(size_t)t * (L + 1) + i], e))
            return -1;
        if (i < L)
            forward_attention(gr->m, gr->ws, gr->kv, &real, i);
    }
    forward_logits(gr->m, gr->ws, &real, 1);
    return 0;
}

/* The full graph for b, or -1: the smallest token bucket that holds it,
 * then the smallest sequence bucket that holds its sequences (plus one for
 * the padding tokens when there are any). */
static int full_index(const struct graph_runner *gr, const struct fwd_batch *b, int *t_out)
{
    const int t = bucket_index(gr->tok_buckets, gr->n_tok_buckets, b->n_tokens, gr->padding);
    if (t < 0)
        return -1;
    const int need = b->n_seqs + (gr->tok_buckets[t] > b->n_tokens);
    const int s = bucket_index(gr->seq_buckets, gr->n_seq_buckets, need, gr->padding);
    if (s < 0 || !gr->full[(size_t)t * gr->n_seq_buckets + s])
        return -1;
    *t_out = t;
    return s;
}

static int replay_full(struct graph_runner *gr, const struct fwd_batch *b, int t, int s, const struct sample_row *rows,
                       int n_rows, struct err *e)
{
    const int S = gr->seq_buckets[s];
    struct fwd_batch p;
    graph_runner_pad(gr, b, gr->tok_buckets[t], S, S < gr->max_logits ? S : gr->max_logits, &p);
    return stage_and_replay(gr, &p, gr->full[(size_t)t * gr->n_seq_buckets + s], rows, n_rows, e);
}

int graph_runner_forward(struct graph_runner *gr, const struct fwd_batch *b, const struct sample_row *rows,
                         int n_rows, struct err *e)
{
    int rc = 2; /* 2: no graph took the step; else what the replay returned */
    if (gr->mode != GRAPH_MODE_NONE && b->skip_argmax && b->max_blocks_per_seq <= gr->max_blocks_per_seq) {
        const int i = is_decode(b) ? bucket_index(gr->buckets, gr->n_buckets, b->n_tokens, gr->padding) : -1;
        int t = -1, s;
        if (i >= 0)
            rc = replay_decode(gr, b, i, rows, n_rows, e);
        else if (gr->mode == GRAPH_MODE_PIECEWISE &&
                 (t = bucket_index(gr->tok_buckets, gr->n_tok_buckets, b->n_tokens, gr->padding)) >= 0)
            rc = replay_pieces(gr, b, t, e);
        else if (gr->mode == GRAPH_MODE_FULL && (s = full_index(gr, b, &t)) >= 0)
            rc = replay_full(gr, b, t, s, rows, n_rows, e);
    }
    if (rc < 0)
        return -1;
    if (rc < 2) {
        gr->n_replays++;
        return rc;
    }
    if (gr->mode != GRAPH_MODE_NONE && !gr->logged_eager) { /* once: why graphs do not cover every step */
        gr->logged_eager = 1;
        log_info("cuda graphs: a step of %d tokens in %d sequences runs eagerly (%s)", b->n_tokens, b->n_seqs,
                 !b->skip_argmax ? "it asks for the forward's argmax"
                 : b->max_blocks_per_seq > gr->max_blocks_per_seq ? "its block tables are wider than captured"
                 : gr->mode == GRAPH_MODE_DECODE ? "decode mode captures decode steps only"
                                                 : "no captured bucket holds it");
    }
    gr->n_eager++;
    return model_forward(gr->m, gr->ws, gr->kv, b, e) ? -1 : 0;
}

static void free_graphs(struct graph_runner *gr, void **g, size_t n)
{
    for (size_t i = 0; g && i < n; i++)
        if (g[i])
            gr->m->be->ops->graph_free(gr->m->be, g[i]);
    free(g);
}

void graph_runner_free(struct graph_runner *gr)
{
    free_graphs(gr, gr->graphs, (size_t)gr->n_buckets);
    if (gr->pieces)
        free_graphs(gr, gr->pieces, (size_t)gr->n_tok_buckets * (gr->m->cfg.n_layers + 1));
    free_graphs(gr, gr->full, (size_t)gr->n_tok_buckets * gr->n_seq_buckets);
    free(gr->buckets), free(gr->tok_buckets), free(gr->seq_buckets);
    free(gr->tokens), free(gr->positions), free(gr->slots), free(gr->seq_of);
    free(gr->query_start), free(gr->kv_len), free(gr->tables), free(gr->logit_rows);
    memset(gr, 0, sizeof *gr);
}
