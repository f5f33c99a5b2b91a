/* libFuzzer target for the GGUF reader and what reads its metadata: each
 * input becomes the contents of an in-memory file (memfd, opened through
 * /proc/self/fd), which gguf_open must either refuse with a message naming
 * the file or accept. An accepted file has every key read back through the
 * typed getters, every array element widened, every tensor byte read (so
 * the sanitizers catch a pointer outside the map) and every name looked up;
 * then the model config and the tokenizer are built from it, which must
 * succeed or say why, and a loaded tokenizer encodes and decodes a text.
 * Build and run: make fuzz (tests/fuzz/README.md). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memfd.h"
#include "io/gguf.h"
#include "io/gguf_config.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The getters on one key: each succeeds or sets a message; a token id is
 * an integer read the same way. */
static unsigned read_key(const struct gguf_file *f, const char *key)
{
    struct err e = {{0}};
    int64_t i = 0, id = 0;
    double d = 0;
    int b = 0;
    int int_ok = gguf_get_int(f, key, &i, &e) == 0;
    if (!int_ok && !e.msg[0])
        __builtin_trap();
    if (gguf_get_token_id(f, key, &id, &e) == 0 && (!int_ok || id != i))
        __builtin_trap();
    unsigned sum = (unsigned)i;
    if (gguf_get_float(f, key, &d, &e) == 0)
        sum += (unsigned)(d == d);
    if (gguf_get_bool(f, key, &b, &e) == 0)
        sum += (unsigned)b;
    char *s = gguf_get_string(f, key, &e);
    if (s)
        sum += (unsigned)strlen(s);
    free(s);
    return sum;
}

static unsigned walk(const struct gguf_file *f)
{
    unsigned sum = 0;
    for (int64_t k = 0; k < f->n_kv; k++) {
        const struct gguf_kv *kv = &f->kvs[k];
        if (!memchr(kv->key.s, '\0', kv->key.len)) { /* a key with a NUL inside cannot be asked for */
            char *key = strndup(kv->key.s, kv->key.len);
            if (gguf_find_kv(f, key) != kv)
                __builtin_trap(); /* keys are unique, so lookup finds kv */
            sum += read_key(f, key);
            free(key);
        }
        if (kv->type != GGUF_TYPE_ARRAY)
            continue;
        for (uint64_t i = 0; i < kv->arr_n; i++) {
            if (kv->arr_type == GGUF_TYPE_STRING)
                for (uint64_t j = 0; j < kv->arr_strs[i].len; j++)
                    sum += (unsigned char)kv->arr_strs[i].s[j];
            else
                sum += (unsigned)gguf_arr_int(kv, i) + (unsigned)(gguf_arr_float(kv, i) != 0);
        }
    }
    for (int64_t k = 0; k < f->n_tensors; k++) {
        const struct gguf_tensor *t = &f->tensors[k];
        const unsigned char *p = t->data;
        for (size_t j = 0; j < t->nbytes; j++)
            sum += p[j];
        char *name = strndup(t->name.s, t->name.len);
        if (!memchr(t->name.s, '\0', t->name.len) && gguf_find_tensor(f, name) != t)
            __builtin_trap(); /* names are unique */
        free(name);
    }
    return sum;
}

/* The model config and the tokenizer: built, or refused with a message. */
static void readers(const struct gguf_file *f)
{
    struct model_config c;
    struct err e = {{0}};
    if (model_config_from_gguf(f, &c, &e) && !e.msg[0])
        __builtin_trap();
    e.msg[0] = '\0';
    struct tokenizer *t = tokenizer_from_gguf(f, &e);
    if (!t) {
        if (!strstr(e.msg, f->path))
            __builtin_trap(); /* the tokenizer's refusals name the file */
        return;
    }
    static const char text[] = "Hello w\xc3\xb6rld  1234 <s>\n";
    struct token_ids ids = {0};
    if (tokenizer_encode(t, text, sizeof text - 1, 1, &ids, &e) == 0) {
        char *out = NULL;
        size_t len;
        if (tokenizer_decode(t, ids.ids, ids.n, 0, &out, &len, &e) == 0)
            free(out);
    }
    token_ids_free(&ids);
    tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfd(data, size, "fuzz.gguf", path, sizeof path);
    if (fd < 0)
        return 0;
    struct err e = {{0}};
    struct gguf_file *f = gguf_open(path, &e);
    if (f) {
        volatile unsigned sink = walk(f);
        (void)sink;
        readers(f);
        gguf_close(f);
    } else if (!strstr(e.msg, path)) {
        __builtin_trap(); /* every refusal names the file */
    }
    close(fd);
    return 0;
}
