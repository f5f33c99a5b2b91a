/* The engine thread end to end on the CPU reference: requests submitted
 * from several threads at once give their alone greedy outputs, streamed
 * events add up to the final results, stop strings end choices on the text,
 * n > 1 choices are reproducible per (seed, choice), aborts and shutdown
 * end requests cleanly. The cache's integrity check runs after every step. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "sched_harness.h"
#include "test_util.h"
#include "tok_fixture.h"

enum { MAX_RESULTS = 64, MAX_OUT = 64 };

struct result {
    long id;
    int choice;
    int32_t ids[MAX_OUT]; /* from the events, one by one */
    int n_ids;
    char text[1024]; /* the deltas, joined */
    size_t text_len;
    int finished;
    enum finish_reason finish;
    char full[1024];
    int32_t final_ids[MAX_OUT];
    int n_final;
};

struct collector {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct result r[MAX_RESULTS];
    int n, n_finished;
    struct engine *eng;
    long abort_after_first; /* request id to abort on its first token */
};

static struct result *find(struct collector *c, long id, int choice)
{
    for (int i = 0; i < c->n; i++)
        if (c->r[i].id == id && c->r[i].choice == choice)
            return &c->r[i];
    cr_assert(c->n < MAX_RESULTS);
    struct result *r = &c->r[c->n++];
    memset(r, 0, sizeof *r);
    r->id = id;
    r->choice = choice;
    return r;
}

static void on_event(void *ctx, const struct engine_event *ev)
{
    struct collector *c = ctx;
    pthread_mutex_lock(&c->mu);
    struct result *r = find(c, ev->request_id, ev->choice);
    cr_assert(!r->finished, "an event after the last one");
    if (ev->has_token && r->n_ids < MAX_OUT)
        r->ids[r->n_ids++] = ev->sample->token;
    if (ev->text) {
        memcpy(r->text + r->text_len, ev->text, ev->text_len);
        r->text_len += ev->text_len;
    }
    if (ev->finished) {
        r->finished = 1;
        r->finish = ev->finish;
        if (ev->full_text)
            memcpy(r->full, ev->full_text, ev->full_text_len);
        r->n_final = ev->completion_tokens;
        memcpy(r->final_ids, ev->ids, (size_t)ev->completion_tokens * sizeof(int32_t));
        c->n_finished++;
        pthread_cond_broadcast(&c->cv);
    }
    long abort_id = ev->has_token && ev->request_id == c->abort_after_first ? ev->request_id : 0;
    pthread_mutex_unlock(&c->mu);
    if (abort_id)
        engine_abort(c->eng, abort_id); /* allowed from the callback */
}

static void collector_init(struct collector *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
}

static void wait_finished(struct collector *c, int n)
{
    pthread_mutex_lock(&c->mu);
    while (c->n_finished < n)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

static struct engine *start_spec(struct model *m, const struct tokenizer *tok, struct collector *c, int prefix_cache,
                                 enum spec_method speculative)
{
    struct engine_opts o = engine_opts_default();
    if (speculative == SPEC_METHOD_NGRAM)
        o.spec_method = SPEC_METHOD_NGRAM, o.spec_ngram.n_min = 1;
    else if (speculative == SPEC_METHOD_SUFFIX)
        o.spec_method = SPEC_METHOD_SUFFIX;
    else if (speculative == SPEC_METHOD_DRAFT) /* the model drafting for itself */
        o.spec_method = SPEC_METHOD_DRAFT, o.spec_model = fixture_path("tiny-gemma3");
    o.max_batched_tokens = 64;
    o.max_seqs = 6;
    o.max_context = 512;
    o.kv_blocks = 40;
    o.prefix_caching = prefix_cache;
    o.check_integrity = 1;
    struct err e = {{0}};
    struct engine *eng = engine_create(m, tok, &o, on_event, c, &e);
    cr_assert(eng, "%s", e.msg);
    c->eng = eng;
    return eng;
}

static struct engine *start(struct model *m, const struct tokenizer *tok, struct collector *c, int prefix_cache)
{
    return start_spec(m, tok, c, prefix_cache, SPEC_METHOD_NONE);
}

enum { N_REQ = 12 };

struct submitter {
    struct engine *eng;
    struct model *m;
    int first; /* submits requests first, first + 2, ... */
    int no_speculation_below; /* requests below this id ask "speculative": false */
    int32_t prompts[N_REQ][120];
    int n_prompt[N_REQ];
    long ids[N_REQ];
};

static void *submit_half(void *arg)
{
    struct submitter *s = arg;
    for (int i = s->first; i < N_REQ; i += 2) {
        struct engine_request rq = {.prompt = s->prompts[i], .n_prompt = s->n_prompt[i], .max_tokens = 4 + i % 9,
                                    .n = 1, .sampling = sampling_params_default(),
                                    .no_speculation = i < s->no_speculation_below};
        struct err e = {{0}};
        s->ids[i] = engine_submit(s->eng, &rq, &e);
        cr_assert(s->ids[i] > 0, "%s", e.msg);
    }
    return NULL;
}

/* speculative: a proposer on (the first two requests opt out). */
static void check_concurrent(enum spec_method speculative)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-gemma3", &be);
    struct collector c;
    collector_init(&c);
    struct engine *eng = start_spec(m, NULL, &c, 1, speculative);
    static struct submitter s[2];
    for (int k = 0; k < 2; k++) {
        s[k].eng = eng;
        s[k].first = k;
        s[k].no_speculation_below = speculative ? 2 : 0;
    }
    for (int i = 0; i < N_REQ; i++) {
        int n = 10 + i * 9;
        for (int j = 0; j < n; j++) /* a shared start for the prefix cache */
            s[0].prompts[i][j] = (int32_t)(j < 40 ? j * 5 + 1 : (i * 131 + j * 7) % m->cfg.vocab_size);
        s[0].n_prompt[i] = n;
    }
    memcpy(s[1].prompts, s[0].prompts, sizeof s[0].prompts);
    memcpy(s[1].n_prompt, s[0].n_prompt, sizeof s[0].n_prompt);
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, submit_half, &s[k]);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    wait_finished(&c, N_REQ);
    struct engine_stats st;
    engine_get_stats(eng, &st);
    engine_free(eng);
    cr_assert_eq(st.requests, N_REQ);
    cr_assert(st.prefix_hit_tokens > 0, "the shared start was never found in the cache");
    long completion = 0;
    for (int i = 0; i < N_REQ; i++) {
        struct result *r = find(&c, s[i % 2].ids[i], 0);
        cr_assert(r->finished);
        int n;
        enum finish_reason finish;
        int32_t *ids = alone_greedy(m, s[0].prompts[i], s[0].n_prompt[i], 4 + i % 9, &n, &finish);
        cr_assert_eq(r->n_ids, n, "request %d: %d tokens, %d alone", i, r->n_ids, n);
        cr_assert_eq(memcmp(r->ids, ids, (size_t)n * sizeof(int32_t)), 0, "request %d differs from alone", i);
        cr_assert_eq(memcmp(r->final_ids, ids, (size_t)n * sizeof(int32_t)), 0);
        cr_assert_eq(r->finish, finish);
        completion += n;
        free(ids);
    }
    cr_assert_eq(st.completion_tokens, completion);
    if (speculative)
        cr_assert(st.spec_proposed > 0 && st.spec_accepted > 0, "%ld proposed, %ld accepted", st.spec_proposed,
                  st.spec_accepted);
    else
        cr_assert_eq(st.spec_proposed, 0);
    test_free_model(m, be);
}

Test(engine, concurrent_submissions_give_alone_outputs) { check_concurrent(SPEC_METHOD_NONE); }
Test(engine, speculating_gives_alone_outputs) { check_concurrent(SPEC_METHOD_NGRAM); }
Test(engine, suffix_decoding_gives_alone_outputs) { check_concurrent(SPEC_METHOD_SUFFIX); }
Test(engine, draft_model_gives_alone_outputs) { check_concurrent(SPEC_METHOD_DRAFT); }

/* "speculative": false on every request: a speculating engine proposes nothing. */
Test(engine, requests_opt_out_of_speculation)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-gemma3", &be);
    struct collector c;
    collector_init(&c);
    struct engine *eng = start_spec(m, NULL, &c, 0, SPEC_METHOD_NGRAM);
    const int32_t prompt[] = {5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6};
    for (int i = 0; i < 3; i++) {
        struct engine_request rq = {.prompt = prompt, .n_prompt = 11, .max_tokens = 20, .n = 1,
                                    .sampling = sampling_params_default(), .no_speculation = 1};
        struct err e = {{0}};
        cr_assert(engine_submit(eng, &rq, &e) > 0, "%s", e.msg);
    }
    wait_finished(&c, 3);
    struct engine_stats st;
    engine_get_stats(eng, &st);
    engine_free(eng);
    cr_assert_eq(st.completion_tokens, 60);
    cr_assert_eq(st.spec_proposed, 0, "%ld tokens proposed for requests that opted out", st.spec_proposed);
    test_free_model(m, be);
}

/* A stop string made of the end of one generated token's text and the start
 * of the next one's: the choice stops at that second token, its text ends
 * before the stop string, and the streamed deltas equal the final text. */
Test(engine, stop_string_across_tokens_ends_the_choice)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-llama", &be);
    struct tokenizer *tok = tok_fixture_numbered(m->cfg.vocab_size);
    struct collector c;
    collector_init(&c);
    struct engine *eng = start(m, tok, &c, 0);
    int32_t prompt[30];
    for (int j = 0; j < 30; j++)
        prompt[j] = (int32_t)(j * 17 + 5);
    struct engine_request rq = {.prompt = prompt, .n_prompt = 30, .max_tokens = 20, .n = 1,
                                .sampling = sampling_params_default(), .ignore_eos = 1};
    struct err e = {{0}};
    long plain = engine_submit(eng, &rq, &e);
    wait_finished(&c, 1);
    struct result *p = find(&c, plain, 0);
    cr_assert_eq(p->n_ids, 20);
    cr_assert_eq(p->text_len, strlen(p->full));
    cr_assert_str_eq(p->text, p->full);
    /* the stop string: "<id k>|t<id k+1>", at the first k >= 3 where its first
     * occurrence in the text is there */
    char stop[64], *stops[] = {stop};
    char prefix[1024] = "";
    size_t plen = 0;
    int k = -1;
    for (int j = 0; j < 18 && k < 0; j++) {
        snprintf(stop, sizeof stop, "%d|t%d", p->ids[j], p->ids[j + 1]);
        if (j >= 3 && strstr(p->full, stop) == p->full + plen + 1)
            k = j;
        else
            plen += (size_t)snprintf(prefix + plen, sizeof prefix - plen, "t%d|", p->ids[j]);
    }
    cr_assert(k >= 0, "no usable stop string in '%s'", p->full);
    rq.stop = stops;
    rq.n_stop = 1;
    long cut = engine_submit(eng, &rq, &e);
    cr_assert(cut > 0, "%s", e.msg);
    wait_finished(&c, 2);
    engine_free(eng);
    struct result *r = find(&c, cut, 0);
    cr_assert_eq(r->finish, FINISH_REASON_STOP);
    cr_assert_eq(r->n_ids, k + 2, "stopped after %d tokens, expected %d", r->n_ids, k + 2);
    /* the text is everything before the stop string: "t<id0>|...t<id k-1>|t" */
    char want[1100];
    snprintf(want, sizeof want, "%st", prefix);
    cr_assert_str_eq(r->full, want);
    cr_assert_str_eq(r->text, want, "the streamed deltas add up to '%s'", r->text);
    tokenizer_free(tok);
    test_free_model(m, be);
}

/* n = 3 sampled choices: reproducible across runs (and with other requests
 * beside them), different from each other. */
Test(engine, n_choices_are_reproducible_per_seed)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-qwen3", &be);
    int32_t prompt[45];
    for (int j = 0; j < 45; j++)
        prompt[j] = (int32_t)(j * 23 + 2);
    struct result runs[2][3];
    for (int run = 0; run < 2; run++) {
        struct collector c;
        collector_init(&c);
        struct engine *eng = start(m, NULL, &c, run);
        struct engine_request rq = {.prompt = prompt, .n_prompt = 45, .max_tokens = 12, .n = 3,
                                    .sampling = sampling_params_default(), .ignore_eos = 1};
        rq.sampling.temperature = 0.9f;
        rq.sampling.seed = 1234;
        struct err e = {{0}};
        if (run == 1) { /* other work ahead of it the second time */
            struct engine_request other = rq;
            other.prompt = prompt + 5;
            other.n_prompt = 40;
            other.sampling.seed = 9;
            cr_assert(engine_submit(eng, &other, &e) > 0, "%s", e.msg);
        }
        long id = engine_submit(eng, &rq, &e);
        cr_assert(id > 0, "%s", e.msg);
        wait_finished(&c, run == 1 ? 6 : 3);
        struct engine_stats st;
        engine_get_stats(eng, &st);
        cr_assert(st.forked_blocks > 0, "the choices did not share the prompt's blocks");
        engine_free(eng);
        for (int i = 0; i < 3; i++)
            runs[run][i] = *find(&c, id, i);
    }
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(runs[0][i].n_ids, 12);
        cr_assert_eq(memcmp(runs[0][i].ids, runs[1][i].ids, 12 * sizeof(int32_t)), 0, "choice %d", i);
    }
    cr_assert(memcmp(runs[0][0].ids, runs[0][1].ids, 12 * sizeof(int32_t)) ||
                  memcmp(runs[0][0].ids, runs[0][2].ids, 12 * sizeof(int32_t)),
              "all choices drew the same tokens");
    test_free_model(m, be);
}

Test(engine, abort_and_shutdown_end_requests)
{
    struct backend *be;
    struct model *m = test_load_model("tiny-llama", &be);
    struct collector c;
    collector_init(&c);
    struct engine *eng = start(m, NULL, &c, 1);
    int32_t prompt[20];
    for (int j = 0; j < 20; j++)
        prompt[j] = (int32_t)(j + 7);
    struct engine_request rq = {.prompt = prompt, .n_prompt = 20, .max_tokens = 400, .n = 2,
                                .sampling = sampling_params_default(), .ignore_eos = 1};
    struct err e = {{0}};
    pthread_mutex_lock(&c.mu);
    long a = engine_submit(eng, &rq, &e);
    c.abort_after_first = a;
    pthread_mutex_unlock(&c.mu);
    wait_finished(&c, 2);
    cr_assert_eq(find(&c, a, 0)->finish, FINISH_REASON_ABORT);
    cr_assert_eq(find(&c, a, 1)->finish, FINISH_REASON_ABORT);
    cr_assert(find(&c, a, 0)->n_ids < 400);
    /* bad requests are refused, naming the field */
    rq.n = 0;
    cr_assert_eq(engine_submit(eng, &rq, &e), -1);
    cr_assert(strstr(e.msg, "n must be"), "%s", e.msg);
    rq.n = 1;
    rq.sampling.top_p = 2.f;
    cr_assert_eq(engine_submit(eng, &rq, &e), -1);
    cr_assert(strstr(e.msg, "top_p"), "%s", e.msg);
    rq.sampling.top_p = 1.f;
    char *stops[] = {"x"};
    rq.stop = stops;
    rq.n_stop = 1;
    cr_assert_eq(engine_submit(eng, &rq, &e), -1, "stop strings without a tokenizer");
    cr_assert(strstr(e.msg, "tokenizer"), "%s", e.msg);
    rq.n_stop = 0;
    rq.n_prompt = 0;
    cr_assert_eq(engine_submit(eng, &rq, &e), -1);
    /* shutdown with a long request in flight ends it with its last event */
    rq.n_prompt = 20;
    long b = engine_submit(eng, &rq, &e);
    cr_assert(b > 0);
    engine_free(eng);
    cr_assert(find(&c, b, 0)->finished);
    cr_assert_eq(c.n_finished, 3);
    test_free_model(m, be);
}
