/* Two-tier error handling (STYLE.md):
 * - recoverable failures return -1 (or NULL) and describe themselves in a
 *   caller-provided `struct err`, which the caller shows to the user;
 * - broken invariants abort through CHECK() with the statement and file:line. */
#ifndef INFER_CORE_ERROR_H
#define INFER_CORE_ERROR_H

#include <stdio.h>
#include <stdlib.h>

struct err {
    char msg[1024];
};

/* Formats the message into e (if non-NULL) and returns -1, so callers can
 * write `return err_set(e, "...")`. A second call overwrites the first. */
int err_set(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the existing message: "prefix: old message". Returns -1. */
int err_prefix(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "infer: fatal: CHECK(%s) failed at %s:%d\n", #cond,      \
                    __FILE__, __LINE__);                                             \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* malloc/calloc that abort on exhaustion: host allocations here are small and
 * bounded by validated sizes, so running out is not a recoverable state. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

#endif
