/* os.h - every operating-system call of the dispatch model, behind thin
 * wrappers (sockets, epoll, wake pipes, threads, clock, signals).
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

#define OS_ERR_LEN 256

/* ---- sockets ---------------------------------------------------------- */

/* A non-blocking listener with SO_REUSEADDR and SO_REUSEPORT, as each
 * THorseEpollWorker opens its own (the kernel spreads connections over the
 * listeners).  port 0 = any free port; *bound_port receives the real one. */
int os_listen_reuseport(char *err, const char *address, int port, int backlog,
                        int *bound_port);

/* accept4(SOCK_NONBLOCK|SOCK_CLOEXEC), EINTR retried.  -1 with errno kept
 * (EAGAIN when the backlog is empty). */
int os_accept_nb(int listen_fd);

int os_set_tcp_nodelay(char *err, int fd);

/* recv(2), EINTR retried.  -1 with errno kept (EAGAIN included). */
ssize_t os_recv(int fd, void *buf, size_t len);

/* Write all of buf with MSG_NOSIGNAL; on EAGAIN wait for POLLOUT at most
 * timeout_ms per wait.  0 when all was sent, -1 otherwise (err filled). */
int os_send_all(char *err, int fd, const void *buf, size_t len, int timeout_ms);

void os_close(int fd);

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

/* ---- time ------------------------------------------------------------- */

uint64_t os_tick_ms(void);
/* Sleep the whole time even across signals (the /slow route). */
void os_sleep_ms(long ms);

/* ---- threads ---------------------------------------------------------- */

typedef struct os_thread os_thread;
typedef struct os_mutex os_mutex;
typedef struct os_cond os_cond;

os_thread *os_thread_start(char *err, void *(*fn)(void *), void *arg);
/* Detached: the thread's resources go when it returns (retired pool
 * workers are never joined). */
int os_thread_start_detached(char *err, void *(*fn)(void *), void *arg);
void os_thread_join(os_thread *t);

os_mutex *os_mutex_new(void);
void os_mutex_free(os_mutex *m);
void os_mutex_lock(os_mutex *m);
void os_mutex_unlock(os_mutex *m);

os_cond *os_cond_new(void);
void os_cond_free(os_cond *c);
void os_cond_wait(os_cond *c, os_mutex *m);
/* 0 when signalled (or spurious), 1 when timeout_ms passed. */
int os_cond_timedwait(os_cond *c, os_mutex *m, int timeout_ms);
void os_cond_signal(os_cond *c);
void os_cond_broadcast(os_cond *c);

/* ---- process ---------------------------------------------------------- */

int os_cpu_count(void);

/* Ignore SIGPIPE and block SIGINT/SIGTERM in the calling thread; threads
 * started afterwards inherit the mask, so only os_wait_stop_signal sees
 * them.  Call once in main before any thread starts. */
void os_block_stop_signals(void);
/* Wait for SIGINT or SIGTERM; returns the signal number. */
int os_wait_stop_signal(void);

#endif
