/* log.h - the server's stderr log: one line per event, written whole so that
 * lines from several connection threads never interleave. */
#ifndef SERVER_MIN_LOG_H
#define SERVER_MIN_LOG_H

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void log_line(const char *fmt, ...);

#endif
