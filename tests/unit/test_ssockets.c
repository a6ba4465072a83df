/* test_ssockets.c - suite "ssockets": TSocketHandler, TSocketStream and the
 * accept loop of TSocketServer. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "os.h"
#include "ssockets.h"
#include "unit.h"

static int refusing_accept(struct socket_handler *h);
static int counting_accept(struct socket_handler *h);

static const struct socket_handler_ops refusing_ops = { "refuse", refusing_accept };
static const struct socket_handler_ops counting_ops = { "count", counting_accept };
static int accept_calls;
static struct socket_server *current_server;

static int refusing_accept(struct socket_handler *h)
{
    (void)h;
    accept_calls++;
    socket_server_stop_accepting(current_server);
    return 0;
}

static int counting_accept(struct socket_handler *h)
{
    accept_calls++;
    return h->socket != NULL;
}

static void test_handler_accept(void)
{
    struct socket_handler *h = socket_handler_new(NULL);

    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    ASSERT_INT(socket_handler_accept(h), 1);
    ASSERT_INT(h->last_error, 0);
    free(h);
    h = socket_handler_new(&refusing_ops);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    accept_calls = 0;
    current_server = &(struct socket_server){ .fd = -1 };
    ASSERT_INT(socket_handler_accept(h), 0);
    ASSERT_INT(accept_calls, 1);
    free(h);
}

static struct socket_stream *pair_stream(int *peer)
{
    int sv[2];
    struct socket_stream *s;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return NULL;
    s = socket_stream_new(sv[0], socket_handler_new(NULL));
    *peer = sv[1];
    s->write_flags = MSG_NOSIGNAL;
    unit_watch_fd(sv[0]);
    return s;
}

static void test_stream_new_free(void)
{
    int peer, fd;
    struct socket_stream *s = pair_stream(&peer);

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(s->handler->socket == s);
    fd = s->fd;
    ASSERT_INT(socket_stream_last_error(s), 0);
    socket_stream_free(s);
    /* The descriptor is closed: the peer sees the end of the stream. */
    ASSERT_INT(unit_read_eof(peer), 1);
    ASSERT_INT(fcntl(fd, F_GETFD), -1);
    close(peer);
    socket_stream_free(NULL);
}

static void test_can_read_and_read(void)
{
    int peer;
    struct socket_stream *s = pair_stream(&peer);
    char buf[16];

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ASSERT_INT(socket_stream_can_read(s, 0), 0);
    ASSERT_INT(socket_stream_can_read(s, 1), 0);
    unit_write_str(peer, "abcdef");
    ASSERT_INT(socket_stream_can_read(s, 0), 1);
    /* ONE recv: at most len bytes. */
    ASSERT_INT(socket_stream_read(s, buf, 4), 4);
    ASSERT_MEM(buf, 4, "abcd");
    ASSERT_INT(socket_stream_read(s, buf, sizeof buf), 2);
    ASSERT_INT(unit_recv_calls(), 2);
    ASSERT_INT(socket_stream_last_error(s), 0);
    /* A failing recv records its errno. */
    s->read_flags = MSG_DONTWAIT;
    ASSERT_INT(socket_stream_read(s, buf, sizeof buf), -1);
    CU_ASSERT(socket_stream_last_error(s) == EAGAIN ||
              socket_stream_last_error(s) == EWOULDBLOCK);
    /* End of stream is readable and reads 0, which is not an error. */
    shutdown(peer, SHUT_WR);
    ASSERT_INT(socket_stream_can_read(s, 0), 1);
    ASSERT_INT(socket_stream_read(s, buf, sizeof buf), 0);
    ASSERT_INT(socket_stream_last_error(s), 0);
    socket_stream_free(s);
    close(peer);
}

/* B8: FPC's fd_set holds descriptors 0..1023.  A connection on descriptor
 * 1100 with a byte waiting: the select() the clone makes (as upstream's
 * TSocketHandler.Select) waits on an EMPTY set and says "not readable"
 * without an error; CanRead follows it on stock, and poll-can-read sees the
 * byte.  Descriptor numbers below 1024 work either way. */
static void test_b8_can_read_high_descriptor(void)
{
    struct rlimit rl;
    struct socket_handler *h;
    struct socket_stream *st;
    int sv[2], hi = 1100, lo;

    CU_ASSERT_FATAL(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_cur <= (rlim_t)hi) {
        rl.rlim_cur = rl.rlim_max;
        CU_ASSERT_FATAL(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    }
    /* Not a skip: without descriptor 1100 the test cannot say anything. */
    CU_ASSERT_FATAL(rl.rlim_cur > (rlim_t)hi);
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CU_ASSERT_FATAL(dup2(sv[0], hi) == hi);
    lo = sv[0];
    unit_write_str(sv[1], "x");
    ASSERT_INT(os_select_readable(lo, 0), 1);
    errno = 0;
    ASSERT_INT(os_select_readable(hi, 5), 0);
    ASSERT_INT(errno, 0);
    h = socket_handler_new(NULL);
    st = h ? socket_stream_new(hi, h) : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    ASSERT_INT(socket_stream_can_read(st, 5), KIT_FIXED_B8);
    ASSERT_INT(socket_stream_last_error(st), 0);
    socket_stream_free(st); /* closes descriptor 1100 */
    close(lo);
    close(sv[1]);
}

static void test_write_buffer_loops_on_short_writes(void)
{
    int peer;
    struct socket_stream *s = pair_stream(&peer);
    char out[10000], in[10000];
    size_t i, got = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    for (i = 0; i < sizeof out; i++)
        out[i] = (char)(i * 7);
    /* Every send() accepts at most 1000 bytes: ten calls for 10000. */
    unit_set_send_cap(1000);
    ASSERT_INT(socket_stream_write_buffer(s, out, sizeof out), 0);
    ASSERT_INT(unit_send_calls(), 10);
    ASSERT_INT(socket_stream_last_error(s), 0);
    while (got < sizeof in) {
        ssize_t r = read(peer, in + got, sizeof in - got);

        if (r <= 0)
            break;
        got += (size_t)r;
    }
    ASSERT_INT(got, sizeof out);
    CU_ASSERT(memcmp(in, out, sizeof out) == 0);
    /* An uneven cap: 10000 = 3 * 3000 + 1000. */
    unit_watch_fd(s->fd);
    unit_set_send_cap(3000);
    ASSERT_INT(socket_stream_write_buffer(s, out, sizeof out), 0);
    ASSERT_INT(unit_send_calls(), 4);
    socket_stream_free(s);
    close(peer);
}

/* A reader thread drains the peer while a large buffer is written through
 * a socket with a small send buffer. */
struct drain_arg {
    int fd;
    size_t want, got;
    unsigned char *buf;
};

static void *drain_thread(void *p)
{
    struct drain_arg *a = p;

    while (a->got < a->want) {
        ssize_t r = read(a->fd, a->buf + a->got, a->want - a->got);

        if (r <= 0)
            break;
        a->got += (size_t)r;
    }
    return NULL;
}

static void test_write_buffer_large_small_sndbuf(void)
{
    int peer, small = 4096;
    struct socket_stream *s = pair_stream(&peer);
    size_t n = 1 << 20, i;
    unsigned char *out = malloc(n);
    struct drain_arg a = { 0, 0, 0, NULL };
    pthread_t t;

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    ASSERT_INT(setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    for (i = 0; i < n; i++)
        out[i] = (unsigned char)(i * 31 + (i >> 8));
    a.fd = peer;
    a.want = n;
    a.buf = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a.buf);
    unit_set_send_cap(65536); /* 16 calls at least */
    ASSERT_INT(pthread_create(&t, NULL, drain_thread, &a), 0);
    ASSERT_INT(socket_stream_write_buffer(s, out, n), 0);
    pthread_join(t, NULL);
    ASSERT_INT(a.got, n);
    CU_ASSERT(memcmp(a.buf, out, n) == 0);
    ASSERT_INT(unit_send_calls(), 16);
    free(a.buf);
    free(out);
    socket_stream_free(s);
    close(peer);
}

static void test_write_buffer_real_short_write_then_timeout(void)
{
    int peer, small = 4096;
    struct socket_stream *s = pair_stream(&peer);
    size_t n = 1 << 20, queued = 0;
    char *out = calloc(1, n), err[OS_ERR_LEN];
    char sink[4096];
    ssize_t r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    ASSERT_INT(setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    /* SO_SNDTIMEO 1 ms only so the blocked send() returns; nobody reads:
     * the first send() is cut short after what fits, the second one
     * times out having sent nothing. */
    ASSERT_INT(socket_stream_set_io_timeout(s, 1, err), 0);
    ASSERT_INT(socket_stream_write_buffer(s, out, n), -1);
    CU_ASSERT(socket_stream_last_error(s) == EAGAIN ||
              socket_stream_last_error(s) == EWOULDBLOCK);
    ASSERT_INT(unit_send_calls(), 2);
    while ((r = recv(peer, sink, sizeof sink, MSG_DONTWAIT)) > 0)
        queued += (size_t)r;
    CU_ASSERT(queued > 0 && queued < n);
    free(out);
    socket_stream_free(s);
    close(peer);
}

static void test_write_buffer_peer_closed(void)
{
    int peer;
    struct socket_stream *s = pair_stream(&peer);

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    close(peer);
    ASSERT_INT(socket_stream_write_buffer(s, "x", 1), -1);
    ASSERT_INT(socket_stream_last_error(s), EPIPE);
    ASSERT_INT(socket_stream_write_buffer(s, "", 0), 0);
    socket_stream_free(s);
}

static void test_set_io_timeout(void)
{
    int peer;
    struct socket_stream *s = pair_stream(&peer);
    struct timeval tv;
    socklen_t len = sizeof tv;
    char err[OS_ERR_LEN] = "";

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ASSERT_INT(socket_stream_set_io_timeout(s, 2500, err), 0);
    ASSERT_INT(getsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len), 0);
    ASSERT_INT(tv.tv_sec * 1000 + tv.tv_usec / 1000, 2500);
    len = sizeof tv;
    ASSERT_INT(getsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len), 0);
    ASSERT_INT(tv.tv_sec * 1000 + tv.tv_usec / 1000, 2500);
    socket_stream_free(s);
    close(peer);
    /* On a closed descriptor: -1 and the error names the option. */
    s = calloc(1, sizeof *s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    s->fd = -1;
    ASSERT_INT(socket_stream_set_io_timeout(s, 10, err), -1);
    CU_ASSERT(strstr(err, "SO_RCVTIMEO") != NULL);
    ASSERT_INT(socket_stream_last_error(s), 0); /* no handler */
    free(s);
}

/* ---- the accept loop ---------------------------------------------------- */

struct events {
    int query, create, connect, idle;
    int allow;            /* what the query answers */
    int create_null;      /* the factory returns NULL */
    const struct socket_handler_ops *ops;
    struct socket_stream *stream;
};

static struct events ev;
static struct socket_server lsrv;

static int ev_query(void *owner, int fd)
{
    (void)owner;
    (void)fd;
    ev.query++;
    if (!ev.allow)
        socket_server_stop_accepting(&lsrv);
    return ev.allow;
}

static struct socket_handler *ev_create(void *owner)
{
    (void)owner;
    ev.create++;
    return ev.create_null ? NULL : socket_handler_new(ev.ops);
}

static void ev_connect(void *owner, struct socket_stream *s)
{
    (void)owner;
    ev.connect++;
    ev.stream = s;
    socket_server_stop_accepting(&lsrv);
}

static void ev_idle(void *owner)
{
    (void)owner;
    ev.idle++;
    socket_server_stop_accepting(&lsrv);
}

static int listen_server(int idle_timeout)
{
    char err[OS_ERR_LEN];

    memset(&ev, 0, sizeof ev);
    ev.allow = 1;
    memset(&lsrv, 0, sizeof lsrv);
    lsrv.fd = -1;
    lsrv.queue_size = 4;
    lsrv.accept_idle_timeout = idle_timeout;
    lsrv.ev.owner = &ev;
    lsrv.ev.on_connect_query = ev_query;
    lsrv.ev.on_create_client_handler = ev_create;
    lsrv.ev.on_connect = ev_connect;
    lsrv.ev.on_idle = ev_idle;
    current_server = &lsrv;
    accept_calls = 0;
    if (socket_server_listen(&lsrv, "127.0.0.1", 0, err) != 0) {
        printf("\n    listen: %s", err);
        return -1;
    }
    return 0;
}

static void test_accept_connection(void)
{
    int client, idle;

    for (idle = 0; idle <= 1; idle++) {
        CU_ASSERT_FATAL(listen_server(idle) == 0);
        CU_ASSERT(lsrv.port > 0);
        ev.ops = &counting_ops;
        client = unit_tcp_connect(lsrv.port);
        CU_ASSERT_FATAL(client >= 0);
        socket_server_start_accepting(&lsrv);
        ASSERT_INT(atomic_load(&lsrv.accepting), 0);
        ASSERT_INT(ev.query, 1);
        ASSERT_INT(ev.create, 1);
        ASSERT_INT(accept_calls, 1); /* the handler's Accept ran */
        ASSERT_INT(ev.connect, 1);
        ASSERT_INT(ev.idle, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ev.stream);
        CU_ASSERT(ev.stream->handler->ops == &counting_ops);
        /* The stream is the accepted socket. */
        unit_write_str(client, "hi");
        {
            char buf[2];

            ASSERT_INT(socket_stream_read(ev.stream, buf, 2), 2);
            ASSERT_MEM(buf, 2, "hi");
        }
        socket_stream_free(ev.stream);
        ASSERT_INT(unit_read_eof(client), 1);
        close(client);
        socket_server_close(&lsrv);
        ASSERT_INT(lsrv.fd, -1);
    }
}

static void *accept_main(void *arg)
{
    (void)arg;
    socket_server_start_accepting(&lsrv);
    return NULL;
}

/* Out of descriptors: accept() fails with EMFILE while a client waits.
 * Upstream raises out of StartAccepting (the server is gone); the clone
 * logs it once, keeps retrying (10 ms apart, not a spin), and accepts the
 * client once a descriptor is free again. */
static void test_accept_emfile_waited_out(void)
{
    struct rlimit saved, low;
    pthread_t t;
    int client, next, spins = 0;

    CU_ASSERT_FATAL(listen_server(0) == 0);
    client = unit_tcp_connect(lsrv.port);
    CU_ASSERT_FATAL(client >= 0);
    unit_log_clear();
    CU_ASSERT_FATAL(getrlimit(RLIMIT_NOFILE, &saved) == 0);
    next = dup(0); /* the lowest free descriptor number */
    CU_ASSERT_FATAL(next >= 0);
    close(next);
    low = saved;
    low.rlim_cur = (rlim_t)next; /* no new descriptor can be made */
    CU_ASSERT_FATAL(setrlimit(RLIMIT_NOFILE, &low) == 0);
    CU_ASSERT_FATAL(pthread_create(&t, NULL, accept_main, NULL) == 0);
    while (unit_log_count("accept: Too many open files") == 0 &&
           ++spins < 100000000)
        sched_yield();
    setrlimit(RLIMIT_NOFILE, &saved);
    pthread_join(t, NULL);
    ASSERT_INT(unit_log_count("warning accept: Too many open files"), 1);
    ASSERT_INT(unit_log_count("accept: recovered after"), 1);
    ASSERT_INT(ev.connect, 1);
    CU_ASSERT_PTR_NOT_NULL(ev.stream);
    socket_stream_free(ev.stream);
    close(client);
    socket_server_close(&lsrv);
}

static int pair_stream_fd(int *peer)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -1;
    *peer = sv[1];
    return sv[0];
}

/* TSocketHandler.Select sets LastError from the select itself. */
static void test_can_read_sets_last_error(void)
{
    int peer;
    struct socket_stream *s = pair_stream(&peer);

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    close(s->fd);
    ASSERT_INT(socket_stream_can_read(s, 0), 0);
    CU_ASSERT(socket_stream_last_error(s) != 0);
    close(peer);
    /* A good descriptor with nothing to read clears it again. */
    s->fd = pair_stream_fd(&peer);
    ASSERT_INT(socket_stream_can_read(s, 0), 0);
    ASSERT_INT(socket_stream_last_error(s), 0);
    socket_stream_free(s);
    close(peer);
}

static void test_accept_idle_tick(void)
{
    CU_ASSERT_FATAL(listen_server(1) == 0);
    socket_server_start_accepting(&lsrv);
    ASSERT_INT(ev.idle, 1);
    ASSERT_INT(ev.query, 0);
    ASSERT_INT(ev.connect, 0);
    socket_server_close(&lsrv);
}

static void test_accept_refused_by_query(void)
{
    int client;

    CU_ASSERT_FATAL(listen_server(0) == 0);
    ev.allow = 0;
    client = unit_tcp_connect(lsrv.port);
    CU_ASSERT_FATAL(client >= 0);
    socket_server_start_accepting(&lsrv);
    ASSERT_INT(ev.query, 1);
    ASSERT_INT(ev.create, 0);
    ASSERT_INT(ev.connect, 0);
    ASSERT_INT(unit_read_eof(client), 1);
    close(client);
    socket_server_close(&lsrv);
}

static void test_accept_refused_by_handler(void)
{
    int client;

    CU_ASSERT_FATAL(listen_server(0) == 0);
    ev.ops = &refusing_ops;
    client = unit_tcp_connect(lsrv.port);
    CU_ASSERT_FATAL(client >= 0);
    socket_server_start_accepting(&lsrv);
    ASSERT_INT(ev.query, 1);
    ASSERT_INT(ev.create, 1);
    ASSERT_INT(accept_calls, 1);
    ASSERT_INT(ev.connect, 0);
    ASSERT_INT(unit_read_eof(client), 1);
    close(client);
    socket_server_close(&lsrv);
}

static void test_accept_default_handler(void)
{
    int client;

    CU_ASSERT_FATAL(listen_server(0) == 0);
    ev.create_null = 1;
    client = unit_tcp_connect(lsrv.port);
    CU_ASSERT_FATAL(client >= 0);
    socket_server_start_accepting(&lsrv);
    ASSERT_INT(ev.create, 1);
    ASSERT_INT(ev.connect, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev.stream);
    CU_ASSERT_PTR_NULL(ev.stream->handler->ops);
    socket_stream_free(ev.stream);
    close(client);
    socket_server_close(&lsrv);
}

static void test_listen_errors(void)
{
    char err[OS_ERR_LEN] = "";
    struct socket_server s;

    memset(&s, 0, sizeof s);
    ASSERT_INT(socket_server_listen(&s, "localhost", 0, err), -1);
    CU_ASSERT(strstr(err, "not an IPv4 address") != NULL);
    ASSERT_INT(s.fd, -1);
}

static const struct unit_test ssockets_tests[] = {
    { "handler_accept", test_handler_accept },
    { "stream_new_free", test_stream_new_free },
    { "can_read_and_read", test_can_read_and_read },
    { "b8_can_read_high_descriptor", test_b8_can_read_high_descriptor },
    { "write_buffer_loops_on_short_writes", test_write_buffer_loops_on_short_writes },
    { "write_buffer_large_small_sndbuf", test_write_buffer_large_small_sndbuf },
    { "write_buffer_real_short_write_then_timeout", test_write_buffer_real_short_write_then_timeout },
    { "write_buffer_peer_closed", test_write_buffer_peer_closed },
    { "set_io_timeout", test_set_io_timeout },
    { "accept_connection", test_accept_connection },
    { "accept_emfile_waited_out", test_accept_emfile_waited_out },
    { "can_read_sets_last_error", test_can_read_sets_last_error },
    { "accept_idle_tick", test_accept_idle_tick },
    { "accept_refused_by_query", test_accept_refused_by_query },
    { "accept_refused_by_handler", test_accept_refused_by_handler },
    { "accept_default_handler", test_accept_default_handler },
    { "listen_errors", test_listen_errors },
};

int unit_register_ssockets(void)
{
    return UNIT_ADD_SUITE("ssockets", NULL, ssockets_tests);
}
