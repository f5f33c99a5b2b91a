/* libFuzzer entry point for the safetensors reader: each input becomes the
 * contents of an in-memory file (memfd, opened through /proc/self/fd), which
 * st_open must either refuse with a message or accept; when accepted, every
 * tensor's bytes are read so the sanitizers catch a pointer outside the map.
 * Build and run: see tests/fuzz/README.md. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memfd.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touches every byte of every tensor and looks each one up by name. */
static unsigned fuzz_walk(const struct st_file *f)
{
    unsigned sum = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const struct st_tensor *t = &f->tensors[i];
        const unsigned char *p = t->data;
        for (size_t j = 0; j < t->nbytes; j++)
            sum += p[j];
        if (st_find(f, t->name) != t)
            __builtin_trap(); /* header keys are unique, so lookup finds t */
    }
    for (int i = 0; i < f->n_meta; i++)
        sum += (unsigned)strlen(f->meta_keys[i]) + (unsigned)strlen(f->meta_values[i]);
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfd(data, size, "fuzz.safetensors", path, sizeof path);
    if (fd < 0)
        return 0;
    struct err e;
    e.msg[0] = '\0';
    struct st_file *f = st_open(path, &e);
    if (f) {
        volatile unsigned sink = fuzz_walk(f);
        (void)sink;
        st_close(f);
    } else if (!strstr(e.msg, path)) {
        __builtin_trap(); /* every refusal names the file */
    }
    close(fd);
    return 0;
}
