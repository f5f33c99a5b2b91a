/* The workloads (workload.h). Lengths in tokens; "a..b" is uniform. */
#include "loadgen/workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

enum kind { BASELINE, CONTINUOUS, PAGED, CHUNKED, PREFIX, SHAREGPT, GROUNDED };

static const struct spec {
    const char *name;
    enum kind kind;
    int default_prompts;
    const char *what;
} specs[] = {
    {"baseline", BASELINE, 16, "one request at a time: prompt 128..512, output 128"},
    {"continuous_batching", CONTINUOUS, 256, "all at once (or at --request-rate): prompt 32..1024, output 32..512"},
    {"paged_attention", PAGED, 16, "long contexts: prompt 4096..16384, output 128"},
    {"chunked_prefill", CHUNKED, 128,
     "decodes with long prompts arriving among them: 3 of 4 requests prompt 64 / output 256, "
     "1 of 4 prompt 4096..8192 / output 32"},
    {"prefix_caching", PREFIX, 256,
     "8 shared system prompts of 512..1024 tokens, each request one of them + its own 32..128, output 64..128"},
    /* Fitted to the means of ShareGPT's lengths as vLLM's paper reports them (Kwon et al., SOSP 2023,
     * section 6.1 and Fig. 11: 161 prompt and 338 output tokens a request on average, 8.4x and 5.8x
     * Alpaca's 19.3 and 58.5, "with higher variance"): the medians make the clipped means 160.7 and
     * 338.6; the spreads are this project's choice (the paper gives no variance). */
    {"sharegpt", SHAREGPT, 256,
     "a ShareGPT-like chat mix: log-normal prompt (median 98, sigma 1.0) and output (median 230, sigma 0.9) "
     "lengths, 4..2048 each, means 161 and 338 as the vLLM paper reports ShareGPT's"},
    /* Answers that quote their input (summaries, edits, retrieval QA copy spans of it). */
    {"grounded", GROUNDED, 16,
     "input-grounded, one request at a time, as text: a passage of about 256..1024 tokens of English "
     "words, asked back word for word with its first words given (the answer quotes it), output 128..256"},
};

const char *const workload_names[] = {"baseline", "continuous_batching", "paged_attention", "chunked_prefill",
                                      "prefix_caching", "sharegpt", "grounded", NULL};

static const struct spec *find(const char *name)
{
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        if (!strcmp(specs[i].name, name))
            return &specs[i];
    return NULL;
}

const char *workload_describe(const char *name)
{
    const struct spec *s = find(name);
    return s ? s->what : NULL;
}

static int uniform(struct rng *r, int lo, int hi) { return lo + (int)(rng_uniform(r) * (double)(hi - lo + 1)); }

static int lognormal(struct rng *r, double median, double sigma, int lo, int hi)
{
    const int v = (int)lround(median * exp(sigma * rng_normal(r)));
    return v < lo ? lo : v > hi ? hi : v;
}

/* grounded's passages: sentences of common English words in random order
 * (no text repeats itself, so what a proposer finds again it found in the
 * passage), sent as text: a model copies words, not random token ids. */
static const char *const WORDS[] = {
    "time",   "people", "water",  "house",   "river",  "morning", "garden",  "window", "letter", "market",
    "city",   "road",   "winter", "summer",  "friend", "teacher", "doctor",  "child",  "family", "story",
    "light",  "stone",  "bread",  "music",   "paper",  "bridge",  "forest",  "island", "mountain", "village",
    "small",  "large",  "old",    "young",   "quiet",  "bright",  "cold",    "warm",   "early",  "late",
    "green",  "blue",   "heavy",  "simple",  "strange", "careful", "happy",  "open",   "long",   "short",
    "walked", "found",  "opened", "carried", "watched", "wrote",  "built",   "closed", "followed", "remembered",
    "asked",  "kept",   "brought", "turned", "painted", "counted", "sold",   "shared", "cleaned", "waited",
    "under",  "behind", "near",   "across",  "through", "before", "after",   "beside", "around", "without"};
enum { N_WORDS = sizeof WORDS / sizeof WORDS[0] };

/* About 1.3 tokens a word with the spaces and stops: words for n tokens. */
static int words_for(int tokens) { return tokens * 10 / 13 > 1 ? tokens * 10 / 13 : 1; }

/* The instruction, a passage of `words` words, then its first cue words again. */
static char *grounded_text(struct rng *r, int words, int cue)
{
    size_t cap = 256 + (size_t)(words + cue) * 12, len = 0;
    char *s = xmalloc(cap), *passage;
    len += (size_t)snprintf(s + len, cap - len, "Read the passage, then repeat it word for word.\n\nPassage:");
    passage = s + len;
    for (int i = 0; i < words; i++) {
        const char *w = WORDS[(int)(rng_uniform(r) * N_WORDS)];
        const int stop = i % 12 == 11 || i == words - 1;
        len += (size_t)snprintf(s + len, cap - len, " %s%s", w, stop ? "." : "");
    }
    /* the cue: the passage's first cue words (each " word", maybe with its stop) */
    size_t cue_len = 0;
    for (int i = 0, at = 0; i < cue && passage[at]; i++) {
        at++;
        while (passage[at] && passage[at] != ' ')
            at++;
        cue_len = (size_t)at;
    }
    len += (size_t)snprintf(s + len, cap - len, "\n\nThe passage, repeated word for word:");
    memmove(s + len, passage, cue_len);
    s[len + cue_len] = 0;
    return s;
}

static void random_ids(struct rng *r, int32_t *out, int n, int vocab)
{
    for (int i = 0; i < n; i++)
        out[i] = 1 + (int32_t)(rng_uniform(r) * (double)(vocab - 1));
}

int workload_make(struct workload *w, const struct workload_opts *o, struct err *e)
{
    memset(w, 0, sizeof *w);
    const struct spec *s = find(o->name);
    if (!s) {
        char names[256] = "";
        for (int i = 0; workload_names[i]; i++)
            strcat(strcat(names, i ? ", " : ""), workload_names[i]);
        return err_set(e, "--workload '%s': unknown (one of %s)", o->name, names);
    }
    if (o->vocab < 2)
        return err_set(e, "--vocab %d: needs at least 2 token ids", o->vocab);
    const int n = o->num_prompts > 0 ? o->num_prompts : s->default_prompts;
    struct rng r, ra, ri; /* lengths, arrivals, token ids */
    rng_seed(&r, o->seed, 0x10ad, (uint64_t)s->kind);
    rng_seed(&ra, o->seed, 0xa771, (uint64_t)s->kind);
    rng_seed(&ri, o->seed, 0x1d5 + (o->variant << 12), (uint64_t)s->kind);
    w->name = s->name;
    w->n = n;
    w->req = xcalloc((size_t)n, sizeof *w->req);
    w->max_concurrency = s->kind == BASELINE || s->kind == GROUNDED ? 1 : 0;
    /* the shared prefixes */
    enum { N_PREFIX = 8 };
    int32_t *prefix[N_PREFIX] = {0};
    int prefix_len[N_PREFIX] = {0};
    if (s->kind == PREFIX)
        for (int i = 0; i < N_PREFIX; i++) {
            prefix_len[i] = uniform(&r, 512, 1024);
            prefix[i] = xmalloc((size_t)prefix_len[i] * sizeof(int32_t));
            random_ids(&ri, prefix[i], prefix_len[i], o->vocab);
        }
    double t = 0;
    for (int i = 0; i < n; i++) {
        struct lg_request *q = &w->req[i];
        int in = 0, out = 0, shared = -1, cue = 0;
        switch (s->kind) {
        case BASELINE: in = uniform(&r, 128, 512), out = 128; break;
        case CONTINUOUS: in = uniform(&r, 32, 1024), out = uniform(&r, 32, 512); break;
        case PAGED: in = uniform(&r, 4096, 16384), out = 128; break;
        case CHUNKED:
            if (i % 4 == 3)
                in = uniform(&r, 4096, 8192), out = 32;
            else
                in = 64, out = 256;
            break;
        case PREFIX:
            shared = (int)(rng_uniform(&r) * N_PREFIX);
            in = prefix_len[shared] + uniform(&r, 32, 128), out = uniform(&r, 64, 128);
            break;
        case SHAREGPT: in = lognormal(&r, 98, 1.0, 4, 2048), out = lognormal(&r, 230, 0.9, 4, 2048); break;
        case GROUNDED:
            cue = uniform(&r, 16, 32);
            in = uniform(&r, 256, 1024) + cue, out = uniform(&r, 128, 256);
            break;
        }
        if (o->max_context > 0 && in + out > o->max_context) { /* scaled down, in proportion */
            const double f = (double)o->max_context / (double)(in + out);
            in = (int)(in * f) > 1 ? (int)(in * f) : 1;
            out = o->max_context - in > 1 ? o->max_context - in : 1;
            if (in + out > o->max_context)
                in = o->max_context - out > 1 ? o->max_context - out : 1;
        }
        q->n_prompt = in;
        q->max_tokens = out;
        if (s->kind == GROUNDED) { /* about 24 tokens of instructions; the cue's tokens drawn, half as words */
            q->text = grounded_text(&ri, words_for(in - 24), cue / 2 > 1 ? cue / 2 : 1);
        } else {
            q->prompt = xmalloc((size_t)in * sizeof(int32_t));
            int at = 0;
            if (shared >= 0) { /* as much of the prefix as fits, then the request's own ids */
                at = prefix_len[shared] < in - 1 ? prefix_len[shared] : in - 1;
                memcpy(q->prompt, prefix[shared], (size_t)at * sizeof(int32_t));
            }
            random_ids(&ri, q->prompt + at, in - at, o->vocab);
        }
        if (o->request_rate > 0 && w->max_concurrency == 0 && i > 0)
            t += -log(1.0 - rng_uniform(&ra)) / o->request_rate; /* exponential gaps: Poisson arrivals */
        q->arrival = t;
    }
    for (int i = 0; i < N_PREFIX; i++)
        free(prefix[i]);
    return 0;
}

void workload_free(struct workload *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->req[i].prompt), free(w->req[i].text);
    free(w->req);
    memset(w, 0, sizeof *w);
}
