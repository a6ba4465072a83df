/* strace_analyse.h - pure parsing helpers of the strace analyser.
 *
 * Input is `strace -f -tt -T -s 65535 -o FILE` output: lines of
 *   PID  HH:MM:SS.uuuuuu name(args) = ret [(detail)] <dur>
 *   PID  HH:MM:SS.uuuuuu name(args <unfinished ...>
 *   PID  HH:MM:SS.uuuuuu <... name resumed>rest) = ret <dur>
 *   PID  HH:MM:SS.uuuuuu +++ exited with N +++
 *   PID  HH:MM:SS.uuuuuu --- SIGxxx {...} ---
 * ("[pid N] " prefixes and a missing pid are accepted too.)
 */
#ifndef STRACE_ANALYSE_H
#define STRACE_ANALYSE_H

#include <stddef.h>
#include <stdint.h>

enum st_kind {
    ST_BAD = 0,      /* not an strace line */
    ST_CALL,         /* complete call: name, args, ret, dur */
    ST_UNFINISHED,   /* name, args = the text so far */
    ST_RESUMED,      /* name, args = the rest (up to the closing paren), ret, dur */
    ST_EXIT,         /* +++ exited / killed +++ */
    ST_SIGNAL        /* --- SIG... --- */
};

struct st_line {
    enum st_kind kind;
    long pid;           /* 0 if absent */
    int64_t t_us;       /* time of day in µs, -1 if absent */
    char name[32];
    const char *args;   /* points into the line (not NUL-terminated) */
    size_t args_len;
    long ret;           /* -1 for "= -1 E..." and "= ?" */
    int ret_known;      /* 0 for "= ?" */
    const char *detail; /* text after the return value, e.g. "(Timeout)" */
    size_t detail_len;
    int64_t dur_us;     /* -T field, -1 if absent */
};

/* Parse one line (without the trailing newline). Pure; returns the kind. */
enum st_kind strace_parse_line(const char *line, size_t len, struct st_line *out);

/* Split args at top-level commas (outside quotes, [], {}, ()). Stores up
 * to max (start,len) pairs; returns the total number of args. */
int st_split_args(const char *a, size_t n, const char **starts, size_t *lens, int max);

/* Decode a C-escaped strace string literal starting at s[0] == '"'.
 * Writes up to cap bytes to out; returns the decoded length (which may
 * exceed cap), sets *used to the characters consumed including the quotes
 * and a trailing "..." if present, or returns -1 if not a string. */
long st_unescape(const char *s, size_t n, unsigned char *out, size_t cap, size_t *used);

/* Decode all the data strings of a write/read-like call's args:
 * the first string literal for read, write, send and recv calls, every
 * iov_base="..." for writev/readv/sendmsg/recvmsg. Returns a malloc'd
 * buffer (caller frees) and its length in *len; NULL if none. */
unsigned char *st_call_data(const char *name, const char *args, size_t n, size_t *len);

/* Parse a timeout argument in ms: "{tv_sec=0, tv_usec=50000}",
 * "{tv_sec=0, tv_nsec=50000000}", "{0, 50000}", a poll int "50",
 * "NULL" -> -1 (infinite). Returns -2 if unparseable. */
long st_timeout_ms(const char *s, size_t n, int nsec);

/* 1 if fd appears in the fd set literal "[3 5]" / poll array "[{fd=5, ...}]". */
int st_fdset_has(const char *s, size_t n, long fd);

/* Iterate the fds of such a literal, any size: start with *pos = 0; returns
 * 1 with *fd set, 0 at the end. */
int st_fdset_next(const char *s, size_t n, size_t *pos, long *fd);

/* 1 if name is in the NULL-terminated list. */
int st_is_name(const char *name, const char *const *list);

/* select/poll/epoll waits that covered one fd. */
#define MAX_TIMEOUTS 8
struct selects {
    int count, timed_out, timed_out_buffered;
    long timeouts[MAX_TIMEOUTS]; /* distinct timeouts (ms), first MAX_TIMEOUTS */
    int ntimeouts;
    int64_t max_dur_us, timed_out_dur_us;
};

/* Request heads are counted by common/http_request.h (hq_count_requests). */

#endif
