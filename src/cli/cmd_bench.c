/* infer bench --model M [--batch 1,8,32,128] [--input-len 32] [--output-len 256] [--prompt-len 512]
 *             [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed S] [--top-logprobs N]
 *             [model and engine flags]
 * Speed through the engine, the path `serve` runs (graphs and the draw
 * inside them as configured), one JSON line per measurement:
 * - decode, for each batch B: B requests of input-len random tokens and
 *   output-len tokens (eos ignored; greedy, or drawn as the sampling flags
 *   say, request i with seed S + i) submitted at once to a fresh
 *   engine; output tokens per second from the engine's ready to its last
 *   token (what tools/decode_speed.py measures), and the time of one step
 *   after the first token, against the bytes of weights a step reads in the
 *   types the backend holds (a rank's share when the model is split, "tp" in
 *   the line): read_gb_s, and on a GPU the floor weight bytes / 3.02 TB/s,
 *   an H100's measured device-to-device copy bandwidth;
 * - prefill: one request of prompt-len random tokens and one output token,
 *   after a warm-up request of other tokens: time to the first token, in
 *   tokens and model FLOPs (2 * parameters * tokens) per second.
 * Unless given, --max-num-seqs is the batch and --max-model-len the
 * workload's longest sequence rounded up to 512. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/model_flags.h"
#include "cli/sampling_flags.h"
#include "core/clock.h"
#include "core/rng.h"

#define H100_COPY_BYTES_PER_S 3.02e12

/* What the engine's events tell a run. */
struct run_clock {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int finished, expected, aborted;
    double first_token, last_token; /* clock_now() */
};

static void on_event(void *ctx, const struct engine_event *ev)
{
    struct run_clock *c = ctx;
    pthread_mutex_lock(&c->mu);
    if (ev->has_token) {
        c->last_token = clock_now();
        if (c->first_token == 0)
            c->first_token = c->last_token;
    }
    if (ev->finished) {
        c->aborted |= ev->finish == FINISH_REASON_ABORT;
        if (++c->finished == c->expected)
            pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

struct run_result {
    double ready_to_last, submit_to_first, first_to_last; /* seconds */
    struct engine_stats stats;
};

/* n requests of prompt_len random tokens (the stream seed picks them) and
 * output_len tokens each, at once, through a fresh engine. */
static int run_once(struct model *m, const struct engine_opts *o, int n, int prompt_len, int output_len,
                    const struct sampling_params *sp, uint64_t seed, struct run_result *res, struct err *e)
{
    struct run_clock c = {.expected = n};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    int32_t *prompts = xmalloc((size_t)n * prompt_len * sizeof *prompts);
    struct rng g;
    rng_seed(&g, seed, 0, 0);
    for (int i = 0; i < n * prompt_len; i++)
        prompts[i] = (int32_t)(rng_next(&g) % (uint64_t)m->cfg.vocab_size);
    struct engine *eng = engine_create(m, NULL, o, on_event, &c, e);
    const double ready = clock_now(); /* the KV cache is sized and the graphs captured */
    int rc = eng ? 0 : -1;
    for (int i = 0; i < n && !rc; i++) {
        struct engine_request req = {.prompt = prompts + (size_t)i * prompt_len,
                                     .n_prompt = prompt_len,
                                     .max_tokens = output_len,
                                     .n = 1,
                                     .sampling = *sp,
                                     .ignore_eos = 1};
        req.sampling.seed = sp->seed + (uint64_t)i;
        rc = engine_submit(eng, &req, e) > 0 ? 0 : -1;
    }
    if (!rc) {
        pthread_mutex_lock(&c.mu);
        while (c.finished < n)
            pthread_cond_wait(&c.cv, &c.mu);
        pthread_mutex_unlock(&c.mu);
        engine_get_stats(eng, &res->stats);
        res->ready_to_last = c.last_token - ready;
        res->submit_to_first = c.first_token - ready;
        res->first_to_last = c.last_token - c.first_token;
        if (c.aborted)
            rc = err_set(e, "the engine aborted a request (see the log above)");
    }
    engine_free(eng);
    free(prompts);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
    return rc;
}

static int round_up_512(int x) { return (x + 511) / 512 * 512; }

/* The flags' options, with the workload's defaults where a flag was not given. */
static void workload_opts(const struct engine_opts *flags, const struct cli_opt *opts, int n_opts, int batch,
                          int longest, struct engine_opts *o)
{
    *o = *flags;
    if (!cli_given(opts, n_opts, "max-num-seqs"))
        o->max_seqs = batch;
    if (!cli_given(opts, n_opts, "max-model-len"))
        o->max_context = round_up_512(longest + 1);
}

static void print_common(const struct model *m, const struct engine_opts *o)
{
    printf("{\"model\": \"%s\", \"device\": \"%s\", \"tp\": %d, \"graph_mode\": \"%s\", ", m->cfg.arch_name,
           m->be->ops->name, m->sh.size, graph_mode_name(o->graph.mode));
}

int cmd_bench(int argc, char **argv)
{
    const char *batches = "1,8,32,128";
    int input_len = 32, output_len = 256, prompt_len = 512, top_logprobs = 0;
    struct launch_opts mf = launch_opts_default();
    struct engine_flags f = engine_flags_default();
    struct sampling_flags sf = sampling_flags_default();
    enum { N_OWN = 5 + SAMPLING_FLAGS_N_OPTS };
    struct cli_opt opts[N_OWN + MODEL_FLAGS_N_OPTS + ENGINE_FLAGS_N_OPTS] = {
        {"batch", CLI_OPT_STRING, &batches, 0, 0, 0, "decode batch sizes, comma-separated (0 runs none)", 0},
        {"input-len", CLI_OPT_INT, &input_len, 0, 1, 1 << 20, "prompt tokens of each decode request", 0},
        {"output-len", CLI_OPT_INT, &output_len, 0, 2, 1 << 20, "output tokens of each decode request", 0},
        {"prompt-len", CLI_OPT_INT, &prompt_len, 0, 0, 1 << 24, "prompt tokens of the prefill run (0: none)",
         0},
        {"top-logprobs", CLI_OPT_INT, &top_logprobs, 0, 0, 20,
         "top log-probabilities each decode token reports, as the API's top_logprobs (0-20)", 0},
    };
    sampling_flags_opts(&sf, opts + N_OWN - SAMPLING_FLAGS_N_OPTS,
                        "sampling seed of the first decode request, the next ones count up (default 0)");
    model_flags_opts(&mf, opts + N_OWN);
    engine_flags_opts(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS);
    const int n_opts = (int)(sizeof opts / sizeof opts[0]);
    struct err e = {{0}};
    struct loaded_model lm = {0};
    int node_status = 0;
    int32_t *batch = NULL;
    int n_batch = 0;
    int rc = cli_parse(argc, argv, "bench", opts, n_opts, &e);
    if (rc)
        goto done;
    rc = -1;
    if (launch_check(&mf, &e) || engine_flags_check(&f, opts + N_OWN + MODEL_FLAGS_N_OPTS, &e) ||
        sampling_flags_check(&sf, &e) ||
        (strcmp(batches, "0") && cli_parse_int_list(batches, "batch", &batch, &n_batch, &e)))
        goto done;
    const int other_node = launch_other_node(&mf, &node_status, &e); /* its ranks of a split model only */
    if (other_node) {
        rc = other_node < 0 ? -1 : 0;
        goto done;
    }
    for (int i = 0; i < n_batch; i++)
        if (batch[i] < 1 || batch[i] > 1 << 16) {
            err_set(&e, "--batch: %d is outside [1, 65536]", batch[i]);
            goto done;
        }
    struct engine_opts flags;
    if (launch_model(&mf, &lm, &e) || engine_flags_apply(&f, lm.m, &flags, &e))
        goto done;
    flags.relay = loaded_model_relay(&lm);
    struct model *m = lm.m;
    const struct backend *be = lm.be;
    const int64_t params = model_config_count_params(&m->cfg);
    /* the rank's share, as its backend holds it (GGUF blocks on the CPU) */
    const double bytes = model_weights_step_bytes(&m->w, &m->cfg);
    const double floor_ms = strcmp(be->ops->name, "cuda") ? 0 : bytes / H100_COPY_BYTES_PER_S * 1e3; /* GPUs only */
    struct sampling_params sp = sampling_flags_params(&sf);
    sp.top_logprobs = top_logprobs;
    const struct sampling_params greedy = sampling_params_default();
    for (int i = 0; i < n_batch; i++) {
        struct engine_opts o;
        struct run_result r;
        workload_opts(&flags, opts, n_opts, batch[i], input_len + output_len, &o);
        if (run_once(m, &o, batch[i], input_len, output_len, &sp, 3 + (uint64_t)i, &r, &e))
            goto done;
        const double step_ms = r.first_to_last * 1e3 / (output_len - 1);
        /* the engine thread's time a step outside the wait for the device (planning, building, launching,
         * committing: the device idles through most of it), and the wait */
        const long steps = r.stats.steps > 0 ? r.stats.steps : 1;
        const double host_ms = 1e3 * (r.stats.plan_s + r.stats.launch_s + r.stats.commit_s) / (double)steps,
                     wait_ms = 1e3 * r.stats.wait_s / (double)steps;
        /* of host_ms: sending the step to the other ranks, launching its graph (or eager forward) */
        const double relay_ms = 1e3 * r.stats.relay_s / (double)steps,
                     enqueue_ms = 1e3 * r.stats.enqueue_s / (double)steps;
        print_common(m, &o);
        printf(
            "\"workload\": \"decode\", \"batch\": %d, \"input_len\": %d, \"output_len\": %d, "
            "\"output_tok_s\": %.1f, \"ttft_ms\": %.3f, \"step_ms\": %.3f, \"graph_replays\": %ld, "
            "\"eager_steps\": %ld, \"weight_bytes\": %.0f, \"read_gb_s\": %.2f, \"floor_ms\": %.3f, "
            "\"step_over_floor\": %.3f, "
            "\"host_ms\": %.4f, \"relay_ms\": %.4f, \"enqueue_ms\": %.4f, \"wait_ms\": %.4f, "
            "\"temperature\": %g, \"top_p\": %g, \"top_k\": %d, \"min_p\": %g, \"top_logprobs\": %d, "
            "\"speculative\": \"%s\", \"spec_verify_steps\": %ld, \"spec_proposed\": %ld, \"spec_accepted\": %ld, "
            "\"spec_accepted_per_step\": %.3f}\n",
            batch[i], input_len, output_len, r.stats.completion_tokens / r.ready_to_last,
            r.submit_to_first * 1e3, step_ms, r.stats.graph_replays, r.stats.eager_steps, bytes,
            step_ms > 0 ? bytes / (step_ms * 1e6) : 0, floor_ms,
            floor_ms > 0 ? step_ms / floor_ms : 0, host_ms, relay_ms, enqueue_ms, wait_ms, sf.temperature, sf.top_p,
            sf.top_k, sf.min_p, top_logprobs, spec_method_name(o.spec_method),
            r.stats.spec_steps, r.stats.spec_proposed, r.stats.spec_accepted,
            r.stats.spec_steps ? (double)r.stats.spec_accepted / (double)r.stats.spec_steps : 0.0);
        fflush(stdout);
    }
    if (prompt_len > 0) {
        struct engine_opts o;
        struct run_result warm, r;
        workload_opts(&flags, opts, n_opts, 1, prompt_len + 1, &o);
        if (run_once(m, &o, 1, prompt_len, 2, &greedy, 41, &warm, &e) ||
            run_once(m, &o, 1, prompt_len, 2, &greedy, 42, &r, &e))
            goto done;
        const double s = r.submit_to_first;
        print_common(m, &o);
        printf("\"workload\": \"prefill\", \"prompt_len\": %d, \"max_batched_tokens\": %d, \"prefill_ms\": "
               "%.3f, "
               "\"prefill_tok_s\": %.1f, \"prefill_tflops\": %.1f}\n",
               prompt_len, o.max_batched_tokens, s * 1e3, prompt_len / s,
               2.0 * (double)params * prompt_len / s / 1e12);
    }
    rc = 0;
done:
    if (rc < 0)
        fprintf(stderr, "infer bench: %s\n", e.msg);
    free(batch);
    loaded_model_free(&lm);
    engine_flags_free(&f);
    return rc < 0 ? 1 : node_status;
}
