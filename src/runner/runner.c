/* The step runner (runner.h): sizing at start-up, and one step. */
#include "runner/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "runner/kv_plan.h"

int runner_max_draws(const struct runner_opts *o)
{
    const int d = o->max_draws > o->max_seqs ? o->max_draws : o->max_seqs;
    const int cap = o->max_tokens > o->max_seqs ? o->max_tokens : o->max_seqs;
    return d < cap ? d : cap;
}

static int check_opts(const struct runner_opts *o, struct err *e)
{
    if (o->max_tokens < 1)
        return err_set(e, "--max-num-batched-tokens must be >= 1, got %d", o->max_tokens);
    if (o->max_seqs < 1)
        return err_set(e, "--max-num-seqs must be >= 1, got %d", o->max_seqs);
    if (o->block_size < 1 || o->max_context < 1)
        return err_set(e, "runner: the KV block size and the context must be >= 1, got %d and %d", o->block_size,
                       o->max_context);
    if (!(o->gpu_memory_utilization > 0 && o->gpu_memory_utilization <= 1))
        return err_set(e, "--gpu-memory-utilization must be in (0, 1], got %g", o->gpu_memory_utilization);
    return 0;
}

/* The KV cache: the memory left once workspace, metadata and sampler are
 * placed (on a device), or what the host asks for. */
static int init_kv(struct runner *r, struct err *e)
{
    const struct runner_opts *o = &r->o;
    const struct model *m = r->m;
    const int per_seq = r->max_blocks_per_seq;
    const int host = o->kv_blocks > 0 ? o->kv_blocks : 4 * per_seq + 1;
    int n_blocks;
    size_t free_before;
    /* per_seq + 1: a full context, and block 0 that padding rows may touch */
    if (o->kv_blocks > 0 && o->kv_blocks < per_seq + 1)
        return err_set(e, "a KV cache of %d tokens (--max-total-tokens) holds less than one full context of %d "
                          "(--max-model-len)",
                       (o->kv_blocks - 1) * o->block_size, o->max_context);
    /* every rank of a split model holds as many blocks as the tightest one */
    if (kv_plan_blocks(m, per_seq + 1, host, o->kv_blocks, o->block_size, o->gpu_memory_utilization, &n_blocks,
                       &free_before, e) ||
        (o->relay && o->relay->agree_min(o->relay->ctx, n_blocks, &n_blocks, e)) ||
        kv_store_init(&r->kv, &m->cfg, &m->sh, m->be, n_blocks, o->block_size, e))
        return -1;
    size_t free_after = 0, total = 0;
    m->be->ops->mem_info(m->be, &free_after, &total);
    if (total)
        fprintf(stderr,
                "infer: memory plan: KV cache %.2f GiB (%d blocks of %d tokens) of %.2f GiB free; %.2f GiB "
                "left\n",
                (double)r->kv.bytes / (1 << 30), n_blocks, o->block_size, (double)free_before / (1 << 30),
                (double)free_after / (1 << 30));
    return 0;
}

int runner_init(struct runner *r, const struct model *m, const struct runner_opts *o, struct err *e)
{
    memset(r, 0, sizeof *r);
    if (check_opts(o, e))
        return -1;
    r->m = m;
    r->o = *o;
    struct backend *be = m->be;
    if (o->relay && m->sh.rank == 0 && runner_relay_start(r, e)) /* the other ranks start theirs alongside */
        return -1;
    r->max_blocks_per_seq = (o->max_context + o->block_size - 1) / o->block_size;
    const int max_draws = runner_max_draws(o);
    const int max_logits = max_draws + (o->return_logits ? o->max_tokens : 0);
    /* one sequence more: a padded step may add one */
    const struct meta_caps caps = {o->max_tokens, o->max_seqs + 1, r->max_blocks_per_seq, max_logits};
    if (forward_ws_init(&r->ws, m, o->max_tokens, max_logits, e))
        return -1;
    /* only rank 0 draws (and holds the whole vocabulary's logits) */
    if (be->ops->meta_init(be, &caps, &r->meta, e) ||
        sampler_init(&r->sampler, be, m->sh.rank == 0 ? max_draws : 0, max_logits, m->cfg.vocab_size, e) ||
        init_kv(r, e)) {
        runner_free(r);
        return -1;
    }
    step_builder_init(&r->builder, &r->meta, o->block_size, be->ops->sampler->needs_logit_cols);
    /* last: the graphs capture steps over the final buffers */
    if (graph_runner_init(&r->graphs, r, &o->graph, e)) {
        runner_free(r);
        return -1;
    }
    return 0;
}

void runner_free(struct runner *r)
{
    if (!r->m)
        return;
    struct backend *be = r->m->be;
    struct err e;
    if (r->o.relay && r->m->sh.rank == 0 && runner_relay_end(r, &e)) /* a gone rank ends the group anyway */
        log_warn("ending the other ranks' runner: %s", e.msg);
    graph_runner_free(&r->graphs, be);
    sampler_free(&r->sampler);
    if (r->meta.host)
        be->ops->meta_free(be, &r->meta);
    kv_store_free(&r->kv, be);
    forward_ws_free(&r->ws, r->m);
    for (enum mem_region g = MEM_REGION_WORKSPACE; g < MEM_REGION_COUNT; g++)
        be->ops->release(be, g); /* the regions the runner reserved: the next runner plans anew */
    free(r->returned);
    memset(r, 0, sizeof *r);
}

int runner_enqueue_step(struct runner *r, const struct step_shape *shape, int draw_rows, struct err *e)
{
    struct backend *be = r->m->be;
    struct fwd_meta meta;
    if (be->ops->meta_upload(be, &r->meta, shape->n_tokens, shape->n_seqs, shape->n_logits, &meta, e))
        return -1;
    model_forward(r->m, &r->ws, &r->kv, &meta);
    return draw_rows ? sampler_enqueue(&r->sampler, r->ws.logits, draw_rows, e) : 0;
}

/* Piecewise: the bucket's pieces over the padded step, with attention, the
 * logits and the draw eager on the step as it is. */
static int run_pieces(struct runner *r, const struct step_plan *p, const struct step_shape *real,
                      struct err *e)
{
    struct backend *be = r->m->be;
    const int L = r->m->cfg.n_layers;
    struct fwd_meta meta;
    if (be->ops->meta_upload(be, &r->meta, p->padded.n_tokens, p->padded.n_seqs, p->padded.n_logits, &meta,
                             e))
        return -1;
    struct fwd_meta as_is = meta;
    as_is.n_tokens = real->n_tokens, as_is.n_seqs = real->n_seqs, as_is.n_logits = real->n_logits;
    for (int i = 0; i <= L; i++) {
        if (be->ops->graph_replay(be, p->pieces[i], e))
            return -1;
        if (i < L)
            forward_attention(r->m, &r->ws, &r->kv, &as_is, i);
    }
    forward_logits(r->m, &r->ws, &as_is);
    return real->n_draws ? sampler_enqueue(&r->sampler, r->ws.logits, real->n_draws, e) : 0;
}

int runner_run_plan(struct runner *r, const struct step_plan *p, const struct step_shape *real, struct err *e)
{
    struct backend *be = r->m->be;
    if (p->path == STEP_PATH_EAGER) {
        if (p->why_eager && !r->logged_eager) { /* once: why graphs do not cover every step */
            r->logged_eager = 1;
            log_info("cuda graphs: a step of %d tokens in %d sequences runs eagerly (%s)", real->n_tokens,
                     real->n_seqs, p->why_eager);
        }
        r->n_eager++;
        return runner_enqueue_step(r, real, real->n_draws, e);
    }
    r->n_replays++;
    if (p->path == STEP_PATH_PIECEWISE)
        return run_pieces(r, p, real, e);
    return be->ops->graph_replay(be, p->graph, e);
}

/* The rows past the draws (the returned logits) to the host. */
static int fetch_returned(struct runner *r, const struct step_shape *real, struct err *e)
{
    const int rows = real->n_logits - real->n_draws, V = r->m->cfg.vocab_size;
    if (rows <= 0 || r->m->sh.rank != 0) /* the other ranks hold their columns only */
        return 0;
    const size_t bytes = (size_t)rows * V * sizeof(float);
    if (!r->returned) /* sized once: the most a step returns */
        r->returned = xmalloc((size_t)r->o.max_tokens * V * sizeof(float));
    struct backend *be = r->m->be;
    return be->ops->copy_to_host(be, r->returned, r->ws.logits + (size_t)real->n_draws * V, bytes, e);
}

int runner_step(struct runner *r, const struct step_seq *seqs, int n, struct sample_result *draws,
                struct err *e)
{
    if (n < 1)
        return err_set(e, "runner: a step needs a sequence");
    struct step_shape real;
    step_shape_of(seqs, n, &real);
    if (real.n_logits > real.n_draws && !r->o.return_logits)
        return err_set(e,
                       "runner: a sequence asks for its logits, but the runner was not sized to return them");
    struct step_plan p;
    graph_runner_plan(&r->graphs, &real, &p);
    const double t0 = clock_now();
    /* the other ranks of a split model get the step as soon as it is written */
    if (step_build(&r->builder, seqs, n, &p.padded, e))
        return -1;
    const double tr = clock_now();
    if ((r->o.relay && runner_relay_step(r, &p, &real, e)))
        return -1;
    const double ts = clock_now();
    const int late_masks = sampler_masks_late(&r->sampler);
    if (r->write_masks && !late_masks)
        r->write_masks(r->write_masks_ctx);
    if (sampler_stage(&r->sampler, seqs, n, p.draw_rows, e))
        return -1;
    const double tl = clock_now();
    if (runner_run_plan(r, &p, &real, e))
        return -1;
    const double t1 = clock_now();
    if (late_masks) { /* the device runs the step meanwhile; its draw waits for them */
        if (r->write_masks)
            r->write_masks(r->write_masks_ctx);
        if (sampler_masks_ready(&r->sampler, e))
            return -1;
    }
    r->relay_s += ts - tr;
    r->enqueue_s += t1 - tl;
    if (fetch_returned(r, &real, e) || sampler_collect(&r->sampler, r->ws.logits, draws, e))
        return -1;
    r->launch_s += t1 - t0;
    r->wait_s += clock_now() - t1;
    return 0;
}

const float *runner_returned_logits(const struct runner *r, const struct step_seq *seqs, int n, int i)
{
    const int row = step_returned_row(seqs, n, i);
    if (row < 0)
        return NULL;
    int draws = 0;
    for (int j = 0; j < n; j++)
        draws += seqs[j].draw;
    return r->returned + (size_t)(row - draws) * r->m->cfg.vocab_size;
}
