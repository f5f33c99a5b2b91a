/* infer bench --model DIR [--device cuda] [--prompt-len P] [--decode-steps S]
 * Single-sequence speed: prefill of a P-token prompt (wall time, and model
 * FLOPs 2 * parameters * P per second), S greedy decode steps (wall time per
 * step, median), and, where the backend can capture graphs, the GPU time of
 * one decode step replayed as a graph (no launch gaps: the sum of its
 * kernel times), against the weight-read floor (weight bytes / 3.02 TB/s,
 * the H100 copy bandwidth measured in GPU.md). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/rng.h"
#include "engine/seq_runner.h"

#define H100_COPY_BYTES_PER_S 3.02e12

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* GPU time of one decode step: capture it, replay it reps times back to
 * back; then the host time of one replay's launch, each launched alone. */
static int graph_step_ms(struct seq_runner *r, int32_t token, int reps, double *ms, double *launch_us,
                         struct err *e)
{
    struct backend *be = r->m->be;
    struct fwd_batch b;
    void *g = NULL;
    if (seq_runner_prepare_step(r, &token, &b, e) || model_forward(r->m, &r->ws, &r->kv, &b, e) ||
        be->ops->synchronize(be, e) || be->ops->graph_begin(be, e))
        return -1;
    int rc = model_forward(r->m, &r->ws, &r->kv, &b, e);
    if (be->ops->graph_end(be, &g, e) || rc)
        return -1;
    rc = be->ops->graph_replay(be, g, e) || be->ops->synchronize(be, e);
    double t0 = clock_now();
    for (int i = 0; i < reps && !rc; i++)
        rc = be->ops->graph_replay(be, g, e);
    rc = rc || be->ops->synchronize(be, e);
    *ms = (clock_now() - t0) * 1e3 / reps;
    double launch = 0;
    for (int i = 0; i < reps && !rc; i++) {
        const double s = clock_now();
        rc = be->ops->graph_replay(be, g, e);
        launch += clock_now() - s;
        rc = rc || be->ops->synchronize(be, e);
    }
    *launch_us = launch * 1e6 / reps;
    be->ops->graph_free(be, g);
    return rc ? -1 : 0;
}

static int run_bench(struct model *m, int prompt_len, int steps, double mem_util, struct err *e)
{
    struct seq_runner r;
    struct seq_runner_opts ro = {prompt_len + steps + 8, prompt_len, 1, 16, mem_util};
    if (seq_runner_init_opts(&r, m, &ro, e))
        return -1;
    int32_t *ids = xmalloc((size_t)prompt_len * sizeof *ids);
    struct rng g;
    rng_seed(&g, 42, 0, 0);
    for (int i = 0; i < prompt_len; i++)
        ids[i] = (int32_t)(rng_next(&g) % (uint64_t)m->cfg.vocab_size);
    int32_t next;
    int rc = seq_runner_feed(&r, ids, prompt_len, 0, NULL, &next, e); /* warm-up: plans, caches */
    seq_runner_reset(&r);
    double t0 = clock_now();
    rc = rc || seq_runner_feed(&r, ids, prompt_len, 0, NULL, &next, e);
    double prefill_s = clock_now() - t0;
    double *step = xmalloc((size_t)(steps > 0 ? steps : 1) * sizeof *step);
    for (int i = 0; i < steps && !rc; i++) {
        double s = clock_now();
        rc = seq_runner_feed(&r, &next, 1, 0, NULL, &next, e);
        step[i] = (clock_now() - s) * 1e3;
    }
    double graph_ms = 0, launch_us = 0;
    int have_graph = m->be->ops->graph_begin != NULL;
    if (!rc && have_graph)
        rc = graph_step_ms(&r, next, 100, &graph_ms, &launch_us, e);
    if (!rc) {
        qsort(step, (size_t)steps, sizeof *step, cmp_double);
        int64_t params = model_config_count_params(&m->cfg);
        double bytes = (double)params * (double)dtype_size(m->be->act_dtype);
        double floor_ms = bytes / H100_COPY_BYTES_PER_S * 1e3;
        double med = steps > 0 ? step[steps / 2] : 0;
        printf("{\"model\": \"%s\", \"device\": \"%s\", \"prompt_len\": %d, \"prefill_ms\": %.3f, "
               "\"prefill_tflops\": %.1f, \"decode_steps\": %d, \"decode_wall_ms\": %.3f, \"decode_tok_s\": %.1f, "
               "\"graph_step_ms\": %.3f, \"graph_launch_us\": %.1f, \"weight_bytes\": %.0f, \"floor_ms\": %.3f, \"graph_over_floor\": %.3f}\n",
               m->cfg.arch_name, m->be->ops->name, prompt_len, prefill_s * 1e3,
               2.0 * (double)params * prompt_len / prefill_s / 1e12, steps, med, med > 0 ? 1e3 / med : 0,
               graph_ms, launch_us, bytes, floor_ms, have_graph && floor_ms > 0 ? graph_ms / floor_ms : 0);
    }
    free(step);
    free(ids);
    seq_runner_free(&r);
    return rc ? -1 : 0;
}

int cmd_bench(int argc, char **argv)
{
    const char *model_dir = NULL, *device = "cuda";
    int prompt_len = 512, steps = 64, threads = 0;
    double mem_util = 0.90;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model_dir, 1, 0, 0, "checkpoint directory", 0},
        {"device", CLI_OPT_STRING, &device, 0, 0, 0, "cpu, cuda, or auto (cuda when a GPU is there, else cpu); default cuda", 0},
        {"prompt-len", CLI_OPT_INT, &prompt_len, 0, 1, 1 << 20, "prompt tokens (default 512)", 0},
        {"decode-steps", CLI_OPT_INT, &steps, 0, 1, 1 << 20, "decode steps timed (default 64)", 0},
        {"threads", CLI_OPT_INT, &threads, 0, 0, 1024, "CPU threads (default: all cores)", 0},
        {"gpu-memory-utilization", CLI_OPT_DOUBLE, &mem_util, 0, 0, 0,
         "share of the GPU memory left after weights for the KV cache (default 0.90)", 0},
    };
    struct err e = {{0}};
    struct backend *be = NULL;
    struct model *m = NULL;
    enum backend_kind kind;
    int rc = cli_parse(argc, argv, "bench", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc)
        goto done;
    rc = -1;
    if (backend_kind_parse(device, &kind, &e) || !(be = backend_create(kind, threads, &e)) ||
        !(m = model_load(model_dir, be, &e)))
        goto done;
    rc = run_bench(m, prompt_len, steps, mem_util, &e);
done:
    if (rc < 0)
        fprintf(stderr, "infer bench: %s\n", e.msg);
    model_free(m);
    backend_free(be);
    return rc < 0 ? 1 : 0;
}
