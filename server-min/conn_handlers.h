/* conn_handlers.h - TFPHTTPServerConnectionHandler and its four kinds, one
 * per ThreadMode: simple (none), polled, threaded (thread), pooled (pool). */
#ifndef SERVER_MIN_CONN_HANDLERS_H
#define SERVER_MIN_CONN_HANDLERS_H

struct httpserver;
struct connection;
struct conn_handler;

/* CreateConnectionHandler: the handler for the server's ThreadMode.
 * NULL with err filled on failure. */
struct conn_handler *handler_create(struct httpserver *s, char *err);

/* HandleConnection: a freshly accepted connection is handed over. */
void handler_handle_connection(struct conn_handler *h, struct connection *c);

/* CheckRequests: called from the accept-idle callback only. */
void handler_check_requests(struct conn_handler *h);

/* GetActiveConnectionCount. */
int handler_get_active_connection_count(struct conn_handler *h);

/* CloseSockets: close every connection's socket (pool: queued tasks
 * cancelled first).  Wakes no thread waiting on one. */
void handler_close_sockets(struct conn_handler *h);

/* WaitForRequests(MaxAttempts): 1 when no connection is left. */
int handler_wait_for_requests(struct conn_handler *h, int max_attempts);

/* FreeAndNil(FConnectionHandler), after the clone's bounded stop (main's
 * default): wait for requests, shut the sockets down (which wakes their
 * waits), wait again, then free what is left, connections included. */
void handler_free(struct conn_handler *h);

/* Unit-test access to the pooled handler's per-connection check
 * (TFPPooledConnectionHandler.CheckRequest): returns 1 when the connection
 * was scheduled, -1 when it was removed, 0 otherwise. */
int handler_pooled_check_request_for_test(struct conn_handler *h,
                                          struct connection *c);

/* The pooled handler's thread pool (NULL in other modes), for tests. */
struct threadpool *handler_pool(struct conn_handler *h);

#endif
