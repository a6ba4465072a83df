/* unit.h - shared by the CUnit suites of tests/unit/.
 *
 * The suites are compiled against one server variant's source tree
 * (server-min/ for stock, build/<variant>/src/server-min otherwise) with
 * KIT_FIXED_Bn and KIT_PATCHED_Bn telling which defects that tree fixes
 * (tests/unit/unit.mk derives them from the patches).
 *
 * Four link-time interpositions (-Wl,--wrap=..., see unit.mk) let the tests
 * observe server-min without touching it:
 *   send      counts the send() calls on one watched fd (B3: writes per
 *             response) and can cap their length (forces short writes);
 *   recv      caps the length of each recv() on the watched fd and calls a
 *             hook after each one (the peer writes its next piece only after
 *             the server's previous read: data "arriving in pieces" without
 *             any sleep);
 *   log_line  captures the server's log lines (conn=<id> req=<n>), echoed to
 *             stderr only when UNIT_LOG=1;
 *   os_tick_ms  the server's clock, as GetTickCount64 plus a lead a test may
 *             add (unit_clock_advance: B17's head deadline passes without
 *             any sleep); unit_watch_fd sets the lead back to 0.
 */
#ifndef UNIT_H
#define UNIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <CUnit/CUnit.h>

/* KIT_FIXED_Bn: the variant fixes Bn (interactions counted: a fix whose
 * Needs: patch is absent fixes nothing); KIT_PATCHED_Bn: the variant carries
 * the patch for Bn.  Both come from repro/harness/patchset.py via unit.mk. */
#if !defined(KIT_FIXED_B1) || !defined(KIT_FIXED_B2) || \
    !defined(KIT_FIXED_B3) || !defined(KIT_FIXED_B4) || \
    !defined(KIT_FIXED_B5) || !defined(KIT_FIXED_B6) || \
    !defined(KIT_FIXED_B7) || !defined(KIT_FIXED_B8) || \
    !defined(KIT_PATCHED_B5)
#error "build the unit tests through tests/unit/unit.mk: KIT_FIXED_Bn must be set"
#endif

struct httpserver;
struct connection;
struct http_request;
struct http_response;

/* ---- suites (one per server-min module) -------------------------------- */

/* One test of a suite: its CUnit name (what `unit SUITE TEST` takes) and
 * its function. */
struct unit_test {
    const char *name;
    CU_TestFunc fn;
};

/* Add suite name (no init; cleanup may be NULL) with its n tests in order.
 * 0, or -1 when CUnit refused (CU_get_error_msg says why). */
int unit_add_suite(const char *name, CU_CleanupFunc cleanup,
                   const struct unit_test *tests, size_t n);
/* What every unit_register_* is: a suite from a static table. */
#define UNIT_ADD_SUITE(name, cleanup, tests) \
    unit_add_suite((name), (cleanup), (tests), sizeof(tests) / sizeof((tests)[0]))

int unit_register_reader(void);
int unit_register_request(void);
int unit_register_response(void);
int unit_register_connection(void);
int unit_register_httpserver(void);
int unit_register_conn_handlers(void);
int unit_register_options(void);
int unit_register_ssockets(void);
int unit_register_threadpool(void);
int unit_register_stream(void);

/* ---- assertions that print the values they compared -------------------- */

void unit_assert_int(long long got, long long want, const char *expr,
                     const char *file, unsigned line);
void unit_assert_str(const char *got, const char *want, const char *expr,
                     const char *file, unsigned line);
void unit_assert_mem(const void *got, size_t got_len, const void *want,
                     size_t want_len, const char *expr, const char *file,
                     unsigned line);

#define ASSERT_INT(got, want) \
    unit_assert_int((long long)(got), (long long)(want), #got " == " #want, \
                    __FILE__, __LINE__)
#define ASSERT_STR(got, want) \
    unit_assert_str((got), (want), #got " == " #want, __FILE__, __LINE__)
/* A counted string (pointer, length) against a C string. */
#define ASSERT_MEM(got, got_len, want) \
    unit_assert_mem((got), (got_len), (want), strlen(want), \
                    #got " == " #want, __FILE__, __LINE__)

/* ---- interpositions ---------------------------------------------------- */

/* Watch fd (or -1 for none) and reset the counters, caps and hook. */
void unit_watch_fd(int fd);
int unit_send_calls(void);   /* send() calls on the watched fd */
int unit_recv_calls(void);   /* recv() calls on the watched fd */
void unit_set_send_cap(size_t cap); /* 0 = no cap */
void unit_set_recv_cap(size_t cap); /* 0 = no cap */
/* Called after each recv() on the watched fd with its result. */
void unit_set_recv_hook(void (*hook)(ssize_t r, void *arg), void *arg);
/* Move the server's clock (os_tick_ms) ms milliseconds ahead. */
void unit_clock_advance(uint64_t ms);

/* A gate on the watched fd's send(): while closed, a server thread about to
 * send there waits (the response of a pool task is held, so the task stays
 * busy).  unit_watch_fd opens it. */
void unit_send_gate_close(void);
void unit_send_gate_open(void);

/* Forget the captured log lines. */
void unit_log_clear(void);
/* How many captured log lines contain needle. */
int unit_log_count(const char *needle);

/* ---- peer-side helpers ------------------------------------------------- */

/* write() everything (the peer does not go through the wrapped send). */
void unit_write_all(int fd, const void *buf, size_t len);
void unit_write_str(int fd, const char *s);
/* poll() with timeout 0: 1 when fd has bytes (or EOF) waiting, else 0. */
int unit_readable_now(int fd);

/* One HTTP response read from the peer side with blocking reads: the header
 * block up to the empty line, then exactly Content-Length body bytes. */
struct unit_response {
    int ok;               /* a whole response was read */
    int eof;              /* the stream ended before any byte */
    int status;
    char head[4096];      /* status line + headers, NUL-terminated */
    size_t head_len;
    char body[131072];    /* room for a body beyond coalesce-writes' 64 KiB bound */
    size_t body_len;
};
void unit_read_response(int fd, struct unit_response *r);
/* The value of header name in r->head (case-insensitive), or NULL; the
 * returned pointer is to a static buffer. */
const char *unit_response_header(const struct unit_response *r,
                                 const char *name);
/* How many times a header line "name:" occurs in r->head. */
int unit_response_header_count(const struct unit_response *r,
                               const char *name);
/* Blocking read: 1 when the peer sees end of stream next, 0 when a byte
 * arrived instead. */
int unit_read_eof(int fd);

/* ---- a server and one connection over a socketpair ---------------------- */

/* What the test request handler (OnRequest) does:
 *   GET /ping   -> 200 text/plain "pong"
 *   POST /echo  -> 200, the request body
 *   GET /empty  -> 200, no content
 *   GET /target -> 200, "URL=... PathInfo=... Query=... Host=..." as the
 *                  application reads them (Host "(none)" when absent)
 *   else        -> 404 text/plain "not found" */
void unit_on_request(void *data, struct http_request *req,
                     struct http_response *resp);
/* OnRequest calls since unit_server_init. */
int unit_requests_seen(void);

/* httpserver_init + active + the test OnRequest. */
void unit_server_init(struct httpserver *s);

struct unit_conn {
    struct connection *c;
    int peer;     /* the client's end */
    int fd;       /* the server's end (owned by the connection) */
};
/* socketpair, socket_handler_new(NULL), socket_stream_new, connection_new;
 * watches the server's fd (unit_watch_fd). */
void unit_conn_open(struct unit_conn *u, struct httpserver *s);
/* connection_free (if c is still set) and close the peer. */
void unit_conn_close(struct unit_conn *u);

/* A blocking TCP client connected to 127.0.0.1:port (the connect completes
 * into the listener's backlog, no accept needed). -1 on failure. */
int unit_tcp_connect(int port);

/* Spin (sched_yield) until the connection is not busy; a 10 s safety bound
 * fails the test instead of hanging (not a timing assertion). */
void unit_wait_not_busy(struct connection *c);

#endif
