/* test_httpserver.c - suite "httpserver": the connect query (B1 and the
 * connection cap), CreateServerSocket (B6), the socket handler factory,
 * DoConnect/DoAcceptIdle and start/destroy. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn_handlers.h"
#include "connection.h"
#include "httpserver.h"
#include "os.h"
#include "ssockets.h"
#include "unit.h"

static struct httpserver srv;
static struct unit_response resp;

/* A user OnAllowConnect that counts its calls. */
struct hook {
    int calls;
    int allow;
    int last_fd;
};

static int hook_fn(void *data, int fd)
{
    struct hook *h = data;

    h->calls++;
    h->last_fd = fd;
    return h->allow;
}

/* A server whose polled connection handler holds one idle connection, so
 * GetConnectionCount is 1; *incoming is a socketpair standing for the next
 * accepted socket (incoming[0] the server's end, [1] the client's). */
struct capped {
    struct unit_conn held;
    int incoming[2];
};

static void capped_open(struct capped *k, int max_live)
{
    char err[OS_ERR_LEN];

    unit_server_init(&srv);
    srv.props.thread_mode = TM_POLLED;
    srv.props.max_live_connection_count = max_live;
    srv.connection_handler = handler_create(&srv, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(srv.connection_handler);
    unit_conn_open(&k->held, &srv);
    /* Nothing to read yet: polled mode just lists it. */
    handler_handle_connection(srv.connection_handler, k->held.c);
    k->held.c = NULL; /* the handler owns it now */
    ASSERT_INT(httpserver_get_connection_count(&srv), 1);
    ASSERT_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, k->incoming), 0);
}

static void capped_close(struct capped *k)
{
    handler_free(srv.connection_handler);
    srv.connection_handler = NULL;
    unit_conn_close(&k->held);
    close(k->incoming[0]);
    close(k->incoming[1]);
}

/* Everything the client end has, with the server end shut for writing. */
static size_t drain(int fd, int peer_of, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t r;

    shutdown(peer_of, SHUT_WR);
    while (n < cap && (r = read(fd, buf + n, cap - n)) > 0)
        n += (size_t)r;
    return n;
}

static void test_below_cap_allows(void)
{
    struct capped k;
    char buf[512];

    capped_open(&k, 128);
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]), 1);
    ASSERT_INT(drain(k.incoming[1], k.incoming[0], buf, sizeof buf), 0);
    capped_close(&k);

    /* No connection handler at all: count 0. */
    unit_server_init(&srv);
    ASSERT_INT(httpserver_get_connection_count(&srv), 0);
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, -1), 1);
}

static void test_at_cap_sends_503(void)
{
    struct capped k;
    char buf[512];
    size_t n;

    capped_open(&k, 1);
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]), 0);
    n = drain(k.incoming[1], k.incoming[0], buf, sizeof buf);
    ASSERT_MEM(buf, n, httpserver_error_503);
    CU_ASSERT(memmem(buf, n, "\r\nConnection: close\r\n", 21) != NULL);
    capped_close(&k);
}

/* B19: the 503 is delimited by the close (no Content-Length), and the
 * refused socket is closed with the client's request unread (a reset): the
 * client cannot tell the whole 503 from a cut one.  delimit-503 gives it
 * the length of its text; the text, Retry-After and the close stay. */
static void test_b19_503_says_its_length(void)
{
    static const char text[] =
        "Server is temporarily overloaded. Please try again shortly.";
    struct capped k;
    char buf[512], want[32];
    const char *end, *cl;
    size_t n, head;

    capped_open(&k, 1);
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]), 0);
    n = drain(k.incoming[1], k.incoming[0], buf, sizeof buf - 1);
    buf[n] = '\0';
    end = strstr(buf, "\r\n\r\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    head = (size_t)(end - buf) + 4;
    CU_ASSERT(strncmp(buf, "HTTP/1.1 503 Service Unavailable\r\n", 34) == 0);
    CU_ASSERT(memmem(buf, head, "\r\nRetry-After: 30\r\n", 19) != NULL);
    CU_ASSERT(memmem(buf, head, "\r\nConnection: close\r\n", 21) != NULL);
    /* The text is unchanged, and nothing follows it. */
    ASSERT_MEM(buf + head, n - head, text);
    cl = memmem(buf, head, "\r\nContent-Length: ", 18);
    ASSERT_INT(cl != NULL, KIT_FIXED_B19);
    snprintf(want, sizeof want, "\r\nContent-Length: %zu\r\n", sizeof text - 1);
    if (cl)
        CU_ASSERT(strncmp(cl, want, strlen(want)) == 0);
    capped_close(&k);
}

static void test_at_cap_without_503(void)
{
    struct capped k;
    char buf[512];

    capped_open(&k, 1);
    srv.props.send_503_on_max_connections = 0;
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]), 0);
    ASSERT_INT(drain(k.incoming[1], k.incoming[0], buf, sizeof buf), 0);
    capped_close(&k);
}

static void test_no_cap(void)
{
    struct capped k;

    capped_open(&k, 0); /* 0 = no cap */
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]), 1);
    capped_close(&k);
}

static void test_user_hook_refusing(void)
{
    struct capped k;
    struct hook hk = { 0, 0, -1 };
    char buf[512];

    capped_open(&k, 128);
    httpserver_set_on_allow_connect(&srv, hook_fn, &hk);
    CU_ASSERT(srv.on_allow_connect == hook_fn);
    CU_ASSERT(srv.on_allow_connect_data == &hk);
    /* B1: stock stores the hook and never calls it, so it cannot refuse. */
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]),
               KIT_FIXED_B1 ? 0 : 1);
    ASSERT_INT(hk.calls, KIT_FIXED_B1 ? 1 : 0);
    if (KIT_FIXED_B1)
        ASSERT_INT(hk.last_fd, k.incoming[0]);
    /* A refusal by the user's hook sends nothing. */
    ASSERT_INT(drain(k.incoming[1], k.incoming[0], buf, sizeof buf), 0);
    capped_close(&k);
}

static void test_user_hook_allowing(void)
{
    struct capped k;
    struct hook hk = { 0, 1, -1 };

    capped_open(&k, 128);
    httpserver_set_on_allow_connect(&srv, hook_fn, &hk);
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]), 1);
    ASSERT_INT(hk.calls, KIT_FIXED_B1 ? 1 : 0);
    capped_close(&k);
}

static void test_cap_comes_before_user_hook(void)
{
    struct capped k;
    struct hook hk = { 0, 1, -1 };
    char buf[512];
    size_t n;

    capped_open(&k, 1);
    httpserver_set_on_allow_connect(&srv, hook_fn, &hk);
    ASSERT_INT(httpserver_do_on_allow_connect(&srv, k.incoming[0]), 0);
    ASSERT_INT(hk.calls, 0);
    n = drain(k.incoming[1], k.incoming[0], buf, sizeof buf);
    ASSERT_MEM(buf, n, httpserver_error_503);
    capped_close(&k);
}

/* ---- CreateServerSocket ------------------------------------------------- */

static int idle_timeout_for(enum thread_mode mode, int accept_idle)
{
    unit_server_init(&srv);
    srv.props.thread_mode = mode;
    srv.props.accept_idle_timeout = accept_idle;
    httpserver_create_server_socket(&srv);
    return srv.server.accept_idle_timeout;
}

static void test_create_server_socket_idle_tick(void)
{
    /* B6: pool mode gets no fallback tick on stock; B6's and B21's fixes
     * wait in CheckRequests, the listener's own wait is 1 ms. */
    ASSERT_INT(idle_timeout_for(TM_POOL, 0), KIT_FIXED_B6 ? 1 : 0);
    ASSERT_INT(idle_timeout_for(TM_POLLED, 0), KIT_FIXED_B21 ? 1 : 100);
    ASSERT_INT(idle_timeout_for(TM_THREAD, 0), 0);
    ASSERT_INT(idle_timeout_for(TM_NONE, 0), 0);
    ASSERT_INT(idle_timeout_for(TM_POOL, 250), KIT_FIXED_B6 ? 1 : 250);
    ASSERT_INT(idle_timeout_for(TM_POLLED, 250), KIT_FIXED_B21 ? 1 : 250);
    ASSERT_INT(idle_timeout_for(TM_THREAD, 7), 7);
}

static void test_create_server_socket_wiring(void)
{
    struct hook hk = { 0, 1, -1 };

    unit_server_init(&srv);
    srv.props.queue_size = 9;
    httpserver_set_on_allow_connect(&srv, hook_fn, &hk);
    httpserver_create_server_socket(&srv);
    CU_ASSERT(srv.server.ev.owner == &srv);
    /* The listener's query is the server's own routine on every variant:
     * the fix forwards to the user's hook, it never wires it directly. */
    CU_ASSERT(srv.server.ev.on_connect_query == httpserver_do_on_allow_connect);
    CU_ASSERT(srv.server.ev.on_create_client_handler == httpserver_get_socket_handler);
    CU_ASSERT(srv.server.ev.on_connect == httpserver_do_connect);
    CU_ASSERT(srv.server.ev.on_idle == httpserver_do_accept_idle);
    ASSERT_INT(srv.server.queue_size, 9);
    CU_ASSERT(srv.on_allow_connect == hook_fn);
}

/* ---- GetSocketHandler --------------------------------------------------- */

static const struct socket_handler_ops custom_ops = { "custom", NULL };
static int get_handler_calls, after_create_calls;
static struct socket_handler *after_create_seen;

static struct socket_handler *get_custom(void *data)
{
    get_handler_calls++;
    return data ? socket_handler_new(&custom_ops) : NULL;
}

static void after_create(void *data, struct socket_handler *h)
{
    (void)data;
    after_create_calls++;
    after_create_seen = h;
}

static void test_get_socket_handler(void)
{
    struct socket_handler *h;
    int yes = 1;

    unit_server_init(&srv);
    h = httpserver_get_socket_handler(&srv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_PTR_NULL(h->ops);
    free(h);

    get_handler_calls = after_create_calls = 0;
    srv.on_get_socket_handler = get_custom;
    srv.on_get_socket_handler_data = &yes;
    srv.after_socket_handler_create = after_create;
    h = httpserver_get_socket_handler(&srv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT(h->ops == &custom_ops);
    ASSERT_INT(get_handler_calls, 1);
    ASSERT_INT(after_create_calls, 1);
    CU_ASSERT(after_create_seen == h);
    free(h);

    /* The user's factory may decline: the default handler is made. */
    srv.on_get_socket_handler_data = NULL;
    h = httpserver_get_socket_handler(&srv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_PTR_NULL(h->ops);
    ASSERT_INT(get_handler_calls, 2);
    ASSERT_INT(after_create_calls, 2);
    free(h);
}

/* ---- DoConnect, DoAcceptIdle -------------------------------------------- */

static void test_do_connect_none_mode(void)
{
    char err[OS_ERR_LEN];
    int sv[2];
    struct socket_stream *st;

    unit_server_init(&srv);
    srv.connection_handler = handler_create(&srv, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(srv.connection_handler);
    ASSERT_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    unit_write_str(sv[1], "GET /ping HTTP/1.1\r\n\r\n");
    st = socket_stream_new(sv[0], socket_handler_new(NULL));
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    /* ThreadMode none: served on this thread, then closed. */
    httpserver_do_connect(&srv, st);
    ASSERT_INT(httpserver_get_connection_count(&srv), 0);
    unit_read_response(sv[1], &resp);
    ASSERT_INT(resp.status, 200);
    ASSERT_MEM(resp.body, resp.body_len, "pong");
    ASSERT_STR(unit_response_header(&resp, "Connection"),
               KIT_FIXED_B4 ? "close" : NULL);
    ASSERT_INT(unit_read_eof(sv[1]), 1);
    ASSERT_INT(unit_log_count("connect conn="), 1);
    handler_free(srv.connection_handler);
    srv.connection_handler = NULL;
    close(sv[1]);
}

static void test_do_accept_idle_polled(void)
{
    char err[OS_ERR_LEN];
    struct unit_conn u;

    unit_server_init(&srv);
    srv.props.thread_mode = TM_POLLED;
    srv.props.keep_connections = 1;
    srv.connection_handler = handler_create(&srv, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(srv.connection_handler);
    unit_conn_open(&u, &srv);
    handler_handle_connection(srv.connection_handler, u.c);
    u.c = NULL;
    ASSERT_INT(unit_requests_seen(), 0);
    unit_write_str(u.peer, "GET /ping HTTP/1.1\r\n\r\n");
    ASSERT_INT(unit_readable_now(u.peer), 0);
    /* The accept-idle tick is what serves a polled connection. */
    httpserver_do_accept_idle(&srv);
    ASSERT_INT(unit_requests_seen(), 1);
    unit_read_response(u.peer, &resp);
    ASSERT_INT(resp.status, 200);
    handler_free(srv.connection_handler);
    srv.connection_handler = NULL;
    unit_conn_close(&u);
}

/* ---- start, the real accept path, destroy ------------------------------- */

static int idle_calls;

/* The idle callback: the server's own DoAcceptIdle, then stop once the
 * connection was served and reaped.  (On loopback the request is normally
 * readable when the connection is accepted and served at once, and the
 * first tick reaps it; if the kernel delivers it later, a later tick serves
 * it.  The bound only keeps a broken build from spinning forever.) */
static void idle_then_stop(void *owner)
{
    struct httpserver *s = owner;

    idle_calls++;
    httpserver_do_accept_idle(s);
    if ((unit_requests_seen() >= 1 && httpserver_get_connection_count(s) == 0) ||
        idle_calls >= 10000)
        socket_server_stop_accepting(&s->server);
}

static void test_accept_path_end_to_end(void)
{
    char err[OS_ERR_LEN];
    struct hook hk = { 0, 1, -1 };
    int client;

    unit_server_init(&srv);
    srv.props.thread_mode = TM_POLLED;
    httpserver_set_on_allow_connect(&srv, hook_fn, &hk);
    ASSERT_INT(httpserver_start(&srv, err), 0);
    CU_ASSERT(srv.props.port > 0);
    CU_ASSERT(srv.server.fd >= 0);
    CU_ASSERT_PTR_NOT_NULL(srv.connection_handler);
    ASSERT_INT(atomic_load(&srv.active), 1);
    ASSERT_INT(srv.server.accept_idle_timeout, KIT_FIXED_B21 ? 1 : 100);
    /* A short tick and an idle callback that ends the loop, so that
     * httpserver_run returns after one connection and one idle tick. */
    srv.server.accept_idle_timeout = 1;
    srv.server.ev.on_idle = idle_then_stop;
    idle_calls = 0;

    client = unit_tcp_connect(srv.props.port);
    CU_ASSERT_FATAL(client >= 0);
    unit_write_str(client, "GET /ping HTTP/1.1\r\n\r\n");
    httpserver_run(&srv);
    CU_ASSERT(idle_calls >= 1 && idle_calls < 10000);
    ASSERT_INT(unit_requests_seen(), 1);
    /* B1 through the real listener: the user's hook runs only when fixed. */
    ASSERT_INT(hk.calls, KIT_FIXED_B1 ? 1 : 0);
    unit_read_response(client, &resp);
    ASSERT_INT(resp.status, 200);
    ASSERT_MEM(resp.body, resp.body_len, "pong");
    /* keep-connections off: reaped on the idle tick, so the client sees
     * the end of the stream. */
    ASSERT_INT(unit_read_eof(client), 1);
    ASSERT_INT(httpserver_get_connection_count(&srv), 0);
    close(client);
    httpserver_destroy(&srv);
    CU_ASSERT_PTR_NULL(srv.connection_handler);
    ASSERT_INT(srv.server.fd, -1);
    ASSERT_INT(atomic_load(&srv.active), 0);
}

static void test_start_bad_address(void)
{
    char err[OS_ERR_LEN] = "";

    unit_server_init(&srv);
    snprintf(srv.props.address, sizeof srv.props.address, "not-an-ip");
    ASSERT_INT(httpserver_start(&srv, err), -1);
    CU_ASSERT(strstr(err, "not-an-ip") != NULL);
    CU_ASSERT_PTR_NULL(srv.connection_handler);
}

static void test_defaults(void)
{
    httpserver_init(&srv);
    ASSERT_STR(srv.props.address, "127.0.0.1");
    ASSERT_INT(srv.props.port, 0);
    ASSERT_INT(srv.props.keep_connections, 0);
    ASSERT_INT(srv.props.keep_connection_timeout, 0);
    ASSERT_INT(srv.props.keep_connection_idle_timeout, 50);
    ASSERT_INT(srv.props.thread_mode, TM_NONE);
    ASSERT_INT(srv.props.accept_idle_timeout, 0);
    ASSERT_INT(srv.props.request_read_timeout, 30000);
    ASSERT_INT(srv.props.max_live_connection_count, 128);
    ASSERT_INT(srv.props.send_503_on_max_connections, 1);
    ASSERT_INT(srv.props.max_line_length, 32768);
    ASSERT_INT(srv.props.max_header_count, 256);
    ASSERT_INT(srv.props.strict_ascii_url, 1);
    ASSERT_INT(srv.server.fd, -1);
    CU_ASSERT_PTR_NULL(srv.on_allow_connect);
}

static const struct unit_test httpserver_tests[] = {
    { "defaults", test_defaults },
    { "below_cap_allows", test_below_cap_allows },
    { "at_cap_sends_503", test_at_cap_sends_503 },
    { "at_cap_without_503", test_at_cap_without_503 },
    { "b19_503_says_its_length", test_b19_503_says_its_length },
    { "no_cap", test_no_cap },
    { "b1_user_hook_refusing", test_user_hook_refusing },
    { "b1_user_hook_allowing", test_user_hook_allowing },
    { "b1_cap_comes_before_user_hook", test_cap_comes_before_user_hook },
    { "b6_create_server_socket_idle_tick", test_create_server_socket_idle_tick },
    { "create_server_socket_wiring", test_create_server_socket_wiring },
    { "get_socket_handler", test_get_socket_handler },
    { "do_connect_none_mode", test_do_connect_none_mode },
    { "do_accept_idle_polled", test_do_accept_idle_polled },
    { "accept_path_end_to_end", test_accept_path_end_to_end },
    { "start_bad_address", test_start_bad_address },
};

int unit_register_httpserver(void)
{
    return UNIT_ADD_SUITE("httpserver", NULL, httpserver_tests);
}
