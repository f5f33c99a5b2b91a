/* Stop conditions: stop strings matched on the streamed text (split across
 * tokens, inside one token, across the bytes of one character, the earliest
 * of several, a false start), cut from the output, with the streamed deltas
 * always adding up to the final text; and eos ids (every one of the
 * model's) ending one request in the middle of a batch. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stop_text.h"
#include "sched_harness.h"
#include "test_util.h"
#include "tok_fixture.h"

enum { A, B, C, S, T, O, P, SP, EOS, ST, OP, E_ACUTE, X_C3, X_A9 };

static struct tokenizer *small_tok(void)
{
    return tok_fixture_load(
        "{\"model\": {\"type\": \"BPE\", \"merges\": [], \"byte_fallback\": true, \"vocab\": {\"a\": 0, \"b\": 1, "
        "\"c\": 2, \"S\": 3, \"T\": 4, \"O\": 5, \"P\": 6, \" \": 7, \"<eos>\": 8, \"ST\": 9, \"OP\": 10, "
        "\"\xC3\xA9\": 11, \"<0xC3>\": 12, \"<0xA9>\": 13}},"
        " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},"
        " \"added_tokens\": [{\"id\": 8, \"content\": \"<eos>\", \"single_word\": false, \"lstrip\": false,"
        " \"rstrip\": false, \"normalized\": false, \"special\": true}]}");
}

/* Feeds ids (then finishes, unless a stop string matched); checks where it
 * stopped, the final text, and that the deltas add up to it. */
static void expect(const struct tokenizer *tok, const char *const *stops, int n_stops, const int32_t *ids, int n,
                   int want_stop_at, const char *want_text)
{
    struct stop_text st;
    stop_text_init(&st, tok, (char *const *)stops, n_stops);
    char streamed[256] = "";
    size_t sl = 0;
    struct err e = {{0}};
    const char *d;
    size_t dl;
    int stopped_at = -1;
    for (int i = 0; i < n && stopped_at < 0; i++) {
        int rc = stop_text_push(&st, ids[i], &d, &dl, &e);
        cr_assert(rc >= 0, "%s", e.msg);
        memcpy(streamed + sl, d, dl);
        sl += dl;
        if (rc == 1)
            stopped_at = i;
    }
    if (stopped_at < 0) {
        cr_assert(stop_text_finish(&st, &d, &dl, &e) == 0, "no stop string is expected in the tail");
        memcpy(streamed + sl, d, dl);
        sl += dl;
    }
    streamed[sl] = '\0';
    size_t fl;
    const char *final = stop_text_final(&st, &fl);
    cr_assert_eq(stopped_at, want_stop_at, "stopped at token %d, expected %d", stopped_at, want_stop_at);
    cr_assert(fl == strlen(want_text) && !memcmp(final, want_text, fl), "final text '%.*s', expected '%s'", (int)fl,
              final, want_text);
    cr_assert_str_eq(streamed, want_text, "the deltas add up to '%s', not to the final text", streamed);
    stop_text_free(&st);
}

Test(stop, stop_string_split_across_tokens_is_found_and_cut)
{
    struct tokenizer *tok = small_tok();
    const char *stop[] = {"STOP"};
    expect(tok, stop, 1, (int32_t[]){A, ST, OP, B}, 4, 2, "a");
    expect(tok, stop, 1, (int32_t[]){A, S, T, O, P, B}, 6, 4, "a");
    /* inside one token, with text before it in the same token */
    const char *stop2[] = {"TO"};
    expect(tok, stop2, 1, (int32_t[]){A, ST, OP}, 3, 2, "aS");
    tokenizer_free(tok);
}

Test(stop, false_starts_are_released)
{
    struct tokenizer *tok = small_tok();
    const char *stop[] = {"STOP"};
    expect(tok, stop, 1, (int32_t[]){A, ST, A, S, T, O, B}, 7, -1, "aSTaSTOb");
    /* the held-back tail comes out when the stream ends without a match */
    expect(tok, stop, 1, (int32_t[]){A, ST, O}, 3, -1, "aSTO");
    tokenizer_free(tok);
}

Test(stop, earliest_of_several_wins)
{
    struct tokenizer *tok = small_tok();
    const char *stops[] = {"OP", "TO", "zzz"};
    expect(tok, stops, 3, (int32_t[]){C, S, T, O, P}, 5, 3, "cS");
    tokenizer_free(tok);
}

Test(stop, character_split_across_byte_tokens)
{
    struct tokenizer *tok = small_tok();
    const char *stop[] = {"\xC3\xA9"};
    /* a run of byte tokens is settled only by the next token */
    expect(tok, stop, 1, (int32_t[]){A, X_C3, X_A9, B}, 4, 3, "a");
    expect(tok, stop, 1, (int32_t[]){A, B, E_ACUTE}, 3, 2, "ab");
    /* special tokens are not text */
    const char *none[] = {"eos"};
    expect(tok, none, 1, (int32_t[]){A, EOS, B}, 3, -1, "ab");
    tokenizer_free(tok);
}

/* One request's logit bias makes it draw eos id 3 (the model's second eos
 * id) at its third token, while the others in the batch run on; those give
 * their alone outputs, and with ignore_eos the same bias runs to max_tokens. */
Test(stop, eos_id_mid_batch)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-llama", &be);
    cr_assert_eq(m->cfg.n_eos, 2);
    const int32_t eos = m->cfg.eos_ids[1];
    int32_t prompts[4][20];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 20; j++)
            prompts[i][j] = (int32_t)((i * 71 + j * 13 + 4) % m->cfg.vocab_size);
    struct harness h;
    harness_init(&h, m, 64, 128, 4, 1);
    struct sequence r[4];
    struct logit_bias bias = {eos, 100.f};
    for (int i = 0; i < 4; i++) {
        r[i] = (struct sequence){.id = i, .prompt = prompts[i], .n_prompt = 20, .max_tokens = 8,
                                .sampling = sampling_params_default()};
        scheduler_add(&h.s, &r[i]);
    }
    /* two steps without the bias, then request 1 draws eos; request 3 ignores it */
    harness_step(&h);
    harness_step(&h);
    r[1].sampling.bias = &bias;
    r[1].sampling.n_bias = 1;
    r[3].sampling.bias = &bias;
    r[3].sampling.n_bias = 1;
    r[3].ignore_eos = 1;
    harness_step(&h);
    cr_assert_eq(r[1].state, SEQUENCE_FINISHED);
    cr_assert_eq(r[1].finish, FINISH_REASON_STOP);
    cr_assert_eq(r[1].n_out, 3);
    cr_assert_eq(r[1].out[2], eos, "the eos that stopped it is the last token");
    cr_assert_eq(r[0].state, SEQUENCE_RUNNING);
    harness_run(&h);
    cr_assert_eq(r[3].n_out, 8);
    cr_assert_eq(r[3].finish, FINISH_REASON_LENGTH);
    for (int i = 0; i < 3; i += 2) {
        int n;
        int32_t *ids = alone_greedy(m, prompts[i], 20, 8, &n, NULL);
        cr_assert_eq(r[i].n_out, n);
        cr_assert_eq(memcmp(r[i].out, ids, (size_t)n * sizeof(int32_t)), 0, "request %d", i);
        free(ids);
    }
    harness_free(&h);
    for (int i = 0; i < 4; i++)
        sequence_free(&r[i]);
    test_free_model(m, be);
}

/* The context length ends a request (finish reason length) before its
 * max_tokens, with the tokens it gives alone up to there. */
Test(stop, context_length_ends_a_request)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    int32_t prompt[20];
    for (int j = 0; j < 20; j++)
        prompt[j] = (int32_t)((j * 29 + 5) % m->cfg.vocab_size);
    struct harness h;
    harness_init(&h, m, 64, 128, 2, 1);
    h.s.max_context = 32;
    struct sequence r = {.id = 0, .prompt = prompt, .n_prompt = 20, .max_tokens = 100,
                        .sampling = sampling_params_default(), .ignore_eos = 1};
    scheduler_add(&h.s, &r);
    harness_run(&h);
    cr_assert_eq(r.state, SEQUENCE_FINISHED);
    cr_assert_eq(r.finish, FINISH_REASON_LENGTH);
    cr_assert_eq(r.n_out, 12, "20 prompt + 12 output tokens fill the 32-token context, got %d", r.n_out);
    int n;
    int32_t *ids = alone_greedy(m, prompt, 20, 12, &n, NULL); /* may end at an eos: compare what it gave */
    cr_assert(n >= 1 && n <= 12);
    cr_assert_eq(memcmp(r.out, ids, (size_t)n * sizeof(int32_t)), 0);
    free(ids);
    harness_free(&h);
    sequence_free(&r);
    test_free_model(m, be);
}
