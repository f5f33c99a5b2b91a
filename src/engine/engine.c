/* The engine thread: take what was submitted or aborted, run one step
 * (plan, build, forward, commit), free finished requests, sleep when idle. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "engine/engine_internal.h"
#include "engine/kv_plan.h"

struct engine_opts engine_opts_default(void)
{
    return (struct engine_opts){.max_batched_tokens = 2048,
                                .max_seqs = 64,
                                .block_size = 16,
                                .gpu_memory_utilization = 0.90,
                                .prefix_caching = 1,
                                .graph = {.mode = GRAPH_MODE_NONE, .max_bs = 256, .padding = 1}};
}

static int check_opts(const struct engine_opts *o, const struct model *m, struct err *e)
{
    if (o->max_batched_tokens < 1)
        return err_set(e, "--max-num-batched-tokens must be >= 1, got %d", o->max_batched_tokens);
    if (o->max_seqs < 1)
        return err_set(e, "--max-num-seqs must be >= 1, got %d", o->max_seqs);
    if (o->block_size < 1)
        return err_set(e, "--block-size must be >= 1, got %d", o->block_size);
    if (o->max_context < 2 || o->max_context > m->cfg.max_positions)
        return err_set(e, "--max-model-len must be in [2, %d] (the model's positions), got %d",
                       m->cfg.max_positions, o->max_context);
    if (!(o->gpu_memory_utilization > 0 && o->gpu_memory_utilization <= 1))
        return err_set(e, "--gpu-memory-utilization must be in (0, 1], got %g", o->gpu_memory_utilization);
    return 0;
}

/* KV cache, workspace and step metadata, sized once. */
static int engine_alloc(struct engine *eng, struct err *e)
{
    const struct engine_opts *o = &eng->o;
    struct model *m = eng->m;
    const int per_seq = (o->max_context + o->block_size - 1) / o->block_size;
    const int host = o->host_kv_blocks > 0 ? o->host_kv_blocks : 4 * per_seq + 1;
    int n_blocks;
    size_t free_before;
    struct meta_caps caps = {o->max_batched_tokens, o->max_seqs, per_seq, o->max_seqs};
    /* one sequence more on the backend: a padded graph step may add one */
    struct meta_caps be_caps = {o->max_batched_tokens, o->max_seqs + 1, per_seq, o->max_seqs};
    if (forward_ws_init(&eng->ws, m, o->max_batched_tokens, o->max_seqs, e))
        return -1;
    if (m->be->ops->meta_init(m->be, &be_caps, e) ||
        step_sampler_init(&eng->sampler, m->be, o->max_seqs, m->cfg.vocab_size, e) ||
        kv_plan_blocks(m, per_seq + 1, host, o->block_size, o->gpu_memory_utilization, &n_blocks, &free_before,
                       e) ||
        kv_store_init(&eng->kv, &m->cfg, m->be, n_blocks, o->block_size, e)) {
        step_sampler_free(&eng->sampler);
        forward_ws_free(&eng->ws, m);
        return -1;
    }
    block_pool_init(&eng->pool, n_blocks, 1); /* block 0: the scratch block of padded rows */
    step_builder_init(&eng->sb, &caps, o->block_size);
    scheduler_init(&eng->s, &eng->pool, o->block_size, o->max_batched_tokens, o->max_seqs, o->max_context,
                   m->cfg.eos_ids, m->cfg.n_eos);
    if (o->prefix_caching)
        scheduler_enable_prefix_cache(&eng->s);
    eng->s.on_token = engine_on_token;
    eng->s.on_token_ctx = eng;
    eng->q = xcalloc((size_t)o->max_seqs, sizeof *eng->q);
    eng->rq = xcalloc((size_t)o->max_seqs, sizeof *eng->rq);
    eng->drawn = xcalloc((size_t)o->max_seqs, sizeof *eng->drawn);
    eng->stats.kv_blocks = n_blocks;
    eng->stats.max_context = o->max_context;
    eng->stats.kv_blocks_free = block_pool_n_free(&eng->pool);
    /* last: the graphs capture the forward over the final buffers */
    struct graph_opts go = o->graph;
    go.sample_vocab = eng->sampler.on_backend ? m->cfg.vocab_size : 0; /* draws inside the graphs */
    if (graph_runner_init(&eng->graphs, m, &eng->ws, &eng->kv, &go, o->max_seqs, o->max_batched_tokens, per_seq,
                          e)) {
        free(eng->q), free(eng->rq), free(eng->drawn);
        scheduler_free(&eng->s);
        step_builder_free(&eng->sb);
        block_pool_free(&eng->pool);
        step_sampler_free(&eng->sampler);
        forward_ws_free(&eng->ws, m);
        kv_store_free(&eng->kv, m->be);
        return -1;
    }
    return 0;
}

static void engine_release(struct engine *eng)
{
    graph_runner_free(&eng->graphs);
    free(eng->q);
    free(eng->rq);
    free(eng->drawn);
    step_sampler_free(&eng->sampler);
    scheduler_free(&eng->s);
    step_builder_free(&eng->sb);
    block_pool_free(&eng->pool);
    forward_ws_free(&eng->ws, eng->m);
    kv_store_free(&eng->kv, eng->m->be);
}

/* One forward step; -1 with e set when the backend failed. */
static int engine_step(struct engine *eng, struct err *e)
{
    const double t0 = clock_now();
    int n = scheduler_plan(&eng->s, eng->q, eng->rq);
    if (n == 0)
        return 0;
    for (int i = 0; i < n; i++) {
        struct engine_group *g = eng->rq[i]->user;
        if (g->scheduled_at == 0)
            g->scheduled_at = t0;
    }
    struct backend *be = eng->m->be;
    struct fwd_batch b;
    if (step_build(&eng->sb, eng->q, n, &b, e))
        return -1;
    const double t1 = clock_now();
    struct step_sampler *smp = &eng->sampler;
    if (step_sample_prepare(smp, eng->rq, eng->q, n, e))
        return -1;
    const int drew =
        graph_runner_forward(&eng->graphs, &b, smp->backend_rows ? smp->rows : NULL, smp->backend_rows, e);
    if (drew < 0)
        return -1;
    const double t2 = clock_now();
    /* only the draws come back from the device, not the logits */
    if ((drew ? be->ops->sample_finish(be, smp->n_rows, eng->drawn, e)
              : step_sample_draw(smp, be, eng->ws.logits, eng->rq, eng->q, n, eng->drawn, e) < 0) ||
        be->ops->synchronize(be, e))
        return -1;
    const double t3 = clock_now();
    /* the counters first: the events that commit emits must find them current */
    pthread_mutex_lock(&eng->mu);
    const struct scheduler_stats *ss = &eng->s.stats;
    struct engine_stats *st = &eng->stats;
    st->steps++;
    st->prefix_hit_tokens = ss->hit_tokens;
    st->prefix_lookup_tokens = ss->lookup_tokens;
    st->prefix_hit_blocks = ss->hit_blocks;
    st->prefix_lookup_blocks = ss->lookup_blocks;
    st->computed_tokens = ss->computed_tokens + b.n_tokens;
    st->evicted_blocks = ss->evicted_blocks;
    st->forked_blocks = ss->forked_blocks;
    st->preemptions = eng->s.n_preemptions;
    st->graph_replays = eng->graphs.n_replays;
    st->eager_steps = eng->graphs.n_eager;
    st->completion_tokens += b.n_logits; /* each row with logits draws one token */
    st->plan_s += t1 - t0;
    st->launch_s += t2 - t1;
    st->sample_wait_s += t3 - t2;
    pthread_mutex_unlock(&eng->mu);
    scheduler_commit(&eng->s, eng->q, eng->rq, n, eng->drawn);
    const double t4 = clock_now();
    pthread_mutex_lock(&eng->mu);
    st->commit_s += t4 - t3;
    pthread_mutex_unlock(&eng->mu);
    if (eng->o.check_integrity) {
        struct err ie;
        if (scheduler_check(&eng->s, &ie)) {
            log_error("engine: KV cache integrity violated: %s", ie.msg);
            abort();
        }
    }
    return 0;
}

/* Frees the groups whose choices have all finished. */
static void sweep(struct engine *eng)
{
    for (struct engine_group **p = &eng->live; *p;) {
        struct engine_group *g = *p;
        if (g->n_finished == g->n) {
            *p = g->next;
            engine_group_free(g);
        } else {
            p = &g->next;
        }
    }
}

static void apply_abort(struct engine *eng, long id)
{
    for (struct engine_group *g = eng->live; g; g = g->next)
        if (g->id == id)
            engine_group_abort(eng, g);
}

/* Moves what was submitted and aborted into the scheduler. Called with mu
 * held; returns with it held. */
static void take_queue(struct engine *eng)
{
    struct engine_group *g = eng->pending;
    eng->pending = eng->pending_tail = NULL;
    long *aborts = eng->aborts;
    int n_aborts = eng->n_aborts;
    eng->aborts = NULL;
    eng->n_aborts = eng->cap_aborts = 0;
    pthread_mutex_unlock(&eng->mu);
    while (g) {
        struct engine_group *next = g->next;
        g->next = eng->live;
        eng->live = g;
        for (int i = 0; i < g->n; i++)
            scheduler_add(&eng->s, &g->reqs[i]);
        g = next;
    }
    for (int i = 0; i < n_aborts; i++)
        apply_abort(eng, aborts[i]);
    free(aborts);
    sweep(eng);
    pthread_mutex_lock(&eng->mu);
}

/* The gauges of engine_stats; called with mu held. */
static void update_gauges(struct engine *eng)
{
    struct engine_stats *st = &eng->stats;
    st->running = eng->s.n_running;
    st->waiting = eng->s.n_waiting;
    st->kv_blocks_free = block_pool_n_free(&eng->pool);
    st->kv_blocks_cached = eng->s.prefix_caching ? radix_evictable(&eng->s.radix) : 0;
    st->kv_blocks_used = eng->pool.n_blocks - eng->pool.n_reserved - st->kv_blocks_free - st->kv_blocks_cached;
}

static void *engine_main(void *arg)
{
    struct engine *eng = arg;
    pthread_mutex_lock(&eng->mu);
    for (;;) {
        while (!eng->shutdown && !eng->pending && !eng->n_aborts && scheduler_idle(&eng->s))
            pthread_cond_wait(&eng->cv, &eng->mu);
        /* read before take_queue drops the lock: what was submitted before
         * the shutdown is then taken (and ended) too */
        int stopping = eng->shutdown;
        take_queue(eng);
        update_gauges(eng);
        if (stopping)
            break;
        pthread_mutex_unlock(&eng->mu);
        struct err e = {{0}};
        if (engine_step(eng, &e)) {
            /* a failing step ends the requests in it, never the engine */
            log_error("engine: step failed (%s); aborting the running requests", e.msg);
            for (struct engine_group *g = eng->live; g; g = g->next)
                engine_group_abort(eng, g);
        }
        sweep(eng);
        pthread_mutex_lock(&eng->mu);
        update_gauges(eng);
    }
    pthread_mutex_unlock(&eng->mu);
    for (struct engine_group *g = eng->live; g; g = g->next)
        engine_group_abort(eng, g);
    sweep(eng);
    return NULL;
}

struct engine *engine_create(struct model *m, const struct tokenizer *tok, const struct engine_opts *o,
                             engine_event_fn on_event, void *ctx, struct err *e)
{
    struct engine *eng = xcalloc(1, sizeof *eng);
    eng->m = m;
    eng->tok = tok;
    eng->o = *o;
    if (eng->o.max_context == 0) {
        /* a host cache is sized from the context: keep it modest there */
        size_t free_bytes = 0, total = 0;
        m->be->ops->mem_info(m->be, &free_bytes, &total);
        int cap = total ? m->cfg.max_positions : 4096;
        eng->o.max_context = m->cfg.max_positions < cap ? m->cfg.max_positions : cap;
    }
    eng->on_event = on_event;
    eng->ctx = ctx;
    eng->next_id = 1;
    if (check_opts(&eng->o, m, e) || engine_alloc(eng, e)) {
        free(eng);
        return NULL;
    }
    pthread_mutex_init(&eng->mu, NULL);
    pthread_cond_init(&eng->cv, NULL);
    if (pthread_create(&eng->thread, NULL, engine_main, eng)) {
        err_set(e, "could not start the engine thread");
        engine_release(eng);
        free(eng);
        return NULL;
    }
    return eng;
}

long engine_submit(struct engine *eng, const struct engine_request *rq, struct err *e)
{
    struct engine_group *g = engine_group_new(eng, rq, e);
    if (!g)
        return -1;
    pthread_mutex_lock(&eng->mu);
    long id = g->id = eng->next_id++;
    if (eng->pending_tail)
        eng->pending_tail->next = g;
    else
        eng->pending = g;
    eng->pending_tail = g;
    eng->stats.requests++;
    eng->stats.prompt_tokens += rq->n_prompt;
    pthread_cond_signal(&eng->cv);
    pthread_mutex_unlock(&eng->mu);
    return id;
}

void engine_abort(struct engine *eng, long request_id)
{
    pthread_mutex_lock(&eng->mu);
    if (eng->n_aborts == eng->cap_aborts) {
        eng->cap_aborts = eng->cap_aborts ? 2 * eng->cap_aborts : 8;
        eng->aborts = xrealloc(eng->aborts, (size_t)eng->cap_aborts * sizeof *eng->aborts);
    }
    eng->aborts[eng->n_aborts++] = request_id;
    pthread_cond_signal(&eng->cv);
    pthread_mutex_unlock(&eng->mu);
}

void engine_get_stats(struct engine *eng, struct engine_stats *out)
{
    pthread_mutex_lock(&eng->mu);
    *out = eng->stats;
    for (const struct engine_group *g = eng->pending; g; g = g->next)
        out->waiting += g->n; /* submitted, not yet taken by the engine thread */
    pthread_mutex_unlock(&eng->mu);
}

void engine_destroy(struct engine *eng)
{
    if (!eng)
        return;
    pthread_mutex_lock(&eng->mu);
    eng->shutdown = 1;
    pthread_cond_signal(&eng->cv);
    pthread_mutex_unlock(&eng->mu);
    pthread_join(eng->thread, NULL);
    engine_release(eng);
    free(eng->aborts);
    pthread_mutex_destroy(&eng->mu);
    pthread_cond_destroy(&eng->cv);
    free(eng);
}
