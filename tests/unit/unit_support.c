/* unit_support.c - see unit.h. */
#include "unit.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>

#include "connection.h"
#include "httpserver.h"
#include "os.h"
#include "request.h"
#include "response.h"
#include "ssockets.h"

/* ---- suites ------------------------------------------------------------ */

int unit_add_suite(const char *name, CU_CleanupFunc cleanup,
                   const struct unit_test *tests, size_t n)
{
    CU_pSuite s = CU_add_suite(name, NULL, cleanup);
    size_t i;

    if (!s)
        return -1;
    for (i = 0; i < n; i++)
        if (!CU_add_test(s, tests[i].name, tests[i].fn))
            return -1;
    return 0;
}

/* ---- assertions -------------------------------------------------------- */

void unit_assert_int(long long got, long long want, const char *expr,
                     const char *file, unsigned line)
{
    char msg[512];

    snprintf(msg, sizeof msg, "%s (got %lld, want %lld)", expr, got, want);
    CU_assertImplementation(got == want, line, msg, file, "", CU_FALSE);
}

void unit_assert_str(const char *got, const char *want, const char *expr,
                     const char *file, unsigned line)
{
    char msg[1024];
    int ok = got && want ? strcmp(got, want) == 0 : got == want;

    snprintf(msg, sizeof msg, "%s (got \"%.300s\", want \"%.300s\")", expr,
             got ? got : "(null)", want ? want : "(null)");
    CU_assertImplementation(ok, line, msg, file, "", CU_FALSE);
}

void unit_assert_mem(const void *got, size_t got_len, const void *want,
                     size_t want_len, const char *expr, const char *file,
                     unsigned line)
{
    char msg[1024];
    int ok = got && got_len == want_len &&
             (want_len == 0 || memcmp(got, want, want_len) == 0);

    snprintf(msg, sizeof msg, "%s (got %zu bytes \"%.*s\", want %zu bytes \"%.*s\")",
             expr, got_len, got ? (int)(got_len > 200 ? 200 : got_len) : 6,
             got ? (const char *)got : "(null)", want_len,
             (int)(want_len > 200 ? 200 : want_len), (const char *)want);
    CU_assertImplementation(ok, line, msg, file, "", CU_FALSE);
}

/* ---- interpositions ---------------------------------------------------- */

static atomic_int watched_fd = -1;
static atomic_int send_calls, recv_calls;
static atomic_size_t send_cap, recv_cap;
static void (*_Atomic recv_hook)(ssize_t, void *);
static void *_Atomic recv_hook_arg;

ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
void __wrap_log_line(const char *fmt, ...);
uint64_t __real_os_tick_ms(void);
uint64_t __wrap_os_tick_ms(void);

/* How far the server's clock is ahead of the real one (unit_clock_advance). */
static atomic_uint_least64_t clock_lead;

uint64_t __wrap_os_tick_ms(void)
{
    return __real_os_tick_ms() + atomic_load(&clock_lead);
}

void unit_clock_advance(uint64_t ms)
{
    atomic_fetch_add(&clock_lead, ms);
}

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_closed;

void unit_send_gate_close(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_closed = 1;
    pthread_mutex_unlock(&gate_lock);
}

void unit_send_gate_open(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_closed = 0;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

void unit_watch_fd(int fd)
{
    unit_send_gate_open();
    atomic_store(&watched_fd, -1);
    atomic_store(&send_calls, 0);
    atomic_store(&recv_calls, 0);
    atomic_store(&send_cap, 0);
    atomic_store(&recv_cap, 0);
    atomic_store(&recv_hook, NULL);
    atomic_store(&recv_hook_arg, NULL);
    atomic_store(&clock_lead, 0);
    atomic_store(&watched_fd, fd);
}

int unit_send_calls(void) { return atomic_load(&send_calls); }
int unit_recv_calls(void) { return atomic_load(&recv_calls); }
void unit_set_send_cap(size_t cap) { atomic_store(&send_cap, cap); }
void unit_set_recv_cap(size_t cap) { atomic_store(&recv_cap, cap); }

void unit_set_recv_hook(void (*hook)(ssize_t r, void *arg), void *arg)
{
    atomic_store(&recv_hook_arg, arg);
    atomic_store(&recv_hook, hook);
}

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
    if (fd >= 0 && fd == atomic_load(&watched_fd)) {
        size_t cap = atomic_load(&send_cap);

        atomic_fetch_add(&send_calls, 1);
        if (cap && len > cap)
            len = cap;
        pthread_mutex_lock(&gate_lock);
        while (gate_closed)
            pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
    }
    return __real_send(fd, buf, len, flags);
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t r;
    int saved;
    void (*hook)(ssize_t, void *);

    if (fd < 0 || fd != atomic_load(&watched_fd))
        return __real_recv(fd, buf, len, flags);
    if (atomic_load(&recv_cap) && len > atomic_load(&recv_cap))
        len = atomic_load(&recv_cap);
    r = __real_recv(fd, buf, len, flags);
    saved = errno;
    atomic_fetch_add(&recv_calls, 1);
    hook = atomic_load(&recv_hook);
    if (hook)
        hook(r, atomic_load(&recv_hook_arg));
    errno = saved;
    return r;
}

/* The captured log: the last UNIT_LOG_LINES lines. */
#define UNIT_LOG_LINES 256
static char log_lines[UNIT_LOG_LINES][256];
static unsigned log_next;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void __wrap_log_line(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    static int echo = -1;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (echo < 0)
        echo = getenv("UNIT_LOG") && strcmp(getenv("UNIT_LOG"), "1") == 0;
    memcpy(log_lines[log_next % UNIT_LOG_LINES], buf, sizeof buf);
    log_next++;
    if (echo)
        fprintf(stderr, "[server-min] %s\n", buf);
    pthread_mutex_unlock(&log_lock);
}

void unit_log_clear(void)
{
    pthread_mutex_lock(&log_lock);
    log_next = 0;
    pthread_mutex_unlock(&log_lock);
}

int unit_log_count(const char *needle)
{
    unsigned i, n;
    int count = 0;

    pthread_mutex_lock(&log_lock);
    n = log_next < UNIT_LOG_LINES ? log_next : UNIT_LOG_LINES;
    for (i = 0; i < n; i++)
        if (strstr(log_lines[i], needle))
            count++;
    pthread_mutex_unlock(&log_lock);
    return count;
}

/* ---- peer side --------------------------------------------------------- */

void unit_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = write(fd, p, len);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            CU_FAIL("peer write failed");
            return;
        }
        p += w;
        len -= (size_t)w;
    }
}

void unit_write_str(int fd, const char *s)
{
    unit_write_all(fd, s, strlen(s));
}

int unit_readable_now(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP));
}

static ssize_t unit_read_some(int fd, void *buf, size_t len)
{
    ssize_t r;

    do
        r = read(fd, buf, len);
    while (r < 0 && errno == EINTR);
    return r;
}

void unit_read_response(int fd, struct unit_response *r)
{
    const char *cl;
    size_t want;

    memset(r, 0, sizeof *r);
    /* Byte by byte up to the empty line: never read into the next response. */
    while (r->head_len < sizeof r->head - 1) {
        ssize_t n = unit_read_some(fd, r->head + r->head_len, 1);

        if (n <= 0) {
            r->eof = r->head_len == 0;
            r->head[r->head_len] = '\0';
            return;
        }
        r->head_len++;
        if (r->head_len >= 4 &&
            memcmp(r->head + r->head_len - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    r->head[r->head_len] = '\0';
    if (sscanf(r->head, "HTTP/1.1 %d", &r->status) != 1)
        return;
    cl = unit_response_header(r, "Content-Length");
    want = cl ? (size_t)strtoul(cl, NULL, 10) : 0;
    if (want > sizeof r->body)
        return;
    while (r->body_len < want) {
        ssize_t n = unit_read_some(fd, r->body + r->body_len,
                                   want - r->body_len);

        if (n <= 0)
            return;
        r->body_len += (size_t)n;
    }
    r->ok = 1;
}

const char *unit_response_header(const struct unit_response *r,
                                 const char *name)
{
    static _Thread_local char value[512];
    const char *line = strstr(r->head, "\r\n");
    size_t nlen = strlen(name);

    while (line && line[2] != '\r' && line[2] != '\0') {
        const char *start = line + 2, *end = strstr(start, "\r\n");

        if (!end)
            break;
        if ((size_t)(end - start) > nlen && start[nlen] == ':' &&
            strncasecmp(start, name, nlen) == 0) {
            const char *v = start + nlen + 1;

            while (v < end && *v == ' ')
                v++;
            snprintf(value, sizeof value, "%.*s", (int)(end - v), v);
            return value;
        }
        line = end;
    }
    return NULL;
}

int unit_response_header_count(const struct unit_response *r,
                               const char *name)
{
    const char *line = strstr(r->head, "\r\n");
    size_t nlen = strlen(name);
    int n = 0;

    while (line && line[2] != '\r' && line[2] != '\0') {
        const char *start = line + 2;

        if (strncasecmp(start, name, nlen) == 0 && start[nlen] == ':')
            n++;
        line = strstr(start, "\r\n");
    }
    return n;
}

int unit_read_eof(int fd)
{
    char c;

    return unit_read_some(fd, &c, 1) == 0;
}

/* ---- server and connection --------------------------------------------- */

static atomic_int requests_seen;

void unit_on_request(void *data, struct http_request *req,
                     struct http_response *resp)
{
    (void)data;
    atomic_fetch_add(&requests_seen, 1);
    if (strcmp(req->method, "GET") == 0 && strcmp(req->path_info, "/ping") == 0) {
        resp->code = 200;
        response_set_header(resp, "Content-Type", "text/plain");
        response_set_content(resp, "pong", 4);
    } else if (strcmp(req->method, "POST") == 0 &&
               strcmp(req->path_info, "/echo") == 0) {
        resp->code = 200;
        response_set_content(resp, req->body, req->body_len);
    } else if (strcmp(req->method, "GET") == 0 &&
               strcmp(req->path_info, "/empty") == 0) {
        resp->code = 200;
    } else if (strcmp(req->method, "GET") == 0 &&
               strcmp(req->path_info, "/target") == 0) {
        /* What an application reads of the request target (B20): URL,
         * PathInfo, QueryString and Host, in one line. */
        const char *host = request_get_header(req, "Host");
        char text[512];
        int n = snprintf(text, sizeof text, "URL=%s PathInfo=%s Query=%s Host=%s",
                         req->url, req->path_info, req->query,
                         host ? host : "(none)");

        resp->code = 200;
        response_set_content(resp, text,
                             n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n
                                                               : sizeof text - 1);
    } else {
        resp->code = 404;
        response_set_header(resp, "Content-Type", "text/plain");
        response_set_content(resp, "not found", 9);
    }
}

int unit_requests_seen(void)
{
    return atomic_load(&requests_seen);
}

void unit_server_init(struct httpserver *s)
{
    httpserver_init(s);
    s->on_request = unit_on_request;
    atomic_store(&s->active, 1);
    atomic_store(&requests_seen, 0);
    unit_log_clear();
}

void unit_conn_open(struct unit_conn *u, struct httpserver *s)
{
    int sv[2];
    struct socket_handler *h;
    struct socket_stream *st;

    memset(u, 0, sizeof *u);
    u->peer = u->fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        CU_FAIL_FATAL("socketpair");
        return;
    }
    h = socket_handler_new(NULL);
    st = h ? socket_stream_new(sv[0], h) : NULL;
    u->c = st ? connection_new(s, st) : NULL;
    if (!u->c) {
        CU_FAIL_FATAL("out of memory creating a connection");
        return;
    }
    u->fd = sv[0];
    u->peer = sv[1];
    unit_watch_fd(u->fd);
}

void unit_conn_close(struct unit_conn *u)
{
    unit_watch_fd(-1);
    if (u->c)
        connection_free(u->c);
    u->c = NULL;
    if (u->peer >= 0)
        close(u->peer);
    u->peer = -1;
}

int unit_tcp_connect(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void unit_wait_not_busy(struct connection *c)
{
    uint64_t deadline = os_tick_ms() + 10000;

    while (atomic_load(&c->busy)) {
        if (os_tick_ms() > deadline) {
            CU_FAIL("connection still busy after 10 s");
            return;
        }
        sched_yield();
    }
}
