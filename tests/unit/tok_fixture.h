/* Small tokenizers written to a temporary directory, for tests that need
 * text without a real vocabulary. */
#ifndef INFER_TESTS_TOK_FIXTURE_H
#define INFER_TESTS_TOK_FIXTURE_H

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

/* Loads tokenizer.json text json (written to a fresh temp dir, removed
 * again); aborts the test on failure. Free with tokenizer_free. */
struct tokenizer *tok_fixture_load(const char *json);

/* A vocabulary of n tokens whose text is "t<id>|" (ids 0..n-1), fused on
 * decoding, so that every id of a tiny model decodes. */
struct tokenizer *tok_fixture_numbered(int n);

/* The chat template of tokenizer_config.json text config_json (its
 * "chat_template"); aborts the test on failure. Free with chat_template_free. */
struct chat_template *tok_fixture_template(const char *config_json);

#endif
