/* conn.h - one client connection (TEpollConnectionContext): its socket, the
 * bytes read and not yet consumed, and the request being served.
 *
 * Ownership: a connection belongs to exactly one thread at a time - its
 * loop, or the pool worker the loop handed it to (EPOLLONESHOT keeps the
 * loop from seeing it meanwhile).  The hand-over goes through the pool's
 * mutex one way and the loop's completion list the other, so no field
 * needs its own lock.  `busy` and `last_active` are the loop's alone. */
#ifndef DISPATCH_CONN_H
#define DISPATCH_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"

#define CONN_BUF_MAX (HTTP_MAX_HEAD + HTTP_MAX_BODY)
#define CONN_SEND_TIMEOUT_MS 10000

struct loop;

struct conn {
    int fd;
    unsigned long id;
    struct loop *loop;
    char *buf;
    size_t len, cap;
    int peer_closed;          /* read() saw end of stream */
    int close_after;          /* close once the current work is done */
    int busy;                 /* handed to a pool worker (loop thread only) */
    uint64_t last_active;     /* loop thread only */
    struct http_request req;  /* framed by the loop, served by the owner */
    size_t req_len;
    struct conn *prev, *next; /* the loop's connection list */
    struct conn *done_next;   /* the loop's completion list */
};

struct conn *conn_new(int fd, unsigned long id, struct loop *l);
/* Closes the socket and frees everything. */
void conn_free(struct conn *c);

/* Read until the socket has nothing more (EAGAIN), the peer closed, or the
 * buffer is at CONN_BUF_MAX.  Bytes already buffered are never dropped.
 * 0, or -1 on a read error (the caller closes). */
int conn_fill(struct conn *c);

/* Serve the request at the start of the buffer (c->req, c->req_len): run
 * the handler, send the response in one buffer, drop exactly the request's
 * bytes (a pipelined request behind it stays).  Sets close_after when the
 * request or a failed send ends the connection. */
void conn_serve(struct conn *c);

/* Answer an unparseable request with `status` and Connection: close. */
void conn_reject(struct conn *c, int status);

#endif
