/* The load generator's parsers and arithmetic (src/loadgen/): HTTP/1.1
 * responses and server-sent events fed whole and a byte at a time (a
 * stream arrives in any split), malformed ones refused by name; workloads
 * fixed by their seed and within --max-context; percentiles. The event
 * loop itself runs against servers in tests/server/test_bench_serve.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "loadgen/http_response.h"
#include "loadgen/scrape.h"
#include "loadgen/sse.h"
#include "loadgen/stats.h"
#include "loadgen/workload.h"

struct sink {
    char body[4096];
    size_t len;
    char events[8][256];
    int n_events;
};

static void on_body(void *ctx, const char *p, size_t n)
{
    struct sink *s = ctx;
    cr_assert(s->len + n < sizeof s->body);
    memcpy(s->body + s->len, p, n);
    s->len += n;
}

static int on_event(void *ctx, const char *data, size_t n)
{
    struct sink *s = ctx;
    cr_assert(s->n_events < 8 && n < 256);
    memcpy(s->events[s->n_events++], data, n + 1);
    return 0;
}

/* Feeds text whole (step 0) or step bytes at a time; returns the last feed's result. */
static long feed_http(struct http_response *r, const char *text, size_t step, struct sink *s)
{
    http_response_init(r);
    memset(s, 0, sizeof *s);
    const size_t n = strlen(text);
    long rc = 0;
    for (size_t at = 0; at < n && rc >= 0; at += step ? step : n)
        rc = http_response_feed(r, text + at, step && n - at > step ? step : n - at, on_body, s);
    return rc;
}

Test(loadgen, http_chunked_body_in_any_split)
{
    const char *resp = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
    for (size_t step = 0; step <= 3; step++) {
        struct http_response r;
        struct sink s;
        cr_assert_geq(feed_http(&r, resp, step, &s), 0);
        cr_assert_eq(r.stage, HTTP_COMPLETE, "step %zu", step);
        cr_assert_eq(r.status, 200);
        cr_assert_eq(s.len, 12);
        cr_assert(!memcmp(s.body, "hello, world", 12));
        cr_assert_eq(http_response_closed(&r), 0);
    }
}

Test(loadgen, http_sized_and_to_close_bodies)
{
    struct http_response r;
    struct sink s;
    cr_assert_geq(feed_http(&r, "HTTP/1.1 500 Oops\r\ncontent-length: 4\r\n\r\nboom", 1, &s), 0);
    cr_assert_eq(r.stage, HTTP_COMPLETE);
    cr_assert_eq(r.status, 500);
    cr_assert_eq(s.len, 4);
    cr_assert_geq(feed_http(&r, "HTTP/1.0 200 OK\r\n\r\nuntil close", 2, &s), 0);
    cr_assert_eq(r.stage, HTTP_BODY_TO_CLOSE);
    cr_assert_eq(http_response_closed(&r), 0);
    cr_assert_eq(s.len, 11);
}

Test(loadgen, http_cut_and_malformed)
{
    struct http_response r;
    struct sink s;
    cr_assert_geq(feed_http(&r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 1, &s), 0);
    cr_assert_eq(http_response_closed(&r), -1, "a chunk cut short is not a complete response");
    cr_assert_eq(feed_http(&r, "SMTP ready\r\n", 0, &s), -1);
    cr_assert(strstr(r.why, "status line"));
    cr_assert_eq(feed_http(&r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, &s), -1);
    cr_assert(strstr(r.why, "chunk size"));
    cr_assert_eq(feed_http(&r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 0, &s), -1);
    cr_assert(strstr(r.why, "longer than its size"));
    cr_assert_eq(feed_http(&r, "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", 0, &s), -1);
    cr_assert(strstr(r.why, "header"));
    const char *listed = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n";
    cr_assert_eq(feed_http(&r, listed, 0, &s), (long)strlen(listed), "chunked found in a list of codings");
    cr_assert_eq(r.stage, HTTP_COMPLETE);
}

Test(loadgen, sse_events_in_any_split)
{
    const char *text = ": a comment\n\ndata: {\"a\":1}\n\ndata:two\r\ndata: lines\r\n\r\nevent: x\nid: 3\n\ndata: [DONE]\n\n";
    for (size_t step = 1; step <= strlen(text); step += 5) {
        struct sse_reader r;
        struct sink s = {0};
        sse_reader_init(&r);
        for (size_t at = 0; at < strlen(text); at += step) {
            const size_t k = strlen(text) - at < step ? strlen(text) - at : step;
            cr_assert_eq(sse_reader_feed(&r, text + at, k, on_event, &s), 0);
        }
        cr_assert_eq(s.n_events, 3, "step %zu: %d events", step, s.n_events);
        cr_assert_str_eq(s.events[0], "{\"a\":1}");
        cr_assert_str_eq(s.events[1], "two\nlines");
        cr_assert_str_eq(s.events[2], "[DONE]");
        cr_assert(!sse_reader_pending(&r));
        sse_reader_free(&r);
    }
    struct sse_reader r;
    struct sink s = {0};
    sse_reader_init(&r);
    sse_reader_feed(&r, "data: half an ev", 16, on_event, &s);
    cr_assert(sse_reader_pending(&r), "an unfinished event is pending");
    sse_reader_free(&r);
}

Test(loadgen, workloads_are_fixed_by_their_seed_and_fit)
{
    for (int i = 0; workload_names[i]; i++) {
        struct workload a, b, c;
        struct err e;
        struct workload_opts o = {.name = workload_names[i], .num_prompts = 20, .request_rate = 5, .seed = 3,
                                  .vocab = 500, .max_context = 300};
        cr_assert_eq(workload_make(&a, &o, &e), 0);
        cr_assert_eq(workload_make(&b, &o, &e), 0);
        o.seed = 4;
        cr_assert_eq(workload_make(&c, &o, &e), 0);
        cr_assert_eq(a.n, 20);
        int differs = 0;
        for (int k = 0; k < a.n; k++) {
            const struct lg_request *x = &a.req[k], *y = &b.req[k], *z = &c.req[k];
            cr_assert_eq(x->n_prompt, y->n_prompt);
            cr_assert((x->text != NULL) == (x->prompt == NULL), "ids or text");
            if (x->text) {
                cr_assert_str_eq(x->text, y->text);
                differs |= strcmp(x->text, z->text) != 0;
            } else {
                cr_assert(!memcmp(x->prompt, y->prompt, (size_t)x->n_prompt * 4));
                for (int t = 0; t < x->n_prompt; t++)
                    cr_assert(x->prompt[t] >= 1 && x->prompt[t] < 500);
                differs |= x->n_prompt != z->n_prompt ||
                           memcmp(x->prompt, z->prompt, (size_t)(x->n_prompt < z->n_prompt ? x->n_prompt : z->n_prompt) * 4);
            }
            cr_assert(x->n_prompt >= 1 && x->max_tokens >= 1);
            cr_assert_leq(x->n_prompt + x->max_tokens, 300, "%s", workload_names[i]);
            cr_assert_geq(x->arrival, k ? a.req[k - 1].arrival : 0);
        }
        cr_assert(differs, "%s: another seed, other requests", workload_names[i]);
        /* another variant (a sweep's next rate): the same lengths and arrivals, no prompt alike */
        struct workload d;
        o.seed = 3, o.variant = 1;
        cr_assert_eq(workload_make(&d, &o, &e), 0);
        for (int k = 0; k < a.n; k++) {
            cr_assert_eq(a.req[k].n_prompt, d.req[k].n_prompt, "%s", workload_names[i]);
            cr_assert_eq(a.req[k].max_tokens, d.req[k].max_tokens);
            cr_assert_eq(a.req[k].arrival, d.req[k].arrival);
            if (a.req[k].text)
                cr_assert(strcmp(a.req[k].text, d.req[k].text), "%s request %d: the same text", workload_names[i], k);
            else if (a.req[k].n_prompt >= 4)
                cr_assert(memcmp(a.req[k].prompt, d.req[k].prompt, 4 * 4), "%s request %d: its first ids alike",
                          workload_names[i], k);
        }
        cr_assert_eq(a.max_concurrency, !strcmp(workload_names[i], "baseline") || !strcmp(workload_names[i], "grounded"));
        workload_free(&a), workload_free(&b), workload_free(&c), workload_free(&d);
    }
    struct workload w;
    struct err e;
    struct workload_opts o = {.name = "nope", .vocab = 10};
    cr_assert_eq(workload_make(&w, &o, &e), -1);
    cr_assert(strstr(e.msg, "--workload 'nope'") && strstr(e.msg, "prefix_caching"));
}

Test(loadgen, prefix_workload_shares_prefixes)
{
    struct workload w;
    struct err e;
    struct workload_opts o = {.name = "prefix_caching", .num_prompts = 40, .seed = 1, .vocab = 30000};
    cr_assert_eq(workload_make(&w, &o, &e), 0);
    int shared = 0;
    for (int i = 1; i < w.n; i++)
        for (int j = 0; j < i; j++)
            if (!memcmp(w.req[i].prompt, w.req[j].prompt, 512 * 4)) {
                shared++;
                break;
            }
    cr_assert_geq(shared, 30, "40 requests over 8 prefixes: %d share one with an earlier request", shared);
    workload_free(&w);
}

Test(loadgen, percentiles_interpolate)
{
    double v[] = {5, 1, 4, 2, 3};
    cr_assert_float_eq(lg_percentile(v, 5, 50), 3.0, 1e-12);
    cr_assert_float_eq(lg_percentile(v, 5, 90), 4.6, 1e-12);
    cr_assert_float_eq(lg_percentile(v, 5, 100), 5.0, 1e-12);
    cr_assert_float_eq(lg_percentile(v, 5, 0), 1.0, 1e-12);
    double one = 7;
    cr_assert_float_eq(lg_percentile(&one, 1, 99), 7.0, 1e-12);
}

Test(loadgen, metrics_page_summed_over_labels)
{
    struct scrape s = {0};
    scrape_parse(&s, "# HELP a_total x\n# TYPE a_total counter\na_total{route=\"/v1/x\",code=\"200\"} 3\n"
                     "a_total{route=\"/{odd}\"} 4.5\nb 7\nc{x=\"y\"} NaN\nd{q=\"a \\\" }\"} 2\n\nbad line\n");
    int found;
    cr_assert_float_eq(scrape_get(&s, "a_total", &found), 7.5, 1e-12);
    cr_assert(found);
    cr_assert_float_eq(scrape_get(&s, "b", &found), 7.0, 1e-12);
    cr_assert_float_eq(scrape_get(&s, "d", &found), 2.0, 1e-12, "a quoted '}' in a label value");
    scrape_get(&s, "c", &found);
    cr_assert(!found, "a NaN sample is left out");
    scrape_get(&s, "nope", &found);
    cr_assert(!found);
    scrape_free(&s);
}

/* sharegpt's lengths have the means the vLLM paper reports for ShareGPT
 * (161 prompt, 338 output tokens a request; workload.c says where). */
Test(loadgen, sharegpt_lengths_have_the_published_means)
{
    struct workload w;
    struct err e;
    struct workload_opts o = {.name = "sharegpt", .num_prompts = 20000, .seed = 1, .vocab = 500,
                              .max_context = 16512};
    cr_assert_eq(workload_make(&w, &o, &e), 0, "%s", e.msg);
    double in = 0, out = 0;
    for (int k = 0; k < w.n; k++)
        in += w.req[k].n_prompt, out += w.req[k].max_tokens;
    in /= w.n, out /= w.n;
    cr_assert(fabs(in - 161.3) < 0.03 * 161.3, "mean prompt %.1f tokens", in);
    cr_assert(fabs(out - 338.0) < 0.03 * 338.0, "mean output %.1f tokens", out);
    workload_free(&w);
}

/* grounded: text, a passage of words asked back word for word with its
 * first words given (what the answer goes on quoting): one request at a
 * time, about the lengths asked (1.3 tokens a word), cut to a context too. */
Test(loadgen, grounded_prompts_quote_their_passage)
{
    struct workload w;
    struct err e;
    for (int ctx = 0; ctx <= 1; ctx++) {
        struct workload_opts o = {.name = "grounded", .num_prompts = 200, .seed = 3, .vocab = 50000,
                                  .max_context = ctx ? 200 : 0};
        cr_assert_eq(workload_make(&w, &o, &e), 0, "%s", e.msg);
        cr_assert_eq(w.max_concurrency, 1);
        for (int k = 0; k < w.n; k++) {
            const struct lg_request *q = &w.req[k];
            cr_assert(q->text && !q->prompt, "request %d: a text prompt", k);
            if (ctx)
                cr_assert_leq(q->n_prompt + q->max_tokens, 200);
            else
                cr_assert(q->n_prompt >= 272 && q->n_prompt <= 1056 && q->max_tokens >= 128 && q->max_tokens <= 256,
                          "request %d: %d prompt, %d output", k, q->n_prompt, q->max_tokens);
            const char *passage = strstr(q->text, "Passage:"), *again = strstr(q->text, "repeated word for word:");
            cr_assert(passage && again, "%s", q->text);
            again += strlen("repeated word for word:");
            passage += strlen("Passage:");
            const size_t cue = strlen(again);
            cr_assert(cue > 1 && !strncmp(passage, again, cue), "request %d: the answer's start is not the passage's", k);
            int words = 0;
            for (const char *c = passage; c < again; c++)
                words += *c == ' ';
            if (!ctx)
                cr_assert(words * 13 / 10 > q->n_prompt / 2, "request %d: %d words for %d tokens", k, words,
                          q->n_prompt);
        }
        workload_free(&w);
    }
}
