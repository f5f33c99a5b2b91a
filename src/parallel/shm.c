/* Named shared-memory segments (shm.h). */
#include "parallel/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void shm_segment_name(const char *what, char *out, size_t size)
{
    static _Atomic unsigned seq;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(out, size, "/infer-%s-%d-%u-%ld", what, (int)getpid(), atomic_fetch_add(&seq, 1), (long)ts.tv_nsec);
}

void *shm_segment_map(const char *who, const char *name, int create, size_t *bytes, struct err *e)
{
    int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0600);
    if (fd < 0) {
        err_set(e, "%s: shm_open('%s'): %s", who, name, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (!create && fstat(fd, &st) != 0) {
        err_set(e, "%s: the size of '%s': %s", who, name, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!create)
        *bytes = (size_t)st.st_size;
    else if (ftruncate(fd, (off_t)*bytes) != 0) {
        err_set(e, "%s: sizing '%s' to %zu bytes: %s", who, name, *bytes, strerror(errno));
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    void *p = *bytes ? mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    const int why = errno;
    close(fd);
    if (p == MAP_FAILED) {
        err_set(e, "%s: mapping '%s' (%zu bytes): %s", who, name, *bytes, *bytes ? strerror(why) : "empty");
        if (create)
            shm_unlink(name);
        return NULL;
    }
    return p;
}
