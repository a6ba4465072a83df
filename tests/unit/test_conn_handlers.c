/* test_conn_handlers.c - suite "conn_handlers": the four connection
 * handlers, with real handlers (handler_create) over socketpairs.
 *
 * Pool tests use ONE worker thread, so that the tasks of one connection run
 * one after the other: the test then never frees a connection while a
 * previous task's ConnectionDone may still touch it.  Pool connections the
 * handler owns always end with a request the server closes after
 * ("Connection: close"), so the worker frees them and handler_free finds
 * an empty list (no 1 s WaitForRequests).
 *
 * handler_pooled_check_request_for_test reports "scheduled" by reading the
 * busy flag after the check: a task that already finished would read as
 * "not scheduled".  So around every call that may schedule, the response
 * send() of the watched connection is held at a gate (unit_send_gate_close)
 * and the task stays busy until the test opens it. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn_handlers.h"
#include "connection.h"
#include "httpserver.h"
#include "os.h"
#include "ssockets.h"
#include "threadpool.h"
#include "unit.h"

#define GET_KEEP "GET /ping HTTP/1.1\r\nHost: a\r\n\r\n"
#define GET_CLOSE "GET /ping HTTP/1.1\r\nConnection: close\r\n\r\n"

static struct httpserver srv;
static struct unit_response resp;

/* srv with a handler of this mode (keep-alive on, one pool thread); a
 * handler that cannot be created ends the test. */
static struct conn_handler *make_handler(enum thread_mode mode)
{
    char err[OS_ERR_LEN];

    unit_server_init(&srv);
    srv.props.thread_mode = mode;
    srv.props.keep_connections = 1;
    srv.props.keep_connection_timeout = 15000;
    srv.props.pool_threads = 1;
    srv.connection_handler = handler_create(&srv, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(srv.connection_handler);
    return srv.connection_handler;
}

static void free_handler(void)
{
    handler_free(srv.connection_handler);
    srv.connection_handler = NULL;
}

static void expect_pong(int peer)
{
    unit_read_response(peer, &resp);
    ASSERT_INT(resp.ok, 1);
    ASSERT_INT(resp.status, 200);
    ASSERT_MEM(resp.body, resp.body_len, "pong");
}

/* A connection whose peer has sent req, served once here on the test
 * thread (HandleRequest) and answered; the test keeps it (u->c). */
static void open_served(struct unit_conn *u, const char *req)
{
    unit_conn_open(u, &srv);
    unit_write_str(u->peer, req);
    connection_handle_request(u->c);
    expect_pong(u->peer);
}

/* A connection whose peer has sent req (NULL: nothing yet), handed to h
 * (HandleConnection), which owns and frees it from then on: u->c is
 * cleared, the connection returned for the checks that follow. */
static struct connection *hand_over(struct conn_handler *h, struct unit_conn *u,
                                    const char *req)
{
    struct connection *c;

    unit_conn_open(u, &srv);
    c = u->c;
    u->c = NULL;
    if (req)
        unit_write_str(u->peer, req);
    handler_handle_connection(h, c);
    return c;
}

/* ---- pool: CheckRequest -------------------------------------------------
 * The connection here is served once on the test thread and is not in the
 * handler's list; a task CheckRequest schedules runs on the pool's worker. */

static void test_pool_check_buffered_not_readable(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct unit_conn u;
    int r;

    open_served(&u, GET_KEEP GET_KEEP);
    ASSERT_INT(connection_buffered(u.c), strlen(GET_KEEP));
    ASSERT_INT(socket_stream_can_read(connection_socket(u.c), 0), 0);
    /* B2 in pool mode: the zero-timeout test ignores FBuffer on stock. */
    unit_send_gate_close();
    r = handler_pooled_check_request_for_test(h, u.c);
    unit_send_gate_open();
    ASSERT_INT(r, KIT_FIXED_B2);
    if (r == 1)
        expect_pong(u.peer); /* the scheduled task served it */
    else
        ASSERT_INT(unit_readable_now(u.peer), 0);
    free_handler(); /* joins the worker: the task is over */
    ASSERT_INT(unit_requests_seen(), 1 + KIT_FIXED_B2);
    unit_conn_close(&u);
}

static void test_pool_check_readable(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct unit_conn u;
    int r;

    open_served(&u, GET_KEEP);
    /* Nothing buffered, nothing readable: not scheduled. */
    ASSERT_INT(handler_pooled_check_request_for_test(h, u.c), 0);
    unit_write_str(u.peer, GET_KEEP);
    unit_send_gate_close();
    r = handler_pooled_check_request_for_test(h, u.c);
    unit_send_gate_open();
    ASSERT_INT(r, 1);
    expect_pong(u.peer);
    free_handler();
    ASSERT_INT(unit_requests_seen(), 2);
    unit_conn_close(&u);
}

static void test_pool_check_not_allowed(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct unit_conn u;

    open_served(&u, GET_KEEP);
    unit_write_str(u.peer, GET_KEEP);
    /* Readable, but busy / server inactive / keep-alive off: left alone. */
    atomic_store(&u.c->busy, 1);
    ASSERT_INT(handler_pooled_check_request_for_test(h, u.c), 0);
    atomic_store(&u.c->busy, 0);
    atomic_store(&srv.active, 0);
    ASSERT_INT(handler_pooled_check_request_for_test(h, u.c), 0);
    atomic_store(&srv.active, 1);
    atomic_store(&u.c->keep_alive, 0);
    ASSERT_INT(handler_pooled_check_request_for_test(h, u.c), 0);
    ASSERT_INT(atomic_load(&u.c->busy), 0);
    free_handler();
    ASSERT_INT(unit_requests_seen(), 1);
    unit_conn_close(&u);
}

static void test_pool_check_keep_alive_expired(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct unit_conn u;
    int r;

    srv.props.keep_connection_timeout = 1;
    open_served(&u, GET_KEEP);
    /* Even with a request waiting, an expired connection is removed. */
    unit_write_str(u.peer, GET_KEEP);
    atomic_store(&u.c->last_request_time, 0);
    ASSERT_INT(handler_pooled_check_request_for_test(h, u.c), -1);
    ASSERT_INT(atomic_load(&u.c->busy), 0);
    /* Not expired (a fresh request time, 15 s time-out): scheduled. */
    srv.props.keep_connection_timeout = 15000;
    atomic_store(&u.c->last_request_time, os_tick_ms());
    unit_send_gate_close();
    r = handler_pooled_check_request_for_test(h, u.c);
    unit_send_gate_open();
    ASSERT_INT(r, 1);
    expect_pong(u.peer);
    free_handler();
    unit_conn_close(&u);
}

/* ---- pool: the idle connection is re-checked only by CheckRequests ------ */

/* Until the connection's task has let go of it (ConnectionDone). */
static void wait_task_let_go(struct connection *c)
{
    long spins = 0;

    while (atomic_load(&c->in_pool_task) && ++spins < 100000000L)
        sched_yield();
    ASSERT_INT(atomic_load(&c->in_pool_task), 0);
}

static void test_pool_idle_recheck_only_from_check_requests(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct unit_conn u;
    struct connection *c;

    c = hand_over(h, &u, GET_KEEP);
    expect_pong(u.peer);
    ASSERT_INT(handler_get_active_connection_count(h), 1);
    wait_task_let_go(c);
    /* The second request, after the task let go of the connection: nobody
     * looks at it until the accept thread's idle callback runs
     * CheckRequests (B6: with the stock AcceptIdleTimeout 0 it never
     * does). */
    unit_write_str(u.peer, GET_CLOSE);
    ASSERT_INT(unit_readable_now(u.peer), 0);
    ASSERT_INT(unit_requests_seen(), 1);
    handler_check_requests(h);
    expect_pong(u.peer);
    ASSERT_STR(unit_response_header(&resp, "Connection"),
               KIT_FIXED_B4 ? "close" : NULL);
    /* Connection: close -> the task drops and closes the connection. */
    ASSERT_INT(unit_read_eof(u.peer), 1);
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    ASSERT_INT(unit_requests_seen(), 2);
    free_handler();
    unit_conn_close(&u);
}

static void test_pool_first_request_and_close(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct unit_conn u;

    hand_over(h, &u, GET_CLOSE);
    /* HandleConnection schedules the first request at once. */
    expect_pong(u.peer);
    ASSERT_INT(unit_read_eof(u.peer), 1);
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    free_handler();
    unit_conn_close(&u);
}

static void wait_pool_idle(struct conn_handler *h);

struct checker {
    struct conn_handler *h;
    atomic_int returned;
    atomic_int loop;      /* run CheckRequests again until cleared */
};

static void *checker_main(void *arg)
{
    struct checker *k = arg;

    os_block_stop_signals();
    do
        handler_check_requests(k->h);
    while (atomic_load(&k->loop));
    atomic_store(&k->returned, 1);
    return NULL;
}

/* The listener's stand-in: srv.server.fd = lsn[0]. */
static void fake_listener(int lsn[2])
{
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, lsn) == 0);
    srv.server.fd = lsn[0];
}

static void fake_listener_close(int lsn[2])
{
    srv.server.fd = -1;
    close(lsn[0]);
    close(lsn[1]);
}

/* Until fd has bytes or EOF; 10 s safety bound (a server that never answers
 * fails here instead of hanging the suite), not a timing assertion. */
static int answer_comes(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, 10000) == 1;
}

/* ---- pool: B7 -------------------------------------------------------------
 * Two kept-alive connections idle in the list, one worker (MaxThreads 1),
 * both clients close.  CheckRequests on a second thread ("the accept
 * thread"): Foreach holds the list lock, schedules the newest; the worker
 * reads its end of stream, and ConnectionDone must remove it, which needs
 * the list lock; meanwhile scheduling the other one loops in DoAddTask for
 * a free thread.  Stock: neither can move (B7).  pool-schedule-unlocked:
 * the lock is released before scheduling, so both connections go. */

static void idle_in_pool(struct conn_handler *h, struct unit_conn *u)
{
    struct connection *c;

    unit_conn_open(u, &srv);
    unit_watch_fd(-1);
    c = u->c;
    unit_write_str(u->peer, GET_KEEP);
    handler_handle_connection(h, c);
    expect_pong(u->peer);
    /* Back in the idle list once its task let go (ConnectionDone). */
    wait_task_let_go(c);
}

static void test_pool_b7_check_requests_lock_order(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct unit_conn a, b;
    struct checker k = { NULL, 0, 0 };
    char close_b[64];
    unsigned long base, limit = KIT_FIXED_B7 ? 400000000UL : 200000UL;
    pthread_t t;
    long spins = 0;

    idle_in_pool(h, &a);
    idle_in_pool(h, &b);
    snprintf(close_b, sizeof close_b, "close conn=%llu ",
             (unsigned long long)b.c->id);
    a.c = b.c = NULL; /* the handler owns them */
    ASSERT_INT(handler_get_active_connection_count(h), 2);
    shutdown(a.peer, SHUT_WR);
    shutdown(b.peer, SHUT_WR);
    k.h = h;
    base = threadpool_add_attempts(handler_pool(h));
    CU_ASSERT_FATAL(pthread_create(&t, NULL, checker_main, &k) == 0);
    while (!atomic_load(&k.returned) &&
           threadpool_add_attempts(handler_pool(h)) < base + limit)
        sched_yield();
    ASSERT_INT(atomic_load(&k.returned), KIT_FIXED_B7);
    if (!atomic_load(&k.returned)) {
        /* Still looping for a thread, and the newest connection (on the
         * worker) was not freed: it waits for the lock the loop holds. */
        CU_ASSERT(threadpool_add_attempts(handler_pool(h)) >= base + limit);
        ASSERT_INT(unit_log_count(close_b), 0);
        /* Break the hang the way a pool with room would: MaxThreads 2. */
        ASSERT_INT(threadpool_set_max_threads(handler_pool(h), 2), 0);
    }
    pthread_join(t, NULL);
    /* ConnectionDone takes the connection off the list before its task
     * logs the close: wait for both. */
    while ((handler_get_active_connection_count(h) > 0 || unit_log_count(close_b) == 0) &&
           ++spins < 100000000L)
        sched_yield();
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    ASSERT_INT(unit_log_count(close_b), 1);
    free_handler();
    unit_conn_close(&a);
    unit_conn_close(&b);
}

/* ---- readiness: a kept-alive request is served when it arrives ---------
 * The accept thread is a second thread running CheckRequests (the checker).
 * Its listener is one end of a socketpair: a byte written to the other end
 * makes "accept() due", which ends the fix's wait.  The accept-idle interval
 * is 600 s, so a server that serves kept-alive connections only on a tick
 * (stock's single pass, or the tick-bound B6 fix as first shipped) cannot
 * answer inside one CheckRequests call; with the fixes the answer comes
 * while that call still runs.  Judged by order (the checker has not
 * returned, the slow connection has no answer yet), never by time. */

/* B6's fix: with one worker busy (the slow connection's response held at
 * the send gate, as a slow route holds its task) and one idle, the ping
 * connection's next kept-alive request is scheduled when it arrives.  The
 * fix as first shipped started no task while any task ran (FOwnedCount)
 * and waited for a tick: no answer (the 10 s bound fails it).  Stock: a
 * single pass, the request waits for the next CheckRequests. */
static void test_pool_ready_beside_busy(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct checker k = { NULL, 0, 0 };
    struct unit_conn p, sl;
    struct connection *pc, *sc;
    int lsn[2];
    pthread_t t;

    ASSERT_INT(threadpool_set_max_threads(handler_pool(h), 2), 0);
    srv.props.accept_idle_timeout = 600000;
    fake_listener(lsn);
    pc = hand_over(h, &p, GET_KEEP);
    expect_pong(p.peer);
    wait_task_let_go(pc);
    /* The slow one: its task runs and is held before its answer. */
    sc = hand_over(h, &sl, NULL);
    unit_watch_fd(connection_fd(sc));
    unit_send_gate_close();
    unit_write_str(sl.peer, GET_CLOSE);
    k.h = h;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, checker_main, &k) == 0);
    if (!KIT_FIXED_B6) {
        pthread_join(t, NULL); /* one pass, no wait */
        unit_write_str(p.peer, GET_CLOSE);
        ASSERT_INT(unit_readable_now(p.peer), 0);
        unit_send_gate_open();
        expect_pong(sl.peer);
        handler_check_requests(h);
        expect_pong(p.peer);
    } else {
        unit_write_str(p.peer, GET_CLOSE);
        CU_ASSERT_FATAL(answer_comes(p.peer));
        expect_pong(p.peer);
        /* Order: answered inside the same CheckRequests call, before the
         * slow connection's answer. */
        ASSERT_INT(atomic_load(&k.returned), 0);
        ASSERT_INT(unit_readable_now(sl.peer), 0);
        unit_send_gate_open();
        expect_pong(sl.peer);
        ASSERT_INT(write(lsn[1], "a", 1), 1);
        pthread_join(t, NULL);
    }
    ASSERT_INT(unit_read_eof(p.peer), 1);
    ASSERT_INT(unit_read_eof(sl.peer), 1);
    wait_pool_idle(h);
    fake_listener_close(lsn);
    free_handler();
    unit_conn_close(&p);
    unit_conn_close(&sl);
}

/* B21's fix: tmPolled serves a kept-alive connection's next request when
 * it arrives, inside the CheckRequests call that waits; stock serves it
 * only on the next tick (the next call). */
static void test_polled_ready_without_tick(void)
{
    struct conn_handler *h = make_handler(TM_POLLED);
    struct checker k = { NULL, 0, 0 };
    struct unit_conn u;
    int lsn[2], i;
    pthread_t t;

    srv.props.accept_idle_timeout = 600000;
    fake_listener(lsn);
    hand_over(h, &u, GET_KEEP);
    expect_pong(u.peer);
    k.h = h;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, checker_main, &k) == 0);
    if (!KIT_FIXED_B21) {
        pthread_join(t, NULL);
        unit_write_str(u.peer, GET_CLOSE);
        ASSERT_INT(unit_readable_now(u.peer), 0);
        ASSERT_INT(unit_requests_seen(), 1);
        handler_check_requests(h);
        expect_pong(u.peer);
    } else {
        /* Several requests, each answered within the one call. */
        for (i = 0; i < 5; i++) {
            unit_write_str(u.peer, i < 4 ? GET_KEEP : GET_CLOSE);
            CU_ASSERT_FATAL(answer_comes(u.peer));
            expect_pong(u.peer);
        }
        ASSERT_INT(atomic_load(&k.returned), 0);
        ASSERT_INT(unit_requests_seen(), 6);
        ASSERT_INT(write(lsn[1], "a", 1), 1);
        pthread_join(t, NULL);
    }
    ASSERT_INT(unit_read_eof(u.peer), 1);
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    fake_listener_close(lsn);
    free_handler();
    unit_conn_close(&u);
}

/* The FBusy window: upstream clears FBusy in HandleRequest before the
 * task's ConnectionDone; a CheckRequests in between could schedule the
 * connection again and ConnectionDone then free it under the new task.  A
 * connection is owned by its task until ConnectionDone lets go.  Stress:
 * two workers, the accept thread running CheckRequests without pause, four
 * kept-alive connections each sending 200 requests one after the other:
 * every request answered once, in order, nothing freed in use (the ASan and
 * TSan builds of this suite run it too). */
#define STRESS_CONNS 4
#define STRESS_ROUNDS 200
static void test_pool_owned_until_done_stress(void)
{
    struct conn_handler *h = make_handler(TM_POOL);
    struct checker k = { NULL, 0, 1 };
    struct unit_conn u[STRESS_CONNS];
    int i, r, lsn[2];
    pthread_t t;

    ASSERT_INT(threadpool_set_max_threads(handler_pool(h), 2), 0);
    srv.props.accept_idle_timeout = 1;
    fake_listener(lsn);
    for (i = 0; i < STRESS_CONNS; i++) {
        hand_over(h, &u[i], GET_KEEP);
        expect_pong(u[i].peer);
    }
    k.h = h;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, checker_main, &k) == 0);
    for (r = 0; r < STRESS_ROUNDS; r++) {
        for (i = 0; i < STRESS_CONNS; i++)
            unit_write_str(u[i].peer, GET_KEEP);
        for (i = 0; i < STRESS_CONNS; i++) {
            CU_ASSERT_FATAL(answer_comes(u[i].peer));
            expect_pong(u[i].peer);
        }
    }
    ASSERT_INT(unit_requests_seen(), STRESS_CONNS * (STRESS_ROUNDS + 1));
    /* Closed with the checker still running: ConnectionDone removes while
     * CheckRequests looks (B7 stays fixed where it is). */
    if (KIT_FIXED_B7)
        for (i = 0; i < STRESS_CONNS; i++) {
            unit_write_str(u[i].peer, GET_CLOSE);
            CU_ASSERT_FATAL(answer_comes(u[i].peer));
            expect_pong(u[i].peer);
            ASSERT_INT(unit_read_eof(u[i].peer), 1);
        }
    atomic_store(&k.loop, 0);
    ASSERT_INT(write(lsn[1], "a", 1), 1);
    pthread_join(t, NULL);
    if (!KIT_FIXED_B7)
        for (i = 0; i < STRESS_CONNS; i++) {
            unit_write_str(u[i].peer, GET_CLOSE);
            handler_check_requests(h);
            expect_pong(u[i].peer);
            ASSERT_INT(unit_read_eof(u[i].peer), 1);
        }
    wait_pool_idle(h);
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    fake_listener_close(lsn);
    free_handler();
    for (i = 0; i < STRESS_CONNS; i++)
        unit_conn_close(&u[i]);
}

/* ---- polled ------------------------------------------------------------- */

static void test_polled_b2_buffered_request(void)
{
    struct conn_handler *h = make_handler(TM_POLLED);
    struct unit_conn u;
    struct connection *c;

    /* The request is already there: served at once, on this thread. */
    c = hand_over(h, &u, GET_KEEP GET_KEEP);
    expect_pong(u.peer);
    ASSERT_INT(connection_buffered(c), strlen(GET_KEEP));
    handler_check_requests(h);
    /* B2 in polled mode: the tick does not see the buffered request. */
    ASSERT_INT(unit_requests_seen(), 1 + KIT_FIXED_B2);
    if (KIT_FIXED_B2)
        expect_pong(u.peer);
    ASSERT_INT(unit_readable_now(u.peer), 0);
    ASSERT_INT(handler_get_active_connection_count(h), 1);
    free_handler(); /* closes the idle connection */
    ASSERT_INT(unit_read_eof(u.peer), 1);
    unit_conn_close(&u);
}

static void test_polled_waits_for_first_request(void)
{
    struct conn_handler *h = make_handler(TM_POLLED);
    struct unit_conn u;

    hand_over(h, &u, NULL);
    /* Not served, not reaped: its first request has not arrived. */
    handler_check_requests(h);
    ASSERT_INT(handler_get_active_connection_count(h), 1);
    ASSERT_INT(unit_requests_seen(), 0);
    unit_write_str(u.peer, GET_CLOSE);
    /* Served, and dropped at once: keep-alive is off (CheckConnection
     * removes right after HandleRequest, not at the next tick). */
    handler_check_requests(h);
    expect_pong(u.peer);
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    ASSERT_INT(unit_read_eof(u.peer), 1);
    free_handler();
    unit_conn_close(&u);
}

static void test_polled_keep_alive_expiry(void)
{
    struct conn_handler *h = make_handler(TM_POLLED);
    struct unit_conn u;
    struct connection *c;

    srv.props.keep_connection_timeout = 1;
    c = hand_over(h, &u, GET_KEEP);
    expect_pong(u.peer);
    ASSERT_INT(atomic_load(&c->keep_alive), 1);
    /* Long ago (0 would mean "never served": not reaped, as upstream). */
    atomic_store(&c->last_request_time, 1);
    handler_check_requests(h);
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    ASSERT_INT(unit_read_eof(u.peer), 1);
    free_handler();
    unit_conn_close(&u);
}

/* ---- thread ------------------------------------------------------------- */

/* Responses the client gets before the server closes. */
static int responses_until_eof(int peer, int max)
{
    int n = 0;

    while (n < max) {
        unit_read_response(peer, &resp);
        if (!resp.ok)
            break;
        n++;
    }
    return n;
}

static void test_thread_b2_pipelined(void)
{
    struct conn_handler *h = make_handler(TM_THREAD);
    struct unit_conn u;

    /* The keep-alive loop ends after 100 ms without a request; the idle
     * select() waits 1 ms.  Both only bound how long the test runs. */
    srv.props.keep_connection_timeout = 100;
    srv.props.keep_connection_idle_timeout = 1;
    hand_over(h, &u, GET_KEEP GET_KEEP GET_KEEP);
    /* Stock: 1 response, then silence until the keep-alive time-out
     * closes.  With buffer-aware-pending all three are answered. */
    ASSERT_INT(responses_until_eof(u.peer, 5), KIT_FIXED_B2 ? 3 : 1);
    ASSERT_INT(resp.eof, 1);
    free_handler();
    ASSERT_INT(unit_requests_seen(), KIT_FIXED_B2 ? 3 : 1);
    unit_conn_close(&u);
}

static void test_thread_sequential_keep_alive(void)
{
    struct conn_handler *h = make_handler(TM_THREAD);
    struct unit_conn u;

    hand_over(h, &u, GET_KEEP);
    expect_pong(u.peer);
    /* The socket becomes readable: RequestPending sees it on every variant. */
    unit_write_str(u.peer, GET_KEEP);
    expect_pong(u.peer);
    unit_write_str(u.peer, GET_CLOSE);
    expect_pong(u.peer);
    ASSERT_INT(unit_read_eof(u.peer), 1);
    free_handler();
    ASSERT_INT(unit_requests_seen(), 3);
    unit_conn_close(&u);
}

static void test_thread_timeout_zero_closes(void)
{
    struct conn_handler *h = make_handler(TM_THREAD);
    struct unit_conn u;

    srv.props.keep_connection_timeout = 0; /* upstream's default */
    hand_over(h, &u, GET_KEEP);
    expect_pong(u.peer);
    /* B4: closed after one response; only the fix says so. */
    ASSERT_STR(unit_response_header(&resp, "Connection"),
               KIT_FIXED_B4 ? "close" : NULL);
    ASSERT_INT(unit_read_eof(u.peer), 1);
    free_handler();
    unit_conn_close(&u);
}

/* ---- B15: what Destroy's CloseSockets leaves ----------------------------
 * TFPCustomHttpServer.Destroy (httpserver_free): WaitForRequests, then
 * CloseSockets, then WaitForRequests with no bound, until every connection
 * was removed.  Here CloseSockets runs on a handler whose kept-alive
 * connection waits for its next request, and the count says whether
 * anything is left for the unbounded wait: stock leaves the pooled and the
 * polled connection (nothing would ever remove it: the accept loop's
 * CheckRequests is the only caller that could, and it has ended) and wakes
 * no thread; stop-frees-connections frees them and wakes the thread. */

/* Until the pool's worker has no task (ConnectionDone ran); 10 s safety
 * bound, not a timing assertion. */
static void wait_pool_idle(struct conn_handler *h)
{
    uint64_t deadline = os_tick_ms() + 10000;

    while (threadpool_busy_thread_count(handler_pool(h)) > 0) {
        if (os_tick_ms() > deadline) {
            CU_FAIL("pool task still running after 10 s");
            return;
        }
        sched_yield();
    }
}

/* Until some thread of this process is blocked in select() (the connection
 * thread's RequestPending; poll() with poll-can-read): its wait is then
 * the one CloseSockets meets.  Read from /proc/self/task/TID/syscall; 10 s
 * safety bound. */
static int some_thread_in_select(void)
{
    char path[64], buf[64];
    int tid, found = 0;
    FILE *f;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;

    if (!d)
        return 0;
    while (!found && (e = readdir(d))) {
        if ((tid = atoi(e->d_name)) <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
        if (!(f = fopen(path, "r")))
            continue;
        if (fgets(buf, sizeof buf, f)) {
            long nr = strtol(buf, NULL, 10);

            found = (nr == SYS_select || nr == SYS_pselect6 ||
                     nr == SYS_poll || nr == SYS_ppoll) &&
                    buf[0] >= '0' && buf[0] <= '9';
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

static void wait_thread_in_select(void)
{
    uint64_t deadline = os_tick_ms() + 10000;

    while (!some_thread_in_select()) {
        if (os_tick_ms() > deadline) {
            CU_FAIL("no thread waiting in select() after 10 s");
            return;
        }
        sched_yield();
    }
}

/* One kept-alive connection handed to a handler of this mode, answered,
 * then CloseSockets.  Returns the connections left in the list. */
static int kept_alive_then_close_sockets(enum thread_mode mode,
                                         struct unit_conn *u)
{
    struct conn_handler *h = make_handler(mode);

    hand_over(h, u, GET_KEEP);
    expect_pong(u->peer);
    if (mode == TM_POOL)
        wait_pool_idle(h);
    ASSERT_INT(handler_get_active_connection_count(h), 1);
    unit_log_clear();
    handler_close_sockets(h);
    return handler_get_active_connection_count(h);
}

/* Pool and polled: after CloseSockets a kept-alive connection is still
 * listed on stock, and nothing is left to remove it; the fix frees it. */
static void check_close_sockets_leaves_kept_alive(enum thread_mode mode)
{
    struct unit_conn u;

    ASSERT_INT(kept_alive_then_close_sockets(mode, &u), KIT_FIXED_B15 ? 0 : 1);
    ASSERT_INT(unit_log_count("close conn="), KIT_FIXED_B15 ? 1 : 0);
    /* Either way the client sees the end of the stream. */
    ASSERT_INT(unit_read_eof(u.peer), 1);
    /* Destroy's next wait: the list is empty only with the fix (stock:
     * 3 unchanged looks, and the connection stays). */
    handler_wait_for_requests(srv.connection_handler, 3);
    ASSERT_INT(handler_get_active_connection_count(srv.connection_handler),
               KIT_FIXED_B15 ? 0 : 1);
    free_handler();
    unit_conn_close(&u);
}

static void test_b15_pool_close_sockets_leaves_kept_alive(void)
{
    check_close_sockets_leaves_kept_alive(TM_POOL);
}

static void test_b15_polled_close_sockets_leaves_kept_alive(void)
{
    check_close_sockets_leaves_kept_alive(TM_POLLED);
}

static void test_b15_thread_close_sockets_wait(void)
{
    struct conn_handler *h = make_handler(TM_THREAD);
    struct unit_conn u;

    /* The keep-alive loop's wait for the next request: 600 s. */
    srv.props.keep_connection_timeout = 600000;
    srv.props.keep_connection_idle_timeout = 600000;
    hand_over(h, &u, GET_KEEP);
    expect_pong(u.peer);
    wait_thread_in_select();
    unit_log_clear();
    handler_close_sockets(h);
    /* The fix's shutdown wakes the wait: the thread sees the end of the
     * stream and ends its loop.  Stock's close does not wake it: the
     * thread waits on (3 unchanged looks), still in select(). */
    handler_wait_for_requests(h, KIT_FIXED_B15 ? 100 : 3);
    ASSERT_INT(handler_get_active_connection_count(h), KIT_FIXED_B15 ? 0 : 1);
    if (!KIT_FIXED_B15) {
        ASSERT_INT(some_thread_in_select(), 1);
        ASSERT_INT(unit_log_count("close conn="), 0);
        /* Until the client goes: its end of the stream ends the wait. */
        close(u.peer);
        u.peer = -1;
        handler_wait_for_requests(h, 100);
        ASSERT_INT(handler_get_active_connection_count(h), 0);
    }
    free_handler(); /* joins the thread: its connection was freed */
    ASSERT_INT(unit_log_count("close conn="), 1);
    ASSERT_INT(unit_requests_seen(), 1);
    unit_conn_close(&u);
}

/* TFPCustomHttpServer.Destroy whole (httpserver_free), in each list mode.
 * With the fix it returns with a kept-alive connection and frees it; stock
 * it returns only when no connection is left (the control: none), since
 * the one above would stay listed for ever (the tests above). */
static void b15_free_returns(enum thread_mode mode)
{
    struct conn_handler *h = make_handler(mode);
    struct unit_conn u;

    srv.props.keep_connection_timeout = 600000;
    srv.props.keep_connection_idle_timeout = 600000;
    if (KIT_FIXED_B15) {
        hand_over(h, &u, GET_KEEP);
        expect_pong(u.peer);
        /* Settled: the pool's task let go. */
        if (mode == TM_POOL)
            wait_pool_idle(h);
        else if (mode != TM_POLLED)
            wait_thread_in_select();
        ASSERT_INT(handler_get_active_connection_count(h), 1);
    }
    unit_log_clear();
    httpserver_free(&srv);
    CU_ASSERT_PTR_NULL(srv.connection_handler);
    ASSERT_INT(unit_log_count("close conn="), KIT_FIXED_B15);
    if (KIT_FIXED_B15) {
        ASSERT_INT(unit_read_eof(u.peer), 1);
        unit_conn_close(&u);
    }
}

static void test_b15_free_returns_pool(void) { b15_free_returns(TM_POOL); }
static void test_b15_free_returns_polled(void) { b15_free_returns(TM_POLLED); }
static void test_b15_free_returns_thread(void) { b15_free_returns(TM_THREAD); }

/* ---- none --------------------------------------------------------------- */

static void test_none_one_request_then_close(void)
{
    struct conn_handler *h = make_handler(TM_NONE);
    struct unit_conn u;

    hand_over(h, &u, GET_KEEP GET_KEEP);
    ASSERT_INT(handler_get_active_connection_count(h), 0);
    ASSERT_INT(responses_until_eof(u.peer, 3), 1);
    ASSERT_INT(resp.eof, 1);
    handler_check_requests(h); /* nothing to do */
    free_handler();
    unit_conn_close(&u);
}

static const struct unit_test conn_handlers_tests[] = {
    { "b2_pool_check_buffered_not_readable", test_pool_check_buffered_not_readable },
    { "pool_check_readable", test_pool_check_readable },
    { "pool_check_not_allowed", test_pool_check_not_allowed },
    { "pool_check_keep_alive_expired", test_pool_check_keep_alive_expired },
    { "b6_pool_idle_recheck_only_from_check_requests", test_pool_idle_recheck_only_from_check_requests },
    { "pool_first_request_and_close", test_pool_first_request_and_close },
    { "b6_pool_ready_beside_busy", test_pool_ready_beside_busy },
    { "b21_polled_ready_without_tick", test_polled_ready_without_tick },
    { "pool_owned_until_done_stress", test_pool_owned_until_done_stress },
    { "b7_pool_check_requests_lock_order", test_pool_b7_check_requests_lock_order },
    { "b2_polled_buffered_request", test_polled_b2_buffered_request },
    { "polled_waits_for_first_request", test_polled_waits_for_first_request },
    { "polled_keep_alive_expiry", test_polled_keep_alive_expiry },
    { "b2_thread_pipelined", test_thread_b2_pipelined },
    { "thread_sequential_keep_alive", test_thread_sequential_keep_alive },
    { "b4_thread_timeout_zero_closes", test_thread_timeout_zero_closes },
    { "none_one_request_then_close", test_none_one_request_then_close },
    { "b15_pool_close_sockets_leaves_kept_alive", test_b15_pool_close_sockets_leaves_kept_alive },
    { "b15_polled_close_sockets_leaves_kept_alive", test_b15_polled_close_sockets_leaves_kept_alive },
    { "b15_thread_close_sockets_wait", test_b15_thread_close_sockets_wait },
    { "b15_free_returns_pool", test_b15_free_returns_pool },
    { "b15_free_returns_polled", test_b15_free_returns_polled },
    { "b15_free_returns_thread", test_b15_free_returns_thread },
};

int unit_register_conn_handlers(void)
{
    return UNIT_ADD_SUITE("conn_handlers", NULL, conn_handlers_tests);
}
