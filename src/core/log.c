#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

enum log_level log_level_current = LOG_LEVEL_WARN;

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < log_level_current || level >= LOG_LEVEL_OFF)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "infer %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
