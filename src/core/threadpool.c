/* Waiting, both ways (a worker for the next loop, the caller for its
 * workers), spins for the pool's spin time, then parks on a condition
 * variable. A model step runs a loop per op a few microseconds apart, and
 * a thread woken from a condition variable starts tens of microseconds
 * late, about what the fast CPU path's small matmuls take: its pool spins
 * (threadpool_create_spinning). A pool that does not spin parks at once and
 * leaves the cores to other threads, which is what the reference backend
 * and the grammar masks want. Chunks are claimed with an atomic counter. */
#include "core/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"

struct threadpool {
    int n_threads;
    long spin_ns;
    pthread_t *workers;
    pthread_mutex_t mu;
    /* bumped for every loop (after the loop's fields are written); workers wait for a change */
    atomic_ulong generation;
    atomic_int shutdown;
    atomic_int workers_parked; /* on work_cv, or about to be */
    pthread_cond_t work_cv;
    atomic_int caller_parked; /* on done_cv */
    pthread_cond_t done_cv;
    /* the current loop */
    threadpool_fn fn;
    void *ctx;
    long n, chunk;
    atomic_long next;
    atomic_int pending; /* workers that have not yet finished this generation */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Claims chunks until none are left. */
static void run_chunks(struct threadpool *p)
{
    for (;;) {
        const long begin = atomic_fetch_add_explicit(&p->next, p->chunk, memory_order_relaxed);
        if (begin >= p->n)
            return;
        p->fn(p->ctx, begin, begin + p->chunk < p->n ? begin + p->chunk : p->n);
    }
}

static int work_came(struct threadpool *p, unsigned long seen)
{
    return atomic_load(&p->generation) != seen || atomic_load(&p->shutdown);
}

static int loop_done(struct threadpool *p, unsigned long unused)
{
    (void)unused;
    return atomic_load(&p->pending) == 0;
}

/* Returns once ready(p, arg): spinning for the pool's spin time, then
 * parked on cv. The thread that makes it ready calls notify with the same
 * parked and cv: it changes the state first, then reads parked, and this
 * side counts itself parked first, then reads the state (all seq_cst), so
 * one of the two sees the other and no wake-up is lost. */
static void wait_until(struct threadpool *p, int (*ready)(struct threadpool *, unsigned long), unsigned long arg,
                       atomic_int *parked, pthread_cond_t *cv)
{
    if (p->spin_ns > 0) {
        const double until = clock_now() + (double)p->spin_ns * 1e-9;
        for (int i = 0; !ready(p, arg); i++) {
            cpu_relax();
            if ((i & 255) == 255 && clock_now() > until)
                break;
        }
    }
    if (ready(p, arg))
        return;
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(parked, 1);
    while (!ready(p, arg))
        pthread_cond_wait(cv, &p->mu);
    atomic_fetch_sub(parked, 1);
    pthread_mutex_unlock(&p->mu);
}

static void notify(struct threadpool *p, atomic_int *parked, pthread_cond_t *cv)
{
    if (atomic_load(parked) == 0)
        return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(&p->mu);
}

static void *worker_main(void *arg)
{
    struct threadpool *p = arg;
    unsigned long seen = 0;
    for (;;) {
        wait_until(p, work_came, seen, &p->workers_parked, &p->work_cv);
        if (atomic_load(&p->shutdown))
            return NULL;
        seen = atomic_load(&p->generation);
        run_chunks(p);
        if (atomic_fetch_sub(&p->pending, 1) == 1)
            notify(p, &p->caller_parked, &p->done_cv);
    }
}

struct threadpool *threadpool_create_spinning(int n_threads, long spin_ns)
{
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    struct threadpool *p = xcalloc(1, sizeof *p);
    p->n_threads = n_threads;
    p->spin_ns = spin_ns > 0 ? spin_ns : 0;
    CHECK(pthread_mutex_init(&p->mu, NULL) == 0);
    CHECK(pthread_cond_init(&p->work_cv, NULL) == 0);
    CHECK(pthread_cond_init(&p->done_cv, NULL) == 0);
    p->workers = xcalloc((size_t)n_threads, sizeof *p->workers);
    for (int i = 0; i < n_threads - 1; i++)
        CHECK(pthread_create(&p->workers[i], NULL, worker_main, p) == 0);
    return p;
}

struct threadpool *threadpool_create(int n_threads) { return threadpool_create_spinning(n_threads, 0); }

void threadpool_free(struct threadpool *p)
{
    if (!p)
        return;
    atomic_store(&p->shutdown, 1);
    notify(p, &p->workers_parked, &p->work_cv);
    for (int i = 0; i < p->n_threads - 1; i++)
        pthread_join(p->workers[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->workers);
    free(p);
}

int threadpool_size(const struct threadpool *p) { return p->n_threads; }

void threadpool_for(struct threadpool *p, long n, long min_chunk, threadpool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (min_chunk < 1)
        min_chunk = 1;
    /* a few chunks per thread balances uneven chunks at one atomic add each */
    long chunk = (n + (long)p->n_threads * 4 - 1) / ((long)p->n_threads * 4);
    if (chunk < min_chunk)
        chunk = min_chunk;
    if (p->n_threads == 1 || chunk >= n) {
        fn(ctx, 0, n);
        return;
    }
    p->fn = fn; /* no worker reads these before the bump below */
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add(&p->generation, 1);
    notify(p, &p->workers_parked, &p->work_cv);
    run_chunks(p);
    wait_until(p, loop_done, 0, &p->caller_parked, &p->done_cv);
}
