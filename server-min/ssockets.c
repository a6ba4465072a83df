/* ssockets.c - see ssockets.h. */
#include "ssockets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "os.h"

struct socket_handler *socket_handler_new(const struct socket_handler_ops *ops)
{
    struct socket_handler *h = calloc(1, sizeof *h);

    if (h)
        h->ops = ops;
    return h;
}

int socket_handler_accept(struct socket_handler *h)
{
    if (h->ops && h->ops->accept)
        return h->ops->accept(h);
    return 1;
}

struct socket_stream *socket_stream_new(int fd, struct socket_handler *h)
{
    struct socket_stream *s = calloc(1, sizeof *s);

    if (!s)
        return NULL;
    s->fd = fd;
    s->handler = h;
    h->socket = s;
    return s;
}

void socket_stream_free(struct socket_stream *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        os_close(s->fd);
    free(s->handler);
    free(s);
}

/* TSocketHandler.Select sets LastError from every select: the call's error,
 * or 0 (so AllowNewRequest sees a failed readability test). */
int socket_stream_can_read(struct socket_stream *s, int timeout_ms)
{
    int r = os_select_readable(s->fd, timeout_ms);

    s->handler->last_error = r < 0 ? errno : 0;
    return r == 1;
}

ssize_t socket_stream_read(struct socket_stream *s, void *buf, size_t len)
{
    ssize_t r = os_recv(s->fd, buf, len, s->read_flags);

    s->handler->last_error = r < 0 ? errno : 0;
    return r;
}

int socket_stream_write_buffer(struct socket_stream *s, const void *buf,
                               size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = os_send(s->fd, p, len, s->write_flags);

        if (w <= 0) {
            s->handler->last_error = w < 0 ? errno : EPIPE;
            return -1;
        }
        s->handler->last_error = 0;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int socket_stream_set_io_timeout(struct socket_stream *s, int timeout_ms,
                                 char *err)
{
    return os_set_io_timeout(err, s->fd, timeout_ms);
}

int socket_stream_last_error(const struct socket_stream *s)
{
    return s->handler ? s->handler->last_error : 0;
}

int socket_server_listen(struct socket_server *srv, const char *address,
                         int port, char *err)
{
    srv->fd = os_tcp_listen(err, address, port,
                            srv->queue_size > 0 ? srv->queue_size : 5,
                            &srv->port);
    if (srv->fd < 0)
        return -1;
    os_set_stop_wake_fd(srv->fd);
    return 0;
}

/* RunIdleLoop: wait AcceptIdleTimeout for a connection; each time none came,
 * fire OnIdle.  1 = a connection is waiting, 0 = stop. */
static int socket_server_run_idle_loop(struct socket_server *srv)
{
    for (;;) {
        int r = os_select_accept(srv->fd, srv->accept_idle_timeout);
        socket_idle_event idle;

        if (r == 1)
            return 1;
        if (!atomic_load(&srv->accepting) || os_stop_requested())
            return 0;
        idle = atomic_load(&srv->ev.on_idle);
        if (idle)
            idle(srv->ev.owner);
        if (!atomic_load(&srv->accepting) || os_stop_requested())
            return 0;
    }
}

/* DoConnectQuery: OnConnectSocketQuery decides; no handler means allow. */
static int socket_server_do_connect_query(struct socket_server *srv, int fd)
{
    if (srv->ev.on_connect_query)
        return srv->ev.on_connect_query(srv->ev.owner, fd);
    return 1;
}

/* SockToStream: the handler comes from OnCreateClientSocketHandler, then its
 * Accept runs; a refusal shuts the socket down and closes it. */
static struct socket_stream *socket_server_sock_to_stream(
    struct socket_server *srv, int fd)
{
    struct socket_handler *h = NULL;
    struct socket_stream *s;

    if (srv->ev.on_create_client_handler)
        h = srv->ev.on_create_client_handler(srv->ev.owner);
    if (!h)
        h = socket_handler_new(NULL);
    if (!h || !(s = socket_stream_new(fd, h))) {
        free(h);
        os_close(fd);
        fprintf(stderr, "server-min: out of memory accepting a connection\n");
        return NULL;
    }
    if (!socket_handler_accept(h)) {
        os_shutdown(fd);
        socket_stream_free(s);
        errno = 0;
        return NULL;
    }
    return s;
}

/* GetConnection: accept, connect query, stream.  NULL when refused or when
 * accept failed (errno set). */
static struct socket_stream *socket_server_get_connection(
    struct socket_server *srv)
{
    int fd = os_accept(srv->fd);

    if (fd < 0)
        return NULL;
    errno = 0; /* NULL from here on is a refusal, not an accept error */
    if (!atomic_load(&srv->accepting) ||
        !socket_server_do_connect_query(srv, fd)) {
        os_close(fd);
        errno = 0;
        return NULL;
    }
    return socket_server_sock_to_stream(srv, fd);
}

/* HandleAcceptError, the clone's way.  Upstream's DoAcceptError says
 * aeaRaise while Active: any accept() failure (EMFILE when out of
 * descriptors) raises out of StartAccepting and the server is gone.  The
 * clone keeps accepting: a descriptor shortage is logged once per episode
 * and waited out in 10 ms steps (the listener stays readable, so retrying
 * at once would spin); other errors about one client are ignored. */
static void socket_server_accept_failed(struct socket_server *srv, int err)
{
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        if (srv->accept_failures++ == 0)
            log_line("warning accept: %s (waiting for descriptors)",
                     strerror(err));
        os_stop_wait_ms(10);
    }
}

void socket_server_start_accepting(struct socket_server *srv)
{
    atomic_store(&srv->accepting, 1);
    while (atomic_load(&srv->accepting) && !os_stop_requested()) {
        struct socket_stream *s;

        if (srv->accept_idle_timeout > 0 && !socket_server_run_idle_loop(srv))
            break;
        s = socket_server_get_connection(srv);
        if (s && srv->accept_failures) {
            log_line("accept: recovered after %lu failed accept() calls",
                     srv->accept_failures);
            srv->accept_failures = 0;
        }
        if (s) {
            if (srv->ev.on_connect)
                srv->ev.on_connect(srv->ev.owner, s);
            continue;
        }
        socket_server_accept_failed(srv, errno);
    }
    atomic_store(&srv->accepting, 0);
}

void socket_server_stop_accepting(struct socket_server *srv)
{
    atomic_store(&srv->accepting, 0);
}

void socket_server_close(struct socket_server *srv)
{
    if (srv->fd >= 0) {
        os_set_stop_wake_fd(-1); /* before the number can be reused */
        os_close(srv->fd);
    }
    srv->fd = -1;
}
