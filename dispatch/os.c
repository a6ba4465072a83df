/* os.c - the Linux calls only the dispatch model makes (os.h); the rest
 * are server-min/os.c's. */
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int os_accept_nb(int listen_fd)
{
    int fd;

    do
        fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    while (fd == -1 && errno == EINTR);
    return fd;
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

static sigset_t os_stop_set(void)
{
    sigset_t s;

    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    return s;
}

void os_take_stop_signals(void)
{
    signal(SIGPIPE, SIG_IGN);
    os_block_stop_signals();
}

int os_wait_stop_signal(void)
{
    sigset_t s = os_stop_set();
    int sig = 0;

    while (sigwait(&s, &sig) != 0)
        ;
    return sig;
}
