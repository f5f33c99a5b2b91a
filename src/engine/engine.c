/* The engine thread: take what was submitted or aborted, run one step
 * (plan, run, commit), free finished requests, sleep when idle. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/threadpool.h"
#include "core/log.h"
#include "engine/engine_internal.h"
#include "engine/spec_draft.h"

struct engine_opts engine_opts_default(void)
{
    return (struct engine_opts){.max_batched_tokens = 2048,
                                .max_seqs = 64,
                                .block_size = 16,
                                .gpu_memory_utilization = 0.90,
                                .prefix_caching = 1,
                                .spec_ngram = {.n_min = 2, .n_max = 4},
                                .spec_suffix = {.max_depth = 24, .spec_factor = 1.0f, .min_prob = 0.1f,
                                                .cache_tokens = 1 << 20},
                                .graph = {.mode = GRAPH_MODE_NONE, .max_bs = 256, .padding = 1}};
}

/* What the runner cannot know: the model's positions. (runner_init checks
 * the step limits, the block size and the memory share.) */
static int check_opts(const struct engine_opts *o, const struct model *m, struct err *e)
{
    if (o->max_context < 2 || o->max_context > m->cfg.max_positions)
        return err_set(e, "--max-model-len must be in [2, %d] (the model's positions), got %d",
                       m->cfg.max_positions, o->max_context);
    return 0;
}

/* Whether s's request lets it be speculated: not opted out. */
static int may_speculate(const struct sequence *s)
{
    const struct live_request *lr = s->user;
    return !lr->no_speculation;
}

static struct spec_seq spec_seq_of(const struct sequence *s)
{
    return (struct spec_seq){.id = s->id,
                             .tokens = s->tokens,
                             .n_prompt = s->n_prompt,
                             .n_known = sequence_known(s),
                             .sampling = &s->sampling,
                             .step = sequence_rng_step(s)};
}

/* The scheduler's propose hook: the proposer's tokens for a sequence;
 * under a grammar only as many as it allows (each verify row then gets the
 * grammar's mask after the proposals before it: engine_write_masks). */
static int engine_propose(void *ctx, const struct sequence *s, int max_k, int32_t *out)
{
    struct engine *eng = ctx;
    if (!may_speculate(s))
        return 0;
    const struct spec_seq q = spec_seq_of(s);
    const int k = spec_propose(eng->spec, &q, max_k, out);
    const struct live_request *lr = s->user;
    return lr->matchers ? engine_grammar_prefix(lr->matchers[s->choice], out, k) : k;
}

/* The scheduler's prepare hook: the step's candidates, all at once. */
static void engine_prepare(void *ctx, struct sequence *const *seqs, const int *max_k, int n)
{
    struct engine *eng = ctx;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (may_speculate(seqs[i]))
            eng->spec_seqs[m] = spec_seq_of(seqs[i]), eng->spec_max_k[m++] = max_k[i];
    spec_prepare(eng->spec, eng->spec_seqs, eng->spec_max_k, m);
}

/* The proposer, the runner (workspace, metadata, sampler, KV cache, graphs),
 * then the block accounting and the scheduler over its cache. */
static int engine_alloc(struct engine *eng, struct err *e)
{
    const struct engine_opts *o = &eng->o;
    struct model *m = eng->m;
    if (o->spec_method == SPEC_METHOD_DRAFT && o->relay)
        return err_set(e, "--speculative draft runs the draft on one rank: use --tensor-parallel-size 1");
    if (o->spec_method == SPEC_METHOD_NGRAM && !(eng->spec = spec_ngram_create(&o->spec_ngram, e)))
        return -1;
    if (o->spec_method == SPEC_METHOD_SUFFIX && !(eng->spec = spec_suffix_create(&o->spec_suffix, e)))
        return -1;
    const int spec_k = o->spec_method == SPEC_METHOD_NONE ? 0
                       : o->spec_k > 0                   ? o->spec_k
                                                         : spec_k_default(o->spec_method);
    /* a row per sequence, and the proposals a step checks */
    const int spec_rows = o->max_seqs * spec_k < SCHED_SPEC_ROWS ? o->max_seqs * spec_k : SCHED_SPEC_ROWS;
    const int max_draws = o->max_seqs + spec_rows;
    const struct runner_opts ro = {.max_tokens = o->max_batched_tokens,
                                   .max_seqs = o->max_seqs,
                                   .max_draws = max_draws,
                                   .max_context = o->max_context,
                                   .block_size = o->block_size,
                                   .kv_blocks = o->kv_blocks,
                                   .gpu_memory_utilization = o->gpu_memory_utilization,
                                   .return_logits = o->return_logits,
                                   .graph = o->graph,
                                   .relay = o->relay};
    if (runner_init(&eng->runner, m, &ro, e)) {
        spec_free(eng->spec);
        return -1;
    }
    if (o->spec_method == SPEC_METHOD_DRAFT) { /* after the target's memory plan: its KV pool comes first */
        const struct spec_draft_opts d = {.path = o->spec_model,
                                          .max_seqs = o->max_seqs,
                                          .max_tokens = o->max_batched_tokens,
                                          .max_context = o->max_context,
                                          .block_size = o->block_size,
                                          .kv_blocks = eng->runner.kv.n_blocks,
                                          .gpu_memory_utilization = o->gpu_memory_utilization,
                                          .graph = o->graph};
        if (!(eng->spec = spec_draft_create(m, &d, e))) {
            runner_free(&eng->runner);
            return -1;
        }
    }
    const int n_blocks = eng->runner.kv.n_blocks;
    block_pool_init(&eng->pool, n_blocks, 1); /* block 0: the scratch block of padded rows */
    scheduler_init(&eng->sched, &eng->pool, o->block_size, o->max_batched_tokens, o->max_seqs, o->max_context,
                   m->cfg.eos_ids, m->cfg.n_eos);
    if (o->prefix_caching)
        scheduler_enable_prefix_cache(&eng->sched);
    eng->sched.on_token = engine_on_token;
    eng->sched.on_token_ctx = eng;
    if (eng->spec) {
        eng->sched.propose = engine_propose;
        eng->sched.prepare = eng->spec->ops->prepare ? engine_prepare : NULL;
        eng->sched.propose_ctx = eng;
        eng->sched.spec_k = spec_k;
        eng->spec_seqs = xmalloc((size_t)o->max_seqs * sizeof *eng->spec_seqs);
        eng->spec_max_k = xmalloc((size_t)o->max_seqs * sizeof *eng->spec_max_k);
    }
    eng->work = xcalloc((size_t)o->max_seqs, sizeof *eng->work);
    eng->seqs = xcalloc((size_t)o->max_seqs, sizeof *eng->seqs);
    eng->drawn = xcalloc((size_t)max_draws, sizeof *eng->drawn);
    eng->mask_words = (m->cfg.vocab_size + 31) / 32;
    eng->masks = xmalloc((size_t)max_draws * (size_t)eng->mask_words * sizeof *eng->masks); /* one a draw row */
    eng->mask_rows = xmalloc((size_t)o->max_seqs * sizeof *eng->mask_rows);
    eng->runner.write_masks = engine_write_masks;
    eng->runner.write_masks_ctx = eng;
    eng->stats.kv_blocks = n_blocks;
    eng->stats.max_context = o->max_context;
    eng->stats.ranks = m->sh.size;
    eng->stats.graph_capture_s = eng->runner.graphs.capture_seconds;
    eng->stats.graph_bytes = eng->runner.graphs.free_before > eng->runner.graphs.free_after
                                 ? (long)(eng->runner.graphs.free_before - eng->runner.graphs.free_after)
                                 : 0;
    eng->stats.kv_blocks_free = block_pool_n_free(&eng->pool);
    return 0;
}

static void engine_release(struct engine *eng)
{
    free(eng->work);
    free(eng->seqs);
    free(eng->drawn);
    free(eng->masks);
    free(eng->mask_rows);
    free(eng->spec_seqs);
    free(eng->spec_max_k);
    threadpool_free(eng->mask_pool);
    scheduler_free(&eng->sched);
    block_pool_free(&eng->pool);
    runner_free(&eng->runner);
    spec_free(eng->spec);
}

/* The logits the step returned, one event per sequence that asked. */
static void emit_returned_logits(struct engine *eng, int n)
{
    for (int i = 0; i < n; i++)
        if (eng->work[i].return_logits)
            engine_emit_logits(eng, eng->seqs[i], runner_returned_logits(&eng->runner, eng->work, n, i),
                               eng->work[i].n_tokens, eng->work[i].start_pos);
}

/* One step; -1 with e set when the runner failed. */
static int engine_step(struct engine *eng, struct err *e)
{
    const double t0 = clock_now();
    const int n = scheduler_plan(&eng->sched, eng->work, eng->seqs);
    if (n == 0)
        return 0;
    int n_tokens = 0;
    for (int i = 0; i < n; i++) {
        struct live_request *lr = eng->seqs[i]->user;
        if (lr->scheduled_at == 0)
            lr->scheduled_at = t0;
        n_tokens += eng->work[i].n_tokens;
    }
    engine_assign_masks(eng, n); /* written by the runner's hook, on CUDA while the step runs */
    const double t1 = clock_now();
    if (runner_step(&eng->runner, eng->work, n, eng->drawn, e))
        return -1;
    const double t2 = clock_now();
    /* the counters first: the events that commit emits must find them current */
    pthread_mutex_lock(&eng->mu);
    const struct scheduler_stats *ss = &eng->sched.stats;
    struct engine_stats *st = &eng->stats;
    st->steps++;
    st->prefix_hit_tokens = ss->hit_tokens;
    st->prefix_lookup_tokens = ss->lookup_tokens;
    st->prefix_hit_blocks = ss->hit_blocks;
    st->prefix_lookup_blocks = ss->lookup_blocks;
    st->computed_tokens = ss->computed_tokens + n_tokens;
    st->evicted_blocks = ss->evicted_blocks;
    st->forked_blocks = ss->forked_blocks;
    st->preemptions = eng->sched.n_preemptions;
    st->spec_steps = ss->spec_steps;
    st->spec_proposed = ss->spec_proposed;
    st->spec_accepted = ss->spec_accepted;
    st->spec_method = spec_method_name(eng->o.spec_method);
    st->graph_replays = eng->runner.n_replays;
    st->eager_steps = eng->runner.n_eager;
    st->launch_s = eng->runner.launch_s;
    st->wait_s = eng->runner.wait_s;
    st->relay_s = eng->runner.relay_s;
    st->enqueue_s = eng->runner.enqueue_s;
    st->mask_s = eng->mask_s;
    st->plan_s += t1 - t0;
    st->run_s += t2 - t1;
    pthread_mutex_unlock(&eng->mu);
    emit_returned_logits(eng, n);
    scheduler_commit(&eng->sched, eng->work, eng->seqs, n, eng->drawn);
    const double t3 = clock_now();
    pthread_mutex_lock(&eng->mu);
    st->commit_s += t3 - t2;
    pthread_mutex_unlock(&eng->mu);
    if (eng->o.check_integrity) {
        struct err ie;
        if (scheduler_check(&eng->sched, &ie)) {
            log_error("engine: KV cache integrity violated: %s", ie.msg);
            abort();
        }
    }
    return 0;
}

/* A finished sequence's output goes to the proposer (suffix decoding keeps
 * it for later requests), unless it was aborted. */
static void spec_done(struct engine *eng, const struct sequence *s)
{
    if (!eng->spec || !s->tokens)
        return;
    const struct spec_seq q = {.id = s->id,
                               .tokens = s->tokens,
                               .n_prompt = s->n_prompt,
                               .n_known = s->finish == FINISH_REASON_ABORT ? s->n_prompt : sequence_known(s)};
    spec_finish(eng->spec, &q);
}

/* Frees the requests whose choices have all finished. */
static void sweep(struct engine *eng)
{
    for (struct live_request **p = &eng->live; *p;) {
        struct live_request *lr = *p;
        if (lr->n_finished == lr->n) {
            for (int i = 0; i < lr->n; i++)
                spec_done(eng, &lr->seqs[i]);
            *p = lr->next;
            live_request_free(lr);
        } else {
            p = &lr->next;
        }
    }
}

static void apply_abort(struct engine *eng, long id)
{
    for (struct live_request *lr = eng->live; lr; lr = lr->next)
        if (lr->id == id)
            live_request_abort(eng, lr);
}

/* Moves what was submitted and aborted into the scheduler. Called with mu
 * held; returns with it held. */
static void take_queue(struct engine *eng)
{
    struct live_request *lr = eng->pending;
    eng->pending = eng->pending_tail = NULL;
    long *aborts = eng->aborts;
    int n_aborts = eng->n_aborts;
    eng->aborts = NULL;
    eng->n_aborts = eng->cap_aborts = 0;
    pthread_mutex_unlock(&eng->mu);
    while (lr) {
        struct live_request *next = lr->next;
        lr->next = eng->live;
        eng->live = lr;
        for (int i = 0; i < lr->n; i++)
            scheduler_add(&eng->sched, &lr->seqs[i]);
        lr = next;
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
    st->running = eng->sched.n_running;
    st->waiting = eng->sched.n_waiting;
    st->kv_blocks_free = block_pool_n_free(&eng->pool);
    st->kv_blocks_cached = block_pool_n_cached_only(&eng->pool); /* O(1): this runs twice a step */
    st->kv_blocks_used = eng->pool.n_blocks - eng->pool.n_reserved - st->kv_blocks_free - st->kv_blocks_cached;
}

static void *engine_main(void *arg)
{
    struct engine *eng = arg;
    pthread_mutex_lock(&eng->mu);
    for (;;) {
        while (!eng->shutdown && !eng->pending && !eng->n_aborts && scheduler_idle(&eng->sched))
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
            for (struct live_request *lr = eng->live; lr; lr = lr->next)
                live_request_abort(eng, lr);
        }
        sweep(eng);
        pthread_mutex_lock(&eng->mu);
        update_gauges(eng);
    }
    pthread_mutex_unlock(&eng->mu);
    for (struct live_request *lr = eng->live; lr; lr = lr->next)
        live_request_abort(eng, lr);
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

long engine_submit(struct engine *eng, const struct engine_request *req, struct err *e)
{
    struct live_request *lr = live_request_new(eng, req, e);
    if (!lr)
        return -1;
    pthread_mutex_lock(&eng->mu);
    long id = lr->id = eng->next_id++;
    for (int i = 0; i < lr->n; i++)
        lr->seqs[i].id = eng->next_seq_id++;
    if (eng->pending_tail)
        eng->pending_tail->next = lr;
    else
        eng->pending = lr;
    eng->pending_tail = lr;
    eng->stats.requests++;
    eng->stats.prompt_tokens += req->n_prompt;
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

int engine_vocab_size(const struct engine *eng) { return eng->m->cfg.vocab_size; }

void engine_get_stats(struct engine *eng, struct engine_stats *out)
{
    pthread_mutex_lock(&eng->mu);
    *out = eng->stats;
    for (const struct live_request *lr = eng->pending; lr; lr = lr->next)
        out->waiting += lr->n; /* submitted, not yet taken by the engine thread */
    pthread_mutex_unlock(&eng->mu);
}

void engine_free(struct engine *eng)
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
