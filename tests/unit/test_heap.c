/* core/heap.h: memory freed inside a thread's arena, below a block still
 * held (so free() alone cannot shrink the heap), goes back to the system
 * when heap_give_back runs: resident memory falls by most of it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/heap.h"

enum { PIECES = 2048, PIECE = 16 << 10 }; /* 32 MiB in 16 KiB pieces: under glibc's mmap threshold */

static long resident_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, pages = 0;
    cr_assert(f && fscanf(f, "%ld %ld", &size, &pages) == 2);
    fclose(f);
    return pages * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *churn(void *held_out)
{
    char **piece = malloc(PIECES * sizeof *piece);
    for (int i = 0; i < PIECES; i++) {
        piece[i] = malloc(PIECE);
        memset(piece[i], 1, PIECE); /* resident */
    }
    char *held = malloc(64); /* above them: the arena's top stays in use */
    for (int i = 0; i < PIECES; i++)
        free(piece[i]);
    free(piece);
    *(char **)held_out = held;
    return NULL;
}

Test(heap, give_back_returns_freed_pages)
{
    char *held = NULL;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, churn, &held), 0);
    pthread_join(t, NULL);
    const long before = resident_kb();
    heap_give_back();
    const long after = resident_kb();
    free(held);
    cr_assert_gt(before - after, (PIECES * (long)PIECE / 1024) / 2,
                 "resident %ld kB before, %ld kB after: less than half of the %d kB freed went back", before, after,
                 PIECES * PIECE / 1024);
}
