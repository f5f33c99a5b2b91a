/* Draft-model proposals (engine/spec_draft.h). */
#include "engine/spec_draft.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kvcache/block_pool.h"
#include "runner/runner.h"
#include "sampling/sampling.h"

/* One sequence as the draft knows it. */
struct dseq {
    long id;
    const int32_t *src; /* the sequence's own tokens: another buffer under the same id is a new sequence */
    int32_t *tok;       /* the known tokens as the draft last saw them, then its proposals */
    int cap;
    int n_valid; /* the draft's KV holds tok[0, n_valid) */
    int base;    /* the known tokens when the proposals were made */
    int n_prop, k;
    int n_prompt;
    const struct sampling_params *sampling;
    uint64_t step;
    long prepared; /* the prepare call that last saw it */
    struct seq_blocks blocks;
};

struct draft {
    struct spec_proposer base;
    struct backend *be; /* its own, of the target's kind: a backend holds one sampler, one workspace */
    struct model *m;
    struct runner runner;
    struct block_pool pool;
    int block_size, max_tokens, max_context;
    int eos[MODEL_MAX_EOS], n_eos;
    struct dseq *seqs;
    int n_seqs, cap_seqs;
    struct dseq **active, **order; /* [max_seqs] */
    struct step_seq *work;         /* [max_seqs] */
    struct sample_result *drawn;   /* [max_seqs] */
    struct sampling_params greedy;
    long prepares, steps, tokens;
    int failed; /* a draft step failed once: logged, no more proposals */
};

static void dseq_reset(struct draft *g, struct dseq *d, const struct spec_seq *s)
{
    seq_blocks_release(&d->blocks, &g->pool);
    d->src = s->tokens;
    d->n_valid = d->base = d->n_prop = d->k = 0;
}

/* Room for n more sequences, made before a prepare call takes pointers into g->seqs. */
static void reserve_seqs(struct draft *g, int n)
{
    if (g->n_seqs + n > g->cap_seqs) {
        g->cap_seqs = 2 * (g->n_seqs + n);
        g->seqs = xrealloc(g->seqs, (size_t)g->cap_seqs * sizeof *g->seqs);
    }
}

static struct dseq *dseq_of(struct draft *g, const struct spec_seq *s)
{
    for (int i = 0; i < g->n_seqs; i++)
        if (g->seqs[i].id == s->id) {
            if (g->seqs[i].src != s->tokens)
                dseq_reset(g, &g->seqs[i], s);
            return &g->seqs[i];
        }
    CHECK(g->n_seqs < g->cap_seqs); /* reserve_seqs: the pointers a prepare call holds stay valid */
    struct dseq *d = &g->seqs[g->n_seqs++];
    *d = (struct dseq){.id = s->id, .src = s->tokens};
    return d;
}

/* Brings d up to s's known tokens: its KV stays valid where its tokens
 * (the proposals it fed last time) agree with s's; at least the last known
 * token is fed again, for its logits. */
static void dseq_sync(struct dseq *d, const struct spec_seq *s, int max_k)
{
    const int known = s->n_known;
    if (d->cap < known + max_k + 1) {
        d->cap = 2 * (known + max_k + 1);
        d->tok = xrealloc(d->tok, (size_t)d->cap * sizeof *d->tok);
    }
    int valid = d->n_valid < known ? d->n_valid : known;
    for (int p = d->base; p < valid; p++) /* below base: copied from s before */
        if (d->tok[p] != s->tokens[p]) {
            valid = p;
            break;
        }
    memcpy(d->tok + valid, s->tokens + valid, (size_t)(known - valid) * sizeof *d->tok);
    d->n_valid = valid < known ? valid : known - 1;
    d->base = known;
    d->n_prop = 0;
    d->n_prompt = s->n_prompt;
    d->sampling = s->sampling;
    d->step = s->step;
}

/* Frees the draft blocks of sequences this prepare call did not name. */
static void release_idle(struct draft *g)
{
    for (int i = 0; i < g->n_seqs; i++)
        if (g->seqs[i].prepared != g->prepares && g->seqs[i].blocks.n) {
            seq_blocks_release(&g->seqs[i].blocks, &g->pool);
            g->seqs[i].n_valid = 0;
        }
}

static int is_eos(const struct draft *g, int32_t t)
{
    for (int i = 0; i < g->n_eos; i++)
        if (g->eos[i] == t)
            return 1;
    return 0;
}

/* One draft step over the active sequences: each feeds what it has not
 * fed (within the token budget) and, where that reaches its end, draws its
 * next proposal. Returns how many stay active, or -1 on failure. */
static int draft_step(struct draft *g, int na)
{
    int budget = g->max_tokens, nw = 0;
    for (int j = 0; j < na && budget > 0; j++) {
        struct dseq *d = g->active[j];
        const int end = d->base + d->n_prop, pending = end - d->n_valid;
        const int c = pending < budget ? pending : budget;
        const int n_out = end - d->n_prompt;
        g->work[nw] = (struct step_seq){
            .blocks = &d->blocks,
            .tokens = d->tok + d->n_valid,
            .n_tokens = c,
            .start_pos = d->n_valid,
            .draw = c == pending,
            .sample = {.params = d->sampling ? d->sampling : &g->greedy,
                       .prompt = d->tok,
                       .n_prompt = d->n_prompt,
                       .output = d->tok + d->n_prompt,
                       .n_output = n_out,
                       .step = d->step + (uint64_t)d->n_prop}};
        g->order[nw++] = d;
        budget -= c;
    }
    struct err e = {{0}};
    if (runner_step(&g->runner, g->work, nw, g->drawn, &e)) {
        log_error("speculative decoding: the draft model's step failed (%s); no more draft proposals", e.msg);
        return -1;
    }
    g->steps++;
    int row = 0;
    for (int i = 0; i < nw; i++) {
        struct dseq *d = g->order[i];
        d->n_valid += g->work[i].n_tokens;
        g->tokens += g->work[i].n_tokens;
        if (g->work[i].draw) {
            const int32_t t = g->drawn[row++].token;
            d->tok[d->base + d->n_prop++] = t;
            if (is_eos(g, t))
                d->k = d->n_prop; /* nothing follows an end */
        }
    }
    int k = 0;
    for (int j = 0; j < na; j++)
        if (g->active[j]->n_prop < g->active[j]->k)
            g->active[k++] = g->active[j];
    return k;
}

static void draft_prepare(struct spec_proposer *p, const struct spec_seq *seqs, const int *max_k, int n)
{
    struct draft *g = (struct draft *)p;
    if (g->failed)
        return;
    g->prepares++;
    reserve_seqs(g, n);
    int na = 0, released = 0;
    for (int i = 0; i < n; i++) {
        struct dseq *d = dseq_of(g, &seqs[i]);
        d->prepared = g->prepares;
        int k = max_k[i] < g->max_context - seqs[i].n_known ? max_k[i] : g->max_context - seqs[i].n_known;
        dseq_sync(d, &seqs[i], k > 0 ? k : 0);
        d->k = 0;
        if (k <= 0)
            continue;
        /* fed at most: the known tokens and every proposal but the last */
        int short_of_blocks = seq_blocks_reserve(&d->blocks, &g->pool, d->base + k - 1, g->block_size);
        if (short_of_blocks && !released) {
            release_idle(g), released = 1;
            short_of_blocks = seq_blocks_reserve(&d->blocks, &g->pool, d->base + k - 1, g->block_size);
        }
        if (short_of_blocks)
            continue;
        d->k = k;
        g->active[na++] = d;
    }
    while (na > 0)
        if ((na = draft_step(g, na)) < 0) {
            g->failed = 1;
            for (int i = 0; i < g->n_seqs; i++)
                g->seqs[i].n_prop = 0;
        }
}

static int draft_propose(struct spec_proposer *p, const struct spec_seq *s, int max_k, int32_t *out)
{
    struct draft *g = (struct draft *)p;
    for (int i = 0; i < g->n_seqs; i++) {
        const struct dseq *d = &g->seqs[i];
        if (d->id != s->id)
            continue;
        if (d->src != s->tokens || d->base != s->n_known)
            return 0; /* made for other tokens */
        const int k = d->n_prop < max_k ? d->n_prop : max_k;
        memcpy(out, d->tok + d->base, (size_t)k * sizeof *out);
        return k;
    }
    return 0;
}

static void draft_finish(struct spec_proposer *p, const struct spec_seq *s)
{
    struct draft *g = (struct draft *)p;
    for (int i = 0; i < g->n_seqs; i++)
        if (g->seqs[i].id == s->id) {
            seq_blocks_release(&g->seqs[i].blocks, &g->pool);
            seq_blocks_free(&g->seqs[i].blocks);
            free(g->seqs[i].tok);
            g->seqs[i] = g->seqs[--g->n_seqs];
            return;
        }
}

static void draft_free(struct spec_proposer *p)
{
    struct draft *g = (struct draft *)p;
    for (int i = 0; i < g->n_seqs; i++) {
        seq_blocks_release(&g->seqs[i].blocks, &g->pool);
        seq_blocks_free(&g->seqs[i].blocks);
        free(g->seqs[i].tok);
    }
    free(g->seqs);
    free(g->active), free(g->order), free(g->work), free(g->drawn);
    block_pool_free(&g->pool);
    runner_free(&g->runner);
    model_free(g->m);
    backend_free(g->be);
    free(g);
}

void spec_draft_stats(const struct spec_proposer *p, struct spec_draft_stats *st)
{
    const struct draft *g = (const struct draft *)p;
    *st = (struct spec_draft_stats){.steps = g->steps, .tokens = g->tokens};
}

static const struct spec_proposer_ops draft_ops = {.name = "draft",
                                                   .prepare = draft_prepare,
                                                   .propose = draft_propose,
                                                   .finish = draft_finish,
                                                   .free = draft_free};

struct spec_proposer *spec_draft_create(const struct model *target, const struct spec_draft_opts *o, struct err *e)
{
    const struct backend *tb = target->be;
    struct backend *be = backend_create_on(tb->kind, tb->n_threads, tb->device, e);
    if (!be)
        return NULL;
    be->batch_invariant = tb->batch_invariant;
    be->fuse_weights = tb->fuse_weights;
    struct model *dm = model_load(o->path, be, e);
    if (!dm) {
        backend_free(be);
        return NULL;
    }
    if (dm->cfg.vocab_size != target->cfg.vocab_size) {
        err_set(e, "--speculative-model %s: a vocabulary of %d tokens, the model's has %d (a draft must share "
                "the tokenizer)", o->path, dm->cfg.vocab_size, target->cfg.vocab_size);
        model_free(dm);
        backend_free(be);
        return NULL;
    }
    struct draft *g = xcalloc(1, sizeof *g);
    g->base.ops = &draft_ops;
    g->be = be;
    g->m = dm;
    g->block_size = o->block_size;
    g->max_tokens = o->max_tokens;
    g->max_context = o->max_context < dm->cfg.max_positions ? o->max_context : dm->cfg.max_positions;
    g->n_eos = target->cfg.n_eos;
    memcpy(g->eos, target->cfg.eos_ids, sizeof g->eos);
    g->greedy = sampling_params_default();
    struct graph_opts graph = o->graph;
    if (graph.mode != GRAPH_MODE_NONE) /* every draft step after a sequence's first is a decode step */
        graph.mode = GRAPH_MODE_DECODE, graph.token_buckets = NULL, graph.n_token_buckets = 0;
    const struct runner_opts ro = {.max_tokens = o->max_tokens,
                                   .max_seqs = o->max_seqs,
                                   .max_draws = o->max_seqs,
                                   .max_context = g->max_context,
                                   .block_size = o->block_size,
                                   .kv_blocks = o->kv_blocks,
                                   .gpu_memory_utilization = o->gpu_memory_utilization,
                                   .graph = graph};
    if (runner_init(&g->runner, dm, &ro, e)) {
        model_free(dm);
        backend_free(be);
        free(g);
        return NULL;
    }
    block_pool_init(&g->pool, g->runner.kv.n_blocks, 1); /* block 0: padded rows' scratch */
    g->active = xmalloc((size_t)o->max_seqs * sizeof *g->active);
    g->order = xmalloc((size_t)o->max_seqs * sizeof *g->order);
    g->work = xmalloc((size_t)o->max_seqs * sizeof *g->work);
    g->drawn = xmalloc((size_t)o->max_seqs * sizeof *g->drawn);
    log_info("speculative decoding: draft model %s, %d KV blocks of %d tokens", o->path, g->runner.kv.n_blocks,
             o->block_size);
    return &g->base;
}
