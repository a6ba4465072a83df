/* common/tcpclient.h - the kit's loopback/TCP client helpers.  Prefix tc_.
 * Every OS call a client needs (sockets, poll, the monotonic clock, sleep,
 * SIGPIPE, RLIMIT_NOFILE) sits in this one small module, so a Winsock port
 * replaces one file (DESIGN.md section 8).
 *
 * Sockets are non-blocking and close-on-exec.  Every wait takes an ABSOLUTE
 * deadline on the monotonic clock in microseconds (tc_now_us() + budget): it
 * bounds how long the caller waits and is never a verdict by itself.  EINTR
 * is retried everywhere (connect included), short writes are looped.
 * Errors are redis-anet style one-liners written into the caller's buffer:
 *     "connect 127.0.0.1:8080: Connection refused"
 *     "resolve nosuchhost: Name or service not known"
 *
 *     tc_ignore_sigpipe();
 *     int fd; char msg[256];
 *     if (tc_connect("127.0.0.1", "8080", tc_now_us() + 3000000, &fd, msg, sizeof msg))
 *         die("%s", msg);
 *     if (tc_send_all(fd, req, len, deadline, &sent, &writes, &err) != TC_IO_OK) ...
 *     switch (tc_recv(fd, buf, sizeof buf, deadline, &got, &err)) ...   // one recv
 */
#ifndef KIT_COMMON_TCPCLIENT_H
#define KIT_COMMON_TCPCLIENT_H

#include <stddef.h>
#include <stdint.h>

/* Result of one bounded I/O operation. */
enum tc_io {
    TC_IO_OK,      /* bytes moved (recv: *got > 0; send: all bytes written) */
    TC_IO_EOF,     /* recv returned 0: the peer's FIN */
    TC_IO_TIMEOUT, /* the deadline passed first */
    TC_IO_ERR      /* a socket error; *err holds errno (ECONNRESET, EPIPE...) */
};

/* Why tc_connect failed: "cannot run at all" (unresolvable) is told apart
 * from a refused or timed-out connect. */
enum tc_conn_err { TC_CONN_OK = 0, TC_CONN_RESOLVE, TC_CONN_REFUSED, TC_CONN_TIMEOUT };

void tc_ignore_sigpipe(void);         /* a reset peer is EPIPE data, not a death */
int64_t tc_now_us(void);              /* CLOCK_MONOTONIC, microseconds */
void tc_sleep_until_us(int64_t when); /* absolute monotonic sleep, EINTR-safe */

/* Raise RLIMIT_NOFILE's soft limit to the hard limit; returns the soft limit
 * now in force (-1 if it cannot be read). */
long tc_raise_nofile(void);

/* Connect to host:port (numeric or a name; every address is tried in turn)
 * and wait for the handshake until the deadline.  *fd_out = the socket on
 * success, -1 otherwise, with the message in msg. */
enum tc_conn_err tc_connect(const char *host, const char *port, int64_t deadline_us, int *fd_out,
                            char *msg, size_t msglen);

/* Write all of buf.  *writes (may be NULL) counts send() calls that moved
 * bytes, so a caller can prove "one syscall wrote everything". */
enum tc_io tc_send_all(int fd, const void *buf, size_t len, int64_t deadline_us, size_t *sent,
                       int *writes, int *err);

/* One recv() of up to cap bytes, waiting until the deadline for readiness.
 * deadline_us <= now means "only what is already there". */
enum tc_io tc_recv(int fd, void *buf, size_t cap, int64_t deadline_us, size_t *got, int *err);

/* recv until len bytes, EOF, error or deadline; *got = bytes read. */
enum tc_io tc_read_full(int fd, void *buf, size_t len, int64_t deadline_us, size_t *got, int *err);

/* poll one fd for events until the deadline: 1 ready (POLLHUP/POLLERR
 * included: the next call reports them), 0 deadline, -1 error (*err). */
int tc_wait(int fd, short events, int64_t deadline_us, int *err);

int tc_local_port(int fd); /* -1 if unknown */

/* The accept queue of the listening socket(s) on a local TCP port: how many
 * handshakes the kernel finished that the server has not accept()ed yet
 * (sock_diag, as `ss -lt` shows it in Recv-Q).  -1 when no listener on that
 * port is visible (another host or network namespace).  So a client on the
 * same host can wait until the server took every connection before it
 * judges what the server does with them. */
long tc_listen_queue(int port);

/* The socket on this host at 127.0.0.1:local_port connected to
 * 127.0.0.1:remote_port (a server's end of a client's connection, from the
 * client's side): the bytes it has received and not read yet (its Recv-Q)
 * and, when state is not NULL, its TCP state (TCP_ESTABLISHED,
 * TCP_CLOSE_WAIT ...).  -1 when there is no such socket.  One exact
 * sock_diag lookup, whatever the number of sockets: a poll that read
 * /proc/net/tcp walked and formatted every socket of the host each time. */
long tc_peer_rqueue(int local_port, int remote_port, int *state);
/* The same socket's inode (what /proc/PID/fd/N links to as socket:[inode]),
 * 0 when there is no such socket: lets a caller tell whether a process
 * still holds it after the connection is gone from the kernel's tables. */
unsigned long tc_peer_inode(int local_port, int remote_port);
void tc_close(int fd);     /* close, ignoring EINTR (Linux frees the fd anyway) */

#endif
