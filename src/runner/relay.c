/* The runner's messages to the other ranks of a split model, and how those
 * ranks follow them (runner.h: runner_follow). Three messages:
 * - start: the runner's options (and bucket lists): the rank starts a
 *   runner of the same shape, capturing the same graphs in the same order
 *   (their collectives keep the ranks in step);
 * - step: the plan (path, graph, padded and real shapes) and the metadata
 *   rank 0's step builder wrote, which the rank copies into its own
 *   staging: no rank builds a step again;
 * - end: the runner goes. */
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"

enum relay_kind { RELAY_START = 1, RELAY_STEP, RELAY_END };

/* The options without pointers, then n_buckets and n_token_buckets ints. */
struct start_msg {
    uint32_t kind;
    int32_t max_tokens, max_seqs, max_draws, max_context, block_size, kv_blocks, return_logits;
    double gpu_memory_utilization;
    int32_t mode, n_buckets, max_bs, padding, n_token_buckets, max_graph_tokens;
};

/* Then n_ints int32 of metadata: what the padded step uses of the staging,
 * packed (pack_meta). */
struct step_msg {
    uint32_t kind;
    int32_t path, graph_index, draw_rows;
    int32_t padded[5], real[5]; /* n_tokens, n_seqs, n_draws, n_logits, decode */
    uint32_t n_ints;
};

static void shape_out(const struct step_shape *s, int32_t out[5])
{
    out[0] = s->n_tokens, out[1] = s->n_seqs, out[2] = s->n_draws, out[3] = s->n_logits, out[4] = s->decode;
}

static struct step_shape shape_in(const int32_t in[5])
{
    return (struct step_shape){in[0], in[1], in[2], in[3], in[4]};
}

int runner_relay_start(const struct runner *r, struct err *e)
{
    const struct runner_opts *o = &r->o;
    const struct graph_opts *g = &o->graph;
    const int nb = g->buckets ? g->n_buckets : 0, nt = g->token_buckets ? g->n_token_buckets : 0;
    const size_t bytes = sizeof(struct start_msg) + (size_t)(nb + nt) * sizeof(int32_t);
    char *buf = xmalloc(bytes);
    struct start_msg m = {RELAY_START,   o->max_tokens,   o->max_seqs,  o->max_draws, o->max_context,
                          o->block_size,  o->kv_blocks, o->return_logits, o->gpu_memory_utilization,
                          (int32_t)g->mode, nb,           g->max_bs,     g->padding,
                          nt,             g->max_graph_tokens};
    memcpy(buf, &m, sizeof m);
    int32_t *lists = (int32_t *)(buf + sizeof m);
    for (int i = 0; i < nb; i++)
        lists[i] = g->buckets[i];
    for (int i = 0; i < nt; i++)
        lists[nb + i] = g->token_buckets[i];
    const int rc = o->relay->send(o->relay->ctx, buf, bytes, e);
    free(buf);
    return rc;
}

/* The block-table entries sequence s of a step uses: those its length
 * reaches (kernels read no further); -1 for a length the table cannot hold. */
static int blocks_used(const struct meta_layout *l, int32_t kv_len, int block_size)
{
    if (kv_len < 0 || kv_len > l->caps.max_blocks_per_seq * block_size)
        return -1;
    return (kv_len + block_size - 1) / block_size;
}

/* The staging's per-step arrays in message order, [where, ints]: per-token
 * rows, sequence starts, lengths (part PART_KV_LEN), logit rows, the
 * logit-columns word (the block tables follow). */
enum { PART_KV_LEN = 5, META_PARTS = 8 };
static void meta_parts(const struct meta_layout *l, const struct step_shape *p, size_t parts[META_PARTS][2])
{
    const size_t T = (size_t)p->n_tokens, S = (size_t)p->n_seqs, L = (size_t)p->n_logits;
    const size_t at[META_PARTS] = {l->token_ids, l->positions,  l->slot_mapping, l->seq_of_token,
                                   l->query_start, l->kv_len, l->logit_rows, l->logit_cols};
    const size_t n[META_PARTS] = {T, T, T, T, S + 1, S, L, 1};
    for (int i = 0; i < META_PARTS; i++)
        parts[i][0] = at[i], parts[i][1] = n[i];
}

/* What a step of the padded shape p uses of the staging h, in order: the
 * meta_parts, then each block table's used entries; into out (NULL: only
 * counted). A step message carries this instead of the staging's prefix,
 * whose per-token arrays are max_tokens long and whose block tables are
 * max_blocks_per_seq wide (a batch-64 step at a 128k context: 2 MB a step
 * over the control connection). */
static size_t pack_meta(const struct meta_layout *l, const int32_t *h, const struct step_shape *p, int block_size,
                        int32_t *out)
{
    size_t parts[META_PARTS][2], k = 0;
    meta_parts(l, p, parts);
    for (int i = 0; i < META_PARTS; k += parts[i][1], i++)
        if (out)
            memcpy(out + k, h + parts[i][0], parts[i][1] * sizeof *h);
    for (size_t s = 0; s < (size_t)p->n_seqs; s++) {
        const int nb = blocks_used(l, h[l->kv_len + s], block_size);
        CHECK(nb >= 0); /* the step builder checked the tables */
        if (out)
            memcpy(out + k, h + l->block_tables + s * (size_t)l->caps.max_blocks_per_seq, (size_t)nb * sizeof *h);
        k += (size_t)nb;
    }
    return k;
}

/* pack_meta's inverse into the staging h, checking what rank 0 sent
 * against this rank's capacities. */
static int unpack_meta(const struct meta_layout *l, int32_t *h, const struct step_shape *p, int block_size,
                       const int32_t *in, size_t n, struct err *e)
{
    const struct meta_caps *c = &l->caps;
    if (p->n_tokens < 1 || p->n_tokens > c->max_tokens || p->n_seqs < 1 || p->n_seqs > c->max_seqs ||
        p->n_logits < 0 || p->n_logits > c->max_logits)
        return err_set(e, "rank 0 sent a step of %d tokens, %d sequences, %d logit rows; this rank holds %d, %d, %d",
                       p->n_tokens, p->n_seqs, p->n_logits, c->max_tokens, c->max_seqs, c->max_logits);
    size_t parts[META_PARTS][2], k = 0, lens = 0; /* lens: where the lengths sit in `in` */
    meta_parts(l, p, parts);
    for (int i = 0; i < META_PARTS; i++) {
        if (i == PART_KV_LEN)
            lens = k;
        k += parts[i][1];
    }
    const size_t S = (size_t)p->n_seqs;
    if (n < k)
        return err_set(e, "rank 0 sent %zu metadata ints for a step that needs %zu and more", n, k);
    for (size_t s = 0; s < S; s++) {
        const int nb = blocks_used(l, in[lens + s], block_size);
        if (nb < 0)
            return err_set(e, "rank 0 sent sequence %zu a length of %d (this rank's tables hold %d tokens)", s,
                           in[lens + s], c->max_blocks_per_seq * block_size);
        k += (size_t)nb;
    }
    if (k != n)
        return err_set(e, "rank 0 sent %zu metadata ints for a step that needs %zu", n, k);
    k = 0;
    for (int i = 0; i < META_PARTS; k += parts[i][1], i++)
        memcpy(h + parts[i][0], in + k, parts[i][1] * sizeof *h);
    for (size_t s = 0; s < S; s++) {
        const int nb = blocks_used(l, in[lens + s], block_size);
        memcpy(h + l->block_tables + s * (size_t)c->max_blocks_per_seq, in + k, (size_t)nb * sizeof *h);
        k += (size_t)nb;
    }
    return 0;
}

int runner_relay_step(const struct runner *r, const struct step_plan *p, const struct step_shape *real,
                      struct err *e)
{
    const size_t n_ints = pack_meta(&r->meta.layout, r->meta.host, &p->padded, r->o.block_size, NULL);
    const size_t bytes = sizeof(struct step_msg) + n_ints * sizeof(int32_t);
    char *buf = xmalloc(bytes);
    struct step_msg m = {.kind = RELAY_STEP,
                         .path = p->path,
                         .graph_index = p->graph_index,
                         .draw_rows = p->draw_rows,
                         .n_ints = (uint32_t)n_ints};
    shape_out(&p->padded, m.padded);
    shape_out(real, m.real);
    memcpy(buf, &m, sizeof m);
    pack_meta(&r->meta.layout, r->meta.host, &p->padded, r->o.block_size, (int32_t *)(buf + sizeof m));
    const int rc = r->o.relay->send(r->o.relay->ctx, buf, bytes, e);
    free(buf);
    return rc;
}

int runner_relay_end(const struct runner *r, struct err *e)
{
    const uint32_t kind = RELAY_END;
    return r->o.relay->send(r->o.relay->ctx, &kind, sizeof kind, e);
}

/* The options of a start message (lists point into msg). */
static int read_start(const char *msg, size_t n, const struct relay *relay, struct runner_opts *o,
                      struct err *e)
{
    struct start_msg m;
    if (n < sizeof m)
        return err_set(e, "rank 0 sent a runner start of %zu bytes", n);
    memcpy(&m, msg, sizeof m);
    if (m.n_buckets < 0 || m.n_token_buckets < 0 ||
        n != sizeof m + (size_t)(m.n_buckets + m.n_token_buckets) * sizeof(int32_t))
        return err_set(e, "rank 0 sent a malformed runner start");
    const int32_t *lists = (const int32_t *)(msg + sizeof m);
    *o = (struct runner_opts){.max_tokens = m.max_tokens,
                              .max_seqs = m.max_seqs,
                              .max_draws = m.max_draws,
                              .max_context = m.max_context,
                              .block_size = m.block_size,
                              .kv_blocks = m.kv_blocks,
                              .gpu_memory_utilization = m.gpu_memory_utilization,
                              .return_logits = m.return_logits,
                              .graph = {.mode = (enum graph_mode)m.mode,
                                        .buckets = m.n_buckets ? (const int *)lists : NULL,
                                        .n_buckets = m.n_buckets,
                                        .max_bs = m.max_bs,
                                        .padding = m.padding,
                                        .token_buckets = m.n_token_buckets ? (const int *)lists + m.n_buckets : NULL,
                                        .n_token_buckets = m.n_token_buckets,
                                        .max_graph_tokens = m.max_graph_tokens},
                              .relay = relay};
    return 0;
}

/* One step rank 0 planned: its metadata into the staging, then the plan. */
static int follow_step(struct runner *r, const char *msg, size_t n, struct err *e)
{
    struct step_msg m;
    if (n < sizeof m)
        return err_set(e, "rank 0 sent a step of %zu bytes", n);
    memcpy(&m, msg, sizeof m);
    if (n != sizeof m + (size_t)m.n_ints * sizeof(int32_t))
        return err_set(e, "rank 0 sent a step of %zu bytes that says it holds %u metadata ints", n, m.n_ints);
    struct step_plan p = {.path = (enum step_path)m.path,
                          .padded = shape_in(m.padded),
                          .draw_rows = m.draw_rows,
                          .graph_index = m.graph_index};
    const struct step_shape real = shape_in(m.real);
    if (graph_runner_lookup(&r->graphs, &p))
        return err_set(e, "rank 0 asked for graph %d of kind %d, which this rank did not capture", m.graph_index,
                       m.path);
    if (unpack_meta(&r->meta.layout, r->meta.host, &p.padded, r->o.block_size, (const int32_t *)(msg + sizeof m),
                    m.n_ints, e))
        return -1;
    struct backend *be = r->m->be;
    /* done before the next step's metadata overwrites the staging */
    return runner_run_plan(r, &p, &real, e) || be->ops->synchronize(be, e) ? -1 : 0;
}

int runner_follow(const struct model *m, const struct relay *relay, struct err *e)
{
    struct runner r = {0};
    int started = 0, rc = 0;
    for (;;) {
        void *msg = NULL;
        size_t n = 0;
        const int got = relay->recv(relay->ctx, &msg, &n, e);
        if (got) { /* the group ends (1), or rank 0 is gone (-1) */
            rc = got < 0 ? -1 : 0;
            break;
        }
        uint32_t kind = 0;
        if (n >= sizeof kind)
            memcpy(&kind, msg, sizeof kind);
        struct runner_opts o;
        if (kind == RELAY_START && !started)
            rc = read_start(msg, n, relay, &o, e) || runner_init(&r, m, &o, e) ? -1 : 0, started = !rc;
        else if (kind == RELAY_STEP && started)
            rc = follow_step(&r, msg, n, e);
        else if (kind == RELAY_END && started)
            runner_free(&r), started = 0;
        else
            rc = err_set(e, "rank 0 sent message %u out of turn", kind);
        free(msg);
        if (rc)
            break;
    }
    if (started)
        runner_free(&r);
    return rc;
}
