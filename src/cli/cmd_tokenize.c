/* infer tokenize --model PATH (--text TEXT | --file F) [--no-special]
 * infer detokenize --model PATH (--ids 1,2,3 | --file F) [--skip-special]
 * The batch forms (--file) read one JSON value per line (a string to encode,
 * or an array of ids to decode) and print one JSON value per line. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/lines.h"
#include "core/fs.h"
#include "tokenizer/detok.h"
#include "tokenizer/tokenizer.h"

static void print_ids(const struct token_ids *ids)
{
    putchar('[');
    for (int i = 0; i < ids->n; i++)
        printf(i ? ",%d" : "%d", ids->ids[i]);
    printf("]\n");
}

static void print_json_string(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    char *out = json_dumps(j, JSON_ENCODE_ANY);
    printf("%s\n", out);
    free(out);
    json_decref(j);
}

struct json_line {
    int (*fn)(const json_t *, void *, struct err *);
    void *ctx;
};

static int json_line(const char *line, size_t len, void *arg, struct err *e)
{
    const struct json_line *j = arg;
    json_error_t jerr;
    json_t *v = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!v)
        return err_set(e, "invalid JSON: %s", jerr.text);
    int rc = j->fn(v, j->ctx, e);
    json_decref(v);
    return rc;
}

/* Calls fn on each non-empty line of file's JSON values; errors name file:line. */
static int for_each_line(const char *file, int (*fn)(const json_t *, void *, struct err *), void *ctx,
                         struct err *e)
{
    struct json_line j = {fn, ctx};
    return cli_for_each_line(file, 1, json_line, &j, e);
}

struct encode_ctx {
    const struct tokenizer *tok;
    int add_special;
};

static int encode_line(const json_t *v, void *arg, struct err *e)
{
    struct encode_ctx *c = arg;
    if (!json_is_string(v))
        return err_set(e, "expected a JSON string");
    struct token_ids ids = {0};
    int rc = tokenizer_encode(c->tok, json_string_value(v), json_string_length(v), c->add_special, &ids, e);
    if (!rc)
        print_ids(&ids);
    token_ids_free(&ids);
    return rc;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *text = NULL, *file = NULL;
    int no_special = 0;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model, 1, 0, 0, "model directory (tokenizer.json) or tokenizer.json", 0},
        {"text", CLI_OPT_STRING, &text, 0, 0, 0, "text to encode", 0},
        {"file", CLI_OPT_STRING, &file, 0, 0, 0, "one JSON string per line; prints one id array per line", 0},
        {"no-special", CLI_OPT_FLAG, &no_special, 0, 0, 0, "do not add the template's special tokens (BOS)", 0},
    };
    struct err e = {{0}};
    struct tokenizer *tok = NULL;
    int rc = cli_parse(argc, argv, "tokenize", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc)
        goto done;
    rc = -1;
    if (!text == !file) {
        err_set(&e, "infer tokenize: give exactly one of --text and --file");
        goto done;
    }
    if (!(tok = tokenizer_load(model, &e)))
        goto done;
    struct encode_ctx c = {tok, !no_special};
    if (text) {
        json_t *j = json_string(text);
        if (!j) {
            err_set(&e, "--text is not valid UTF-8");
            goto done;
        }
        rc = encode_line(j, &c, &e);
        json_decref(j);
    } else {
        rc = for_each_line(file, encode_line, &c, &e);
    }
done:
    if (rc < 0)
        fprintf(stderr, "infer tokenize: %s\n", e.msg);
    tokenizer_free(tok);
    return rc < 0 ? 1 : 0;
}

struct decode_ctx {
    const struct tokenizer *tok;
    int skip_special;
    int as_json;
    int stream;
};

/* --stream: the incremental detokenizer's piece after each id, as one JSON
 * array of strings (joined, they equal the one-shot decode). */
static int stream_ids(struct decode_ctx *c, const int32_t *ids, int n, struct err *e)
{
    struct detok d;
    detok_init(&d, c->tok, c->skip_special);
    json_t *arr = json_array();
    int rc = 0;
    for (int i = 0; i <= n && !rc; i++) {
        char *piece;
        size_t len;
        rc = i < n ? detok_push(&d, ids[i], &piece, &len, e) : detok_flush(&d, &piece, &len, e);
        if (!rc) {
            json_t *s = json_stringn(piece, len);
            if (!s)
                rc = err_set(e, "detokenizer handed out a piece that is not valid UTF-8");
            json_array_append_new(arr, s);
            free(piece);
        }
    }
    if (!rc) {
        char *out = json_dumps(arr, JSON_COMPACT);
        printf("%s\n", out);
        free(out);
    }
    json_decref(arr);
    detok_free(&d);
    return rc;
}

static int decode_ids(struct decode_ctx *c, const int32_t *ids, int n, struct err *e)
{
    for (int i = 0; i < n; i++)
        if (ids[i] >= tokenizer_vocab_size(c->tok))
            return err_set(e, "token id %d is outside the vocabulary (0..%d)", ids[i],
                           tokenizer_vocab_size(c->tok) - 1);
    if (c->stream)
        return stream_ids(c, ids, n, e);
    char *text;
    size_t len;
    if (tokenizer_decode(c->tok, ids, n, c->skip_special, &text, &len, e))
        return -1;
    if (c->as_json)
        print_json_string(text, len);
    else
        fwrite(text, 1, len, stdout);
    free(text);
    return 0;
}

static int decode_line(const json_t *v, void *arg, struct err *e)
{
    if (!json_is_array(v))
        return err_set(e, "expected a JSON array of token ids");
    size_t n = json_array_size(v), i;
    int32_t *ids = xmalloc((n + 1) * sizeof *ids);
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
            free(ids);
            return err_set(e, "element %zu is not a token id", i);
        }
        ids[i] = (int32_t)json_integer_value(x);
    }
    int rc = decode_ids(arg, ids, (int)n, e);
    free(ids);
    return rc;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *model = NULL, *ids_arg = NULL, *file = NULL;
    int skip_special = 0, stream = 0;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model, 1, 0, 0, "model directory (tokenizer.json) or tokenizer.json", 0},
        {"stream", CLI_OPT_FLAG, &stream, 0, 0, 0, "print the streaming detokenizer's pieces as a JSON array", 0},
        {"ids", CLI_OPT_STRING, &ids_arg, 0, 0, 0, "comma-separated token ids", 0},
        {"file", CLI_OPT_STRING, &file, 0, 0, 0, "one JSON id array per line; prints one JSON string per line", 0},
        {"skip-special", CLI_OPT_FLAG, &skip_special, 0, 0, 0, "leave special tokens out of the text", 0},
    };
    struct err e = {{0}};
    struct tokenizer *tok = NULL;
    int32_t *ids = NULL;
    int n = 0;
    int rc = cli_parse(argc, argv, "detokenize", opts, (int)(sizeof opts / sizeof opts[0]), &e);
    if (rc)
        goto done;
    rc = -1;
    if (!ids_arg == !file) {
        err_set(&e, "infer detokenize: give exactly one of --ids and --file");
        goto done;
    }
    if ((ids_arg && cli_parse_int_list(ids_arg, "ids", &ids, &n, &e)) || !(tok = tokenizer_load(model, &e)))
        goto done;
    struct decode_ctx c = {tok, skip_special, file != NULL, stream};
    if (ids_arg)
        rc = decode_ids(&c, ids, n, &e) ? err_prefix(&e, "--ids") : 0;
    else
        rc = for_each_line(file, decode_line, &c, &e);
done:
    if (rc < 0)
        fprintf(stderr, "infer detokenize: %s\n", e.msg);
    free(ids);
    tokenizer_free(tok);
    return rc < 0 ? 1 : 0;
}
