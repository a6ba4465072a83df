/* os.c - Linux implementation of os.h. */
#include "os.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static void os_set_error(char *err, const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(err, OS_ERR_LEN, fmt, ap);
    va_end(ap);
}

static int os_setsockopt(char *err, int fd, int level, int opt, int val,
                         const char *name)
{
    if (setsockopt(fd, level, opt, &val, sizeof val) == -1) {
        os_set_error(err, "setsockopt %s: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

int os_listen_reuseport(char *err, const char *address, int port, int backlog,
                        int *bound_port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, address, &sa.sin_addr) != 1) {
        os_set_error(err, "listen address %s: not an IPv4 address", address);
        return -1;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        os_set_error(err, "socket: %s", strerror(errno));
        return -1;
    }
    if (os_setsockopt(err, fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR") ||
        os_setsockopt(err, fd, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT"))
        goto fail;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == -1) {
        os_set_error(err, "bind %s:%d: %s", address, port, strerror(errno));
        goto fail;
    }
    if (listen(fd, backlog) == -1) {
        os_set_error(err, "listen: %s", strerror(errno));
        goto fail;
    }
    if (getsockname(fd, (struct sockaddr *)&sa, &len) == -1) {
        os_set_error(err, "getsockname: %s", strerror(errno));
        goto fail;
    }
    *bound_port = ntohs(sa.sin_port);
    return fd;
fail:
    close(fd);
    return -1;
}

int os_accept_nb(int listen_fd)
{
    int fd;

    do
        fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    while (fd == -1 && errno == EINTR);
    return fd;
}

int os_set_tcp_nodelay(char *err, int fd)
{
    return os_setsockopt(err, fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
}

ssize_t os_recv(int fd, void *buf, size_t len)
{
    ssize_t n;

    do
        n = recv(fd, buf, len, 0);
    while (n == -1 && errno == EINTR);
    return n;
}

/* poll(2) for writability, EINTR restarts the wait (with the full time:
 * a bound, not a measurement). 1 writable, 0 timed out, -1 error. */
static int os_wait_writable(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int rc;

    do
        rc = poll(&p, 1, timeout_ms);
    while (rc == -1 && errno == EINTR);
    return rc;
}

int os_send_all(char *err, int fd, const void *buf, size_t len, int timeout_ms)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == -1 && errno == EINTR)
            continue;
        if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = os_wait_writable(fd, timeout_ms);

            if (rc == 1)
                continue;
            os_set_error(err, "send: %s", rc == 0 ? "peer not reading (timed out)"
                                                  : strerror(errno));
            return -1;
        }
        os_set_error(err, "send: %s", n == 0 ? "wrote nothing" : strerror(errno));
        return -1;
    }
    return 0;
}

void os_close(int fd)
{
    /* Linux frees the descriptor even when close fails with EINTR: never
     * retry (the number may already belong to another connection). */
    if (fd >= 0)
        close(fd);
}

int os_epoll_new(char *err)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);

    if (ep == -1)
        os_set_error(err, "epoll_create1: %s", strerror(errno));
    return ep;
}

static int os_epoll_ctl(char *err, int ep, int op, int fd, uint32_t events,
                        void *ptr, const char *name)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.ptr = ptr;
    if (epoll_ctl(ep, op, fd, &ev) == -1) {
        os_set_error(err, "epoll_ctl %s fd=%d: %s", name, fd, strerror(errno));
        return -1;
    }
    return 0;
}

int os_epoll_add(char *err, int ep, int fd, uint32_t events, void *ptr)
{
    return os_epoll_ctl(err, ep, EPOLL_CTL_ADD, fd, events, ptr, "ADD");
}

int os_epoll_mod(char *err, int ep, int fd, uint32_t events, void *ptr)
{
    return os_epoll_ctl(err, ep, EPOLL_CTL_MOD, fd, events, ptr, "MOD");
}

int os_epoll_del(int ep, int fd)
{
    return epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
}

int os_epoll_wait(int ep, struct os_event *evs, int max, int timeout_ms)
{
    struct epoll_event raw[64];
    int n, i;

    if (max > 64)
        max = 64;
    n = epoll_wait(ep, raw, max, timeout_ms);
    if (n == -1)
        return errno == EINTR ? 0 : -1;
    for (i = 0; i < n; i++) {
        evs[i].events = raw[i].events;
        evs[i].ptr = raw[i].data.ptr;
    }
    return n;
}

int os_pipe_nb(char *err, int fds[2])
{
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == -1) {
        os_set_error(err, "pipe2: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void os_pipe_poke(int wfd)
{
    char b = 1;
    ssize_t n;

    do
        n = write(wfd, &b, 1);
    while (n == -1 && errno == EINTR);
    /* EAGAIN: the pipe is full, the reader has a wake-up pending anyway. */
}

void os_pipe_drain(int rfd)
{
    char buf[256];
    ssize_t n;

    do
        n = read(rfd, buf, sizeof buf);
    while (n > 0 || (n == -1 && errno == EINTR));
}

uint64_t os_tick_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void os_sleep_ms(long ms)
{
    struct timespec req = { ms / 1000, (ms % 1000) * 1000000L }, rem;

    while (nanosleep(&req, &rem) == -1 && errno == EINTR)
        req = rem;
}

struct os_thread {
    pthread_t id;
};
struct os_mutex {
    pthread_mutex_t m;
};
struct os_cond {
    pthread_cond_t c;
};

os_thread *os_thread_start(char *err, void *(*fn)(void *), void *arg)
{
    os_thread *t = malloc(sizeof *t);
    int rc;

    if (!t) {
        os_set_error(err, "pthread_create: out of memory");
        return NULL;
    }
    rc = pthread_create(&t->id, NULL, fn, arg);
    if (rc != 0) {
        os_set_error(err, "pthread_create: %s", strerror(rc));
        free(t);
        return NULL;
    }
    return t;
}

int os_thread_start_detached(char *err, void *(*fn)(void *), void *arg)
{
    pthread_attr_t a;
    pthread_t id;
    int rc;

    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&id, &a, fn, arg);
    pthread_attr_destroy(&a);
    if (rc != 0) {
        os_set_error(err, "pthread_create: %s", strerror(rc));
        return -1;
    }
    return 0;
}

void os_thread_join(os_thread *t)
{
    if (!t)
        return;
    pthread_join(t->id, NULL);
    free(t);
}

os_mutex *os_mutex_new(void)
{
    os_mutex *m = malloc(sizeof *m);

    if (m)
        pthread_mutex_init(&m->m, NULL);
    return m;
}

void os_mutex_free(os_mutex *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->m);
    free(m);
}

void os_mutex_lock(os_mutex *m) { pthread_mutex_lock(&m->m); }
void os_mutex_unlock(os_mutex *m) { pthread_mutex_unlock(&m->m); }

os_cond *os_cond_new(void)
{
    os_cond *c = malloc(sizeof *c);
    pthread_condattr_t a;

    if (!c)
        return NULL;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&c->c, &a);
    pthread_condattr_destroy(&a);
    return c;
}

void os_cond_free(os_cond *c)
{
    if (!c)
        return;
    pthread_cond_destroy(&c->c);
    free(c);
}

void os_cond_wait(os_cond *c, os_mutex *m) { pthread_cond_wait(&c->c, &m->m); }

int os_cond_timedwait(os_cond *c, os_mutex *m, int timeout_ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(&c->c, &m->m, &ts) == ETIMEDOUT;
}

void os_cond_signal(os_cond *c) { pthread_cond_signal(&c->c); }
void os_cond_broadcast(os_cond *c) { pthread_cond_broadcast(&c->c); }

int os_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : (int)n;
}

static sigset_t os_stop_set(void)
{
    sigset_t s;

    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    return s;
}

void os_block_stop_signals(void)
{
    sigset_t s = os_stop_set();

    signal(SIGPIPE, SIG_IGN);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
}

int os_wait_stop_signal(void)
{
    sigset_t s = os_stop_set();
    int sig = 0;

    while (sigwait(&s, &sig) != 0)
        ;
    return sig;
}
