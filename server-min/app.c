/* app.c - see app.h.
 *
 * The three mitigations are what an application like Horse can do without
 * touching fcl-web:
 *  --on-allow-connect nodelay  assign OnAllowConnect (Horse PR #554's attempt;
 *                              dead on stock, defect B1);
 *  --socket-handler nodelay    OnGetSocketHandler returns a handler whose
 *                              Accept sets TCP_NODELAY (works on stock);
 *  --request-nodelay           set TCP_NODELAY from the request handler, as
 *                              the DoGetModule route proposed in Horse issue #562 (works on stock).
 */
#include "app.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "httpserver.h"
#include "log.h"
#include "os.h"
#include "request.h"
#include "response.h"
#include "ssockets.h"
#include "stream.h"

/* Upper bound for /slow so a typo cannot park a thread for hours. */
#define APP_SLOW_MAX_MS 60000
/* Upper bound for /bytes/N: a string body is held in memory. */
#define APP_BYTES_MAX (1ULL << 30)

static void app_set_nodelay(int fd, const char *who)
{
    char err[OS_ERR_LEN];

    if (os_set_tcp_nodelay(err, fd) != 0)
        log_line("warning %s fd=%d %s", who, fd, err);
}

/* The user's OnAllowConnect handler: sets TCP_NODELAY and always allows. */
static int app_on_allow_connect(void *data, int fd)
{
    (void)data;
    log_line("on-allow-connect fd=%d", fd);
    app_set_nodelay(fd, "on-allow-connect");
    return 1;
}

/* A user OnAllowConnect that says no: a refusal must be honoured. */
static int app_on_allow_connect_refuse(void *data, int fd)
{
    (void)data;
    log_line("on-allow-connect fd=%d refused", fd);
    return 0;
}

/* A TSocketHandler descendant whose Accept sets TCP_NODELAY. */
static int app_nodelay_handler_accept(struct socket_handler *h)
{
    log_line("socket-handler-accept fd=%d", h->socket->fd);
    app_set_nodelay(h->socket->fd, "socket-handler");
    return 1;
}

static const struct socket_handler_ops app_nodelay_handler_ops = {
    "nodelay", app_nodelay_handler_accept,
};

static struct socket_handler *app_on_get_socket_handler(void *data)
{
    (void)data;
    return socket_handler_new(&app_nodelay_handler_ops);
}

static void app_text(struct http_response *resp, int code, const char *body)
{
    resp->code = code;
    response_set_header(resp, "Content-Type", "text/plain");
    if (response_set_content(resp, body, strlen(body)) != 0)
        resp->code = 500;
}

/* ?ms=N from the query, clamped; -1 when absent or malformed. */
static long app_query_ms(const char *query)
{
    const char *p = strstr(query, "ms=");
    char *end;
    long ms;

    if (!p || (p != query && p[-1] != '&'))
        return -1;
    ms = strtol(p + 3, &end, 10);
    if (end == p + 3 || ms < 0)
        return -1;
    return ms > APP_SLOW_MAX_MS ? APP_SLOW_MAX_MS : ms;
}

/* The /bytes/N body (DESIGN section 7): 'a'..'z' repeating, the last byte
 * a line feed (a TStrings Content ends with its line break on the real
 * server, so the same bytes come from every server and either body). */
static char app_bytes_at(uint64_t i, uint64_t n)
{
    return i + 1 == n ? '\n' : (char)('a' + i % 26);
}

/* A TStream whose bytes are computed, so a 100 MiB ContentStream costs the
 * server no memory of its own: what a send path copies shows in its RSS. */
struct app_pattern_stream {
    struct content_stream base;
};

static size_t app_pattern_read(struct content_stream *s, void *buf, size_t n)
{
    uint64_t left = s->size - s->position, i;
    char *p = buf;

    if (n > left)
        n = (size_t)left;
    for (i = 0; i < n; i++)
        p[i] = app_bytes_at(s->position + i, s->size);
    return n;
}

static void app_pattern_destroy(struct content_stream *s)
{
    free(s);
}

static const struct content_stream_ops app_pattern_ops = {
    app_pattern_read, app_pattern_destroy,
};

/* GET /bytes/N: N bytes as Content, or with ?body=stream as ContentStream. */
static void app_bytes(struct http_response *resp, const char *size,
                      const char *query)
{
    struct app_pattern_stream *st;
    char *end, *buf;
    unsigned long long n;
    uint64_t i;

    n = strtoull(size, &end, 10);
    if (end == size || *end || *size == '-' || n > APP_BYTES_MAX) {
        app_text(resp, 400, "bad size");
        return;
    }
    resp->code = 200;
    response_set_header(resp, "Content-Type", "application/octet-stream");
    if (strcmp(query, "body=stream") == 0) {
        st = calloc(1, sizeof *st);
        if (!st) {
            app_text(resp, 500, "out of memory");
            return;
        }
        st->base.ops = &app_pattern_ops;
        st->base.size = n;
        response_set_content_stream(resp, &st->base);
        return;
    }
    buf = malloc(n ? n : 1);
    if (!buf) {
        app_text(resp, 500, "out of memory");
        return;
    }
    for (i = 0; i < n; i++)
        buf[i] = app_bytes_at(i, n);
    if (response_set_content(resp, buf, n) != 0)
        app_text(resp, 500, "out of memory");
    free(buf);
}

/* GET /own-headers[?connection=V]: an application that sets headers of
 * its own, X-App and, when asked, Connection (what a fix that adds a
 * Connection header must leave alone: repro/harness/hazards.py). */
static void app_own_headers(struct http_response *resp, const char *query)
{
    static const char key[] = "connection=";

    response_set_header(resp, "X-App", "own");
    if (query && strncmp(query, key, sizeof key - 1) == 0 && query[sizeof key - 1])
        response_set_header(resp, "Connection", query + sizeof key - 1);
    app_text(resp, 200, "own");
}

/* The OnAcceptIdle that GET /set-accept-idle assigns: it logs its first
 * call, so a run shows that the application's handler runs (with the B9 fix
 * as without it). */
static void app_on_accept_idle(void *server)
{
    static atomic_int called;

    (void)server;
    if (atomic_fetch_add(&called, 1) == 0)
        log_line("on-accept-idle: the application's handler ran");
}

/* OnRequest: the routes. */
static void app_on_request(void *data, struct http_request *req,
                           struct http_response *resp)
{
    const struct options *o = data;
    long ms;

    if (o->request_nodelay)
        app_set_nodelay(connection_fd(resp->connection), "request-nodelay");
    if (strcmp(req->method, "GET") == 0 && strcmp(req->path_info, "/ping") == 0) {
        app_text(resp, 200, "pong");
    } else if (strcmp(req->method, "POST") == 0 &&
               strcmp(req->path_info, "/echo") == 0) {
        resp->code = 200;
        response_set_header(resp, "Content-Type", "application/octet-stream");
        if (response_set_content(resp, req->body, req->body_len) != 0)
            app_text(resp, 500, "out of memory");
    } else if (strcmp(req->method, "GET") == 0 &&
               strcmp(req->path_info, "/slow") == 0 &&
               (ms = app_query_ms(req->query)) >= 0) {
        /* A stop ends the wait: the client gets an answer, and the
         * server's stop is not held up by a sleeping route. */
        if (os_stop_wait_ms((int)ms))
            app_text(resp, 503, "stopping");
        else
            app_text(resp, 200, "done");
    } else if (strcmp(req->method, "GET") == 0 &&
               strncmp(req->path_info, "/bytes/", 7) == 0) {
        app_bytes(resp, req->path_info + 7, req->query);
    } else if (strcmp(req->method, "GET") == 0 &&
               strcmp(req->path_info, "/own-headers") == 0) {
        app_own_headers(resp, req->query);
    } else if (strcmp(req->method, "GET") == 0 &&
               strcmp(req->path_info, "/set-accept-idle") == 0) {
        /* An application that assigns OnAcceptIdle while the server runs
         * (B9). */
        httpserver_set_idle(resp->connection->server, app_on_accept_idle);
        app_text(resp, 200, "set");
    } else {
        app_text(resp, 404, "not found");
    }
}

void app_install(struct httpserver *s, const struct options *o)
{
    s->on_request = app_on_request;
    s->on_request_data = (void *)o;
    if (o->on_allow_connect_nodelay)
        httpserver_set_on_allow_connect(s, app_on_allow_connect, NULL);
    else if (o->on_allow_connect_refuse)
        httpserver_set_on_allow_connect(s, app_on_allow_connect_refuse, NULL);
    if (o->socket_handler_nodelay)
        s->on_get_socket_handler = app_on_get_socket_handler;
}
