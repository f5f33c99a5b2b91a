/* infer gguf-info FILE: what a GGUF file holds, after full validation.
 *
 * Prints the version and alignment, every metadata key with its type and
 * value (arrays: element type, count and the first few elements; long
 * strings cut), every tensor (name, type, dims, offset, bytes) and a summary
 * line (tensors per type, total bytes). A file the reader refuses exits 1
 * with the reader's message. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "io/gguf.h"

#define SHOW_STRING_BYTES 60 /* a scalar string value is cut here */
#define SHOW_ELEM_BYTES 24   /* an array's string element is cut here */
#define SHOW_ARRAY_ELEMS 5   /* elements shown of an array */
#define NAME_COLUMN_MAX 48   /* widest name column */

static void usage(FILE *f) { fprintf(f, "usage: infer gguf-info FILE\n"); }

/* Prints s escaped (quotes, backslashes, control bytes) so that each key or
 * value stays on one line; cut after max bytes with the full length noted. */
static void print_str(const struct gguf_str *s, size_t max, int quote)
{
    size_t n = s->len < max ? (size_t)s->len : max;
    if (quote)
        putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s->s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            printf("\\n");
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    if (quote)
        putchar('"');
    if (s->len > n)
        printf("... (%llu bytes)", (unsigned long long)s->len);
}

/* One number of a scalar kv (not STRING or ARRAY). */
static void print_scalar(const struct gguf_kv *kv)
{
    switch (kv->type) {
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
        printf("%lld", (long long)kv->v.i);
        break;
    case GGUF_TYPE_FLOAT32:
        printf("%.9g", kv->v.f);
        break;
    case GGUF_TYPE_FLOAT64:
        printf("%.17g", kv->v.f);
        break;
    case GGUF_TYPE_BOOL:
        printf("%s", kv->v.u ? "true" : "false");
        break;
    default:
        printf("%llu", (unsigned long long)kv->v.u);
    }
}

static void print_array(const struct gguf_kv *kv)
{
    printf("%s[%llu] [", gguf_value_type_name(kv->arr_type), (unsigned long long)kv->arr_n);
    uint64_t n = kv->arr_n < SHOW_ARRAY_ELEMS ? kv->arr_n : SHOW_ARRAY_ELEMS;
    for (uint64_t i = 0; i < n; i++) {
        if (i)
            printf(", ");
        if (kv->arr_type == GGUF_TYPE_STRING)
            print_str(&kv->arr_strs[i], SHOW_ELEM_BYTES, 1);
        else if (kv->arr_type == GGUF_TYPE_FLOAT32 || kv->arr_type == GGUF_TYPE_FLOAT64)
            printf("%.9g", gguf_arr_float(kv, i));
        else if (kv->arr_type == GGUF_TYPE_UINT64)
            printf("%.0f", gguf_arr_float(kv, i)); /* gguf_arr_int saturates above INT64_MAX */
        else
            printf("%lld", (long long)gguf_arr_int(kv, i));
    }
    printf("%s]", kv->arr_n > n ? ", ..." : "");
}

static int name_width(const struct gguf_file *f)
{
    uint64_t w = 0;
    for (int64_t i = 0; i < f->n_kv; i++)
        w = f->kvs[i].key.len > w ? f->kvs[i].key.len : w;
    for (int64_t i = 0; i < f->n_tensors; i++)
        w = f->tensors[i].name.len > w ? f->tensors[i].name.len : w;
    return w > NAME_COLUMN_MAX ? NAME_COLUMN_MAX : (int)w;
}

static void print_kvs(const struct gguf_file *f, int width)
{
    printf("metadata   %lld keys\n", (long long)f->n_kv);
    for (int64_t i = 0; i < f->n_kv; i++) {
        const struct gguf_kv *kv = &f->kvs[i];
        printf("  ");
        print_str(&kv->key, NAME_COLUMN_MAX, 0);
        printf("%*s  %-7s  ", kv->key.len < (uint64_t)width ? width - (int)kv->key.len : 0, "",
               gguf_value_type_name(kv->type));
        if (kv->type == GGUF_TYPE_ARRAY)
            print_array(kv);
        else if (kv->type == GGUF_TYPE_STRING)
            print_str(&kv->v.str, SHOW_STRING_BYTES, 1);
        else
            print_scalar(kv);
        putchar('\n');
    }
}

/* Tensors, then the summary line: counts per type in type-number order. */
static void print_tensors(const struct gguf_file *f, int width)
{
    printf("tensors    %lld\n", (long long)f->n_tensors);
    int64_t per_type[GGML_TYPE_COUNT_] = {0};
    uint64_t total = 0;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        const struct gguf_tensor *t = &f->tensors[i];
        char dims[128];
        int n = snprintf(dims, sizeof dims, "[");
        for (int d = 0; d < t->n_dims; d++)
            n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
        snprintf(dims + n, sizeof dims - (size_t)n, "]");
        printf("  ");
        print_str(&t->name, NAME_COLUMN_MAX, 0);
        printf("%*s  %-7s  %-22s  offset %-12llu  bytes %zu\n",
               t->name.len < (uint64_t)width ? width - (int)t->name.len : 0, "", ggml_type_name(t->type),
               dims, (unsigned long long)t->offset, t->nbytes);
        per_type[t->type]++;
        total += t->nbytes;
    }
    printf("summary: %lld tensors (", (long long)f->n_tensors);
    const char *sep = "";
    for (int ty = 0; ty < GGML_TYPE_COUNT_; ty++) {
        if (per_type[ty]) {
            printf("%s%lld %s", sep, (long long)per_type[ty], ggml_type_name((enum ggml_type)ty));
            sep = ", ";
        }
    }
    printf("), %llu bytes\n", (unsigned long long)total);
}

int cmd_gguf_info(int argc, char **argv)
{
    if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 1 || !strncmp(argv[0], "--", 2)) {
        if (argc == 1)
            fprintf(stderr, "infer gguf-info: unknown option '%s'\n", argv[0]);
        else
            fprintf(stderr, "infer gguf-info: expected one FILE, got %d arguments\n", argc);
        usage(stderr);
        return 2;
    }
    struct err e = {{0}};
    struct gguf_file *f = gguf_open(argv[0], &e);
    if (!f) {
        fprintf(stderr, "infer gguf-info: %s\n", e.msg);
        return 1;
    }
    int width = name_width(f);
    printf("file       %s\n", f->path);
    printf("version    %u\n", f->version);
    printf("alignment  %llu\n", (unsigned long long)f->alignment);
    print_kvs(f, width);
    print_tensors(f, width);
    gguf_close(f);
    return 0;
}
