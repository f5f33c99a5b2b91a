#include "engine/step_builder.h"

#include <stdlib.h>
#include <string.h>

void step_builder_init(struct step_builder *sb, const struct meta_caps *caps, int block_size)
{
    memset(sb, 0, sizeof *sb);
    CHECK(caps->max_tokens > 0 && caps->max_seqs > 0 && caps->max_blocks_per_seq > 0 && block_size > 0);
    sb->caps = *caps;
    sb->block_size = block_size;
    size_t t = (size_t)caps->max_tokens, s = (size_t)caps->max_seqs;
    sb->token_ids = xmalloc(t * sizeof(int32_t));
    sb->positions = xmalloc(t * sizeof(int32_t));
    sb->slots = xmalloc(t * sizeof(int32_t));
    sb->seq_of = xmalloc(t * sizeof(int32_t));
    sb->query_start = xmalloc((s + 1) * sizeof(int32_t));
    sb->kv_len = xmalloc(s * sizeof(int32_t));
    sb->block_tables = xcalloc(s * (size_t)caps->max_blocks_per_seq, sizeof(int32_t));
    sb->logit_rows = xmalloc((size_t)(caps->max_logits > 0 ? caps->max_logits : 1) * sizeof(int32_t));
}

void step_builder_free(struct step_builder *sb)
{
    free(sb->token_ids);
    free(sb->positions);
    free(sb->slots);
    free(sb->seq_of);
    free(sb->query_start);
    free(sb->kv_len);
    free(sb->block_tables);
    free(sb->logit_rows);
    memset(sb, 0, sizeof *sb);
}

int step_build(struct step_builder *sb, const struct step_seq *seqs, int n_seqs, struct fwd_batch *b,
               struct err *e)
{
    const struct meta_caps *c = &sb->caps;
    if (n_seqs < 1 || n_seqs > c->max_seqs)
        return err_set(e, "step of %d sequences (1..%d allowed)", n_seqs, c->max_seqs);
    int n_tokens = 0, n_logits = 0;
    for (int s = 0; s < n_seqs; s++) {
        const struct step_seq *q = &seqs[s];
        if (q->n_tokens < 1)
            return err_set(e, "sequence %d of the step has no tokens", s);
        if (n_tokens + q->n_tokens > c->max_tokens)
            return err_set(e, "step of more than %d tokens", c->max_tokens);
        int end = q->start_pos + q->n_tokens;
        if ((end + sb->block_size - 1) / sb->block_size > q->blocks->n)
            return err_set(e, "sequence %d: its block table does not cover position %d", s, end - 1);
        if (q->blocks->n > c->max_blocks_per_seq)
            return err_set(e, "sequence %d: %d blocks exceed the block-table capacity %d", s, q->blocks->n,
                           c->max_blocks_per_seq);
        sb->query_start[s] = n_tokens;
        sb->kv_len[s] = end;
        memcpy(sb->block_tables + (size_t)s * c->max_blocks_per_seq, q->blocks->ids,
               (size_t)q->blocks->n * sizeof(int32_t));
        for (int i = 0; i < q->n_tokens; i++, n_tokens++) {
            sb->token_ids[n_tokens] = q->tokens[i];
            sb->positions[n_tokens] = q->start_pos + i;
            sb->slots[n_tokens] = seq_blocks_slot(q->blocks, q->start_pos + i, sb->block_size);
            sb->seq_of[n_tokens] = s;
        }
        if (q->want_logits) {
            if (n_logits == c->max_logits)
                return err_set(e, "step wants more than %d logit rows", c->max_logits);
            sb->logit_rows[n_logits++] = n_tokens - 1;
        }
    }
    sb->query_start[n_seqs] = n_tokens;
    *b = (struct fwd_batch){
        .n_tokens = n_tokens, .n_seqs = n_seqs, .n_logits = n_logits, .max_blocks_per_seq = c->max_blocks_per_seq,
        .token_ids = sb->token_ids, .positions = sb->positions, .slot_mapping = sb->slots,
        .seq_of_token = sb->seq_of, .query_start = sb->query_start, .kv_len = sb->kv_len,
        .block_tables = sb->block_tables, .logit_rows = sb->logit_rows, .skip_argmax = 1, /* the sampler draws */
    };
    return 0;
}
