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
enum handler_verdict { HANDLER_KEEP, HANDLER_REMOVE, HANDLER_SCHEDULED,
                       HANDLER_READY };

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

/* The keep-alive loop's "not Terminated".  Nothing terminates a connection
 * thread upstream; the clone's bounded stop (main's default) ends the loop
 * at the stop, after the wait it is in.  With --stop free (threads_see_stop
 * 0) it is upstream's: never. */
static int handler_keep_alive_terminated(struct connection *c)
{
    return atomic_load(&c->server->threads_see_stop) &&
           (os_stop_requested() || !atomic_load(&c->server->active));
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

/* TFPPooledConnectionHandler.ConnectionDone, on the worker: a connection
 * that may not serve another request is removed, which takes the list lock
 * (RemoveConnection -> FList.Remove).  A kept one goes back to the idle list
 * without any lock: the task just lets go of it.
 *
 * Not upstream: in_pool_task.  Upstream clears FBusy at the end of
 * HandleRequest, before this runs; in that window the accept thread can
 * schedule the connection again, and then this AllowNewRequest sees the new
 * FBusy and frees the connection under the second task.  The clone keeps a
 * connection owned by its task until here, so it cannot free memory in use
 * (see DEVIATIONS.md). */
static void handler_pooled_connection_done(struct conn_handler *h,
                                           struct connection *c)
{
    if (!connection_allow_new_request(c))
        handler_remove_connection(h, c);
    else
        atomic_store(&c->in_pool_task, 0);
}

/* THandleRequestTask.DoExecute: one request, then ConnectionDone. */
static void handler_pooled_task(void *arg)
{
    struct handler_task *t = arg;

    connection_handle_request(t->connection);
    handler_pooled_connection_done(t->owner, t->connection);
    free(t);
}

/* TFPPooledConnectionHandler.ScheduleRequest: busy first, so the accept
 * thread does not schedule it twice while the task waits; then AddTask,
 * which with upstream's pool settings returns only once a thread took it.
 * -1 when the task could not be added (out of memory): the caller gives the
 * connection up. */
static int handler_pooled_schedule_request(struct conn_handler *h,
                                           struct connection *c)
{
    struct handler_task *t = malloc(sizeof *t);

    atomic_store(&c->busy, 1);
    atomic_store(&c->in_pool_task, 1);
    if (t) {
        t->owner = h;
        t->connection = c;
        if (threadpool_add_task(h->pool, handler_pooled_task, t) == 0)
            return 0;
        free(t);
    }
    atomic_store(&c->keep_alive, 0);
    atomic_store(&c->busy, 0);
    return -1;
}

/* The tests of TFPPooledConnectionHandler.CheckRequest, on the accept
 * thread with the list locked: enforce the keep-alive time-out (REMOVE), and
 * say READY when a zero-timeout select() says the socket is readable.
 * FBuffer is not consulted (B2 in pool mode). */
static enum handler_verdict handler_pooled_request_ready(struct conn_handler *h,
                                                         struct connection *c)
{
    int timeout;

    if (atomic_load(&c->in_pool_task) || !atomic_load(&h->server->active) ||
        !connection_allow_new_request(c))
        return HANDLER_KEEP;
    timeout = connection_keep_connection_timeout(c);
    if (timeout > 0 &&
        os_tick_ms() > atomic_load(&c->last_request_time) + (uint64_t)timeout)
        return HANDLER_REMOVE;
    if (!connection_is_upgraded(c) &&
        socket_stream_can_read(connection_socket(c), 0))
        return HANDLER_READY;
    return HANDLER_KEEP;
}

/* TFPPooledConnectionHandler.CheckRequest, the Foreach iterator: a ready
 * connection is scheduled right here, WITH THE LIST LOCKED.  That is defect
 * B7: AddTask may loop until a worker is free, while the workers that would
 * free up wait for this lock in ConnectionDone -> RemoveConnection. */
static enum handler_verdict handler_pooled_check_request(struct conn_handler *h,
                                                         struct connection *c)
{
    enum handler_verdict v = handler_pooled_request_ready(h, c);

    if (v != HANDLER_READY)
        return v;
    return handler_pooled_schedule_request(h, c) == 0 ? HANDLER_SCHEDULED
                                                      : HANDLER_REMOVE;
}

/* TFPPooledConnectionHandler.CheckRequests: queued tasks first, then every
 * listed connection under the list lock (Foreach). */
static void handler_pooled_check_requests(struct conn_handler *h)
{
    threadpool_check_queued_tasks(h->pool);
    handler_foreach(h, handler_pooled_check_request);
}

/* TFPPooledConnectionHandler.HandleConnection: listed (inherited), then its
 * first request scheduled at once, outside the list lock. */
static void handler_pooled_handle_connection(struct conn_handler *h,
                                             struct connection *c)
{
    /* Owned by its first task from the start (see ConnectionDone). */
    atomic_store(&c->in_pool_task, 1);
    if (handler_list_add(h, c) != 0) {
        connection_free(c);
        return;
    }
    if (handler_pooled_schedule_request(h, c) != 0)
        handler_remove_connection(h, c);
}

struct threadpool *handler_pool(struct conn_handler *h)
{
    return h->pool;
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

/* TFPPolledConnectionHandler.CheckConnection, on the accept thread: drop a
 * connection that was upgraded, ended with an empty request, or was served
 * and may not serve another (FLastRequestTime > 0: a fresh connection has
 * not negotiated keep-alive yet), or sat idle past the keep-alive time-out;
 * else serve it here, synchronously, when a zero-timeout select() says data
 * waits, and drop it at once unless it was kept alive.  Like the others it
 * never looks at FBuffer. */
static enum handler_verdict handler_polled_check_connection(
    struct conn_handler *h, struct connection *c)
{
    uint64_t last = atomic_load(&c->last_request_time);
    int timeout = connection_keep_connection_timeout(c);

    (void)h;
    if (c->is_upgraded || c->empty_detected ||
        (last > 0 && !connection_allow_new_request(c)))
        return HANDLER_REMOVE;
    if (last > 0 && timeout > 0 && os_tick_ms() > last + (uint64_t)timeout)
        return HANDLER_REMOVE;
    if (socket_stream_can_read(connection_socket(c), 0)) {
        connection_handle_request(c);
        if (c->is_upgraded || c->empty_detected ||
            !connection_allow_new_request(c))
            return HANDLER_REMOVE;
    }
    return HANDLER_KEEP;
}

/* TFPPolledConnectionHandler.CheckRequests: a snapshot of the list under the
 * lock, then each connection checked (and served) outside it while the
 * server is active.  Only this thread removes polled connections, so the
 * snapshot stays valid. */
static void handler_polled_check_requests(struct conn_handler *h)
{
    struct connection **snap;
    size_t n, i;

    os_mutex_lock(h->lock);
    n = h->count;
    snap = n ? malloc(n * sizeof *snap) : NULL;
    if (snap)
        memcpy(snap, h->items, n * sizeof *snap);
    os_mutex_unlock(h->lock);
    if (!snap)
        return; /* empty, or out of memory: the next tick tries again */
    for (i = 0; i < n; i++)
        if (atomic_load(&h->server->active) &&
            handler_polled_check_connection(h, snap[i]) == HANDLER_REMOVE)
            handler_remove_connection(h, snap[i]);
    free(snap);
}

/* TFPPolledConnectionHandler.HandleConnection: listed, then CheckConnection
 * at once (served now if its request is already there). */
static void handler_polled_handle_connection(struct conn_handler *h,
                                             struct connection *c)
{
    if (handler_list_add(h, c) != 0) {
        connection_free(c);
        return;
    }
    if (handler_polled_check_connection(h, c) == HANDLER_REMOVE)
        handler_remove_connection(h, c);
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
        /* CreatePool: MaxThreads ProcessorCount, MinThreads one less,
         * QueueTasks on, AddTimeout 30. */
        int max = s->props.pool_threads > 0 ? s->props.pool_threads
                                             : os_processor_count();

        h->pool = threadpool_new(max, max - 1, err);
        if (h->pool)
            threadpool_set_add_timeout(h->pool, 30);
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
        handler_polled_check_requests(h);
        break;
    case TM_POOL:
        handler_pooled_check_requests(h);
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

/* TFPHTTPServerConnectionListHandler.CloseConnectionSocket, the
 * CloseSockets iterator: CloseSocket, then keep-alive off so that a
 * keep-alive loop ends once its wait does.  The close wakes no thread that
 * waits on the socket (os_close_socket_in_use: upstream's close(), the
 * number kept). */
static enum handler_verdict handler_close_connection_socket(
    struct conn_handler *h, struct connection *c)
{
    (void)h;
    if (!connection_is_upgraded(c)) {
        os_close_socket_in_use(connection_fd(c));
        atomic_store(&c->keep_alive, 0);
    }
    return HANDLER_KEEP;
}

/* TFPHTTPServerConnectionListHandler.CloseSockets (thread and polled):
 * Foreach(CloseConnectionSocket). */
static void handler_list_close_sockets(struct conn_handler *h)
{
    handler_foreach(h, handler_close_connection_socket);
}

/* TFPPooledConnectionHandler.CloseSockets: the queued tasks are cancelled
 * (their connections stay listed, with no task), then the list's. */
static void handler_pooled_close_sockets(struct conn_handler *h)
{
    threadpool_cancel_queued_tasks(h->pool, free);
    handler_list_close_sockets(h);
}

/* TFPSimpleConnectionHandler.CloseSockets: the one connection, if any. */
static void handler_simple_close_sockets(struct conn_handler *h)
{
    os_mutex_lock(h->lock);
    if (h->current)
        os_close_socket_in_use(connection_fd(h->current));
    os_mutex_unlock(h->lock);
}

void handler_close_sockets(struct conn_handler *h)
{
    switch (h->mode) {
    case TM_NONE:   handler_simple_close_sockets(h); break;
    case TM_POOL:   handler_pooled_close_sockets(h); break;
    case TM_POLLED:
    case TM_THREAD: handler_list_close_sockets(h); break;
    }
}

/* WaitForRequests: look at the connection count every 100 ms while it is
 * above 0 and fewer than max_attempts looks found it unchanged (the count
 * of unchanged looks is never reset, as upstream's).  1 when it reached 0.
 * The 100 ms wait ends early when the list changes. */
int handler_wait_for_requests(struct conn_handler *h, int max_attempts)
{
    int attempts = 0, last = handler_get_active_connection_count(h);

    while (handler_get_active_connection_count(h) > 0 &&
           attempts < max_attempts) {
        int now;

        os_mutex_lock(h->lock);
        os_cond_timedwait(h->changed, h->lock, 100);
        os_mutex_unlock(h->lock);
        now = handler_get_active_connection_count(h);
        if (now == last)
            attempts++;
        else
            last = now;
    }
    return last == 0;
}

/* The clone's bounded stop wakes what waits on a socket: shutdown(), then
 * keep-alive off (main's default stop; --stop free uses CloseSockets). */
static enum handler_verdict handler_wake_connection_socket(
    struct conn_handler *h, struct connection *c)
{
    (void)h;
    if (!connection_is_upgraded(c)) {
        os_shutdown(connection_fd(c));
        atomic_store(&c->keep_alive, 0);
    }
    return HANDLER_KEEP;
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
        handler_foreach(h, handler_wake_connection_socket);
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
