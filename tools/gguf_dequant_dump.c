/* Runs src/io/gguf_quant.c on one raw tensor blob, for
 * tools/check_gguf_dequant.py (which compiles it):
 *
 *     gguf_dequant_dump TYPE N f32|bf16 < raw > out
 *
 * TYPE is the ggml type number, N the element count; stdin is the tensor's
 * bytes (the caller gives exactly N elements' worth: they are not checked
 * here), stdout gets N little-endian floats or bf16 values. Exit status 1
 * with the dequantiser's message on a refusal. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf_quant.h"

/* The dequantiser's only use of io/gguf.c is the name of an unsupported
 * type in its message; a stand-in keeps this tool independent of the GGUF
 * reader. */
const char *ggml_type_name(enum ggml_type t)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "type %d", (int)t);
    return buf;
}

static void *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 20, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        buf = xrealloc(buf, cap);
    }
    if (ferror(f)) {
        fprintf(stderr, "gguf_dequant_dump: reading stdin: %s\n", strerror(errno));
        exit(1);
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[3], "f32") != 0 && strcmp(argv[3], "bf16") != 0)) {
        fprintf(stderr, "usage: gguf_dequant_dump TYPE N f32|bf16 < raw > out\n");
        return 2;
    }
    enum ggml_type t = (enum ggml_type)atoi(argv[1]);
    int64_t n = strtoll(argv[2], NULL, 10);
    int bf16 = strcmp(argv[3], "bf16") == 0;
    size_t len;
    void *src = read_all(stdin, &len);
    size_t out_size = (size_t)n * (bf16 ? 2 : 4);
    void *out = xmalloc(out_size ? out_size : 1);
    struct err e = {{0}};
    int rc = bf16 ? gguf_dequant_bf16(t, src, n, out, &e) : gguf_dequant_f32(t, src, n, out, &e);
    if (rc != 0) {
        fprintf(stderr, "gguf_dequant_dump: %s\n", e.msg);
        return 1;
    }
    if (fwrite(out, 1, out_size, stdout) != out_size || fflush(stdout) != 0) {
        fprintf(stderr, "gguf_dequant_dump: writing stdout: %s\n", strerror(errno));
        return 1;
    }
    free(src);
    free(out);
    return 0;
}
