/* The draft-model proposer alone (engine/spec_draft.h), the fixture's model
 * drafting for itself: one prepare call over more sequences than it has
 * seen before (its table of sequences grows inside the call) proposes for
 * each what the model would decode greedily, and after the target keeps
 * some of them the next call carries on from the kept tokens. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/spec_draft.h"
#include "sched_harness.h"
#include "test_util.h"

enum { N_SEQ = 40, K = 4, PROMPT = 6, KEEP = 2 };

Test(spec_draft, one_prepare_over_many_sequences_proposes_their_greedy_tokens)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    struct err e = {{0}};
    const struct spec_draft_opts o = {.path = fixture_path("tiny-qwen3"),
                                      .max_seqs = N_SEQ,
                                      .max_tokens = 512,
                                      .max_context = 256,
                                      .block_size = HARNESS_BS,
                                      .kv_blocks = 4 * N_SEQ + 1,
                                      .gpu_memory_utilization = 0.9};
    struct spec_proposer *p = spec_draft_create(m, &o, &e);
    cr_assert(p, "%s", e.msg);
    static int32_t tokens[N_SEQ][PROMPT + 2 * K + KEEP + 1], *truth[N_SEQ];
    struct spec_seq seqs[N_SEQ];
    int max_k[N_SEQ];
    for (int i = 0; i < N_SEQ; i++) {
        int n = 0;
        for (int c = 0; n < KEEP + 2 * K; c++) { /* a prompt whose greedy output does not end early */
            cr_assert_lt(c, 20, "sequence %d: every prompt tried ends before %d tokens", i, KEEP + 2 * K);
            for (int j = 0; j < PROMPT; j++)
                tokens[i][j] = (int32_t)((i * 37 + c * 101 + j * 11 + 3) % m->cfg.vocab_size);
            if (c)
                free(truth[i]);
            truth[i] = alone_greedy(m, tokens[i], PROMPT, KEEP + 2 * K, &n, NULL);
        }
        seqs[i] = (struct spec_seq){.id = 100 + i, .tokens = tokens[i], .n_prompt = PROMPT, .n_known = PROMPT};
        max_k[i] = K;
    }
    long agree = 0, proposed = 0;
    for (int round = 0; round < 2; round++) {
        spec_prepare(p, seqs, max_k, N_SEQ);
        for (int i = 0; i < N_SEQ; i++) {
            int32_t out[K];
            const int k = spec_propose(p, &seqs[i], K, out);
            cr_assert_eq(k, K, "round %d, sequence %d: %d proposals of %d", round, i, k, K);
            const int at = seqs[i].n_known - PROMPT;
            for (int j = 0; j < k; j++)
                agree += out[j] == truth[i][at + j];
            proposed += k;
            /* the target keeps KEEP proposals, then draws its own token */
            memcpy(tokens[i] + seqs[i].n_known, truth[i] + at, (KEEP + 1) * sizeof(int32_t));
            seqs[i].n_known += KEEP + 1;
        }
    }
    cr_assert_gt(agree * 10, proposed * 9, "the model drafting for itself: %ld of %ld proposals as alone", agree,
                 proposed);
    struct spec_draft_stats st;
    spec_draft_stats(p, &st);
    cr_assert_eq(st.steps, 2 * K, "K batched draft steps a prepare call, whatever the number of sequences");
    for (int i = 0; i < N_SEQ; i++)
        spec_finish(p, &seqs[i]), free(truth[i]);
    spec_free(p);
    test_free_model(m, be);
}
