/* conn_handlers.c - the four connection handlers of fphttpserver.
 *
 *  none    TFPSimpleConnectionHandler    one request on the accepting thread
 *  polled  TFPPolledConnectionHandler    one thread; connections re-checked
 *                                        on every accept-idle tick
 *  thread  TFPThreadedConnectionHandler  a thread per connection running
 *                                        TFPHTTPConnectionThread.Execute
 *  pool    TFPPooledConnectionHandler    each request a thread-pool task;
 *                                        idle connections re-checked only
 *                                        from the accept-idle callback (B6)
 */
#include "conn_handlers.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "httpserver.h"
#include "log.h"
#include "os.h"
#include "threadpool.h"

/* What an iteration over the list decides for one connection. */
enum handler_verdict { HANDLER_KEEP, HANDLER_REMOVE, HANDLER_SCHEDULED };

struct handler_thread {
    os_thread *thread;
    struct connection *connection;
    struct conn_handler *owner;
    atomic_int done;
    struct handler_thread *next;
};

struct conn_handler {
    struct httpserver *server;
    enum thread_mode mode;
    /* TConnectionList: every mode but none keeps its connections here. */
    os_mutex *lock;
    os_cond *changed;
    struct connection **items;
    size_t count, cap;
    /* none: the connection being served (FConnection). */
    struct connection *current;
    /* thread: one record per connection thread, joined when done. */
    struct handler_thread *threads;
    /* pool. */
    struct threadpool *pool;
};

/* ---- the list (TFPHTTPServerConnectionListHandler) -------------------- */

static int handler_list_add(struct conn_handler *h, struct connection *c)
{
    int rc = 0;

    os_mutex_lock(h->lock);
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        struct connection **p = realloc(h->items, cap * sizeof *p);

        if (p) {
            h->items = p;
            h->cap = cap;
        } else {
            rc = -1;
        }
    }
    if (rc == 0)
        h->items[h->count++] = c;
    os_mutex_unlock(h->lock);
    return rc;
}

/* Caller holds the lock. */
static void handler_list_remove_locked(struct conn_handler *h, size_t i)
{
    h->items[i] = h->items[--h->count];
    os_cond_broadcast(h->changed);
}

/* RemoveConnection: out of the list, then freed (which closes the socket). */
static void handler_remove_connection(struct conn_handler *h,
                                      struct connection *c)
{
    size_t i;

    os_mutex_lock(h->lock);
    for (i = 0; i < h->count; i++)
        if (h->items[i] == c) {
            handler_list_remove_locked(h, i);
            break;
        }
    os_mutex_unlock(h->lock);
    connection_free(c);
}

/* Foreach, newest first as upstream; the iterator may ask for removal.
 * Removed connections are freed after the lock is released. */
static void handler_foreach(struct conn_handler *h,
                            enum handler_verdict (*it)(struct conn_handler *,
                                                       struct connection *))
{
    struct connection *dead[64];
    size_t ndead = 0, i;

    os_mutex_lock(h->lock);
    for (i = h->count; i-- > 0;) {
        if (it(h, h->items[i]) == HANDLER_REMOVE && ndead < 64) {
            dead[ndead++] = h->items[i];
            handler_list_remove_locked(h, i);
        }
    }
    os_mutex_unlock(h->lock);
    for (i = 0; i < ndead; i++)
        connection_free(dead[i]);
}

/* ---- none ------------------------------------------------------------- */

/* TFPSimpleConnectionHandler.HandleConnection: one request, then close. */
static void handler_simple_handle_connection(struct conn_handler *h,
                                             struct connection *c)
{
    os_mutex_lock(h->lock);
    h->current = c;
    os_mutex_unlock(h->lock);
    connection_handle_request(c);
    os_mutex_lock(h->lock);
    h->current = NULL;
    os_mutex_unlock(h->lock);
    connection_free(c);
}

/* ---- thread ----------------------------------------------------------- */

static int handler_keep_alive_terminated(struct connection *c)
{
    return os_stop_requested() || !atomic_load(&c->server->active);
}

/* TFPHTTPConnectionThread.Execute: the first request, then the keep-alive
 * loop.  With KeepConnectionTimeout 0 the loop never runs. */
static void handler_thread_execute(struct connection *c)
{
    uint64_t wait_until = 0;
    int timeout = connection_keep_connection_timeout(c);

    connection_handle_request(c);
    if (timeout > 0)
        wait_until = os_tick_ms() + (uint64_t)timeout;
    while (!handler_keep_alive_terminated(c) &&
           connection_allow_new_request(c) && wait_until > 0 &&
           os_tick_ms() < wait_until) {
        if (connection_request_pending(c)) {
            connection_handle_request(c);
            timeout = connection_keep_connection_timeout(c);
            wait_until = timeout > 0 ? os_tick_ms() + (uint64_t)timeout : 0;
        } else {
            connection_do_keep_connection_idle(c);
        }
    }
}

static void *handler_thread_main(void *arg)
{
    struct handler_thread *t = arg;

    os_block_stop_signals();
    handler_thread_execute(t->connection);
    /* TFPThreadedConnectionHandler.ConnectionDone. */
    handler_remove_connection(t->owner, t->connection);
    atomic_store(&t->done, 1);
    return NULL;
}

/* Join the threads that have finished (called on the accepting thread). */
static void handler_reap_threads(struct conn_handler *h, int all)
{
    struct handler_thread **pp = &h->threads;

    while (*pp) {
        struct handler_thread *t = *pp;

        if (all || atomic_load(&t->done)) {
            *pp = t->next;
            os_thread_join(t->thread);
            free(t);
        } else {
            pp = &t->next;
        }
    }
}

/* TFPThreadedConnectionHandler.HandleConnection. */
static void handler_threaded_handle_connection(struct conn_handler *h,
                                               struct connection *c)
{
    char err[OS_ERR_LEN];
    struct handler_thread *t;

    handler_reap_threads(h, 0);
    if (handler_list_add(h, c) != 0 || !(t = calloc(1, sizeof *t))) {
        log_line("error conn=%llu out of memory", (unsigned long long)c->id);
        handler_remove_connection(h, c);
        return;
    }
    t->connection = c;
    t->owner = h;
    t->thread = os_thread_start(err, handler_thread_main, t);
    if (!t->thread) {
        log_line("error conn=%llu %s", (unsigned long long)c->id, err);
        free(t);
        handler_remove_connection(h, c);
        return;
    }
    t->next = h->threads;
    h->threads = t;
}

/* ---- pool ------------------------------------------------------------- */

struct handler_task {
    struct conn_handler *owner;
    struct connection *connection;
};

/* TFPPooledConnectionHandler.ConnectionDone: drop a connection that may not
 * serve another request.  The task gives the connection back under the list
 * lock, and CheckRequest skips a connection still owned by a task: upstream
 * clears FBusy at the end of HandleRequest, so the accept thread could
 * schedule it again before this runs, and two tasks would share (and one
 * free) the same connection. */
static void handler_pooled_connection_done(struct conn_handler *h,
                                           struct connection *c)
{
    int remove = 0;
    size_t i;

    os_mutex_lock(h->lock);
    c->in_pool_task = 0;
    if (!connection_allow_new_request(c))
        for (i = 0; i < h->count; i++)
            if (h->items[i] == c) {
                handler_list_remove_locked(h, i);
                remove = 1;
                break;
            }
    os_mutex_unlock(h->lock);
    if (remove)
        connection_free(c);
}

/* THandleRequestTask.DoExecute. */
static void handler_pooled_task(void *arg)
{
    struct handler_task *t = arg;

    os_block_stop_signals();
    connection_handle_request(t->connection);
    handler_pooled_connection_done(t->owner, t->connection);
    free(t);
}

/* TFPPooledConnectionHandler.ScheduleRequest: busy first, so the accept
 * thread does not schedule it twice while the task waits in the queue. */
static int handler_pooled_schedule_request(struct conn_handler *h,
                                           struct connection *c)
{
    struct handler_task *t = malloc(sizeof *t);

    atomic_store(&c->busy, 1);
    c->in_pool_task = 1;
    if (t) {
        t->owner = h;
        t->connection = c;
        if (threadpool_add_task(h->pool, handler_pooled_task, t) == 0)
            return 0;
        free(t);
    }
    /* Could not queue: the connection is given up like a failed request. */
    atomic_store(&c->keep_alive, 0);
    atomic_store(&c->busy, 0);
    c->in_pool_task = 0;
    return -1;
}

/* TFPPooledConnectionHandler.CheckRequest, on the accept thread with the
 * list locked: enforce the keep-alive time-out, and schedule the connection
 * when a zero-timeout select() says the socket is readable.  FBuffer is not
 * consulted (B2 in pool mode). */
static enum handler_verdict handler_pooled_check_request(struct conn_handler *h,
                                                         struct connection *c)
{
    int timeout;

    if (c->in_pool_task || !atomic_load(&h->server->active) ||
        !connection_allow_new_request(c))
        return HANDLER_KEEP;
    timeout = connection_keep_connection_timeout(c);
    if (timeout > 0 &&
        os_tick_ms() > atomic_load(&c->last_request_time) + (uint64_t)timeout)
        return HANDLER_REMOVE;
    if (!connection_is_upgraded(c) &&
        socket_stream_can_read(connection_socket(c), 0) &&
        handler_pooled_schedule_request(h, c) == 0)
        return HANDLER_SCHEDULED;
    return HANDLER_KEEP;
}

/* TFPPooledConnectionHandler.HandleConnection: list it, schedule its first
 * request at once. */
static void handler_pooled_handle_connection(struct conn_handler *h,
                                             struct connection *c)
{
    int rc;

    if (handler_list_add(h, c) != 0) {
        connection_free(c);
        return;
    }
    os_mutex_lock(h->lock);
    rc = handler_pooled_schedule_request(h, c);
    os_mutex_unlock(h->lock);
    /* A connection that could not be queued is dropped.  (Once queued, the
     * task owns it: it may be gone already.) */
    if (rc != 0)
        handler_pooled_connection_done(h, c);
}

int handler_pooled_check_request_for_test(struct conn_handler *h,
                                          struct connection *c)
{
    enum handler_verdict v;

    os_mutex_lock(h->lock);
    v = handler_pooled_check_request(h, c);
    os_mutex_unlock(h->lock);
    return v == HANDLER_REMOVE ? -1 : v == HANDLER_SCHEDULED;
}

/* ---- polled ----------------------------------------------------------- */

/* TFPPolledConnectionHandler.CheckConnection: reap a finished or expired
 * connection; serve it here, synchronously, when a zero-timeout select()
 * says data waits.  Like the others it never looks at FBuffer. */
static enum handler_verdict handler_polled_check_connection(
    struct conn_handler *h, struct connection *c)
{
    int timeout = connection_keep_connection_timeout(c);

    (void)h;
    /* A connection whose first request has not arrived yet is not finished. */
    if (c->handled > 0 && !connection_allow_new_request(c))
        return HANDLER_REMOVE;
    if (c->handled > 0 && timeout > 0 &&
        os_tick_ms() > atomic_load(&c->last_request_time) + (uint64_t)timeout)
        return HANDLER_REMOVE;
    if (!connection_is_upgraded(c) &&
        socket_stream_can_read(connection_socket(c), 0))
        connection_handle_request(c);
    return HANDLER_KEEP;
}

/* TFPPolledConnectionHandler.HandleConnection: listed; served at once only
 * if its request is already there. */
static void handler_polled_handle_connection(struct conn_handler *h,
                                             struct connection *c)
{
    if (handler_list_add(h, c) != 0) {
        connection_free(c);
        return;
    }
    if (socket_stream_can_read(connection_socket(c), 0))
        connection_handle_request(c);
}

/* ---- dispatch --------------------------------------------------------- */

struct conn_handler *handler_create(struct httpserver *s, char *err)
{
    struct conn_handler *h = calloc(1, sizeof *h);

    if (!h || !(h->lock = os_mutex_new()) || !(h->changed = os_cond_new())) {
        snprintf(err, OS_ERR_LEN, "connection handler: out of memory");
        if (h) {
            os_mutex_free(h->lock);
            free(h);
        }
        return NULL;
    }
    h->server = s;
    h->mode = s->props.thread_mode;
    if (h->mode == TM_POOL) {
        h->pool = threadpool_new(s->props.pool_threads, err);
        if (!h->pool) {
            os_cond_free(h->changed);
            os_mutex_free(h->lock);
            free(h);
            return NULL;
        }
    }
    return h;
}

void handler_handle_connection(struct conn_handler *h, struct connection *c)
{
    switch (h->mode) {
    case TM_NONE:   handler_simple_handle_connection(h, c); break;
    case TM_POLLED: handler_polled_handle_connection(h, c); break;
    case TM_THREAD: handler_threaded_handle_connection(h, c); break;
    case TM_POOL:   handler_pooled_handle_connection(h, c); break;
    }
}

void handler_check_requests(struct conn_handler *h)
{
    switch (h->mode) {
    case TM_POLLED:
        handler_foreach(h, handler_polled_check_connection);
        break;
    case TM_POOL:
        handler_foreach(h, handler_pooled_check_request);
        break;
    case TM_THREAD:
        handler_reap_threads(h, 0); /* upstream: nothing to do */
        break;
    case TM_NONE:
        break;
    }
}

int handler_get_active_connection_count(struct conn_handler *h)
{
    int n;

    os_mutex_lock(h->lock);
    n = h->mode == TM_NONE ? (h->current != NULL) : (int)h->count;
    os_mutex_unlock(h->lock);
    return n;
}

/* CloseSockets: wake every connection blocked on its socket and end its
 * keep-alive loop.  shutdown() rather than upstream's close(): the owning
 * thread closes the descriptor itself, so the number cannot be reused
 * under a select() still running on it. */
static void handler_close_sockets(struct conn_handler *h)
{
    size_t i;

    os_mutex_lock(h->lock);
    for (i = 0; i < h->count; i++) {
        atomic_store(&h->items[i]->keep_alive, 0);
        os_shutdown(connection_fd(h->items[i]));
    }
    os_mutex_unlock(h->lock);
}

/* WaitForRequests: until the list is empty, or it stopped shrinking for
 * max_idle_waits waits of 100 ms. */
static void handler_wait_for_requests(struct conn_handler *h,
                                      int max_idle_waits)
{
    int idle = 0;

    os_mutex_lock(h->lock);
    while (h->count > 0 && idle < max_idle_waits) {
        size_t before = h->count;

        os_cond_timedwait(h->changed, h->lock, 100);
        if (h->count == before)
            idle++;
        else
            idle = 0;
    }
    os_mutex_unlock(h->lock);
}

void handler_free(struct conn_handler *h)
{
    size_t i;

    if (!h)
        return;
    if (h->mode == TM_POOL)
        /* Queued tasks never start; their connections are freed below. */
        threadpool_cancel_queued_tasks(h->pool, free);
    if (h->mode == TM_THREAD || h->mode == TM_POOL) {
        handler_wait_for_requests(h, 10);
        handler_close_sockets(h);
    }
    if (h->mode == TM_THREAD) {
        handler_wait_for_requests(h, 1 << 30);
        handler_reap_threads(h, 1);
    }
    if (h->mode == TM_POOL) {
        threadpool_free(h->pool); /* joins workers: running tasks finish */
        h->pool = NULL;
    }
    /* What is left (polled and pooled idle connections) is closed here. */
    for (i = 0; i < h->count; i++)
        connection_free(h->items[i]);
    free(h->items);
    os_cond_free(h->changed);
    os_mutex_free(h->lock);
    free(h);
}
