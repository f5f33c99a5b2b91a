/* Rank 0's step messages to the other ranks of its machine through shared
 * memory (group.c's relay uses it where it can; the control connections
 * carry the rest). One message at a time: rank 0 posts it once and every
 * local rank copies it; rank 0 posts the next only when each has taken the
 * last. A rank waiting for a message polls the sequence word; one that
 * stops polling says so (mailbox_sleep) and rank 0 then wakes it over its
 * connection (mailbox_sleeping): a sequence store and a flag store each
 * followed by the other side's load (all sequentially consistent), so one
 * of the two always sees the other and no message goes unnoticed. */
#ifndef INFER_PARALLEL_MAILBOX_H
#define INFER_PARALLEL_MAILBOX_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

enum { MAILBOX_MAX_RANKS = 64 };

struct mailbox;

/* A name for a new segment, unique on this machine. */
void mailbox_name(char *out, size_t size);

/* Rank 0: a new segment for ranks [1, ranks) with room for capacity bytes a
 * message. NULL with e set on failure. */
struct mailbox *mailbox_create(const char *name, int ranks, size_t capacity, struct err *e);
/* Rank r (1 <= r < the creator's ranks) of the same machine. */
struct mailbox *mailbox_open(const char *name, int rank, struct err *e);
/* Every rank has it open: the name can go. */
void mailbox_unlink(const char *name);
void mailbox_free(struct mailbox *m);

size_t mailbox_capacity(const struct mailbox *m);
int mailbox_ranks(const struct mailbox *m);

/* Rank 0: waits until every rank has taken the last message, then posts
 * this one: its kind and size, and its bytes where they fit (else the
 * caller sends them on each connection). */
void mailbox_post(struct mailbox *m, uint32_t kind, const void *msg, size_t n);
/* Rank 0, after a post: whether rank r said it sleeps (wake it). */
int mailbox_sleeping(const struct mailbox *m, int r);

/* Rank r: 1, with its kind and size, when a message it has not taken is
 * posted; else 0. */
int mailbox_peek(struct mailbox *m, uint32_t *kind, size_t *n);
/* Rank r: copies the message peeked at into out (NULL: its bytes came on
 * the connection) and marks it taken. */
void mailbox_take(struct mailbox *m, void *out);
/* Rank r: about to sleep until woken. 0: it sleeps now (rank 0 will wake
 * it); 1: a message came meanwhile (it does not sleep). */
int mailbox_sleep(struct mailbox *m);
/* Rank r: woken (or done waiting): no longer sleeping. */
void mailbox_awake(struct mailbox *m);

/* A spin-wait's pause between two polls of the mailbox (x86 PAUSE). */
static inline void mailbox_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#endif
