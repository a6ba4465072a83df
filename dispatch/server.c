/* server.c - see server.h. */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>

#include "conn.h"
#include "../server-min/log.h"

#define LISTEN_BACKLOG 1024

static int server_loop_open(char *err, struct server *s, struct loop *l,
                            const char *address, int *port)
{
    l->srv = s;
    l->listen_fd = l->ep = l->wake_r = l->wake_w = -1;
    l->done_mu = os_mutex_new();
    if (!l->done_mu) {
        snprintf(err, OS_ERR_LEN, "loop %d: out of memory", l->index);
        return -1;
    }
    /* The first listener may pick the port; the others share it. */
    l->listen_fd = os_tcp_listen_flags(err, address, *port, LISTEN_BACKLOG,
                                       OS_LISTEN_NONBLOCK | OS_LISTEN_REUSEPORT,
                                       port);
    if (l->listen_fd == -1)
        return -1;
    l->ep = os_epoll_new(err);
    if (l->ep == -1)
        return -1;
    {
        int fds[2];

        if (os_pipe_nb(err, fds) != 0)
            return -1;
        l->wake_r = fds[0];
        l->wake_w = fds[1];
    }
    if (os_epoll_add(err, l->ep, l->listen_fd, OS_EV_IN, &l->listen_tag) != 0 ||
        os_epoll_add(err, l->ep, l->wake_r, OS_EV_IN, &l->wake_tag) != 0)
        return -1;
    return 0;
}

static void server_loop_close(struct loop *l)
{
    os_close(l->listen_fd);
    os_close(l->ep);
    os_close(l->wake_r);
    os_close(l->wake_w);
    os_mutex_free(l->done_mu);
}

/* Stop and join the loops that run, free everything. */
static void server_teardown(struct server *s)
{
    int i;

    atomic_store(&s->exiting, 1);
    for (i = 0; i < s->nloops; i++)
        if (s->loops[i].thread)
            os_pipe_poke(s->loops[i].wake_w);
    for (i = 0; i < s->nloops; i++)
        os_thread_join(s->loops[i].thread);
    gpool_free(s->gpool);
    bpool_free(s->bpool);
    for (i = 0; i < s->nloops; i++)
        server_loop_close(&s->loops[i]);
    free(s->loops);
    os_cond_free(s->cond);
    os_mutex_free(s->mu);
}

static int server_executor(char *err, struct server *s, const struct options *o)
{
    if (o->mode == DISPATCH_GLOBAL_POOL)
        s->gpool = gpool_new(err, o->pool_min, o->pool_max, o->pool_retire_ms);
    else if (o->mode == DISPATCH_BOUNDED_POOL)
        s->bpool = bpool_new(err, o->workers, o->queue_capacity);
    else
        return 0;
    return s->gpool || s->bpool ? 0 : -1;
}

int server_start(char *err, struct server *s, const struct options *o)
{
    int i, port = o->port;

    s->opt = o;
    s->nloops = o->loops;
    s->mu = os_mutex_new();
    s->cond = os_cond_new();
    s->loops = calloc((size_t)o->loops, sizeof *s->loops);
    if (!s->mu || !s->cond || !s->loops) {
        snprintf(err, OS_ERR_LEN, "server: out of memory");
        s->nloops = 0;
        server_teardown(s);
        return -1;
    }
    for (i = 0; i < s->nloops; i++) {
        s->loops[i].index = i;
        if (server_loop_open(err, s, &s->loops[i], o->address, &port) != 0)
            goto fail;
    }
    s->port = port;
    if (server_executor(err, s, o) != 0)
        goto fail;
    for (i = 0; i < s->nloops; i++) {
        s->loops[i].thread = os_thread_start(err, loop_run, &s->loops[i]);
        if (!s->loops[i].thread)
            goto fail;
    }
    return 0;
fail:
    server_teardown(s);
    return -1;
}

static void server_log_stats(struct server *s)
{
    if (s->gpool) {
        struct gpool_stats g;

        gpool_get_stats(s->gpool, &g);
        log_line("global-pool min=%d max=%d peak=%d created=%lu retired=%lu "
                 "completed=%lu", g.min_threads, g.max_threads, g.peak,
                 g.created, g.retired, g.completed);
    } else if (s->bpool) {
        struct bpool_stats b;

        bpool_get_stats(s->bpool, &b);
        log_line("bounded-pool workers=%d queue-capacity=%d accepted=%lu "
                 "queue-full=%lu completed=%lu", b.workers, b.capacity,
                 b.accepted, b.rejected, b.completed);
    }
}

void server_drain(struct server *s)
{
    int i;

    atomic_store(&s->stopping, 1);
    for (i = 0; i < s->nloops; i++)
        os_pipe_poke(s->loops[i].wake_w);
    os_mutex_lock(s->mu);
    while (s->listeners_closed < s->nloops)
        os_cond_wait(s->cond, s->mu);
    os_mutex_unlock(s->mu);
    log_line("drain: listeners closed, finishing accepted work");
    if (s->gpool)
        gpool_drain(s->gpool);
    if (s->bpool)
        bpool_drain(s->bpool);
    log_line("drain: done served=%lu queue-full=%lu",
             atomic_load(&s->served), atomic_load(&s->queue_full));
    server_log_stats(s);
    server_teardown(s);
}
