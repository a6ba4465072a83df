/* connection.h - TFPHTTPConnection: one accepted socket, its read buffer
 * (FBuffer), and the reading and handling of its requests. */
#ifndef SERVER_MIN_CONNECTION_H
#define SERVER_MIN_CONNECTION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "httpserver.h"

struct http_request;
struct socket_stream;

struct connection {
    struct httpserver *server;
    struct socket_stream *socket;
    uint64_t id;                   /* ConnectionID */
    unsigned requests;             /* requests dispatched, for the log's req=<n> */
    unsigned handled;              /* HandleRequest calls, whatever their outcome */

    /* FBuffer: what the last read() returned and nobody consumed yet. */
    char buffer[HTTPSERVER_READ_BUF_LEN];
    size_t buf_pos, buf_len;

    /* ReadString's result, growing as chunks arrive. */
    char *line;
    size_t line_len, line_cap;
    int request_started;           /* a byte of the current request arrived */

    atomic_int busy;               /* FBusy: read by the pool's accept thread */
    atomic_int serving;            /* not upstream: threads in HandleRequest */
    atomic_int in_pool_task;       /* owned by a pool task until its
                                      ConnectionDone (not upstream) */
    atomic_int keep_alive;         /* FKeepAlive: cleared by CloseSockets */
    int empty_detected;            /* FEmptyDetected */
    int is_upgraded;               /* FIsUpgraded (never set: no upgraders) */
    int is_socket_setup;           /* FIsSocketSetup */
    atomic_uint_least64_t last_request_time; /* FLastRequestTime, tick ms */
    int last_error_status;         /* HTTP status of the last raised error */
};

/* Create: takes the stream; allocates the ID (AllocateConnectionID).
 * NULL on out-of-memory (the stream is then still the caller's). */
struct connection *connection_new(struct httpserver *server,
                                  struct socket_stream *socket);

/* Destroy: logs the close and frees the socket (closing the fd). */
void connection_free(struct connection *c);

/* HandleRequest: set up the socket once, handle one request; any error turns
 * keep-alive off. */
void connection_handle_request(struct connection *c);

/* AllowNewRequest. */
int connection_allow_new_request(struct connection *c);

/* RequestPending: is there a next request to serve? */
int connection_request_pending(struct connection *c);

/* DoKeepConnectionIdle: fires the server's OnKeepConnectionIdle (none). */
void connection_do_keep_connection_idle(struct connection *c);

/* The keep-alive time-out and idle time-out as the connection sees them. */
int connection_keep_connection_timeout(const struct connection *c);
int connection_keep_connection_idle_timeout(const struct connection *c);

int connection_is_upgraded(const struct connection *c);
struct socket_stream *connection_socket(const struct connection *c);
int connection_fd(const struct connection *c);

/* Exposed for unit tests: the steps of HandleRequest. Each returns 0, or the
 * HTTP status of the error it raised (400, 408, 413, 431, 500). */
int connection_read_string(struct connection *c);
int connection_read_request_headers(struct connection *c,
                                    struct http_request **out);
int connection_read_request_content(struct connection *c,
                                    struct http_request *req);
int connection_do_handle_request(struct connection *c);

/* Bytes buffered and not yet consumed (FBuffer's length). */
size_t connection_buffered(const struct connection *c);

#endif
