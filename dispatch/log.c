/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

void log_line(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n] = '\n';
    /* One locked stdio call per line: lines stay whole across threads. */
    flockfile(stderr);
    fwrite(buf, 1, (size_t)n + 1, stderr);
    fflush(stderr);
    funlockfile(stderr);
}
