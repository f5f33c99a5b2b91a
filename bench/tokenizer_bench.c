/* Encoder speed on one core: encodes every line (a JSON string) of a corpus
 * file, repeatedly, and prints one JSON object with the load time and the
 * encode rate. Usage: tokenizer_bench TOKENIZER_DIR CORPUS.jsonl REPEATS */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/fs.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR CORPUS.jsonl REPEATS\n", argv[0]);
        return 2;
    }
    struct err e = {{0}};
    double t0 = clock_now();
    struct tokenizer *tok = tokenizer_load(argv[1], &e);
    double load = clock_now() - t0;
    if (!tok) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    char *data;
    size_t len;
    if (fs_read_file(argv[2], (size_t)1 << 30, &data, &len, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    json_t *lines = json_array();
    for (char *p = data, *end; p < data + len; p = end + 1) {
        end = memchr(p, '\n', (size_t)(data + len - p));
        if (!end)
            end = data + len;
        json_t *v = end > p ? json_loadb(p, (size_t)(end - p), JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
        if (json_is_string(v))
            json_array_append(lines, v);
        json_decref(v);
    }
    int repeats = atoi(argv[3]);
    size_t bytes = 0;
    long tokens = 0;
    double best = 1e30;
    for (int r = -1; r < repeats; r++) { /* r = -1 warms up */
        double s = clock_now();
        size_t i;
        json_t *v;
        long n = 0;
        json_array_foreach(lines, i, v)
        {
            struct token_ids ids = {0};
            if (tokenizer_encode(tok, json_string_value(v), json_string_length(v), 1, &ids, &e)) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
            n += ids.n;
            token_ids_free(&ids);
            if (r == 0)
                bytes += json_string_length(v);
        }
        double dt = clock_now() - s;
        if (r >= 0 && dt < best)
            best = dt;
        tokens = n;
    }
    printf("{\"load_s\": %.3f, \"strings\": %zu, \"bytes\": %zu, \"tokens\": %ld, \"best_pass_s\": %.6f, "
           "\"mb_per_s\": %.2f, \"tokens_per_s\": %.0f}\n",
           load, json_array_size(lines), bytes, tokens, best, bytes / best / 1e6, tokens / best);
    json_decref(lines);
    free(data);
    tokenizer_free(tok);
    return 0;
}
