/* server.h - THorseProviderEpoll: one event loop per CPU, each with its own
 * SO_REUSEPORT listener and epoll set (THorseEpollWorker), and the executor
 * the --dispatch flag chooses. */
#ifndef DISPATCH_SERVER_H
#define DISPATCH_SERVER_H

#include <stdatomic.h>

#include "bpool.h"
#include "gpool.h"
#include "options.h"
#include "os.h"

struct conn;

struct loop {
    int index;
    struct server *srv;
    int ep, listen_fd, wake_r, wake_w;
    os_thread *thread;
    struct conn *conns;          /* loop thread only */
    os_mutex *done_mu;           /* guards `done` */
    struct conn *done;           /* served by a worker, back to the loop */
    int listener_closed;         /* loop thread only */
    uint64_t last_sweep;         /* loop thread only */
    char listen_tag, wake_tag;   /* their addresses tag epoll events */
};

struct server {
    const struct options *opt;
    struct gpool *gpool;         /* --dispatch global-pool */
    struct bpool *bpool;         /* --dispatch bounded-pool */
    struct loop *loops;
    int nloops, port;
    atomic_int stopping;         /* stop accepting; refuse new requests */
    atomic_int exiting;          /* loops close everything and return */
    os_mutex *mu;
    os_cond *cond;
    int listeners_closed;        /* guarded by mu */
    atomic_ulong next_conn_id;
    atomic_ulong served;         /* responses to framed requests */
    atomic_ulong queue_full;     /* connections closed on a full queue */
};

/* Listeners, executor, loops.  0, or -1 with err filled (nothing left). */
int server_start(char *err, struct server *s, const struct options *o);

/* Graceful stop: close the listeners, let the executor run every accepted
 * task, then stop the loops and free everything. */
void server_drain(struct server *s);

/* loop.c: the thread body of one event loop. */
void *loop_run(void *arg);

#endif
