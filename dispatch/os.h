/* os.h - every operating-system call of the dispatch model, behind thin
 * wrappers (sockets, epoll, wake pipes, threads, clock, signals).
 *
 * The wrappers the clone has already (listener, recv, TCP_NODELAY, close,
 * clock, sleep, threads, mutexes, condition variables, blocking the stop
 * signals) are server-min/os.h's, linked from server-min/os.c rather than
 * kept as a copy; this header adds what only an epoll model makes.
 *
 * Same rule as server-min/os.h: nothing else in dispatch/ includes a socket,
 * thread, clock or signal header, and errors are reported redis-anet style
 * into a caller buffer ("setsockopt TCP_NODELAY: Bad file descriptor").
 */
#ifndef DISPATCH_OS_H
#define DISPATCH_OS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../server-min/os.h"

/* ---- sockets ---------------------------------------------------------- */

/* Each THorseEpollWorker opens its own listener: os_tcp_listen_flags with
 * OS_LISTEN_NONBLOCK | OS_LISTEN_REUSEPORT (the kernel spreads connections
 * over the listeners). */

/* accept4(SOCK_NONBLOCK|SOCK_CLOEXEC), EINTR retried.  -1 with errno kept
 * (EAGAIN when the backlog is empty). */
int os_accept_nb(int listen_fd);

/* Write all of buf with MSG_NOSIGNAL; on EAGAIN wait for POLLOUT at most
 * timeout_ms per wait.  0 when all was sent, -1 otherwise (err filled). */
int os_send_all(char *err, int fd, const void *buf, size_t len, int timeout_ms);

/* ---- epoll and wake-up pipes ------------------------------------------ */

#define OS_EV_IN      0x001u
#define OS_EV_ERR     0x008u
#define OS_EV_HUP     0x010u
#define OS_EV_RDHUP   0x2000u
#define OS_EV_ONESHOT 0x40000000u

struct os_event {
    uint32_t events;
    void *ptr;
};

int os_epoll_new(char *err);
int os_epoll_add(char *err, int ep, int fd, uint32_t events, void *ptr);
int os_epoll_mod(char *err, int ep, int fd, uint32_t events, void *ptr);
int os_epoll_del(int ep, int fd);
/* epoll_wait; an interrupted wait returns 0 events.  -1 on a real error. */
int os_epoll_wait(int ep, struct os_event *evs, int max, int timeout_ms);

/* A non-blocking, close-on-exec pipe (THorseEpollWorker's FPipeFds). */
int os_pipe_nb(char *err, int fds[2]);
/* One byte into the pipe; a full pipe already means "wake up". */
void os_pipe_poke(int wfd);
/* Read the pipe empty. */
void os_pipe_drain(int rfd);

/* ---- threads ---------------------------------------------------------- */

/* Detached: the thread's resources go when it returns (retired pool
 * workers are never joined). */
int os_thread_start_detached(char *err, void *(*fn)(void *), void *arg);

/* ---- process ---------------------------------------------------------- */

/* Ignore SIGPIPE and block SIGINT/SIGTERM in the calling thread
 * (os_block_stop_signals); threads started afterwards inherit the mask, so
 * only os_wait_stop_signal sees them.  Call once in main before any thread
 * starts. */
void os_take_stop_signals(void);
/* Wait for SIGINT or SIGTERM; returns the signal number. */
int os_wait_stop_signal(void);

#endif
