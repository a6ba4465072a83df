/* httpserver.c - TFPCustomHttpServer. */
#include "httpserver.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "conn_handlers.h"
#include "connection.h"
#include "log.h"
#include "os.h"

void httpserver_init(struct httpserver *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->props.address, sizeof s->props.address, "127.0.0.1");
    s->props.port = 0;
    s->props.queue_size = 5;
    s->props.keep_connections = 0;
    s->props.keep_connection_timeout = 0;
    s->props.keep_connection_idle_timeout = HTTPSERVER_DEFAULT_KEEP_IDLE_TIMEOUT;
    s->props.thread_mode = TM_NONE;
    s->props.accept_idle_timeout = 0;
    s->props.request_read_timeout = HTTPSERVER_DEFAULT_REQUEST_READ_TIMEOUT;
    s->props.max_live_connection_count = HTTPSERVER_DEFAULT_MAX_LIVE_CONNECTIONS;
    s->props.send_503_on_max_connections = 1;
    s->props.max_line_length = HTTPSERVER_DEFAULT_MAX_LINE_LENGTH;
    s->props.max_header_count = HTTPSERVER_DEFAULT_MAX_HEADER_COUNT;
    s->props.max_body_size = HTTPSERVER_DEFAULT_MAX_BODY_SIZE;
    s->props.strict_ascii_url = 1;
    s->props.pool_threads = HTTPSERVER_DEFAULT_POOL_THREADS;
    s->server.fd = -1;
    atomic_store(&s->threads_see_stop, 1);
}

/* SetOnAllowConnect: the handler is stored.  Nothing in this unit reads it
 * back (defect B1): CreateServerSocket wires the listener's connect query to
 * DoOnAllowConnect, and DoOnAllowConnect does not forward. */
void httpserver_set_on_allow_connect(struct httpserver *s,
                                     httpserver_connect_query fn, void *data)
{
    s->on_allow_connect = fn;
    s->on_allow_connect_data = data;
}

int httpserver_get_connection_count(struct httpserver *s)
{
    return s->connection_handler
               ? handler_get_active_connection_count(s->connection_handler)
               : 0;
}

/* The fixed answer at the connection cap, byte for byte what the real
 * server puts on the wire; it does say it closes. */
const char httpserver_error_503[] =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: text/plain\r\n"
    "Retry-After: 30\r\n"
    "Connection: close\r\n"
    "\r\n"
    "Server is temporarily overloaded. Please try again shortly.";

/* DoOnAllowConnect: applies MaxLiveConnectionCount only.  At the cap it
 * writes the 503 straight to the fd (when Send503OnMaxConnections) and
 * refuses; otherwise it allows.  The user's OnAllowConnect is not called. */
int httpserver_do_on_allow_connect(void *server, int fd)
{
    struct httpserver *s = server;

    if (s->props.max_live_connection_count > 0 &&
        httpserver_get_connection_count(s) >=
            s->props.max_live_connection_count) {
        if (s->props.send_503_on_max_connections)
            /* One send, flags 0, result ignored: as upstream's fpSend. */
            os_send(fd, httpserver_error_503, sizeof httpserver_error_503 - 1,
                    0);
        return 0;
    }
    return 1;
}

/* GetSocketHandler: the user's OnGetSocketHandler may supply one, else the
 * default; AfterSocketHandlerCreate sees it either way. */
struct socket_handler *httpserver_get_socket_handler(void *server)
{
    struct httpserver *s = server;
    struct socket_handler *h = NULL;

    if (s->on_get_socket_handler)
        h = s->on_get_socket_handler(s->on_get_socket_handler_data);
    if (!h)
        h = socket_handler_new(NULL);
    if (h && s->after_socket_handler_create)
        s->after_socket_handler_create(s->after_socket_handler_create_data, h);
    return h;
}

/* DoConnect: a connection object (with its ID) for the accepted stream,
 * handed to the connection handler of the ThreadMode. */
void httpserver_do_connect(void *server, struct socket_stream *stream)
{
    struct httpserver *s = server;
    struct connection *c = connection_new(s, stream);

    if (!c) {
        log_line("error out of memory for a new connection");
        socket_stream_free(stream);
        return;
    }
    log_line("connect conn=%llu fd=%d", (unsigned long long)c->id,
             stream->fd);
    handler_handle_connection(s->connection_handler, c);
}

/* DoAcceptIdle: the application's OnAcceptIdle first, then the only place
 * the connection handler gets to re-check its waiting connections
 * (CheckRequests). */
void httpserver_do_accept_idle(void *server)
{
    struct httpserver *s = server;
    socket_idle_event hook = atomic_load(&s->on_accept_idle);

    if (hook)
        hook(s);
    handler_check_requests(s->connection_handler);
}

/* SetIdle: stores OnAcceptIdle and, once the listener exists, makes the
 * application's handler the listener's OnIdle in place of DoAcceptIdle:
 * CheckRequests stops running, and polled and pooled connections are not
 * checked again (B9). */
void httpserver_set_idle(struct httpserver *s, socket_idle_event fn)
{
    atomic_store(&s->on_accept_idle, fn);
    if (s->server.fd >= 0)
        atomic_store(&s->server.ev.on_idle, fn);
}

/* CreateServerSocket: the listener's connect query is DoOnAllowConnect, the
 * client handler factory GetSocketHandler, and its idle callback
 * DoAcceptIdle.  Polled mode needs a tick even with AcceptIdleTimeout 0. */
void httpserver_create_server_socket(struct httpserver *s)
{
    s->server.queue_size = s->props.queue_size;
    s->server.ev.owner = s;
    s->server.ev.on_connect_query = httpserver_do_on_allow_connect;
    s->server.ev.on_create_client_handler = httpserver_get_socket_handler;
    s->server.ev.on_connect = httpserver_do_connect;
    s->server.ev.on_idle = httpserver_do_accept_idle;
    s->server.accept_idle_timeout = s->props.accept_idle_timeout;
    if (s->props.thread_mode == TM_POLLED && s->server.accept_idle_timeout == 0)
        s->server.accept_idle_timeout = HTTPSERVER_POLLED_FALLBACK_IDLE_MS;
}

void httpserver_handle_request(struct httpserver *s, struct http_request *req,
                               struct http_response *resp)
{
    if (s->on_request)
        s->on_request(s->on_request_data, req, resp);
}

int httpserver_start(struct httpserver *s, char *err)
{
    s->connection_handler = handler_create(s, err);
    if (!s->connection_handler)
        return -1;
    httpserver_create_server_socket(s);
    if (socket_server_listen(&s->server, s->props.address, s->props.port,
                             err) != 0) {
        handler_free(s->connection_handler);
        s->connection_handler = NULL;
        return -1;
    }
    s->props.port = s->server.port;
    atomic_store(&s->active, 1);
    return 0;
}

void httpserver_run(struct httpserver *s)
{
    socket_server_start_accepting(&s->server);
}

void httpserver_stop(struct httpserver *s)
{
    socket_server_stop_accepting(&s->server);
    os_request_stop();
}

void httpserver_destroy(struct httpserver *s)
{
    atomic_store(&s->active, 0);
    socket_server_close(&s->server);
    handler_free(s->connection_handler);
    s->connection_handler = NULL;
}

/* WaitForRequests(High(Integer)): about 6.8 years of 100 ms looks. */
#define HTTPSERVER_WAIT_FOREVER INT_MAX

void httpserver_free(struct httpserver *s)
{
    atomic_store(&s->active, 0);
    socket_server_close(&s->server);
    if (httpserver_get_connection_count(s) > 0) {
        /* First wait for open requests to end by themselves, then force
         * the sockets closed, then wait for every connection to go. */
        handler_wait_for_requests(s->connection_handler, 10);
        handler_close_sockets(s->connection_handler);
        handler_wait_for_requests(s->connection_handler,
                                  HTTPSERVER_WAIT_FOREVER);
    }
    handler_free(s->connection_handler);
    s->connection_handler = NULL;
}
