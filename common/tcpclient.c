/* common/tcpclient.c - thin POSIX client wrappers; see tcpclient.h. */
#include "tcpclient.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* SIGPIPE is ignored by tc_ignore_sigpipe anyway */
#endif

void tc_ignore_sigpipe(void)
{
    /* MSG_NOSIGNAL covers send(); this covers every other write path. */
    signal(SIGPIPE, SIG_IGN);
}

int64_t tc_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void tc_sleep_until_us(int64_t when)
{
    struct timespec ts = {.tv_sec = (time_t)(when / 1000000), .tv_nsec = (long)(when % 1000000) * 1000};
    /* Absolute time so an EINTR restart does not stretch the gap. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

long tc_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) < 0)
            return -1;
    }
    return rl.rlim_cur == RLIM_INFINITY ? 1L << 30 : (long)rl.rlim_cur;
}

/* Milliseconds to hand poll(): rounded up so poll never returns just before
 * the deadline and makes us spin; capped to int. */
static int tc_poll_ms(int64_t deadline_us)
{
    int64_t left = deadline_us - tc_now_us();
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999) / 1000;
    return ms > 1000000000 ? 1000000000 : (int)ms;
}

int tc_wait(int fd, short events, int64_t deadline_us, int *err)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, tc_poll_ms(deadline_us));
        if (r > 0)
            return 1;
        if (r == 0) {
            if (tc_now_us() >= deadline_us)
                return 0;
            continue; /* rounding: poll woke early */
        }
        if (errno == EINTR)
            continue;
        *err = errno;
        return -1;
    }
}

/* One address: 0 connected (*fd_out set), else the errno (ETIMEDOUT at the
 * deadline).  EINTR on connect leaves it in progress: poll settles it. */
static int tc_connect_one(const struct addrinfo *ai, int64_t deadline_us, int *fd_out)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return errno;
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        err = errno;
        if (err == EINPROGRESS || err == EINTR) {
            int w = tc_wait(fd, POLLOUT, deadline_us, &err);
            if (w == 0)
                err = ETIMEDOUT;
            else if (w > 0) {
                socklen_t sl = sizeof err;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
                    err = errno;
            }
        }
    }
    if (err) {
        tc_close(fd);
        return err;
    }
    *fd_out = fd;
    return 0;
}

enum tc_conn_err tc_connect(const char *host, const char *port, int64_t deadline_us, int *fd_out,
                            char *msg, size_t msglen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    *fd_out = -1;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        snprintf(msg, msglen, "resolve %s: %s", host, gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        return TC_CONN_RESOLVE;
    }
    int err = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai && err != ETIMEDOUT; ai = ai->ai_next)
        if ((err = tc_connect_one(ai, deadline_us, fd_out)) == 0)
            break;
    freeaddrinfo(res);
    if (err == 0)
        return TC_CONN_OK;
    if (err == ETIMEDOUT) {
        snprintf(msg, msglen, "connect %s:%s: timed out (deadline)", host, port);
        return TC_CONN_TIMEOUT;
    }
    snprintf(msg, msglen, "connect %s:%s: %s", host, port, strerror(err));
    return TC_CONN_REFUSED;
}

enum tc_io tc_send_all(int fd, const void *buf, size_t len, int64_t deadline_us, size_t *sent,
                       int *writes, int *err)
{
    const char *p = buf;
    *sent = 0;
    while (*sent < len) {
        ssize_t n = send(fd, p + *sent, len - *sent, MSG_NOSIGNAL);
        if (n > 0) {
            *sent += (size_t)n;
            if (writes)
                (*writes)++;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = tc_wait(fd, POLLOUT, deadline_us, err);
            if (w == 0)
                return TC_IO_TIMEOUT;
            if (w < 0)
                return TC_IO_ERR;
            continue;
        }
        *err = n < 0 ? errno : EIO;
        return TC_IO_ERR;
    }
    return TC_IO_OK;
}

enum tc_io tc_recv(int fd, void *buf, size_t cap, int64_t deadline_us, size_t *got, int *err)
{
    *got = 0;
    for (;;) {
        ssize_t n = recv(fd, buf, cap, 0);
        if (n > 0) {
            *got = (size_t)n;
            return TC_IO_OK;
        }
        if (n == 0)
            return TC_IO_EOF;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            *err = errno;
            return TC_IO_ERR;
        }
        int w = tc_wait(fd, POLLIN, deadline_us, err);
        if (w == 0)
            return TC_IO_TIMEOUT;
        if (w < 0)
            return TC_IO_ERR;
    }
}

enum tc_io tc_read_full(int fd, void *buf, size_t len, int64_t deadline_us, size_t *got, int *err)
{
    char *p = buf;
    *got = 0;
    while (*got < len) {
        size_t n;
        enum tc_io io = tc_recv(fd, p + *got, len - *got, deadline_us, &n, err);
        if (io != TC_IO_OK)
            return io;
        *got += n;
    }
    return TC_IO_OK;
}

int tc_local_port(int fd)
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

/* One sock_diag request on a fresh netlink socket: each inet_diag_msg of
 * the answer is handed to each(m, arg).  The number of messages, -1 when
 * no answer came (an exact lookup of a socket that is gone answers ENOENT:
 * 0 messages). */
static int diag_each(const void *req, size_t len, void (*each)(const struct inet_diag_msg *, void *), void *arg)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return -1;
    int count = -1;
    ssize_t n;
    while ((n = send(fd, req, len, 0)) < 0 && errno == EINTR) {
    }
    for (int done = n != (ssize_t)len; !done;) {
        char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
        n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (count < 0)
            count = 0;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
                done = 1;
                break;
            }
            each(NLMSG_DATA(h), arg);
            count++;
            if (!(h->nlmsg_flags & NLM_F_MULTI))
                done = 1;
        }
    }
    close(fd);
    return count;
}

struct listen_sum {
    int port;
    long sum;
};

static void add_listen_queue(const struct inet_diag_msg *m, void *arg)
{
    struct listen_sum *q = arg;
    if (ntohs(m->id.idiag_sport) == q->port)
        q->sum = (q->sum < 0 ? 0 : q->sum) + (long)m->idiag_rqueue;
}

/* One sock_diag dump of a family's TCP listeners (the kernel filters by
 * state, so the answer is a few sockets however many connections exist):
 * the summed accept queues on the port, -1 if none or no answer. */
static long listen_queue_family(int family, int port)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req = {.nlh = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
             .r = {.sdiag_family = (__u8)family, .sdiag_protocol = IPPROTO_TCP, .idiag_states = 1u << 10 /* TCP_LISTEN */}};
    struct listen_sum q = {port, -1};
    diag_each(&req, sizeof req, add_listen_queue, &q);
    return q.sum;
}

static void copy_msg(const struct inet_diag_msg *m, void *arg)
{
    *(struct inet_diag_msg *)arg = *m;
}

/* The connection 127.0.0.1:local_port <-> 127.0.0.1:remote_port, looked up
 * by its 4-tuple (no NLM_F_DUMP: the kernel's hash tables).  The kernel's
 * lookup falls back to a listener on local_port when no such connection
 * is hashed (gone, or reset and not yet closed by its owner): that answer
 * is not the connection, so 0 (none) then, as for no answer. */
static int peer_lookup(int local_port, int remote_port, struct inet_diag_msg *m)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req = {.nlh = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST},
             .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u,
                   .id = {.idiag_sport = htons((uint16_t)local_port), .idiag_dport = htons((uint16_t)remote_port),
                          .idiag_src = {htonl(INADDR_LOOPBACK)}, .idiag_dst = {htonl(INADDR_LOOPBACK)},
                          .idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}}};
    return diag_each(&req, sizeof req, copy_msg, m) == 1 && m->idiag_state != 10 /* TCP_LISTEN */ &&
           ntohs(m->id.idiag_dport) == remote_port;
}

long tc_peer_rqueue(int local_port, int remote_port, int *state)
{
    struct inet_diag_msg m;
    if (!peer_lookup(local_port, remote_port, &m))
        return -1;
    if (state)
        *state = m.idiag_state;
    return (long)m.idiag_rqueue;
}

unsigned long tc_peer_inode(int local_port, int remote_port)
{
    struct inet_diag_msg m;
    return peer_lookup(local_port, remote_port, &m) ? m.idiag_inode : 0;
}

long tc_listen_queue(int port)
{
    long q4 = listen_queue_family(AF_INET, port), q6 = listen_queue_family(AF_INET6, port);
    return q4 < 0 ? q6 : q6 < 0 ? q4 : q4 + q6;
}

void tc_close(int fd)
{
    if (fd >= 0)
        close(fd);
}
