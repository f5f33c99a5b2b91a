#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

enum log_level log_level_current = LOG_LEVEL_WARN;
static char log_tag[32]; /* set once at start-up */

void log_set_tag(const char *tag) { snprintf(log_tag, sizeof log_tag, "%s", tag); }

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < log_level_current || level >= LOG_LEVEL_OFF)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (log_tag[0])
        fprintf(stderr, "infer %s %s: ", log_tag, names[level]);
    else
        fprintf(stderr, "infer %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
