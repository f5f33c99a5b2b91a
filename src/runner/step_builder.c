#include "runner/step_builder.h"

#include <string.h>

void step_shape_of(const struct step_seq *seqs, int n, struct step_shape *s)
{
    *s = (struct step_shape){.n_seqs = n, .decode = n > 0};
    for (int i = 0; i < n; i++) {
        const struct step_seq *seq = &seqs[i];
        s->n_tokens += seq->n_tokens;
        s->n_draws += seq->draw;
        s->n_logits += seq->draw + (seq->return_logits ? seq->n_tokens : 0);
        s->decode &= seq->n_tokens == 1 && seq->draw == 1 && !seq->return_logits;
    }
}

int step_returned_row(const struct step_seq *seqs, int n, int i)
{
    if (!seqs[i].return_logits)
        return -1;
    int row = 0;
    for (int j = 0; j < n; j++)
        row += seqs[j].draw;
    for (int j = 0; j < i; j++)
        row += seqs[j].return_logits ? seqs[j].n_tokens : 0;
    return row;
}

void step_builder_init(struct step_builder *b, const struct meta_buffer *mb, int block_size,
                       int (*needs_logit_cols)(const struct sampling_params *p, int masked))
{
    CHECK(block_size > 0 && mb->host);
    b->mb = mb;
    b->block_size = block_size;
    b->needs_logit_cols = needs_logit_cols;
}

/* 1 when rank 0 of a split model needs the other ranks' logit columns: a
 * row returns its logits, or draws what the sampler needs them for. A row
 * without parameters (a step built by hand, drawn by no sampler) needs
 * none. */
static int32_t logit_cols_word(const struct step_builder *b, const struct step_seq *seqs, int n)
{
    for (int s = 0; s < n; s++) {
        const struct sampling_params *p = seqs[s].sample.params;
        if (seqs[s].return_logits || (seqs[s].draw && p && (!b->needs_logit_cols || b->needs_logit_cols(p, seqs[s].sample.mask != NULL))))
            return 1;
    }
    return 0;
}

/* The real sequences: tokens, positions, slots, block tables, draw rows. */
static int write_seqs(const struct step_builder *b, const struct step_seq *seqs, int n,
                      struct step_shape *real, struct err *e)
{
    const struct meta_layout *l = &b->mb->layout;
    const struct meta_caps *c = &l->caps;
    int32_t *h = b->mb->host;
    int32_t *tok = h + l->token_ids, *pos = h + l->positions, *slot = h + l->slot_mapping;
    int32_t *seq_of = h + l->seq_of_token, *qs = h + l->query_start, *kvl = h + l->kv_len;
    int32_t *rows = h + l->logit_rows, *tables = h + l->block_tables;
    step_shape_of(seqs, n, real);
    if (n > c->max_seqs)
        return err_set(e, "step of %d sequences (at most %d)", n, c->max_seqs);
    if (real->n_tokens > c->max_tokens)
        return err_set(e, "step of %d tokens (at most %d)", real->n_tokens, c->max_tokens);
    if (real->n_logits > c->max_logits)
        return err_set(e, "step of %d logit rows (at most %d)", real->n_logits, c->max_logits);
    int t = 0, draw = 0, ret = real->n_draws;
    for (int s = 0; s < n; s++) {
        const struct step_seq *seq = &seqs[s];
        if (seq->n_tokens < 1)
            return err_set(e, "sequence %d of the step has no tokens", s);
        if (seq->draw < 0 || seq->draw > seq->n_tokens)
            return err_set(e, "sequence %d draws %d rows of its %d tokens", s, seq->draw, seq->n_tokens);
        const int end = seq->start_pos + seq->n_tokens;
        if ((end + b->block_size - 1) / b->block_size > seq->blocks->n)
            return err_set(e, "sequence %d: its block table does not cover position %d", s, end - 1);
        if (seq->blocks->n > c->max_blocks_per_seq)
            return err_set(e, "sequence %d: %d blocks exceed the block-table capacity %d", s, seq->blocks->n,
                           c->max_blocks_per_seq);
        qs[s] = t;
        kvl[s] = end;
        /* only the blocks it has: kernels read no further than kv_len */
        memcpy(tables + (size_t)s * c->max_blocks_per_seq, seq->blocks->ids,
               (size_t)seq->blocks->n * sizeof(int32_t));
        const int first = t;
        for (int i = 0; i < seq->n_tokens; i++, t++) {
            tok[t] = seq->tokens[i];
            pos[t] = seq->start_pos + i;
            slot[t] = seq_blocks_slot(seq->blocks, seq->start_pos + i, b->block_size);
            seq_of[t] = s;
        }
        for (int i = seq->draw; i > 0; i--)
            rows[draw++] = t - i;
        for (int i = 0; seq->return_logits && i < seq->n_tokens; i++)
            rows[ret++] = first + i;
    }
    return 0;
}

int step_build(const struct step_builder *b, const struct step_seq *seqs, int n,
               const struct step_shape *padded, struct err *e)
{
    const struct meta_layout *l = &b->mb->layout;
    const struct meta_caps *c = &l->caps;
    struct step_shape real;
    if (write_seqs(b, seqs, n, &real, e))
        return -1;
    const int T = padded->n_tokens, S = padded->n_seqs, L = padded->n_logits;
    const int nt = real.n_tokens, ns = real.n_seqs, nl = real.n_logits;
    CHECK(T >= nt && S >= ns && L >= nl && T <= c->max_tokens && S <= c->max_seqs && L <= c->max_logits);
    CHECK(T == nt || S > ns);
    int32_t *h = b->mb->host;
    int32_t *tok = h + l->token_ids, *pos = h + l->positions, *slot = h + l->slot_mapping;
    int32_t *seq_of = h + l->seq_of_token, *qs = h + l->query_start, *kvl = h + l->kv_len;
    int32_t *rows = h + l->logit_rows;
    for (int j = 0; nt + j < T; j++) {
        tok[nt + j] = 0, pos[nt + j] = 0, slot[nt + j] = -1;
        seq_of[nt + j] = ns + j < S - 1 ? ns + j : S - 1;
    }
    const int pad = T - nt;
    for (int k = 0; ns + k < S; k++) { /* padding sequence ns + k starts at nt + min(k, pad) */
        qs[ns + k] = nt + (k < pad ? k : pad);
        kvl[ns + k] = 0;
    }
    qs[S] = T;
    h[l->logit_cols] = logit_cols_word(b, seqs, n);
    for (int k = nl; k < L; k++) {
        const int t = nt + (k - nl);
        rows[k] = t < T ? t : T - 1;
    }
    return 0;
}
