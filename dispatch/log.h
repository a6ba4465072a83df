/* log.h - one whole line to stderr per call, safe across threads. */
#ifndef DISPATCH_LOG_H
#define DISPATCH_LOG_H

void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
