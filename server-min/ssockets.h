/* ssockets.h - the parts of fcl-net's ssockets unit that fphttpserver
 * stands on: TSocketHandler (with its virtual Accept), TSocketStream and the
 * accept loop of TSocketServer/TInetServer. */
#ifndef SERVER_MIN_SSOCKETS_H
#define SERVER_MIN_SSOCKETS_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

struct socket_stream;
struct socket_handler;

struct socket_handler_ops {
    const char *name;
    /* TSocketHandler.Accept: runs once on an accepted socket before any
     * request; false makes the server shut the socket down and close it.
     * NULL means upstream's default, which just says yes. */
    int (*accept)(struct socket_handler *h);
};

/* TSocketHandler: performs the stream's I/O and remembers the last error. */
struct socket_handler {
    const struct socket_handler_ops *ops;
    struct socket_stream *socket;
    int last_error; /* errno of the last failed recv/send, 0 after a success */
};

/* TSocketStream over an accepted fd. */
struct socket_stream {
    int fd;
    struct socket_handler *handler; /* owned */
    int read_flags;
    int write_flags;
};

/* A default TSocketHandler (TSocketHandler.Create). NULL on out-of-memory. */
struct socket_handler *socket_handler_new(const struct socket_handler_ops *ops);

/* TSocketHandler.Accept through the ops table. */
int socket_handler_accept(struct socket_handler *h);

/* Wraps fd; takes ownership of both fd and handler. NULL on out-of-memory
 * (then fd and handler are left to the caller). */
struct socket_stream *socket_stream_new(int fd, struct socket_handler *h);

/* Destroy: close the descriptor, free the handler. */
void socket_stream_free(struct socket_stream *s);

/* TSocketStream.CanRead: select() for readability, timeout in ms. */
int socket_stream_can_read(struct socket_stream *s, int timeout_ms);

/* TSocketStream.Read -> handler Recv: ONE recv call. */
ssize_t socket_stream_read(struct socket_stream *s, void *buf, size_t len);

/* TStream.WriteBuffer -> handler Send, repeated until everything is written.
 * 0, or -1 (handler last_error says why). */
int socket_stream_write_buffer(struct socket_stream *s, const void *buf,
                               size_t len);

/* TSocketStream.IOTimeout: SO_RCVTIMEO + SO_SNDTIMEO. */
int socket_stream_set_io_timeout(struct socket_stream *s, int timeout_ms,
                                 char *err);

int socket_stream_last_error(const struct socket_stream *s);

/* TSocketServer events, wired by the HTTP server (CreateServerSocket). */
typedef void (*socket_idle_event)(void *owner);

struct socket_server_events {
    void *owner;
    /* OnConnectSocketQuery: may write to fd; returns allow (1) or refuse. */
    int (*on_connect_query)(void *owner, int fd);
    /* OnCreateClientSocketHandler. */
    struct socket_handler *(*on_create_client_handler)(void *owner);
    /* OnConnect: the stream is handed over. */
    void (*on_connect)(void *owner, struct socket_stream *s);
    /* OnIdle: no connection arrived within AcceptIdleTimeout.  Atomic: an
     * application may replace it from a request thread while the accept
     * loop runs (SetIdle, B9). */
    _Atomic(socket_idle_event) on_idle;
};

struct socket_server {
    int fd;
    int port;               /* the bound port (resolved when 0 was asked) */
    int queue_size;
    int accept_idle_timeout; /* ms; 0 = block in accept() */
    atomic_int accepting;
    unsigned long accept_failures; /* accept() failing for want of fds */
    struct socket_server_events ev;
};

/* Bind + Listen. 0, or -1 with err. */
int socket_server_listen(struct socket_server *srv, const char *address,
                         int port, char *err);

/* StartAccepting: the accept loop; returns when stopped. */
void socket_server_start_accepting(struct socket_server *srv);

/* StopAccepting: the loop ends at its next wake-up. */
void socket_server_stop_accepting(struct socket_server *srv);

void socket_server_close(struct socket_server *srv);

#endif
