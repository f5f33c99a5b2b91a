#include "core/error.h"

#include <stdarg.h>
#include <string.h>

int err_set(struct err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int err_prefix(struct err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char prefix[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t n = strnlen(prefix, sizeof e->msg - 3);
    memcpy(e->msg, prefix, n);
    memcpy(e->msg + n, ": ", 2);
    size_t room = sizeof e->msg - n - 3;
    size_t m = strnlen(old, room);
    memcpy(e->msg + n + 2, old, m);
    e->msg[n + 2 + m] = '\0';
    return -1;
}

static void *oom(size_t n)
{
    fprintf(stderr, "infer: fatal: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    return p ? p : oom(count * size);
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}
