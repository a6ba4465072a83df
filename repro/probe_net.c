/* probe_net: thin POSIX wrappers; see probe_net.h for why they are isolated. */
#include "probe_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* SIGPIPE is ignored in pn_init anyway */
#endif

void pn_init(void)
{
    /* A write to a socket the server has reset must become EPIPE data, not
     * kill the probe; MSG_NOSIGNAL covers send(), this covers everything. */
    signal(SIGPIPE, SIG_IGN);
}

int64_t pn_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void pn_sleep_until_us(int64_t when)
{
    struct timespec ts = {.tv_sec = (time_t)(when / 1000000), .tv_nsec = (long)(when % 1000000) * 1000};
    /* Absolute time so an EINTR restart does not stretch the gap. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Milliseconds to hand poll(): rounded up so poll never returns just before
 * the deadline and makes us spin; capped to int. */
static int pn_poll_ms(int64_t deadline_us)
{
    int64_t left = deadline_us - pn_now_us();
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999) / 1000;
    return ms > 1000000000 ? 1000000000 : (int)ms;
}

/* Wait for events on fd until the deadline: 1 ready, 0 timeout, -1 error. */
static int pn_wait(int fd, short events, int64_t deadline_us, int *err)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, pn_poll_ms(deadline_us));
        if (r > 0)
            return 1; /* includes POLLHUP/POLLERR: the next syscall reports it */
        if (r == 0) {
            if (pn_now_us() >= deadline_us)
                return 0;
            continue; /* rounding: poll woke early */
        }
        if (errno == EINTR)
            continue;
        *err = errno;
        return -1;
    }
}

static int pn_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

enum pn_conn_err pn_connect(const char *host, const char *port, int64_t deadline_us, int *fd_out,
                            char *msg, size_t msglen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        snprintf(msg, msglen, "resolve %s: %s", host, gai_strerror(gai));
        return PN_CONN_RESOLVE;
    }
    enum pn_conn_err result = PN_CONN_REFUSED;
    int last_err = ECONNREFUSED;
    *fd_out = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last_err = errno;
            continue;
        }
        if (pn_set_nonblock(fd) < 0) {
            last_err = errno;
            pn_close(fd);
            continue;
        }
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (r < 0 && (errno == EINPROGRESS || errno == EINTR)) {
            /* EINTR on connect also leaves it in progress; poll settles it. */
            int werr = 0;
            int w = pn_wait(fd, POLLOUT, deadline_us, &werr);
            if (w == 0) {
                pn_close(fd);
                result = PN_CONN_TIMEOUT;
                last_err = ETIMEDOUT;
                break;
            }
            if (w < 0) {
                last_err = werr;
                pn_close(fd);
                continue;
            }
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
                soerr = errno;
            r = soerr ? -1 : 0;
            errno = soerr;
        }
        if (r == 0) {
            *fd_out = fd;
            result = PN_CONN_OK;
            break;
        }
        last_err = errno;
        pn_close(fd);
    }
    freeaddrinfo(res);
    if (result == PN_CONN_TIMEOUT)
        snprintf(msg, msglen, "connect %s:%s: timed out (deadline)", host, port);
    else if (result != PN_CONN_OK)
        snprintf(msg, msglen, "connect %s:%s: %s", host, port, strerror(last_err));
    return result;
}

enum pn_io pn_send_all(int fd, const void *buf, size_t len, int64_t deadline_us, size_t *sent,
                       int *writes, int *err)
{
    const char *p = buf;
    *sent = 0;
    while (*sent < len) {
        ssize_t n = send(fd, p + *sent, len - *sent, MSG_NOSIGNAL);
        if (n > 0) {
            *sent += (size_t)n;
            (*writes)++;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = pn_wait(fd, POLLOUT, deadline_us, err);
            if (w == 0)
                return PN_IO_TIMEOUT;
            if (w < 0)
                return PN_IO_ERR;
            continue;
        }
        *err = n < 0 ? errno : EIO;
        return PN_IO_ERR;
    }
    return PN_IO_OK;
}

enum pn_io pn_recv(int fd, void *buf, size_t cap, int64_t deadline_us, size_t *got, int *err)
{
    *got = 0;
    for (;;) {
        ssize_t n = recv(fd, buf, cap, MSG_NOSIGNAL);
        if (n > 0) {
            *got = (size_t)n;
            return PN_IO_OK;
        }
        if (n == 0)
            return PN_IO_EOF;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            *err = errno;
            return PN_IO_ERR;
        }
        int w = pn_wait(fd, POLLIN, deadline_us, err);
        if (w == 0)
            return PN_IO_TIMEOUT;
        if (w < 0)
            return PN_IO_ERR;
    }
}

int pn_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

void pn_close(int fd)
{
    if (fd >= 0)
        close(fd);
}

const char *pn_strerror(int err) { return strerror(err); }
