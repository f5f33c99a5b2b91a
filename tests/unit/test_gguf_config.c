/* The model config from GGUF metadata (io/gguf_config.c): the token ids
 * (tokenizer.ggml.bos / eos / eot_token_id) of a minimal Llama file written
 * here (gguf_builder.h), read into bos_id and eos_ids; an id stored under a
 * type other than an integer, or outside the vocabulary, refused with a
 * message naming the file, the key and what was found. */
#include <criterion/criterion.h>
#include <string.h>

#include "gguf_builder.h"
#include "io/gguf.h"
#include "io/gguf_config.h"
#include "test_util.h"

TestSuite(gguf_config, .init = test_tmp_setup, .fini = test_tmp_teardown);

#define HIDDEN 8
#define VOCAB 10

struct id_key {
    const char *key; /* NULL: none */
    uint32_t type;
    int64_t v; /* for the integer types; other types get gb_key_sample's value */
};

/* A one-layer Llama with a [HIDDEN, VOCAB] embedding and up to three id keys. */
static struct tpath write_model(const struct id_key *ids, int n_ids)
{
    struct gb b = {0};
    gb_header(&b, 3, 1, 6 + (uint64_t)n_ids);
    gb_key(&b, "general.architecture", GGUF_TYPE_STRING), gb_str(&b, "llama");
    gb_key(&b, "llama.embedding_length", GGUF_TYPE_UINT32), gb_u32(&b, HIDDEN);
    gb_key(&b, "llama.block_count", GGUF_TYPE_UINT32), gb_u32(&b, 1);
    gb_key(&b, "llama.feed_forward_length", GGUF_TYPE_UINT32), gb_u32(&b, 16);
    gb_key(&b, "llama.attention.head_count", GGUF_TYPE_UINT32), gb_u32(&b, 2);
    gb_key(&b, "llama.context_length", GGUF_TYPE_UINT32), gb_u32(&b, 64);
    for (int i = 0; i < n_ids; i++) {
        if (ids[i].type == GGUF_TYPE_UINT32 || ids[i].type == GGUF_TYPE_INT32)
            gb_key(&b, ids[i].key, ids[i].type), gb_u32(&b, (uint32_t)ids[i].v);
        else
            gb_key_sample(&b, ids[i].key, ids[i].type);
    }
    gb_tinfo(&b, "token_embd.weight", 2, (uint64_t[]){HIDDEN, VOCAB}, GGML_TYPE_F32, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, HIDDEN * VOCAB * 4);
    return gb_write(&b, "model.gguf");
}

/* The config of a file with these id keys; 0 or -1 with e set. */
static int config_of(const struct id_key *ids, int n_ids, struct model_config *c, struct err *e,
                     struct tpath *p)
{
    *p = write_model(ids, n_ids);
    struct gguf_file *f = gguf_open(p->s, e);
    cr_assert_not_null(f, "gguf_open(%s): %s", p->s, e->msg);
    int rc = model_config_from_gguf(f, c, e);
    gguf_close(f);
    return rc;
}

/* The config must be refused with a message naming the file and holding want. */
static void expect_fail(struct id_key id, const char *want)
{
    struct model_config c;
    struct err e = {{0}};
    struct tpath p;
    cr_assert_neq(config_of(&id, 1, &c, &e, &p), 0, "accepted; expected an error with '%s'", want);
    cr_assert(strstr(e.msg, p.s), "message does not name the file: %s", e.msg);
    cr_assert(strstr(e.msg, want), "message '%s' lacks '%s'", e.msg, want);
}

Test(gguf_config, token_ids)
{
    struct model_config c;
    struct err e = {{0}};
    struct tpath p;
    struct id_key ids[] = {{"tokenizer.ggml.bos_token_id", GGUF_TYPE_UINT32, 1},
                           {"tokenizer.ggml.eos_token_id", GGUF_TYPE_INT32, 3},
                           {"tokenizer.ggml.eot_token_id", GGUF_TYPE_UINT16, 0}}; /* UINT16: the sample, 2 */
    cr_assert_eq(config_of(ids, 3, &c, &e, &p), 0, "%s", e.msg);
    cr_assert_eq(c.vocab_size, VOCAB);
    cr_assert_eq(c.bos_id, 1);
    cr_assert_eq(c.n_eos, 2);
    cr_assert_eq(c.eos_ids[0], 3);
    cr_assert_eq(c.eos_ids[1], 2);
}

Test(gguf_config, token_ids_absent)
{
    struct model_config c;
    struct err e = {{0}};
    struct tpath p;
    cr_assert_eq(config_of(NULL, 0, &c, &e, &p), 0, "%s", e.msg);
    cr_assert_eq(c.bos_id, -1);
    cr_assert_eq(c.n_eos, 0);
}

Test(gguf_config, eos_id_string)
{
    expect_fail((struct id_key){"tokenizer.ggml.eos_token_id", GGUF_TYPE_STRING, 0},
                "tokenizer.ggml.eos_token_id: expected an integer id, got STRING");
}

Test(gguf_config, bos_id_float32)
{
    expect_fail((struct id_key){"tokenizer.ggml.bos_token_id", GGUF_TYPE_FLOAT32, 0},
                "tokenizer.ggml.bos_token_id: expected an integer id, got FLOAT32");
}

Test(gguf_config, eot_id_bool)
{
    expect_fail((struct id_key){"tokenizer.ggml.eot_token_id", GGUF_TYPE_BOOL, 0},
                "tokenizer.ggml.eot_token_id: expected an integer id, got BOOL");
}

Test(gguf_config, eos_id_array)
{
    expect_fail((struct id_key){"tokenizer.ggml.eos_token_id", GGUF_TYPE_ARRAY, 0},
                "tokenizer.ggml.eos_token_id: expected an integer id, got ARRAY of INT32");
}

Test(gguf_config, bos_id_float64)
{
    expect_fail((struct id_key){"tokenizer.ggml.bos_token_id", GGUF_TYPE_FLOAT64, 0},
                "tokenizer.ggml.bos_token_id: expected an integer id, got FLOAT64");
}

Test(gguf_config, bos_id_negative)
{
    expect_fail((struct id_key){"tokenizer.ggml.bos_token_id", GGUF_TYPE_INT32, -1},
                "tokenizer.ggml.bos_token_id -1 is not a token id (the vocabulary has 10)");
}

Test(gguf_config, eot_id_outside_vocab)
{
    expect_fail((struct id_key){"tokenizer.ggml.eot_token_id", GGUF_TYPE_UINT32, VOCAB},
                "tokenizer.ggml.eot_token_id 10 is not a token id (the vocabulary has 10)");
}
