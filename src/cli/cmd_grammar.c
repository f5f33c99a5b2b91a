/* infer grammar --tokenizer PATH (--json-schema FILE | --json-object | --regex RE | --gbnf FILE)
 *               [--check FILE.jsonl] [--bench] [--whitespace lines|flexible|compact] [--no-strict] [--eos IDS]
 *
 * Compiles a constraint for a tokenizer's vocabulary as the server would
 * (exit 2 naming the problem when it cannot); --check walks texts through
 * the token masks the way decoding does: the text tokenized as written,
 * each token checked against the mask before it is consumed, EOS checked
 * at the end; one verdict per line. --bench adds the compile time and the
 * time of every mask computed. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/lines.h"
#include "core/clock.h"
#include "core/fs.h"
#include "grammar/grammar.h"
#include "grammar/spec.h"
#include "io/gguf.h"
#include "io/gguf_config.h"
#include "io/model_config.h"
#include "tokenizer/tokenizer.h"

/* The ids that end a text: --eos, else the model's (a GGUF's metadata, a
 * directory's config.json), else tokenizer_config.json's eos_token. */
static int find_eos(const char *path, const struct tokenizer *tok, int32_t *eos, int cap, struct err *e)
{
    struct model_config cfg;
    if (gguf_is_path(path)) {
        struct gguf_file *f = gguf_open(path, e);
        if (!f)
            return -1;
        int rc = model_config_from_gguf(f, &cfg, e);
        gguf_close(f);
        if (rc)
            return -1;
    } else {
        char p[4096];
        snprintf(p, sizeof p, "%s/config.json", path);
        if (fs_exists(p) && model_config_load(p, &cfg, e) == 0 && cfg.n_eos > 0)
            goto have_cfg;
        snprintf(p, sizeof p, "%s/tokenizer_config.json", path);
        json_error_t jerr;
        json_t *j = json_load_file(p, JSON_DECODE_INT_AS_REAL, &jerr); /* model_max_length can pass int64 */
        const json_t *t = j ? json_object_get(j, "eos_token") : NULL;
        if (json_is_object(t))
            t = json_object_get(t, "content");
        int n = 0;
        if (json_is_string(t)) {
            struct token_ids ids = {0};
            if (tokenizer_encode(tok, json_string_value(t), json_string_length(t), 0, &ids, e) == 0 && ids.n == 1)
                eos[n++] = ids.ids[0];
            token_ids_free(&ids);
        }
        json_decref(j);
        if (n == 0)
            return err_set(e, "%s: no EOS token found (no config.json or tokenizer_config.json eos_token); give --eos",
                           path);
        return n;
    }
have_cfg:;
    int n = cfg.n_eos < cap ? cfg.n_eos : cap;
    for (int i = 0; i < n; i++)
        eos[i] = cfg.eos_ids[i];
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct times {
    double *v;
    size_t n, cap;
};

static void times_push(struct times *t, double x)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->v = xrealloc(t->v, t->cap * sizeof(double));
    }
    t->v[t->n++] = x;
}

static double pct(const struct times *t, double q)
{
    if (t->n == 0)
        return 0;
    size_t i = (size_t)(q * (double)(t->n - 1) + 0.5);
    return t->v[i];
}

static int mask_has(const uint32_t *m, int32_t id) { return (int)(m[id >> 5] >> (id & 31) & 1); }

/* One text: its verdict (1 accept, 0 reject). */
static int check_text(const struct grammar_tokens *gt, const struct grammar_vocab *v, const struct tokenizer *tok,
                      const int32_t *eos, int n_eos, const char *text, size_t len, uint32_t *mask,
                      struct times *times, struct err *e)
{
    struct token_ids ids = {0};
    if (tokenizer_encode(tok, text, len, 0, &ids, e)) {
        token_ids_free(&ids);
        return -1;
    }
    struct grammar_matcher *m = grammar_matcher_new(gt);
    int ok = 1;
    for (int i = 0; i <= ids.n && ok; i++) {
        double t0 = clock_now();
        grammar_matcher_fill_mask(m, mask);
        if (times)
            times_push(times, (clock_now() - t0) * 1e6);
        if (i == ids.n) {
            int any = 0;
            for (int k = 0; k < n_eos; k++)
                any |= eos[k] >= 0 && eos[k] < grammar_vocab_size(v) && mask_has(mask, eos[k]);
            ok = any;
        } else {
            ok = ids.ids[i] < grammar_vocab_size(v) && mask_has(mask, ids.ids[i]) &&
                 grammar_matcher_accept(m, ids.ids[i]) == 0;
        }
    }
    grammar_matcher_free(m);
    token_ids_free(&ids);
    return ok;
}

struct check_ctx {
    enum grammar_kind kind;
    const struct grammar_tokens *gt;
    const struct grammar_vocab *v;
    const struct tokenizer *tok;
    const int32_t *eos;
    int n_eos;
    uint32_t *mask;
    struct times *times;
};

/* One input line: the text as written (schemas) or a JSON string's value (regex, GBNF). */
static int check_line(const char *line, size_t n, void *arg, struct err *e)
{
    const struct check_ctx *c = arg;
    const char *text = line;
    json_t *j = NULL;
    if (c->kind == GRAMMAR_REGEX || c->kind == GRAMMAR_GBNF) {
        json_error_t jerr;
        j = json_loadb(line, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!json_is_string(j)) {
            json_decref(j);
            return err_set(e, "expected a JSON string (the text to check)");
        }
        text = json_string_value(j);
        n = json_string_length(j);
    }
    int verdict = check_text(c->gt, c->v, c->tok, c->eos, c->n_eos, text, n, c->mask, c->times, e);
    json_decref(j);
    if (verdict < 0)
        return -1;
    printf("%s\n", verdict ? "accept" : "reject");
    return 0;
}

static int run_check(const char *file, enum grammar_kind kind, const struct grammar_tokens *gt,
                     const struct grammar_vocab *v, const struct tokenizer *tok, const int32_t *eos, int n_eos,
                     struct times *times, struct err *e)
{
    struct check_ctx c = {kind, gt, v, tok, eos, n_eos, xmalloc((size_t)grammar_mask_words(v) * sizeof(uint32_t)),
                          times};
    int rc = cli_for_each_line(file, 0, check_line, &c, e); /* a verdict for every line */
    free(c.mask);
    return rc;
}

int cmd_grammar(int argc, char **argv)
{
    const char *tok_path = NULL, *schema = NULL, *regex = NULL, *gbnf = NULL, *check = NULL, *ws = "lines";
    const char *eos_list = NULL;
    int json_object = 0, bench = 0, no_strict = 0;
    struct cli_opt opts[] = {
        {"tokenizer", CLI_OPT_STRING, &tok_path, 1, 0, 0, "tokenizer.json, its directory, or a .gguf model", 0},
        {"json-schema", CLI_OPT_STRING, &schema, 0, 0, 0, "a JSON Schema file", 0},
        {"json-object", CLI_OPT_FLAG, &json_object, 0, 0, 0, "any JSON object", 0},
        {"regex", CLI_OPT_STRING, &regex, 0, 0, 0, "a regular expression the whole text must match", 0},
        {"gbnf", CLI_OPT_STRING, &gbnf, 0, 0, 0, "a GBNF grammar file (llama.cpp's format, rule root)", 0},
        {"check", CLI_OPT_STRING, &check, 0, 0, 0,
         "texts to check, one per line (schemas: the line as written; regex/gbnf: a JSON string)", 0},
        {"bench", CLI_OPT_FLAG, &bench, 0, 0, 0, "print compile time and mask times per token (with --check)", 0},
        {"whitespace", CLI_OPT_STRING, &ws, 0, 0, 0, "JSON blanks: lines (as the server: one space, or a line break and indentation), flexible (bounded runs) or compact (none)", 0},
        {"no-strict", CLI_OPT_FLAG, &no_strict, 0, 0, 0, "ignore schema keywords that cannot be enforced", 0},
        {"eos", CLI_OPT_STRING, &eos_list, 0, 0, 0, "end-of-text ids, e.g. 1,106 (default: the model's)", 0},
    };
    int n_opts = (int)(sizeof opts / sizeof opts[0]);
    struct err e = {{0}};
    struct tokenizer *tok = NULL;
    struct grammar_vocab *v = NULL;
    struct grammar *g = NULL;
    struct grammar_tokens *gt = NULL;
    struct gir ir;
    gir_init(&ir);
    struct json_schema_notes notes = {0};
    char *text = NULL;
    size_t text_len = 0;
    struct times times = {0};
    int32_t eos[16];
    int n_eos = 0, exit_code = 1;
    int rc = cli_parse(argc, argv, "grammar", opts, n_opts, &e);
    if (rc > 0)
        return 0;
    if (rc < 0)
        goto done;
    struct grammar_spec spec = {.kind = GRAMMAR_NONE, .strict = !no_strict, .ws_max = GRAMMAR_WS_DEFAULT};
    int given = !!schema + !!json_object + !!regex + !!gbnf;
    if (given != 1) {
        err_set(&e, "give exactly one of --json-schema, --json-object, --regex and --gbnf");
        goto done;
    }
    if (!strcmp(ws, "compact"))
        spec.ws_max = -1;
    else if (!strcmp(ws, "lines"))
        spec.ws_lines = 1;
    else if (strcmp(ws, "flexible")) {
        err_set(&e, "--whitespace must be lines, flexible or compact, not '%s'", ws);
        goto done;
    }
    if (bench && !check) {
        err_set(&e, "--bench times the masks of --check's texts: give --check");
        goto done;
    }
    if (schema || gbnf) {
        if (fs_read_file(schema ? schema : gbnf, (size_t)64 << 20, &text, &text_len, &e))
            goto done;
        spec.kind = schema ? GRAMMAR_JSON_SCHEMA : GRAMMAR_GBNF;
    } else if (regex) {
        spec.kind = GRAMMAR_REGEX;
        text = xstrdup(regex);
        text_len = strlen(regex);
    } else {
        spec.kind = GRAMMAR_JSON_OBJECT;
    }
    spec.text = text;
    spec.len = text_len;
    if (!(tok = tokenizer_load(tok_path, &e)))
        goto done;
    if (eos_list) {
        int32_t *ids;
        if (cli_parse_int_list(eos_list, "eos", &ids, &n_eos, &e))
            goto done;
        if (n_eos > 16)
            n_eos = 16;
        memcpy(eos, ids, (size_t)n_eos * sizeof(int32_t));
        free(ids);
    } else if ((n_eos = find_eos(tok_path, tok, eos, 16, &e)) < 0) {
        goto done;
    }
    v = grammar_vocab_from_tokenizer(tok, tokenizer_vocab_size(tok), eos, n_eos);
    double t0 = clock_now();
    if (grammar_spec_build(&spec, &ir, &notes, &e) || !(g = grammar_compile(&ir, &e)) ||
        !(gt = grammar_tokens_new(g, v, &e))) {
        exit_code = 2;
        goto done;
    }
    double compile_ms = (clock_now() - t0) * 1e3;
    for (int i = 0; i < notes.n_ignored; i++)
        fprintf(stderr, "infer grammar: ignored (--no-strict): %s\n", notes.ignored[i]);
    if (check && run_check(check, spec.kind, gt, v, tok, eos, n_eos, bench ? &times : NULL, &e))
        goto done;
    if (bench) {
        qsort(times.v, times.n, sizeof(double), cmp_double);
        printf("bench compile_ms=%.3f mask_us_p50=%.2f mask_us_p90=%.2f mask_us_p99=%.2f masks=%zu\n", compile_ms,
               pct(&times, 0.5), pct(&times, 0.9), pct(&times, 0.99), times.n);
    } else if (!check) {
        fprintf(stderr, "infer grammar: compiled %s in %.2f ms: %d automaton states, %d rules\n",
                grammar_kind_name(spec.kind), compile_ms, grammar_n_states(g), grammar_n_rules(g));
    }
    exit_code = 0;
done:
    if (exit_code)
        fprintf(stderr, "infer grammar: %s\n", e.msg);
    free(times.v);
    json_schema_notes_free(&notes);
    grammar_tokens_free(gt);
    grammar_free(g);
    gir_free(&ir);
    grammar_vocab_free(v);
    tokenizer_free(tok);
    free(text);
    return exit_code;
}
