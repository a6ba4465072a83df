/* probe_net: the probe's only OS-facing module (sockets, poll, clock, sleep,
 * signals).  Kept thin and isolated so a Winsock port replaces one file
 * (DESIGN.md section 8).  Prefix: pn_.
 *
 * Every wait takes an absolute deadline on the monotonic clock, in
 * microseconds; the deadline bounds how long the probe waits and is never a
 * verdict by itself. */
#ifndef PROBE_NET_H
#define PROBE_NET_H

#include <stddef.h>
#include <stdint.h>

/* Result of one bounded I/O operation. */
enum pn_io {
    PN_IO_OK,      /* bytes moved (recv: *got > 0; send: all bytes written) */
    PN_IO_EOF,     /* recv returned 0: the peer's FIN */
    PN_IO_TIMEOUT, /* the deadline passed first */
    PN_IO_ERR      /* a socket error; *err holds errno (ECONNRESET, EPIPE...) */
};

/* Failure of pn_connect, so the caller can tell "cannot run at all"
 * (unresolvable) apart from a refused or timed out connect. */
enum pn_conn_err { PN_CONN_OK = 0, PN_CONN_RESOLVE, PN_CONN_REFUSED, PN_CONN_TIMEOUT };

void pn_init(void);                   /* ignore SIGPIPE process-wide */
int64_t pn_now_us(void);              /* CLOCK_MONOTONIC, microseconds */
void pn_sleep_until_us(int64_t when); /* absolute monotonic sleep, EINTR-safe */

/* Connect a non-blocking, close-on-exec TCP socket.  On failure writes a
 * message like "connect 127.0.0.1:8080: Connection refused" into msg. */
enum pn_conn_err pn_connect(const char *host, const char *port, int64_t deadline_us, int *fd_out,
                            char *msg, size_t msglen);

/* Write all of buf.  *writes counts send() calls that moved bytes, so a
 * caller can prove "one syscall wrote everything". */
enum pn_io pn_send_all(int fd, const void *buf, size_t len, int64_t deadline_us, size_t *sent,
                       int *writes, int *err);

/* One recv() of up to cap bytes, waiting until the deadline for readiness.
 * deadline_us <= now means "only what is already there". */
enum pn_io pn_recv(int fd, void *buf, size_t cap, int64_t deadline_us, size_t *got, int *err);

int pn_local_port(int fd); /* -1 if unknown */
void pn_close(int fd);     /* close, ignoring EINTR (Linux frees the fd anyway) */
const char *pn_strerror(int err);

#endif
