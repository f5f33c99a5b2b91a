/* infer generate's requests through the engine: with --input every line a
 * request, all parsed and checked first (nothing runs if one is bad), then
 * all submitted at once; each choice is printed as it finishes (one JSON
 * object with --json), and a summary line goes to stderr at the end. */
#include "cli/generate_run.h"
#include "core/log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/fs.h"
#include "grammar/cache.h"
#include "model/model.h"

/* One choice's result, filled by the engine thread's events. */
struct choice_out {
    int request; /* line order among requests */
    int choice;
    int want_logprobs, top_n;
    json_t *logprobs; /* array of {"id", "logprob", "top_logprobs"?} */
    enum finish_reason finish;
    int32_t *ids;
    int n_ids, prompt_tokens;
    char *text; /* NULL without a tokenizer */
    size_t text_len;
    struct choice_out *next_done;
};

struct batch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct choice_out **by_request; /* [n_requests][n choices] */
    struct choice_out *done_head, *done_tail;
    int n_done;
    double first_token_at; /* clock_now() of the first token of any choice; 0 before */
};

static void on_event(void *ctx, const struct engine_event *ev)
{
    struct batch *b = ctx;
    struct choice_out *c = &b->by_request[(long)(intptr_t)ev->user][ev->choice];
    if (ev->has_token && b->first_token_at == 0) /* only the engine thread writes it */
        b->first_token_at = clock_now();
    if (ev->has_token && c->want_logprobs) {
        const struct sample_result *s = ev->sample;
        json_t *entry = json_pack("{s:i, s:f}", "id", s->token, "logprob", (double)s->logprob);
        if (c->top_n > 0) {
            json_t *top = json_array();
            for (int i = 0; i < c->top_n && s->top_ids[i] >= 0; i++) /* -1: a grammar's mask left fewer */
                json_array_append_new(top, json_pack("{s:i, s:f}", "id", s->top_ids[i], "logprob",
                                                     (double)s->top_logprobs[i]));
            json_object_set_new(entry, "top_logprobs", top);
        }
        json_array_append_new(c->logprobs, entry);
    }
    if (!ev->finished)
        return;
    c->finish = ev->finish;
    c->n_ids = ev->completion_tokens;
    c->prompt_tokens = ev->prompt_tokens;
    c->ids = xmalloc((size_t)(c->n_ids ? c->n_ids : 1) * sizeof(int32_t));
    memcpy(c->ids, ev->ids, (size_t)c->n_ids * sizeof(int32_t));
    if (ev->full_text) {
        c->text = xmalloc(ev->full_text_len + 1);
        memcpy(c->text, ev->full_text, ev->full_text_len);
        c->text_len = ev->full_text_len;
    }
    pthread_mutex_lock(&b->mu);
    if (b->done_tail)
        b->done_tail->next_done = c;
    else
        b->done_head = c;
    b->done_tail = c;
    b->n_done++;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* header: the request, choice and finish line before the text (when there
 * is more than one choice to tell apart) */
static void print_choice(const struct choice_out *c, int as_json, int header, int single)
{
    if (!as_json) {
        if (header)
            printf("--- request %d, choice %d: %s, %d tokens\n", c->request, c->choice,
                   finish_reason_name(c->finish), c->n_ids);
        if (c->text)
            fwrite(c->text, 1, c->text_len, stdout);
        else
            for (int i = 0; i < c->n_ids; i++)
                printf("%s%d", i ? " " : "", c->ids[i]);
        printf("\n");
        fflush(stdout);
        return;
    }
    json_t *ids = json_array();
    for (int i = 0; i < c->n_ids; i++)
        json_array_append_new(ids, json_integer(c->ids[i]));
    json_t *o = json_object();
    if (!single) /* the request's position among the lines */
        json_object_set_new(o, "request", json_integer(c->request));
    json_object_set_new(o, "index", json_integer(c->choice));
    json_object_set_new(o, "ids", ids);
    json_object_set_new(o, "text", c->text ? json_stringn(c->text, c->text_len) : json_null());
    json_object_set_new(o, "finish_reason", json_string(finish_reason_name(c->finish)));
    json_object_set_new(o, "prompt_tokens", json_integer(c->prompt_tokens));
    json_object_set_new(o, "completion_tokens", json_integer(c->n_ids));
    if (c->want_logprobs)
        json_object_set_new(o, "logprobs", json_pack("{s:O}", "content", c->logprobs));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(o);
}

/* Every non-blank line parsed; on the first bad one, e names the line. */
static int parse_file(struct generate_context *ctx, const char *path, const struct generate_defaults *d,
                      struct request_fields **out, int *n_out, struct err *e)
{
    char *data;
    size_t len;
    if (fs_read_file(path, (size_t)1 << 30, &data, &len, e))
        return err_prefix(e, "--input");
    struct request_fields *reqs = NULL;
    int n = 0, cap = 0, line_no = 0, rc = 0;
    uint64_t seed_base = (uint64_t)time(NULL) * 0x2545F4914F6CDD1Dull;
    for (size_t pos = 0; pos < len && !rc; line_no++) {
        const char *line = data + pos, *nl = memchr(line, '\n', len - pos);
        size_t l = nl ? (size_t)(nl - line) : len - pos;
        pos += l + 1;
        size_t k = 0;
        while (k < l && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
            k++;
        if (k == l)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            reqs = xrealloc(reqs, (size_t)cap * sizeof *reqs);
        }
        if (generate_request_parse(ctx, line, l, d, seed_base, n, &reqs[n], e))
            rc = err_prefix(e, "%s line %d", path, line_no + 1);
        else
            n++;
    }
    if (!rc && n == 0)
        rc = err_set(e, "--input %s holds no requests", path);
    free(data);
    if (rc) {
        for (int i = 0; i < n; i++)
            request_fields_free(&reqs[i]);
        free(reqs);
        return -1;
    }
    *out = reqs;
    *n_out = n;
    return 0;
}

int generate_run_file(struct model *m, const struct tokenizer *tok, const char *model_dir, const char *input,
                  const struct generate_defaults *d, const struct engine_opts *o, int as_json, struct err *e)
{
    struct generate_context ctx = {tok, model_dir, NULL, m->cfg.vocab_size, NULL};
    if (tok) /* output constraints, compiled once per distinct text */
        ctx.grammars = grammar_cache_new(tok, m->cfg.vocab_size, m->cfg.eos_ids, m->cfg.n_eos, GRAMMAR_CACHE_ENTRIES,
                                         GRAMMAR_CACHE_BYTES);
    struct request_fields *reqs = NULL;
    int n = 0;
    int rc = parse_file(&ctx, input, d, &reqs, &n, e);
    chat_template_free(ctx.ct);
    if (!rc)
        rc = generate_run_requests(m, tok, reqs, n, o, as_json, 0, e);
    for (int i = 0; i < n; i++)
        request_fields_free(&reqs[i]);
    free(reqs);
    grammar_cache_free(ctx.grammars); /* after the requests: they held references */
    return rc;
}

int generate_run_requests(struct model *m, const struct tokenizer *tok, struct request_fields *reqs, int n,
                          const struct engine_opts *o, int as_json, int single, struct err *e)
{
    int rc = 0;
    struct batch b = {.by_request = xcalloc((size_t)n, sizeof(struct choice_out *))};
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    int n_choices = 0;
    for (int i = 0; i < n; i++) {
        reqs[i].submit.user = (void *)(intptr_t)i;
        b.by_request[i] = xcalloc((size_t)reqs[i].submit.n, sizeof(struct choice_out));
        for (int c = 0; c < reqs[i].submit.n; c++)
            b.by_request[i][c] = (struct choice_out){.request = i, .choice = c, .want_logprobs = reqs[i].logprobs,
                                                     .top_n = reqs[i].submit.sampling.top_logprobs,
                                                     .logprobs = json_array()};
        n_choices += reqs[i].submit.n;
    }
    struct engine *eng = engine_create(m, tok, o, on_event, &b, e);
    const double t0 = clock_now(); /* the engine is ready: KV cache sized, graphs captured */
    rc = eng ? 0 : -1;
    for (int i = 0; i < n && !rc; i++)
        if (engine_submit(eng, &reqs[i].submit, e) < 0)
            rc = err_prefix(e, "request %d", i);
    for (int printed = 0; !rc && printed < n_choices; printed++) {
        pthread_mutex_lock(&b.mu);
        while (!b.done_head)
            pthread_cond_wait(&b.cv, &b.mu);
        struct choice_out *c = b.done_head;
        b.done_head = c->next_done;
        if (!b.done_head)
            b.done_tail = NULL;
        pthread_mutex_unlock(&b.mu);
        print_choice(c, as_json, n_choices > 1, single);
    }
    struct engine_stats st = {0};
    if (eng)
        engine_get_stats(eng, &st);
    const double t1 = clock_now(), secs = t1 - t0; /* not the teardown (freeing the graphs) */
    engine_free(eng);
    /* after the first token: the decode speed, without the prefill */
    const double ttft = b.first_token_at > 0 ? b.first_token_at - t0 : secs;
    const long later = st.completion_tokens - 1;
    if (!rc)
        fprintf(stderr,
                "infer generate: %d requests (%d choices), %ld prompt + %ld output tokens in %.3f s: %.1f output "
                "tok/s, %.1f tok/s in all; first token after %.3f s, then %.1f output tok/s; prefix cache: %ld of "
                "%ld prompt tokens hit; %ld steps, %ld preemptions; %ld graph replays, %ld eager steps\n",
                n, n_choices, st.prompt_tokens, st.completion_tokens, secs, st.completion_tokens / secs,
                (st.prompt_tokens + st.completion_tokens) / secs, ttft,
                later > 0 && t1 > b.first_token_at ? later / (t1 - b.first_token_at) : 0.0, st.prefix_hit_tokens,
                st.prefix_lookup_tokens, st.steps, st.preemptions, st.graph_replays, st.eager_steps);
    if (!rc && st.spec_steps)
        fprintf(stderr, "infer generate: speculative decoding: %ld of %ld proposed tokens kept, in %ld verify steps\n",
                st.spec_accepted, st.spec_proposed, st.spec_steps);
    if (!rc && st.steps)
        log_info("engine step, ms on average: plan %.3f, run %.3f (build and launch %.3f, wait for the draws "
                 "%.3f); writing grammar masks %.3f (on a device while the step runs), commit %.3f",
                 1e3 * st.plan_s / st.steps, 1e3 * st.run_s / st.steps, 1e3 * st.launch_s / st.steps,
                 1e3 * st.wait_s / st.steps, 1e3 * st.mask_s / st.steps, 1e3 * st.commit_s / st.steps);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < reqs[i].submit.n; c++) {
            free(b.by_request[i][c].ids);
            free(b.by_request[i][c].text);
            json_decref(b.by_request[i][c].logprobs);
        }
        free(b.by_request[i]);
    }
    free(b.by_request);
    pthread_mutex_destroy(&b.mu);
    pthread_cond_destroy(&b.cv);
    return rc;
}
