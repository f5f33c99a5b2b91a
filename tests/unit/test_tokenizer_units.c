/* Tokenizer building blocks with exact expectations: UTF-8 lossy conversion
 * (Rust's from_utf8_lossy, one U+FFFD per maximal invalid subpart), the
 * JSON scanner's errors, the string map, and tokenizer.json refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokenizer/json_scan.h"
#include "tokenizer/strmap.h"
#include "tokenizer/tokenizer.h"
#include "core/utf8.h"

static void lossy_is(const char *in, size_t len, const char *want)
{
    char out[64];
    size_t n = utf8_lossy(out, in, len);
    out[n] = '\0';
    cr_assert_str_eq(out, want);
}

#define R "\xEF\xBF\xBD"

Test(utf8, lossy_matches_rust)
{
    lossy_is("abc", 3, "abc");
    lossy_is("\xF0\x9F\x98", 3, R);                 /* truncated 4-byte sequence: one */
    lossy_is("\xE2\x28\xA1", 3, R "(" R);           /* bad second byte */
    lossy_is("\xC0\x80", 2, R R);                   /* overlong lead byte */
    lossy_is("\xED\xA0\x80", 3, R R R);             /* surrogate: ED then two strays */
    lossy_is("\xF4\x90\x80\x80", 4, R R R R);       /* above U+10FFFF */
    lossy_is("\x80x", 2, R "x");
    lossy_is("\xE2\x82\xAC", 3, "\xE2\x82\xAC");    /* the euro sign */
    cr_assert_eq(utf8_valid_prefix("ab\xE2\x82", 4), 2);
    cr_assert_eq(utf8_valid_prefix("ab\xE2\x82\xAC", 5), 5);
}

Test(utf8, whitespace_and_word_chars)
{
    cr_assert(utf8_is_whitespace(0x85) && utf8_is_whitespace(0xA0) && utf8_is_whitespace(0x3000));
    cr_assert(!utf8_is_whitespace(0x200B)); /* zero width space is not White_Space */
    cr_assert(utf8_is_word_char('a') && utf8_is_word_char('_') && utf8_is_word_char(0x4E2D));
    cr_assert(!utf8_is_word_char('-') && !utf8_is_word_char(' '));
}

Test(json_scan, strings_escapes_and_errors)
{
    const char *src = "\"a\\u00e9\\n\\ud83d\\ude00\\\"\"";
    struct json_scan j = {src, strlen(src), 0, NULL, 0};
    char *buf = NULL;
    size_t cap = 0;
    long n = json_scan_string(&j, &buf, &cap);
    cr_assert_eq(n, 1 + 2 + 1 + 4 + 1);
    cr_assert_eq(memcmp(buf, "a\xC3\xA9\n\xF0\x9F\x98\x80\"", (size_t)n), 0);
    const char *bad[] = {"\"unterminated", "\"\\x\"", "\"\\ud800\"", "\"\\u12\"", "{\"a\": [1, 2}", "[1 2]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct json_scan k = {bad[i], strlen(bad[i]), 0, NULL, 0};
        int rc = bad[i][0] == '"' ? (int)json_scan_string(&k, &buf, &cap) : json_scan_skip(&k);
        cr_assert_eq(rc, -1, "'%s' should fail", bad[i]);
        cr_assert(k.error, "'%s' needs a message", bad[i]);
    }
    free(buf);
}

Test(strmap, put_get_overwrite_and_grow)
{
    struct strmap m;
    strmap_init(&m, 4);
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        strmap_put(&m, key, (size_t)n, i);
    }
    strmap_put(&m, "k7", 2, -7 + 100);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "k%d", i);
        cr_assert_eq(strmap_get(&m, key, (size_t)n), i == 7 ? 93 : i);
    }
    cr_assert_eq(strmap_get(&m, "nope", 4), -1);
    cr_assert_eq(strmap_get(&m, "k1\0", 3), -1, "lengths are part of the key");
    strmap_free(&m);
}

/* An empty key first, before the arena exists (found by make fuzz: a GGUF
 * vocabulary whose first token is empty). */
Test(strmap, empty_first_key)
{
    struct strmap m;
    strmap_init(&m, 4);
    strmap_put(&m, "", 0, 5);
    strmap_put(&m, "a", 1, 6);
    cr_assert_eq(strmap_get(&m, "", 0), 5);
    cr_assert_eq(strmap_get(&m, "a", 1), 6);
    strmap_free(&m);
}

static void refuse(const char *json, const char *needle)
{
    char dir[] = "/tmp/infer-tok-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    fputs(json, f);
    fclose(f);
    struct err e = {{0}};
    struct tokenizer *t = tokenizer_load(dir, &e);
    cr_assert_null(t, "expected '%s' to be refused", json);
    cr_assert(strstr(e.msg, needle) && strstr(e.msg, "tokenizer.json"), "message '%s' lacks '%s'", e.msg, needle);
    unlink(path);
    rmdir(dir);
}

Test(tokenizer, malformed_files_are_refused_with_reasons)
{
    refuse("", "expected");
    refuse("[1]", "expected a JSON object");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}", "merges");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"a\": 1}, \"merges\": []}}", "twice");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}", "vocab");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": \"<unk>\"}}",
           "unk_token");
    refuse("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", "WordPiece");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}", "merges");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": "
           "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}}",
           "regex");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"continuing_subword_prefix\": "
           "\"##\"}}",
           "continuing_subword_prefix");
    refuse("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"post_processor\": "
           "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}], "
           "\"special_tokens\": {}}}",
           "<s>");
}

Test(tokenizer, invalid_utf8_input_is_an_error)
{
    char dir[] = "/tmp/infer-tok-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [[\"a\", \"b\"]]}}", f);
    fclose(f);
    struct err e = {{0}};
    struct tokenizer *t = tokenizer_load(dir, &e);
    cr_assert(t, "%s", e.msg);
    struct token_ids ids = {0};
    cr_assert_eq(tokenizer_encode(t, "ab\xFF", 3, 1, &ids, &e), -1);
    cr_assert(strstr(e.msg, "UTF-8") && strstr(e.msg, "byte 2"), "%s", e.msg);
    cr_assert_eq(tokenizer_encode(t, "abab", 4, 1, &ids, &e), 0);
    cr_assert_eq(ids.n, 2);
    cr_assert_eq(ids.ids[0], 2);
    token_ids_free(&ids);
    tokenizer_free(t);
    unlink(path);
    rmdir(dir);
}
