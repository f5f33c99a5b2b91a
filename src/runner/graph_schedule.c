/* The graph runner's schedules: mode names and the bucket lists, checked
 * against the engine's limits with errors that name the flag. */
#include <stdlib.h>
#include <string.h>

#include "runner/graph_opts.h"

static const char *const mode_names[] = {"none", "decode", "piecewise", "full"};

int graph_mode_parse(const char *s, enum graph_mode *mode, struct err *e)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, mode_names[i])) {
            *mode = (enum graph_mode)i;
            return 0;
        }
    return err_set(e, "--cuda-graph-mode: unknown mode '%s' (none, decode, piecewise or full)", s);
}

const char *graph_mode_name(enum graph_mode mode) { return mode_names[mode]; }

int graph_check_list(const int *v, int n, const char *flag, struct err *e)
{
    if (n < 1)
        return err_set(e, "%s: give at least one size", flag);
    for (int i = 0; i < n; i++) {
        if (v[i] < 1)
            return err_set(e, "%s: sizes must be positive, got %d", flag, v[i]);
        if (i && v[i] <= v[i - 1])
            return err_set(e, "%s: sizes must be ascending, got %d after %d", flag, v[i], v[i - 1]);
    }
    return 0;
}

/* Checks an explicit list: positive, ascending, at most each limit. */
static int check_list(const int *v, int n, const char *flag, const int *limit, const char *const *limit_flag,
                      int n_limits, struct err *e)
{
    if (graph_check_list(v, n, flag, e))
        return -1;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < n_limits; k++)
            if (v[i] > limit[k])
                return err_set(e, "%s: size %d exceeds %s %d", flag, v[i], limit_flag[k], limit[k]);
    }
    return 0;
}

static int *copy_list(const int *v, int n)
{
    int *b = xmalloc((size_t)n * sizeof *b);
    memcpy(b, v, (size_t)n * sizeof *b);
    return b;
}

int graph_buckets(const struct graph_opts *o, int max_seqs, int max_tokens, int **out, int *n, struct err *e)
{
    const int limit = max_seqs < max_tokens ? max_seqs : max_tokens;
    if (o->buckets) {
        const int lim[] = {max_seqs, max_tokens};
        const char *const names[] = {"--max-num-seqs", "--max-num-batched-tokens"};
        if (check_list(o->buckets, o->n_buckets, "--cuda-graph-bs", lim, names, 2, e))
            return -1;
        *out = copy_list(o->buckets, o->n_buckets);
        *n = o->n_buckets;
        return 0;
    }
    if (o->max_bs < 1)
        return err_set(e, "--cuda-graph-max-bs must be >= 1, got %d", o->max_bs);
    const int top = o->max_bs < limit ? o->max_bs : limit;
    int *b = xmalloc((size_t)(top + 8) * sizeof *b), k = 0;
    static const int head[] = {1, 2, 4, 8, 16, 24, 32};
    for (int i = 0; i < 7 && head[i] <= top; i++)
        b[k++] = head[i];
    for (int s = 48; s <= top; s += 16)
        b[k++] = s;
    if (b[k - 1] != top) /* the limit itself, so every batch up to it replays */
        b[k++] = top;
    *out = b;
    *n = k;
    return 0;
}

int graph_token_buckets(const struct graph_opts *o, int max_tokens, int **out, int *n, struct err *e)
{
    int top = max_tokens;
    if (o->max_graph_tokens < 0)
        return err_set(e, "--piecewise-cuda-graph-max-tokens must be >= 1, got %d", o->max_graph_tokens);
    if (o->max_graph_tokens > max_tokens)
        return err_set(e, "--piecewise-cuda-graph-max-tokens %d exceeds --max-num-batched-tokens %d",
                       o->max_graph_tokens, max_tokens);
    if (o->max_graph_tokens)
        top = o->max_graph_tokens;
    if (o->token_buckets) {
        const char *const name[] = {o->max_graph_tokens ? "--piecewise-cuda-graph-max-tokens"
                                                        : "--max-num-batched-tokens"};
        if (check_list(o->token_buckets, o->n_token_buckets, "--piecewise-cuda-graph-tokens", &top, name, 1,
                       e))
            return -1;
        *out = copy_list(o->token_buckets, o->n_token_buckets);
        *n = o->n_token_buckets;
        return 0;
    }
    int cap = 16, k = 0;
    int *b = xmalloc((size_t)cap * sizeof *b);
    for (int t = 16; t <= top;) {
        if (k + 2 > cap)
            b = xrealloc(b, (size_t)(cap *= 2) * sizeof *b);
        b[k++] = t;
        t += t < 64 ? 16 : t < 512 ? 64 : t < 1024 ? 128 : t < 4096 ? 256 : 512;
    }
    if (k + 1 > cap)
        b = xrealloc(b, (size_t)(cap + 1) * sizeof *b);
    if (k == 0 || b[k - 1] != top)
        b[k++] = top;
    *out = b;
    *n = k;
    return 0;
}
