/* The graph runner: capture at start-up and the choice of graph per step
 * (graph_runner.h). Replays happen in runner.c. */
#include "runner/graph_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "runner/runner.h"

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

/* The warm-up before a capture: the whole step (cuBLASLt plans for its
 * shapes, lazily loaded kernels), or (logits_only) just its logits and
 * draw, when a step of the same token count has run: then only the logits'
 * row count is new. */
static int warm_up(struct runner *r, const struct step_shape *shape, int draw_rows, int logits_only,
                   struct err *e)
{
    struct backend *be = r->m->be;
    if (!logits_only)
        return runner_enqueue_step(r, shape, draw_rows, e) || be->ops->synchronize(be, e) ? -1 : 0;
    struct fwd_meta meta;
    if (be->ops->meta_upload(be, &r->meta, shape->n_tokens, shape->n_seqs, shape->n_logits, &meta, e))
        return -1;
    forward_logits(r->m, &r->ws, &meta);
    if (sampler_enqueue(&r->sampler, r->ws.logits, draw_rows, e))
        return -1;
    return be->ops->synchronize(be, e);
}

/* A padding-only step of this shape in the staging, with greedy padding
 * rows staged for its draw. */
static int stage_padding(struct runner *r, const struct step_shape *shape, int draw_rows, struct err *e)
{
    return step_build(&r->builder, NULL, 0, shape, e) || sampler_stage(&r->sampler, NULL, 0, draw_rows, e)
               ? -1
               : 0;
}

/* Captures the whole step (upload, forward, draw) of shape into *out,
 * after warm_up. */
static int capture_whole(struct runner *r, const struct step_shape *shape, int draw_rows, int logits_only,
                         void **out, struct err *e)
{
    const struct backend_ops *ops = r->m->be->ops;
    struct backend *be = r->m->be;
    if (stage_padding(r, shape, draw_rows, e) || warm_up(r, shape, draw_rows, logits_only, e) ||
        ops->graph_begin(be, e))
        return -1;
    struct err end_err;
    int rc = runner_enqueue_step(r, shape, draw_rows, e);
    if (ops->graph_end(be, out, &end_err) && !rc) { /* the capture must end either way */
        *e = end_err;
        rc = -1;
    }
    return rc;
}

/* The pieces of token bucket t: a warm-up step, one upload, then each
 * piece in its own capture (the upload is outside them: a replay uploads
 * eagerly, as attention between the pieces needs the metadata). */
static int capture_pieces(struct graph_runner *gr, struct runner *r, int t, struct progress *p, struct err *e)
{
    const struct backend_ops *ops = r->m->be->ops;
    struct backend *be = r->m->be;
    const int L = gr->n_layers;
    const struct step_shape shape = {.n_tokens = gr->tok_buckets[t], .n_seqs = 1};
    struct fwd_meta meta;
    if (stage_padding(r, &shape, 0, e) || runner_enqueue_step(r, &shape, 0, e) ||
        ops->meta_upload(be, &r->meta, shape.n_tokens, shape.n_seqs, 0, &meta, e) || ops->synchronize(be, e))
        return -1;
    for (int i = 0; i <= L; i++) {
        progress_tick(p);
        if (ops->graph_begin(be, e))
            return -1;
        forward_piece(r->m, &r->ws, &r->kv, &meta, i);
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

/* The logit rows (all drawn) of the full graphs of T tokens and S sequence
 * slots: a row each, and where steps verify proposals (extra_draws) as
 * many more as the tokens and the sampler allow. */
static int full_rows(const struct graph_runner *gr, int T, int S)
{
    int rows = S + gr->extra_draws;
    rows = gr->extra_draws && rows > T ? T : rows;
    return rows < gr->max_draws ? rows : gr->max_draws;
}

static int capture_all(struct graph_runner *gr, struct runner *r, struct err *e)
{
    const int L = gr->n_layers, NT = gr->n_tok_buckets, NS = gr->n_seq_buckets;
    struct progress p = {0, gr->n_buckets, isatty(2)};
    if (gr->mode == GRAPH_MODE_PIECEWISE)
        p.total += NT * (L + 1);
    for (int t = 0; gr->mode == GRAPH_MODE_FULL && t < NT; t++)
        for (int s = 0; s < NS; s++)
            p.total += full_wanted(gr, t, s);
    gr->n_full_graphs = p.total - gr->n_buckets;
    /* largest first */
    for (int t = NT - 1; gr->mode == GRAPH_MODE_PIECEWISE && t >= 0; t--)
        if (capture_pieces(gr, r, t, &p, e))
            return err_prefix(e, "capturing the piecewise graphs of %d tokens", gr->tok_buckets[t]);
    for (int t = NT - 1; gr->mode == GRAPH_MODE_FULL && t >= 0; t--) {
        int warmed = 0; /* a step of these tokens ran: only the logits' rows change with s */
        for (int s = NS - 1; s >= 0; s--) {
            if (!full_wanted(gr, t, s))
                continue;
            progress_tick(&p);
            const int S = gr->seq_buckets[s], T = gr->tok_buckets[t], rows = full_rows(gr, T, S);
            const struct step_shape shape = {.n_tokens = T, .n_seqs = S, .n_draws = rows, .n_logits = rows};
            /* S == T takes the decode attention kernel: warm that whole too */
            if (capture_whole(r, &shape, rows, warmed && S != T, &gr->full[(size_t)t * NS + s], e))
                return err_prefix(e, "capturing the full graph of %d tokens, %d sequences", T, S);
            warmed = 1;
        }
    }
    for (int i = gr->n_buckets - 1; i >= 0; i--) {
        progress_tick(&p);
        const int bs = gr->buckets[i];
        const struct step_shape shape = {
            .n_tokens = bs, .n_seqs = bs, .n_draws = bs, .n_logits = bs, .decode = 1};
        if (capture_whole(r, &shape, bs, 0, &gr->graphs[i], e))
            return err_prefix(e, "capturing the decode graph of batch size %d", bs);
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

static void print_summary(const struct graph_runner *gr, const struct model_shard *sh)
{
    char what[256], rank[48] = "";
    if (sh->size > 1) /* every rank captures its own graphs */
        snprintf(rank, sizeof rank, " [rank %d of %d]", sh->rank, sh->size);
    int at = snprintf(what, sizeof what, "%d decode (batch %d..%d)", gr->n_buckets, gr->buckets[0],
                      gr->buckets[gr->n_buckets - 1]);
    if (gr->mode == GRAPH_MODE_PIECEWISE)
        snprintf(what + at, sizeof what - (size_t)at, ", %d piecewise (%d token buckets %d..%d x %d pieces)",
                 gr->n_tok_buckets * (gr->n_layers + 1), gr->n_tok_buckets, gr->tok_buckets[0],
                 gr->tok_buckets[gr->n_tok_buckets - 1], gr->n_layers + 1);
    else if (gr->mode == GRAPH_MODE_FULL)
        snprintf(what + at, sizeof what - (size_t)at, ", %d full (tokens %d..%d x sequences %d..%d)",
                 gr->n_full_graphs, gr->tok_buckets[0], gr->tok_buckets[gr->n_tok_buckets - 1],
                 gr->seq_buckets[0], gr->seq_buckets[gr->n_seq_buckets - 1]);
    fprintf(stderr,
            "infer: cuda graphs: %s captured in %.2f s; device memory free %.2f GiB before, %.2f GiB after "
            "(%.1f MiB for graphs)%s\n",
            what, gr->capture_seconds, (double)gr->free_before / (1 << 30),
            (double)gr->free_after / (1 << 30),
            ((double)gr->free_before - (double)gr->free_after) / (1 << 20), rank);
}

int graph_runner_init(struct graph_runner *gr, struct runner *r, const struct graph_opts *o, struct err *e)
{
    memset(gr, 0, sizeof *gr);
    gr->mode = o->mode, gr->padding = o->padding, gr->n_layers = r->m->cfg.n_layers;
    if (o->mode == GRAPH_MODE_NONE)
        return 0;
    struct backend *be = r->m->be;
    const int max_seqs = r->o.max_seqs, max_tokens = r->o.max_tokens;
    if (!be->ops->graph_begin)
        return err_set(e, "--cuda-graph-mode %s needs --device cuda (this backend has no graphs; use none)",
                       graph_mode_name(o->mode));
    if (graph_buckets(o, max_seqs, max_tokens, &gr->buckets, &gr->n_buckets, e))
        return -1;
    if ((o->mode == GRAPH_MODE_PIECEWISE || o->mode == GRAPH_MODE_FULL) &&
        graph_token_buckets(o, max_tokens, &gr->tok_buckets, &gr->n_tok_buckets, e)) {
        graph_runner_free(gr, be);
        return -1;
    }
    /* the same on every rank (the relay carries the options): the shapes of the graphs must agree */
    gr->max_draws = runner_max_draws(&r->o);
    gr->extra_draws = gr->max_draws > r->o.max_seqs ? gr->max_draws - r->o.max_seqs : 0;
    gr->graphs = xcalloc((size_t)gr->n_buckets, sizeof *gr->graphs);
    if (o->mode == GRAPH_MODE_PIECEWISE)
        gr->pieces = xcalloc((size_t)gr->n_tok_buckets * (gr->n_layers + 1), sizeof *gr->pieces);
    if (o->mode == GRAPH_MODE_FULL) {
        seq_buckets(gr, max_seqs);
        gr->full = xcalloc((size_t)gr->n_tok_buckets * gr->n_seq_buckets, sizeof *gr->full);
    }
    size_t total = 0;
    be->ops->mem_info(be, &gr->free_before, &total);
    const double t0 = clock_now();
    if (capture_all(gr, r, e)) {
        if (isatty(2))
            fputc('\n', stderr);
        graph_runner_free(gr, be);
        return -1;
    }
    gr->capture_seconds = clock_now() - t0;
    be->ops->mem_info(be, &gr->free_after, &total);
    print_summary(gr, &r->m->sh);
    return 0;
}

/* --- the choice per step --- */

/* The smallest bucket of v[n] that holds x (exactly x without padding), or -1. */
static int bucket_index(const int *v, int n, int x, int padding)
{
    for (int i = 0; i < n; i++)
        if (v[i] >= x)
            return padding || v[i] == x ? i : -1;
    return -1;
}

static void plan_decode(const struct graph_runner *gr, const struct step_shape *real, struct step_plan *p)
{
    const int i = bucket_index(gr->buckets, gr->n_buckets, real->n_tokens, gr->padding);
    if (i < 0)
        return;
    const int bs = gr->buckets[i];
    p->path = STEP_PATH_DECODE;
    p->padded = (struct step_shape){.n_tokens = bs, .n_seqs = bs, .n_draws = bs, .n_logits = bs, .decode = 1};
    p->draw_rows = bs;
    p->graph_index = i;
    p->graph = gr->graphs[i];
}

static void plan_pieces(const struct graph_runner *gr, const struct step_shape *real, struct step_plan *p)
{
    const int t = bucket_index(gr->tok_buckets, gr->n_tok_buckets, real->n_tokens, gr->padding);
    if (t < 0)
        return;
    const int T = gr->tok_buckets[t];
    p->path = STEP_PATH_PIECEWISE;
    p->padded = *real;
    p->padded.n_tokens = T;
    p->padded.n_seqs = real->n_seqs + (T > real->n_tokens); /* one sequence holds the padding tokens */
    p->padded.decode = 0;
    p->graph_index = t;
    p->pieces = gr->pieces + (size_t)t * (gr->n_layers + 1);
}

/* The smallest token bucket that holds the step, then the smallest sequence
 * bucket that holds its sequences (plus one for the padding tokens when
 * there are any) and its logit rows. */
static void plan_full(const struct graph_runner *gr, const struct step_shape *real, struct step_plan *p)
{
    const int t = bucket_index(gr->tok_buckets, gr->n_tok_buckets, real->n_tokens, gr->padding);
    if (t < 0)
        return;
    const int T = gr->tok_buckets[t];
    const int s =
        bucket_index(gr->seq_buckets, gr->n_seq_buckets, real->n_seqs + (T > real->n_tokens), gr->padding);
    if (s < 0 || !gr->full[(size_t)t * gr->n_seq_buckets + s])
        return;
    const int S = gr->seq_buckets[s], rows = full_rows(gr, T, S);
    if (real->n_logits > rows) {
        p->why_eager = "it returns more logit rows than a graph draws";
        return;
    }
    p->path = STEP_PATH_FULL;
    p->padded = (struct step_shape){.n_tokens = T, .n_seqs = S, .n_draws = rows, .n_logits = rows};
    p->draw_rows = rows;
    p->graph_index = t * gr->n_seq_buckets + s;
    p->graph = gr->full[p->graph_index];
}

void graph_runner_plan(const struct graph_runner *gr, const struct step_shape *real, struct step_plan *p)
{
    *p = (struct step_plan){.path = STEP_PATH_EAGER, .padded = *real, .draw_rows = real->n_draws};
    if (gr->mode == GRAPH_MODE_NONE)
        return;
    if (real->decode)
        plan_decode(gr, real, p);
    if (p->path == STEP_PATH_EAGER && gr->mode == GRAPH_MODE_PIECEWISE)
        plan_pieces(gr, real, p);
    if (p->path == STEP_PATH_EAGER && gr->mode == GRAPH_MODE_FULL)
        plan_full(gr, real, p);
    if (p->path == STEP_PATH_EAGER && !p->why_eager)
        p->why_eager = gr->mode == GRAPH_MODE_DECODE ? "decode mode captures decode steps only"
                                                     : "no captured bucket holds it";
}

int graph_runner_lookup(const struct graph_runner *gr, struct step_plan *p)
{
    const int i = p->graph_index;
    switch (p->path) {
    case STEP_PATH_EAGER:
        return 0;
    case STEP_PATH_DECODE:
        if (i < 0 || i >= gr->n_buckets)
            return -1;
        p->graph = gr->graphs[i];
        return 0;
    case STEP_PATH_PIECEWISE:
        if (!gr->pieces || i < 0 || i >= gr->n_tok_buckets)
            return -1;
        p->pieces = gr->pieces + (size_t)i * (gr->n_layers + 1);
        return 0;
    case STEP_PATH_FULL:
        if (!gr->full || i < 0 || i >= gr->n_tok_buckets * gr->n_seq_buckets || !gr->full[i])
            return -1;
        p->graph = gr->full[i];
        return 0;
    }
    return -1;
}

static void free_graphs(struct backend *be, void **g, size_t n)
{
    for (size_t i = 0; g && i < n; i++)
        if (g[i])
            be->ops->graph_free(be, g[i]);
    free(g);
}

void graph_runner_free(struct graph_runner *gr, struct backend *be)
{
    free_graphs(be, gr->graphs, (size_t)gr->n_buckets);
    free_graphs(be, gr->pieces, gr->pieces ? (size_t)gr->n_tok_buckets * (gr->n_layers + 1) : 0);
    free_graphs(be, gr->full, gr->full ? (size_t)gr->n_tok_buckets * gr->n_seq_buckets : 0);
    free(gr->buckets), free(gr->tok_buckets), free(gr->seq_buckets);
    memset(gr, 0, sizeof *gr);
}
