/* The fuzzers' input as a file: the readers under test open paths. */
#ifndef INFER_TESTS_FUZZ_MEMFD_H
#define INFER_TESTS_FUZZ_MEMFD_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes data into an in-memory file and its /proc path into path; the
 * descriptor (close it after), or -1. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, const char *name, char *path, size_t path_size)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < size) {
        ssize_t k = write(fd, data + off, size - off);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    snprintf(path, path_size, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
