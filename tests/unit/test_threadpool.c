/* core/threadpool: every index of every loop runs exactly once, in pools
 * that park at once and pools that spin first, across loops back to back
 * (a spinning pool's workers spinning), loops after a pause longer than the
 * spin (the workers parked and woken: a lost wake-up hangs the test, which
 * criterion's timeout fails), pools of 1 to 5 threads, and a pool freed
 * while its workers spin and while they are parked. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/threadpool.h"

struct visit {
    atomic_int *count;
    atomic_long calls;
};

static void mark(void *ctx, long begin, long end)
{
    struct visit *v = ctx;
    for (long i = begin; i < end; i++)
        atomic_fetch_add(&v->count[i], 1);
    atomic_fetch_add(&v->calls, 1);
}

enum { SPIN_NS = 200000 };

static void run_loops_spin(int threads, int loops, int pause_us, long spin_ns)
{
    struct threadpool *p = spin_ns ? threadpool_create_spinning(threads, spin_ns) : threadpool_create(threads);
    cr_assert_eq(threadpool_size(p), threads);
    enum { MAX_N = 5000 };
    atomic_int *count = calloc(MAX_N, sizeof *count);
    for (int l = 0; l < loops; l++) {
        const long n = 1 + (l * 7919L) % MAX_N, min_chunk = 1 + l % 17;
        for (long i = 0; i < n; i++)
            atomic_store(&count[i], 0);
        struct visit v = {count, 0};
        threadpool_for(p, n, min_chunk, mark, &v);
        for (long i = 0; i < n; i++)
            cr_assert_eq(atomic_load(&count[i]), 1, "%d threads, loop %d: index %ld of %ld ran %d times", threads, l,
                         i, n, atomic_load(&count[i]));
        cr_assert_geq(atomic_load(&v.calls), 1);
        if (pause_us)
            usleep((useconds_t)pause_us);
    }
    free(count);
    threadpool_free(p);
}

static void run_loops(int threads, int loops, int pause_us)
{
    run_loops_spin(threads, loops, pause_us, 0);
    run_loops_spin(threads, loops, pause_us, SPIN_NS);
}

Test(threadpool, back_to_back_loops, .timeout = 60)
{
    for (int t = 1; t <= 5; t++)
        run_loops(t, 2000, 0);
}

Test(threadpool, loops_after_the_workers_park, .timeout = 60)
{
    for (int t = 2; t <= 4; t++)
        run_loops(t, 40, 3000); /* 3 ms: past the spin, the workers are parked */
}

Test(threadpool, freed_while_spinning_or_parked, .timeout = 60)
{
    for (int i = 0; i < 50; i++) {
        run_loops(3, 1, 0);    /* freed right after a loop: spinning */
        run_loops(3, 1, 2000); /* freed after a pause past the spin: parked */
    }
}

Test(threadpool, empty_loop_runs_nothing)
{
    struct threadpool *p = threadpool_create(3);
    struct visit v = {NULL, 0};
    threadpool_for(p, 0, 1, mark, &v);
    cr_assert_eq(atomic_load(&v.calls), 0);
    threadpool_free(p);
}
