/* os.h - every operating-system call server-min makes, behind thin wrappers.
 *
 * Why one module: fphttpserver runs on Windows too (DESIGN section 8), and a
 * Winsock2 port of the clone should be this one file's work.  Nothing else in
 * server-min includes a socket, thread, clock or signal header.
 *
 * Errors follow redis anet.c: functions return -1 and fill a caller-owned
 * error buffer with "what: strerror" (e.g. "setsockopt TCP_NODELAY: Bad file
 * descriptor").
 *
 * dispatch/ (the epoll model) links os.c too instead of keeping a copy of
 * the generic wrappers (listener, recv, threads, clock); dispatch/os.h adds
 * the calls only it makes.  What it needs beyond upstream is opt-in, so
 * server-min's own calls stay as upstream makes them.
 */
#ifndef SERVER_MIN_OS_H
#define SERVER_MIN_OS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define OS_ERR_LEN 256

/* Fill err (OS_ERR_LEN bytes; NULL: nothing) with a printf-style message,
 * "what: why".  Public for modules that add calls of their own. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void os_set_error(char *err, const char *fmt, ...);

/* ---- sockets ---------------------------------------------------------- */

/* TInetServer.Bind + Listen: socket, SO_REUSEADDR (upstream sets it on the
 * listener and nowhere else), bind, listen.  *bound_port receives the real
 * port when 0 was asked for. */
int os_tcp_listen(char *err, const char *address, int port, int backlog,
                  int *bound_port);

/* os_tcp_listen with what upstream never asks for (dispatch/ does):
 * OS_LISTEN_NONBLOCK, a non-blocking listener; OS_LISTEN_REUSEPORT,
 * SO_REUSEPORT after SO_REUSEADDR (one listener per event loop, the kernel
 * spreading connections over them).  flags 0 is os_tcp_listen. */
#define OS_LISTEN_NONBLOCK  1
#define OS_LISTEN_REUSEPORT 2
int os_tcp_listen_flags(char *err, const char *address, int port, int backlog,
                        int flags, int *bound_port);

/* accept(2).  Returns the fd, or -1 with errno kept (EINTR is returned to the
 * caller so that a stop request can end the blocking accept loop). */
int os_accept(int listen_fd);

/* select(2) for readability of one fd with a timeout in ms (0 = poll and
 * return at once, <0 = wait forever), made as FPC's TSocketHandler.Select
 * makes it: the select system call (strace shows select, as for a real FPC
 * server), nfds = fd + 1, and fpFD_SET's limit: an fd >= FD_SETSIZE is not
 * put in the set, so the call waits the whole time-out on an empty set and
 * says "not readable" (defect B8).  Returns 1 readable, 0 not (timed out),
 * -1 error.  EINTR restarts the wait with the remaining time. */
int os_select_readable(int fd, int timeout_ms);

/* TSocketServer.RunIdleLoop's select: the same set passed as read, write
 * and exception set. */
int os_select_accept(int fd, int timeout_ms);

/* recv(2) with the given flags; retried on EINTR like TSocketHandler.Recv. */
ssize_t os_recv(int fd, void *buf, size_t len, int flags);

/* send(2) with the given flags; retried on EINTR like TSocketHandler.Send.
 * One call, one syscall: callers loop on short writes themselves so that the
 * number of sendto calls stays visible and countable. */
ssize_t os_send(int fd, const void *buf, size_t len, int flags);

/* The MSG_NOSIGNAL flag where the platform has it (SetupSocket). */
int os_msg_nosignal(void);

/* setsockopt(TCP_NODELAY, 1): used only by application-side mitigations and
 * patches, never by the stock clone. */
int os_set_tcp_nodelay(char *err, int fd);

/* SO_RCVTIMEO and SO_SNDTIMEO (TSocketStream.IOTimeout). */
int os_set_io_timeout(char *err, int fd, int timeout_ms);

/* shutdown(SHUT_RDWR): wakes a thread blocked on the fd without freeing the
 * descriptor number under it. */
void os_shutdown(int fd);

/* CloseSocket of a descriptor another thread may be blocked on, as upstream's
 * CloseConnectionSocket does it: the waiting thread is not woken (Linux's
 * close() does not wake a select()/recv() already running; the socket is
 * released, and the peer sees its FIN, once no call holds it any more).
 * Unlike close(), the number stays taken: it is replaced (dup2) by a socket
 * that was never connected, so it cannot be reused by the next accept()
 * under the thread still using it, and the connection's own close later
 * closes that one (upstream's closes the number a second time: EBADF).
 * Anything done with the number afterwards fails as on a closed socket
 * (select() says readable, recv() fails).  Falls back to os_shutdown when
 * that socket cannot be made. */
void os_close_socket_in_use(int fd);

void os_close(int fd);

/* ---- waiting on many sockets at once ----------------------------------
 * Used by no stock routine: the pool and polled fixes wait for their idle
 * connections and the listener with one poll() (upstream: fpPoll, Unix). */

/* poll(2) for readability of n descriptors (fds[i] < 0 is skipped) and of
 * the stop pipe, at most timeout_ms (<0 forever).  POLLIN, POLLHUP and
 * POLLERR count as readable, as select() reports them; ready[i] is set to 1
 * for each readable fds[i], else 0.  Returns how many are readable, 0 on
 * time-out or when a stop was requested, -1 on error (errno).  EINTR
 * restarts the wait with the time left.  No FD_SETSIZE limit. */
int os_poll_readable_set(const int *fds, size_t n, int timeout_ms,
                         unsigned char *ready);

/* A wake-up handle for such a wait: a non-blocking pipe (upstream: fpPipe).
 * fds[0] is polled, os_wake_signal(fds[1]) writes a byte (a full pipe wakes
 * the waiter already), os_wake_drain(fds[0]) reads what is there.  -1 with
 * err filled (and both fds -1) when no pipe can be made. */
int os_wake_open(char *err, int fds[2]);
void os_wake_signal(int fd);
void os_wake_drain(int fd);

/* ---- time ------------------------------------------------------------- */

/* GetTickCount64: a monotonic millisecond clock. */
uint64_t os_tick_ms(void);

/* Sleep for the route /slow and for the thread pool's idle wait. */
void os_sleep_ms(int ms);

/* ---- threads ---------------------------------------------------------- */

/* TThread.ProcessorCount: online processors, at least 1. */
int os_processor_count(void);

typedef struct os_thread os_thread;
typedef struct os_mutex os_mutex;
typedef struct os_cond os_cond;

/* Start a joinable thread; returns NULL with err filled on failure. */
os_thread *os_thread_start(char *err, void *(*fn)(void *), void *arg);
void os_thread_join(os_thread *t);

os_mutex *os_mutex_new(void);
void os_mutex_free(os_mutex *m);
void os_mutex_lock(os_mutex *m);
void os_mutex_unlock(os_mutex *m);

os_cond *os_cond_new(void);
void os_cond_free(os_cond *c);
void os_cond_wait(os_cond *c, os_mutex *m);
/* Wait at most timeout_ms; returns 0 when signalled or spurious, 1 on time-out. */
int os_cond_timedwait(os_cond *c, os_mutex *m, int timeout_ms);
void os_cond_signal(os_cond *c);
void os_cond_broadcast(os_cond *c);

/* ---- signals ---------------------------------------------------------- */

/* SIGPIPE ignored (belt and braces next to MSG_NOSIGNAL); SIGINT/SIGTERM set
 * the flag returned by os_stop_requested() and interrupt a blocking accept();
 * a second SIGINT/SIGTERM ends the process at once (status 3).
 * Worker threads block both signals so that they reach the accepting thread. */
void os_install_stop_signals(void);
int os_stop_requested(void);
void os_request_stop(void);
/* The listening socket a stop must wake (shut down); -1 for none. */
void os_set_stop_wake_fd(int fd);
/* Called by every thread other than the accepting one. */
void os_block_stop_signals(void);
/* Sleep up to ms, waking early on a stop; 1 when a stop was requested. */
int os_stop_wait_ms(int ms);
/* Bounded stop: a detached thread that, ms from now, calls before() and
 * ends the process (status 0) whatever the other threads are doing. */
void os_exit_after(int ms, void (*before)(void));

#endif
