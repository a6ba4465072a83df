/* common/util.c - die() and dying allocators; see util.h. */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void die(const char *fmt, ...)
{
    /* One write, so the line is not interleaved with another process's. */
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    fflush(stdout);
    fwrite(line, 1, (size_t)n, stderr);
    exit(1);
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die("%s: out of memory (%zu bytes)", program_invocation_short_name, n);
    return q;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        die("%s: out of memory (%zu x %zu bytes overflows)", program_invocation_short_name, n, size);
    return xrealloc(p, n * size);
}
