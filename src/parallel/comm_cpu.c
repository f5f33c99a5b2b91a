/* The CPU communicator (comm_cpu.h). Layout of the segment: a header (the
 * barrier), then size slots of slot_bytes. The barrier is a generation
 * counter: the last rank to arrive resets the count, bumps the generation
 * and wakes the others (futex on shared memory, so threads and processes
 * alike); waiters sleep at most a second at a time. */
#include "parallel/comm_cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "parallel/shm.h"

struct shm_hdr {
    _Atomic uint32_t arrived;
    _Atomic uint32_t generation;
    uint32_t size;
    uint64_t slot_bytes;
};

struct comm_cpu {
    struct comm c;
    struct shm_hdr *hdr;
    char *slots; /* size * slot_bytes */
    size_t map_bytes, slot_bytes;
    char name[64];
};

static size_t header_bytes(void) { return 4096; }

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
    struct timespec ts = {1, 0};
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr) { syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0); }

static void barrier(struct comm_cpu *cc)
{
    struct shm_hdr *h = cc->hdr;
    const uint32_t gen = atomic_load(&h->generation);
    if (atomic_fetch_add(&h->arrived, 1) + 1 == h->size) {
        atomic_store(&h->arrived, 0);
        atomic_fetch_add(&h->generation, 1);
        futex_wake_all(&h->generation);
        return;
    }
    while (atomic_load(&h->generation) == gen)
        futex_wait(&h->generation, gen);
}

static float *slot(struct comm_cpu *cc, int r) { return (float *)(cc->slots + (size_t)r * cc->slot_bytes); }

static void cpu_all_reduce(struct comm *c, void *buf, size_t n, enum dtype dt, void *stream)
{
    (void)stream;
    CHECK(dt == DTYPE_F32);
    struct comm_cpu *cc = c->impl;
    float *x = buf;
    const size_t chunk = cc->slot_bytes / sizeof(float);
    for (size_t at = 0; at < n; at += chunk) {
        const size_t k = n - at < chunk ? n - at : chunk;
        memcpy(slot(cc, c->rank), x + at, k * sizeof(float));
        barrier(cc);
        /* in rank order: every rank adds the same numbers in the same order */
        for (size_t i = 0; i < k; i++) {
            float s = 0.f;
            for (int r = 0; r < c->size; r++)
                s += slot(cc, r)[i];
            x[at + i] = s;
        }
        barrier(cc); /* nobody rewrites a slot before every rank has read it */
    }
}

static void cpu_gather_cols(struct comm *c, float *out, const float *in, int rows, int cols, void *stream)
{
    (void)stream;
    struct comm_cpu *cc = c->impl;
    const size_t row_bytes = (size_t)cols * sizeof(float);
    CHECK(row_bytes <= cc->slot_bytes);
    const int per = (int)(cc->slot_bytes / row_bytes); /* rows a slot holds */
    for (int at = 0; at < rows; at += per) {
        const int k = rows - at < per ? rows - at : per;
        memcpy(slot(cc, c->rank), in + (size_t)at * cols, (size_t)k * row_bytes);
        barrier(cc);
        for (int r = 0; c->rank == 0 && r < c->size; r++)
            for (int i = 0; i < k; i++)
                memcpy(out + ((size_t)(at + i) * c->size + r) * cols, slot(cc, r) + (size_t)i * cols, row_bytes);
        barrier(cc);
    }
}

static void cpu_comm_free(struct comm *c)
{
    if (!c)
        return;
    struct comm_cpu *cc = c->impl;
    munmap(cc->hdr, cc->map_bytes);
    if (c->rank == 0)
        shm_unlink(cc->name); /* gone already when every rank attached and comm_cpu_unlink ran */
    free(cc);
}

static const struct comm_ops cpu_comm_ops = {.all_reduce = cpu_all_reduce, .gather_cols = cpu_gather_cols, .free = cpu_comm_free};

void comm_cpu_name(char *out, size_t size) { shm_segment_name("tp", out, size); }

void comm_cpu_unlink(const char *name) { shm_unlink(name); }

struct comm *comm_cpu_create(const char *name, int rank, int size, size_t slot_bytes, struct err *e)
{
    if (size < 1 || rank < 0 || rank >= size || slot_bytes < 4096 || strlen(name) >= 64) {
        err_set(e, "cpu communicator: rank %d of %d with %zu-byte slots named '%s' is not a group", rank, size,
                slot_bytes, name);
        return NULL;
    }
    slot_bytes &= ~(size_t)63;
    const size_t bytes = header_bytes() + (size_t)size * slot_bytes;
    size_t mapped = bytes;
    void *p = shm_segment_map("cpu communicator", name, rank == 0, &mapped, e);
    if (!p)
        return NULL;
    if (mapped != bytes) {
        err_set(e, "cpu communicator: '%s' holds %zu bytes, not the %zu of %d ranks' %zu-byte slots", name, mapped,
                bytes, size, slot_bytes);
        munmap(p, mapped);
        return NULL;
    }
    struct comm_cpu *cc = xcalloc(1, sizeof *cc);
    cc->hdr = p;
    cc->slots = (char *)p + header_bytes();
    cc->map_bytes = bytes;
    cc->slot_bytes = slot_bytes;
    snprintf(cc->name, sizeof cc->name, "%s", name);
    if (rank == 0) {
        cc->hdr->size = (uint32_t)size;
        cc->hdr->slot_bytes = slot_bytes;
    } else if (cc->hdr->size != (uint32_t)size || cc->hdr->slot_bytes != slot_bytes) {
        err_set(e, "cpu communicator: '%s' holds a group of %u ranks with %llu-byte slots, not %d and %zu", name,
                cc->hdr->size, (unsigned long long)cc->hdr->slot_bytes, size, slot_bytes);
        munmap(p, bytes);
        free(cc);
        return NULL;
    }
    cc->c = (struct comm){&cpu_comm_ops, rank, size, cc};
    return &cc->c;
}
