/* httpserver.h - TFPCustomHttpServer: properties, events, the connect query
 * and the accept-path callbacks. */
#ifndef SERVER_MIN_HTTPSERVER_H
#define SERVER_MIN_HTTPSERVER_H

#include <stdatomic.h>
#include <stdint.h>

#include "ssockets.h"

struct connection;
struct conn_handler;
struct http_request;
struct http_response;

enum thread_mode { TM_NONE, TM_POLLED, TM_THREAD, TM_POOL };

/* Upstream defaults (fphttpserver constants and TFPCustomHttpServer.Create). */
#define HTTPSERVER_READ_BUF_LEN 4096                  /* ReadBufLen */
#define HTTPSERVER_DEFAULT_MAX_LINE_LENGTH (8 * 4096) /* DefaultMaxHeaderLineLength */
#define HTTPSERVER_DEFAULT_MAX_HEADER_COUNT 256
#define HTTPSERVER_DEFAULT_MAX_LIVE_CONNECTIONS 128
#define HTTPSERVER_DEFAULT_KEEP_IDLE_TIMEOUT 50       /* ms */
#define HTTPSERVER_DEFAULT_REQUEST_READ_TIMEOUT 30000 /* ms */
/* DefaultMaxBodySize (httpdefs): MaxInt.  A smaller default would hide
 * B12, the announced body allocated before it arrives. */
#define HTTPSERVER_DEFAULT_MAX_BODY_SIZE 2147483647LL
/* Polled mode's accept-idle tick when AcceptIdleTimeout is 0. */
#define HTTPSERVER_POLLED_FALLBACK_IDLE_MS 100
/* Pool MaxThreads: 0 = TThread.ProcessorCount, as TFPSimpleThreadPool.Create. */
#define HTTPSERVER_DEFAULT_POOL_THREADS 0

struct httpserver_props {
    char address[64];
    int port;
    int queue_size;
    int keep_connections;
    int keep_connection_timeout;      /* ms, 0 = the keep-alive loop never runs */
    int keep_connection_idle_timeout; /* ms, 0 = use keep_connection_timeout */
    enum thread_mode thread_mode;
    int accept_idle_timeout;          /* ms */
    int request_read_timeout;         /* ms */
    int max_live_connection_count;
    int send_503_on_max_connections;
    int max_line_length;
    int max_header_count;
    int64_t max_body_size;
    int strict_ascii_url;
    int pool_threads;
};

/* TConnectQuery: allow (1) or refuse (0) the socket fd. */
typedef int (*httpserver_connect_query)(void *data, int fd);
/* TGetSocketHandlerEvent: may return NULL for the default handler. */
typedef struct socket_handler *(*httpserver_get_socket_handler_event)(void *data);
/* THTTPServerRequestHandler (OnRequest). */
typedef void (*httpserver_request_handler)(void *data,
                                           struct http_request *req,
                                           struct http_response *resp);

struct httpserver {
    struct httpserver_props props;

    /* OnAllowConnect: stored by httpserver_set_on_allow_connect. */
    httpserver_connect_query on_allow_connect;
    void *on_allow_connect_data;
    /* OnGetSocketHandler and AfterSocketHandlerCreate. */
    httpserver_get_socket_handler_event on_get_socket_handler;
    void *on_get_socket_handler_data;
    void (*after_socket_handler_create)(void *data, struct socket_handler *h);
    void *after_socket_handler_create_data;
    /* OnRequest. */
    httpserver_request_handler on_request;
    void *on_request_data;
    /* OnAcceptIdle (FOnAcceptIdle), written by httpserver_set_idle, maybe
     * while the server runs. */
    _Atomic(socket_idle_event) on_accept_idle;

    struct socket_server server;
    struct conn_handler *connection_handler;
    atomic_int active;
    /* Not upstream: a connection thread's keep-alive loop ends at a stop
     * (the clone's bounded stop); 0 for --stop free, where nothing
     * terminates it, as upstream. */
    atomic_int threads_see_stop;
};

/* TFPCustomHttpServer.Create: every property at upstream's default. */
void httpserver_init(struct httpserver *s);

/* SetOnAllowConnect. */
void httpserver_set_on_allow_connect(struct httpserver *s,
                                     httpserver_connect_query fn, void *data);

/* DoOnAllowConnect: the listener's connect query. */
int httpserver_do_on_allow_connect(void *server, int fd);
/* The fixed 503 DoOnAllowConnect writes at the cap (NUL-terminated). */
extern const char httpserver_error_503[];

/* GetSocketHandler (via DoCreateClientHandler). */
struct socket_handler *httpserver_get_socket_handler(void *server);

/* DoConnect: wrap the stream in a connection and hand it to the handler. */
void httpserver_do_connect(void *server, struct socket_stream *stream);

/* DoAcceptIdle: OnAcceptIdle, then let the connection handler re-check its
 * connections. */
void httpserver_do_accept_idle(void *server);

/* SetIdle: OnAcceptIdle's setter; the handler is called with the server. */
void httpserver_set_idle(struct httpserver *s, socket_idle_event fn);

/* CreateServerSocket: wire the listener's events and its idle timeout. */
void httpserver_create_server_socket(struct httpserver *s);

/* GetConnectionCount. */
int httpserver_get_connection_count(struct httpserver *s);

/* HandleRequest: calls OnRequest. */
void httpserver_handle_request(struct httpserver *s, struct http_request *req,
                               struct http_response *resp);

/* SetActive(True) in two steps so the caller can print the bound port
 * between them: start (create handler, bind, listen) then run (accept loop,
 * returns after httpserver_stop or a stop signal). */
int httpserver_start(struct httpserver *s, char *err);
void httpserver_run(struct httpserver *s);
void httpserver_stop(struct httpserver *s);

/* The clone's bounded stop (main's default): inactive, listener closed,
 * handler_free.  Not upstream's Destroy (see httpserver_free). */
void httpserver_destroy(struct httpserver *s);

/* TFPCustomHttpServer.Destroy, as Free runs it after the accept loop ended:
 * inactive; with connections left, WaitForRequests (10), CloseSockets,
 * WaitForRequests with no bound; then the handler freed.  Returns only
 * when no connection is left (B15: on stock, never while a pooled or
 * polled connection is kept alive). */
void httpserver_free(struct httpserver *s);

#endif
