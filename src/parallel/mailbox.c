/* The shared-memory mailbox of rank 0's step messages (mailbox.h). */
#include "parallel/mailbox.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "parallel/shm.h"

/* Each rank's words on a cache line of their own: rank 0 polls them while
 * the ranks poll the sequence. */
struct mb_rank {
    _Atomic uint64_t taken; /* the last message this rank copied */
    _Atomic int sleeping;   /* 1: waiting on its connection for a wake-up */
    char pad[52];
};

struct mb_hdr {
    _Atomic uint64_t seq; /* messages posted */
    uint32_t kind;        /* of the last one */
    uint32_t ranks;
    uint64_t size; /* of the last one, in bytes */
    uint64_t capacity;
    char pad[32];
    struct mb_rank rank[MAILBOX_MAX_RANKS];
};

struct mailbox {
    struct mb_hdr *h;
    char *data;
    size_t map_bytes;
    int rank;
    uint64_t seen; /* rank >= 1: messages taken */
};

static size_t header_bytes(void) { return (sizeof(struct mb_hdr) + 4095) & ~(size_t)4095; }

void mailbox_name(char *out, size_t size) { shm_segment_name("relay", out, size); }

/* Rank 0 creates and sizes the segment; the others map it as it is. */
static struct mailbox *map(const char *name, int rank, size_t capacity, struct err *e)
{
    size_t bytes = header_bytes() + capacity;
    void *p = shm_segment_map("relay mailbox", name, rank == 0, &bytes, e);
    if (!p)
        return NULL;
    if (bytes < header_bytes() || bytes - header_bytes() < ((struct mb_hdr *)p)->capacity) {
        err_set(e, "relay mailbox: '%s' holds %zu bytes, less than its header says", name, bytes);
        munmap(p, bytes);
        return NULL;
    }
    struct mailbox *m = xcalloc(1, sizeof *m);
    m->h = p;
    m->data = (char *)p + header_bytes();
    m->map_bytes = bytes;
    m->rank = rank;
    return m;
}

struct mailbox *mailbox_create(const char *name, int ranks, size_t capacity, struct err *e)
{
    if (ranks < 2 || ranks > MAILBOX_MAX_RANKS || capacity < 64) {
        err_set(e, "relay mailbox: %d ranks with %zu bytes a message is not a group", ranks, capacity);
        return NULL;
    }
    struct mailbox *m = map(name, 0, capacity, e);
    if (m) {
        m->h->ranks = (uint32_t)ranks;
        m->h->capacity = capacity;
    }
    return m;
}

struct mailbox *mailbox_open(const char *name, int rank, struct err *e)
{
    if (rank < 1 || rank >= MAILBOX_MAX_RANKS) {
        err_set(e, "relay mailbox: rank %d cannot open '%s'", rank, name);
        return NULL;
    }
    struct mailbox *m = map(name, rank, 0, e);
    if (m && (uint32_t)rank >= m->h->ranks) {
        err_set(e, "relay mailbox: rank %d is not one of '%s''s %u ranks", rank, name, m->h->ranks);
        mailbox_free(m);
        return NULL;
    }
    if (m) /* what it has taken (none yet): a message posted before it opened is still its next */
        m->seen = atomic_load(&m->h->rank[rank].taken);
    return m;
}

void mailbox_unlink(const char *name) { shm_unlink(name); }

void mailbox_free(struct mailbox *m)
{
    if (!m)
        return;
    munmap(m->h, m->map_bytes);
    free(m);
}

size_t mailbox_capacity(const struct mailbox *m) { return m->h->capacity; }
int mailbox_ranks(const struct mailbox *m) { return (int)m->h->ranks; }

void mailbox_post(struct mailbox *m, uint32_t kind, const void *msg, size_t n)
{
    struct mb_hdr *h = m->h;
    const uint64_t seq = atomic_load(&h->seq);
    for (uint32_t r = 1; r < h->ranks; r++) /* a rank that died ends the group (the watchdog) */
        for (long spins = 0; atomic_load(&h->rank[r].taken) != seq; spins++)
            spins < 4096 ? mailbox_pause() : (void)sched_yield();
    h->kind = kind;
    h->size = n;
    if (n <= h->capacity && n)
        memcpy(m->data, msg, n);
    atomic_store(&h->seq, seq + 1);
}

int mailbox_sleeping(const struct mailbox *m, int r) { return atomic_load(&m->h->rank[r].sleeping); }

int mailbox_peek(struct mailbox *m, uint32_t *kind, size_t *n)
{
    if (atomic_load(&m->h->seq) == m->seen)
        return 0;
    *kind = m->h->kind;
    *n = m->h->size;
    return 1;
}

void mailbox_take(struct mailbox *m, void *out)
{
    if (out && m->h->size)
        memcpy(out, m->data, m->h->size);
    m->seen++;
    atomic_store(&m->h->rank[m->rank].taken, m->seen);
}

int mailbox_sleep(struct mailbox *m)
{
    atomic_store(&m->h->rank[m->rank].sleeping, 1);
    if (atomic_load(&m->h->seq) == m->seen)
        return 0;
    atomic_store(&m->h->rank[m->rank].sleeping, 0);
    return 1;
}

void mailbox_awake(struct mailbox *m) { atomic_store(&m->h->rank[m->rank].sleeping, 0); }
