/* common/util.h - the two helpers every kit program needs: die() and the
 * allocation wrappers that die instead of returning NULL.
 *
 *   die("fopen %s: %s", path, strerror(errno));   // prints the line, exit(1)
 *   p = xrealloc(p, n);                           // never returns NULL
 *   v = xreallocarray(v, count, sizeof *v);       // count * size checked
 *
 * Messages are one line on stderr in redis-anet style ("what: why"); the
 * out-of-memory message names the program (program_invocation_short_name). */
#ifndef KIT_COMMON_UTIL_H
#define KIT_COMMON_UTIL_H

#include <stddef.h>

/* Print fmt (a newline is appended) to stderr and exit(1). */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

/* realloc that dies with "<prog>: out of memory (N bytes)"; n == 0 is
 * treated as 1 so the result is never NULL. */
void *xrealloc(void *p, size_t n);

/* xrealloc(p, n * size) that dies if the product overflows. */
void *xreallocarray(void *p, size_t n, size_t size);

#endif
