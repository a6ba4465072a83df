/* loop.c - one event loop (THorseEpollWorker.Execute): accept on its own
 * listener, read, frame requests, and dispatch each as --dispatch says:
 *  inline        the handler runs here, in the loop thread;
 *  global-pool   TTask.Run: handed to the unbounded global pool;
 *  bounded-pool  handed to the bounded executor; a full queue closes the
 *                connection (counted and logged) instead of losing it.
 * A connection given to a worker is not watched (EPOLLONESHOT, not re-armed)
 * until the worker hands it back through the completion list. */
#include <stdlib.h>

#include "conn.h"
#include "../server-min/log.h"
#include "server.h"

#define LOOP_EVENTS 64
#define LOOP_TICK_MS 1000
#define CONN_EVENTS (OS_EV_IN | OS_EV_RDHUP | OS_EV_ONESHOT)

static void loop_close(struct loop *l, struct conn *c)
{
    os_epoll_del(l->ep, c->fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        l->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn_free(c);
}

/* The pool side of a dispatch: serve, then give the connection back. */
static void loop_task_run(void *arg)
{
    struct conn *c = arg;
    struct loop *l = c->loop;

    conn_serve(c);
    atomic_fetch_add(&l->srv->served, 1);
    os_mutex_lock(l->done_mu);
    c->done_next = l->done;
    l->done = c;
    os_mutex_unlock(l->done_mu);
    os_pipe_poke(l->wake_w);
}

/* Hand the framed request to the executor.  1 = handed over, 0 = closed. */
static int loop_dispatch(struct loop *l, struct conn *c)
{
    struct server *s = l->srv;
    struct dispatch_task t = { loop_task_run, c };
    enum submit_result r;

    c->busy = 1;
    r = s->gpool ? gpool_submit(s->gpool, t) : bpool_submit(s->bpool, t);
    if (r == SUBMIT_OK) {
        if (s->opt->verbose)
            log_line("dispatch conn=%lu %s %s", c->id, c->req.method, c->req.path);
        return 1;
    }
    c->busy = 0;
    if (r == SUBMIT_FULL) {
        atomic_fetch_add(&s->queue_full, 1);
        log_line("queue-full conn=%lu closed (workers=%d queue-capacity=%d)",
                 c->id, s->opt->workers, s->opt->queue_capacity);
    }
    loop_close(l, c);
    return 0;
}

/* Serve or dispatch every complete request in the buffer, in order; re-arm
 * the socket when more bytes are needed.  The connection is the loop's. */
static void loop_pump(struct loop *l, struct conn *c)
{
    char err[OS_ERR_LEN];

    for (;;) {
        long n;

        if (c->close_after) {
            loop_close(l, c);
            return;
        }
        n = http_parse(c->buf, c->len, &c->req);
        if (n < 0) {
            conn_reject(c, (int)-n);
            continue;
        }
        /* The peer has closed and no complete request is left. */
        if (n == 0 && c->peer_closed) {
            loop_close(l, c);
            return;
        }
        /* Draining: work not accepted yet is refused by closing. */
        if (atomic_load(&l->srv->stopping)) {
            loop_close(l, c);
            return;
        }
        if (n == 0) {
            if (os_epoll_mod(err, l->ep, c->fd, CONN_EVENTS, c) != 0) {
                log_line("conn=%lu %s", c->id, err);
                loop_close(l, c);
            }
            return;
        }
        c->req_len = (size_t)n;
        if (l->srv->opt->mode != DISPATCH_INLINE) {
            loop_dispatch(l, c);
            return;
        }
        conn_serve(c);
        atomic_fetch_add(&l->srv->served, 1);
    }
}

static void loop_accept(struct loop *l)
{
    struct server *s = l->srv;
    char err[OS_ERR_LEN];
    int i;

    for (i = 0; i < LOOP_EVENTS; i++) {
        int fd = os_accept_nb(l->listen_fd);
        struct conn *c;

        if (fd == -1)
            return;   /* EAGAIN, or EMFILE & co: the next wake retries */
        if (atomic_load(&s->stopping)) {
            os_close(fd);
            continue;
        }
        if (os_set_tcp_nodelay(err, fd) != 0)
            log_line("loop=%d %s", l->index, err);
        c = conn_new(fd, atomic_fetch_add(&s->next_conn_id, 1) + 1, l);
        if (!c) {
            log_line("loop=%d accept: out of memory, connection closed", l->index);
            os_close(fd);
            continue;
        }
        c->last_active = os_tick_ms();
        if (os_epoll_add(err, l->ep, fd, CONN_EVENTS, c) != 0) {
            log_line("loop=%d %s", l->index, err);
            conn_free(c);
            continue;
        }
        c->next = l->conns;
        if (l->conns)
            l->conns->prev = c;
        l->conns = c;
    }
}

static void loop_readable(struct loop *l, struct conn *c)
{
    c->last_active = os_tick_ms();
    if (conn_fill(c) != 0) {
        loop_close(l, c);
        return;
    }
    loop_pump(l, c);
}

/* Connections the workers have finished with. */
static void loop_completions(struct loop *l)
{
    struct conn *c, *next;

    os_pipe_drain(l->wake_r);   /* before the swap: a later poke stays */
    os_mutex_lock(l->done_mu);
    c = l->done;
    l->done = NULL;
    os_mutex_unlock(l->done_mu);
    for (; c; c = next) {
        next = c->done_next;
        c->busy = 0;
        c->last_active = os_tick_ms();
        loop_pump(l, c);
    }
}

/* Stop accepting: the first step of a drain. */
static void loop_close_listener(struct loop *l)
{
    struct server *s = l->srv;
    struct conn *c, *next;

    os_epoll_del(l->ep, l->listen_fd);
    os_close(l->listen_fd);
    l->listen_fd = -1;
    l->listener_closed = 1;
    for (c = l->conns; c; c = next) {   /* idle ones have nothing accepted */
        next = c->next;
        if (!c->busy)
            loop_close(l, c);
    }
    os_mutex_lock(s->mu);
    s->listeners_closed++;
    os_cond_broadcast(s->cond);
    os_mutex_unlock(s->mu);
}

/* CheckTimeouts: idle connections past the keep-alive time-out. */
static void loop_sweep(struct loop *l)
{
    uint64_t now = os_tick_ms();
    struct conn *c, *next;

    if (now - l->last_sweep < LOOP_TICK_MS)
        return;
    l->last_sweep = now;
    for (c = l->conns; c; c = next) {
        next = c->next;
        if (!c->busy &&
            now - c->last_active > (uint64_t)l->srv->opt->keep_alive_timeout)
            loop_close(l, c);
    }
}

void *loop_run(void *arg)
{
    struct loop *l = arg;
    struct os_event evs[LOOP_EVENTS];

    l->last_sweep = os_tick_ms();
    while (!atomic_load(&l->srv->exiting)) {
        int n = os_epoll_wait(l->ep, evs, LOOP_EVENTS, LOOP_TICK_MS), i;

        if (n < 0) {
            log_line("loop=%d epoll_wait failed; loop ends", l->index);
            break;
        }
        for (i = 0; i < n; i++) {
            if (evs[i].ptr == &l->listen_tag)
                loop_accept(l);
            else if (evs[i].ptr == &l->wake_tag)
                loop_completions(l);
            else
                loop_readable(l, evs[i].ptr);
        }
        if (atomic_load(&l->srv->stopping) && !l->listener_closed)
            loop_close_listener(l);
        loop_sweep(l);
    }
    loop_completions(l);
    while (l->conns)
        loop_close(l, l->conns);
    return NULL;
}
