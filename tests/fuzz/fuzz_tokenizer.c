/* libFuzzer target for the tokenizer's two outside inputs.
 * The first input byte picks the mode:
 *  - even: the rest is a tokenizer.json; loading must succeed or fail with a
 *    message naming the file, never crash;
 *  - odd: the rest is text for a fixed small byte-level tokenizer with added
 *    tokens; valid UTF-8 must encode, invalid UTF-8 must be refused, and
 *    the ids must decode. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "core/utf8.h"

static const char small_tokenizer[] =
    "{\"added_tokens\": [{\"id\": 9, \"content\": \"<s>\", \"special\": true, \"lstrip\": true, \"rstrip\": true},"
    " {\"id\": 10, \"content\": \"<x>\", \"single_word\": true, \"normalized\": false}],"
    " \"normalizer\": {\"type\": \"NFC\"},"
    " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\":"
    " {\"Regex\": \"\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+\"}, \"behavior\": \"Isolated\"},"
    " {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]},"
    " \"decoder\": {\"type\": \"ByteLevel\"},"
    " \"model\": {\"type\": \"BPE\", \"vocab\": {VOCAB}, \"merges\": [\"a b\", \"ab c\"]}}";

static struct tokenizer *load_text(const char *json, size_t len)
{
    char dir[] = "/tmp/fuzz-tok-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char path[128];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "wb");
    fwrite(json, 1, len, f);
    fclose(f);
    struct err e = {{0}};
    struct tokenizer *t = tokenizer_load(dir, &e);
    if (!t && !strstr(e.msg, "tokenizer.json"))
        abort(); /* a refusal must name the file */
    unlink(path);
    rmdir(dir);
    return t;
}

static struct tokenizer *fixed_tokenizer(void)
{
    static struct tokenizer *t;
    if (t)
        return t;
    /* vocabulary: the 256 byte-level characters, then "ab" and "abc" */
    char vocab[8192];
    size_t k = 0;
    for (int b = 0; b < 256; b++) {
        const char *c = byte_level_char((uint8_t)b);
        if (b == '"' || b == '\\')
            k += (size_t)snprintf(vocab + k, sizeof vocab - k, "\"\\%c\": %d, ", b, b);
        else
            k += (size_t)snprintf(vocab + k, sizeof vocab - k, "\"%s\": %d, ", c, b);
    }
    k += (size_t)snprintf(vocab + k, sizeof vocab - k, "\"ab\": 256, \"abc\": 257");
    const char *at = strstr(small_tokenizer, "VOCAB");
    char json[16384];
    int n = snprintf(json, sizeof json, "%.*s%s%s", (int)(at - small_tokenizer), small_tokenizer, vocab, at + 5);
    t = load_text(json, (size_t)n);
    if (!t)
        abort();
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t len = size - 1;
    if (data[0] % 2 == 0) {
        tokenizer_free(load_text(s, len));
        return 0;
    }
    struct tokenizer *t = fixed_tokenizer();
    struct token_ids ids = {0};
    struct err e = {{0}};
    int rc = tokenizer_encode(t, s, len, 1, &ids, &e);
    if ((rc == 0) != (utf8_valid_prefix(s, len) == len))
        abort(); /* valid UTF-8 always encodes; invalid never does */
    if (rc == 0) {
        char *text;
        size_t tl;
        if (tokenizer_decode(t, ids.ids, ids.n, 0, &text, &tl, &e))
            abort();
        free(text);
    }
    token_ids_free(&ids);
    return 0;
}
