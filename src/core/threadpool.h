/* A fixed pool of worker threads running data-parallel loops (the CPU
 * backend's matmuls and attention). One loop at a time; the calling thread
 * takes part, so a pool of n threads starts n-1 workers. */
#ifndef INFER_CORE_THREADPOOL_H
#define INFER_CORE_THREADPOOL_H

struct threadpool;

/* Called once per chunk [begin, end) of the index range. */
typedef void (*threadpool_fn)(void *ctx, long begin, long end);

/* n_threads <= 0 picks the number of online CPUs. Free with threadpool_free.
 * Its threads park as soon as they wait (for a loop, or for the others). */
struct threadpool *threadpool_create(int n_threads);
/* The same, its threads spinning for spin_ns before they park: for loops
 * that come microseconds apart (a model step's ops). */
struct threadpool *threadpool_create_spinning(int n_threads, long spin_ns);
void threadpool_free(struct threadpool *pool);
int threadpool_size(const struct threadpool *pool);

/* Runs fn over [0, n) split into contiguous chunks of at least min_chunk
 * indices, and returns when every chunk is done. */
void threadpool_for(struct threadpool *pool, long n, long min_chunk, threadpool_fn fn, void *ctx);

#endif
