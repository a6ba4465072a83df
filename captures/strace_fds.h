/* strace_fds.h - the strace analyser's fd bookkeeping, for any fd number
 * and any number of processes (the old fixed 65536-entry arrays silently
 * dropped fds >= 65536).  Prefix sf_.
 *
 * fds are per process, but strace -f prints thread ids: a thread made by
 * clone(CLONE_FILES) shares its parent's fd table, anything else (fork,
 * vfork, clone without CLONE_FILES) gets its own.  sf_group() maps a tid to
 * its fd table: 0 (the traced process) unless a fork-like call made it or an
 * ancestor a new process, then that process's first tid.  So (group, fd)
 * names one open socket even when several processes are traced (Wine: the
 * wineserver accepts, the program's threads send and receive), provided the
 * trace includes the clone/fork calls; without them every tid is taken to
 * share one fd table, which is right for a multi-threaded server. */
#ifndef STRACE_FDS_H
#define STRACE_FDS_H

#include "strace_analyse.h"

#include <stddef.h>

struct sf_ent {
    long group, fd;
    long conn;           /* connection index + 1, 0 = none */
    unsigned long inode; /* the socket behind it (strace -y), 0 = unknown */
    int listener;        /* a listening socket */
    /* setsockopt calls seen before we knew what the socket is */
    int pend_nodelay, pend_rcvtimeo, pend_sndtimeo, pend_other;
    char pend_names[128]; /* their option names, comma separated */
    struct selects pend_sel; /* waits on it before we knew */
    long *members;       /* an epoll fd: the fds registered in it */
    size_t nmembers, capmembers;
};

/* A thread was created: child shares parent's fd table if shares_files. */
void sf_clone(long parent_tid, long child_tid, int shares_files);
long sf_group(long tid);

/* The entry of (group, fd); created zeroed when create, else NULL if none. */
struct sf_ent *sf_get(long group, long fd, int create);

/* The fd was closed or reused: forget what it was (keeps epoll lists of
 * other fds intact). */
void sf_reset(struct sf_ent *e);

void sf_epoll_ctl(long group, long epfd, long fd, int add);

void sf_free(void);

#endif
