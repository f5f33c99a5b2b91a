#include "core/threadpool.h"

#include <pthread.h>
#include <unistd.h>

#include "core/error.h"

struct threadpool {
    int n_threads;
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv;
    unsigned long generation; /* bumped for every loop; workers wait for a change */
    int shutdown;
    /* the current loop */
    threadpool_fn fn;
    void *ctx;
    long n, chunk, next;
    int pending; /* workers that have not yet finished this generation */
};

/* Claims chunks until none are left. */
static void run_chunks(struct threadpool *p)
{
    for (;;) {
        pthread_mutex_lock(&p->mu);
        long begin = p->next;
        p->next += p->chunk;
        pthread_mutex_unlock(&p->mu);
        if (begin >= p->n)
            return;
        long end = begin + p->chunk < p->n ? begin + p->chunk : p->n;
        p->fn(p->ctx, begin, end);
    }
}

static void *worker_main(void *arg)
{
    struct threadpool *p = arg;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->generation == seen && !p->shutdown)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->shutdown) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);

        run_chunks(p);

        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done_cv);
        pthread_mutex_unlock(&p->mu);
    }
}

struct threadpool *threadpool_create(int n_threads)
{
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    struct threadpool *p = xcalloc(1, sizeof *p);
    p->n_threads = n_threads;
    CHECK(pthread_mutex_init(&p->mu, NULL) == 0);
    CHECK(pthread_cond_init(&p->work_cv, NULL) == 0);
    CHECK(pthread_cond_init(&p->done_cv, NULL) == 0);
    p->workers = xcalloc((size_t)n_threads, sizeof *p->workers);
    for (int i = 0; i < n_threads - 1; i++)
        CHECK(pthread_create(&p->workers[i], NULL, worker_main, p) == 0);
    return p;
}

void threadpool_free(struct threadpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
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
    /* a few chunks per thread balances uneven chunks without much locking */
    long chunk = (n + (long)p->n_threads * 4 - 1) / ((long)p->n_threads * 4);
    if (chunk < min_chunk)
        chunk = min_chunk;
    if (p->n_threads == 1 || chunk >= n) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    p->next = 0;
    p->pending = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);

    run_chunks(p);

    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
