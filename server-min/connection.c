/* connection.c - TFPHTTPConnection.  One function per upstream routine.
 *
 * Stock behaviour is upstream's, defects included:
 *  - RequestPending asks the socket only, never FBuffer (B2);
 *  - ReadRequestContent empties FBuffer after taking the body (B5);
 *  - nothing here ever announces "Connection: close" (B4).
 *  - ReadRequestContent never answers "Expect: 100-continue" (B10).
 *  - nothing checks a request's framing: Transfer-Encoding is ignored, the
 *    last Content-Length wins, a field line with whitespace before the
 *    colon or folded onto the line before is kept or dropped (B11).
 *  - ReadRequestContent sizes the body from Content-Length before a byte of
 *    it arrives, and dispatches it zero-filled when the stream ends first
 *    (B12).
 *  - DoHandleRequest decides keep-alive on the whole Connection value and
 *    the version string "1.1" (reader_keep_alive, B13).
 *  - ReadString's FillBuffer gives each read of the head RequestReadTimeout,
 *    not the head as a whole: a head that comes a byte at a time, each gap
 *    below the time-out, holds the connection as long as its sender likes
 *    (B17).
 *  - ReadRequestHeaders takes an empty line before the request line for "no
 *    request": the connection is closed under the request after it (B18).
 *  - ParseStartLine takes a target in absolute-form (http://k/ping) for a
 *    path: PathInfo "/http://k/ping", and the Host field stays whatever the
 *    client sent (request_set_start_line, B20).
 */
#include "connection.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "os.h"
#include "reader.h"
#include "request.h"
#include "response.h"
#include "ssockets.h"

/* TFPHTTPConnection._ConnectionCount: one global counter, IDs 1, 2, 3, ... */
static atomic_uint_least64_t connection_count;

/* Hard cap on one line when MaxLineLength is 0 (no limit upstream): the
 * clone still must not grow without bound. */
#define CONNECTION_UNLIMITED_LINE_CAP (64u * 1024u * 1024u)

/* AllocateConnectionID. */
static uint64_t connection_allocate_id(void)
{
    return atomic_fetch_add(&connection_count, 1) + 1;
}

struct connection *connection_new(struct httpserver *server,
                                  struct socket_stream *socket)
{
    struct connection *c = calloc(1, sizeof *c);

    if (!c)
        return NULL;
    c->server = server;
    c->socket = socket;
    c->id = connection_allocate_id();
    return c;
}

void connection_free(struct connection *c)
{
    if (!c)
        return;
    log_line("close conn=%llu requests=%u", (unsigned long long)c->id,
             c->requests);
    socket_stream_free(c->socket);
    free(c->line);
    free(c);
}

int connection_is_upgraded(const struct connection *c)
{
    return c->is_upgraded;
}

struct socket_stream *connection_socket(const struct connection *c)
{
    return c->socket;
}

int connection_fd(const struct connection *c)
{
    return c->socket->fd;
}

size_t connection_buffered(const struct connection *c)
{
    return c->buf_len - c->buf_pos;
}

int connection_keep_connection_timeout(const struct connection *c)
{
    return c->server->props.keep_connection_timeout;
}

/* GetKeepConnectionIdleTimeout: 0 falls back to the keep-alive time-out. */
int connection_keep_connection_idle_timeout(const struct connection *c)
{
    int t = c->server->props.keep_connection_idle_timeout;

    return t ? t : connection_keep_connection_timeout(c);
}

/* SetupSocket: MSG_NOSIGNAL on reads and writes, and the request read
 * time-out as SO_RCVTIMEO/SO_SNDTIMEO.  Upstream sets nothing else. */
static void connection_setup_socket(struct connection *c)
{
    char err[OS_ERR_LEN];

    c->socket->read_flags = os_msg_nosignal();
    c->socket->write_flags = os_msg_nosignal();
    if (c->server->props.request_read_timeout > 0 &&
        socket_stream_set_io_timeout(c->socket,
                                     c->server->props.request_read_timeout,
                                     err) != 0)
        log_line("warning conn=%llu %s", (unsigned long long)c->id, err);
    c->is_socket_setup = 1;
}

/* ReadString's FillBuffer: wait up to RequestReadTimeout for data, then ONE
 * read of up to ReadBufLen bytes.  Leaves the buffer empty on end of stream,
 * and on a time-out before the request's first byte (a quiet close, e.g. a
 * browser's preconnect).  Each fill gets the whole time-out again, however
 * long the head has taken so far (B17).  Returns 0, 408 or 500. */
static int connection_fill_buffer(struct connection *c)
{
    int timeout = c->server->props.request_read_timeout;
    ssize_t r;

    c->buf_pos = c->buf_len = 0;
    if (timeout > 0 && !socket_stream_can_read(c->socket, timeout))
        return c->request_started ? 408 : 0;
    r = socket_stream_read(c->socket, c->buffer, sizeof c->buffer);
    if (r < 0)
        return 500;
    c->buf_len = (size_t)r;
    if (r > 0)
        c->request_started = 1;
    return 0;
}

static int connection_append_line(struct connection *c, const char *s,
                                  size_t n)
{
    if (c->line_len + n + 1 > c->line_cap) {
        size_t cap = c->line_cap ? c->line_cap : 256;
        char *p;

        while (cap < c->line_len + n + 1)
            cap *= 2;
        p = realloc(c->line, cap);
        if (!p)
            return -1;
        c->line = p;
        c->line_cap = cap;
    }
    memcpy(c->line + c->line_len, s, n);
    c->line_len += n;
    c->line[c->line_len] = '\0';
    return 0;
}

/* ReadString: one CRLF-terminated line out of FBuffer, refilling it from the
 * socket whenever it is empty.  End of stream ends the line as it is.
 * Returns 0 (line in c->line), 400 (a control byte in the line), 431 (line
 * too long), 408 or 500. */
int connection_read_string(struct connection *c)
{
    int pending_cr = 0, rc;
    size_t max = (size_t)c->server->props.max_line_length;

    c->line_len = 0;
    if (connection_append_line(c, "", 0) != 0)
        return 500;
    for (;;) {
        struct reader_chunk ch;

        if (connection_buffered(c) == 0) {
            rc = connection_fill_buffer(c);
            if (rc)
                return rc;
            if (connection_buffered(c) == 0)
                return 0; /* end of stream: the line is what we have */
        }
        reader_scan_line(c->buffer + c->buf_pos, connection_buffered(c),
                         pending_cr, &ch);
        /* HasIllegalControlChar on the chunk, before it joins the line. */
        if (reader_has_illegal_control_char(c->buffer + c->buf_pos +
                                                ch.take_from, ch.take_len))
            return 400;
        if ((ch.prepend_cr && connection_append_line(c, "\r", 1) != 0) ||
            connection_append_line(c, c->buffer + c->buf_pos + ch.take_from,
                                   ch.take_len) != 0)
            return 500;
        c->buf_pos += ch.consumed;
        pending_cr = ch.pending_cr;
        if ((max > 0 && c->line_len > max) ||
            c->line_len > CONNECTION_UNLIMITED_LINE_CAP)
            return 431;
        if (ch.ended)
            return 0;
    }
}

/* ParseStartLine. Returns 0, 400 or 500. */
static int connection_parse_start_line(struct connection *c,
                                       struct http_request *req)
{
    struct reader_start_line sl;
    int rc = reader_parse_start_line(c->line, c->line_len,
                                     c->server->props.strict_ascii_url, &sl);

    if (rc)
        return rc;
    if (request_set_start_line(req, sl.method, sl.method_len, sl.url,
                               sl.url_len, sl.version, sl.version_len) != 0)
        return 500;
    return 0;
}

/* InterPretHeader: lines without a colon are ignored (UnknownHeader). */
static int connection_interpret_header(struct connection *c,
                                       struct http_request *req)
{
    const char *name, *value;
    size_t name_len, value_len;

    if (!reader_split_header(c->line, c->line_len, &name, &name_len, &value,
                             &value_len))
        return 0;
    return request_set_field(req, name, name_len, value, value_len) ? 500 : 0;
}

/* ReadRequestHeaders: *out is NULL when the start line is empty (no
 * request).  The header count includes the closing empty line, so with
 * MaxHeaderCount 256 the 256th header line already fails, as upstream. */
int connection_read_request_headers(struct connection *c,
                                    struct http_request **out)
{
    struct http_request *req;
    int count = 0, rc;

    *out = NULL;
    /* FRequestDataReceived:=False, even when FBuffer already holds bytes of
     * this request: only a byte read from the socket counts. */
    c->request_started = 0;
    rc = connection_read_string(c);
    if (rc)
        return rc;
    if (c->line_len == 0)
        return 0;
    req = request_new();
    if (!req)
        return 500;
    rc = connection_parse_start_line(c, req);
    while (rc == 0) {
        size_t len;

        rc = connection_read_string(c);
        if (rc)
            break;
        len = c->line_len;
        if (len > 0)
            rc = connection_interpret_header(c, req);
        count++;
        if (rc == 0 && c->server->props.max_header_count > 0 &&
            count > c->server->props.max_header_count)
            rc = 400;
        if (len == 0)
            break;
    }
    if (rc) {
        request_free(req);
        return rc;
    }
    *out = req;
    return 0;
}

/* ReadRequestContent: take what FBuffer holds of the body, then EMPTY FBuffer
 * (defect B5: the bytes of a pipelined next request go with it), then read
 * the rest from the socket, each read guarded by CanRead(RequestReadTimeout).
 * Returns 0, or the status of the error it raises. */
int connection_read_request_content(struct connection *c,
                                    struct http_request *req)
{
    int64_t len = request_content_length(req);
    size_t want, have;

    if (c->server->props.max_body_size > 0 &&
        len > c->server->props.max_body_size)
        return 413;
    if (len <= 0)
        return 0;
    want = (size_t)len;
    /* SetLength(S,L): the announced size, before a byte of the body has
     * come (B12).  Zeroed, as the heap's fresh pages are: they become
     * resident as they are written, by the body or by whoever copies it. */
    req->body = calloc(1, want);
    if (!req->body)
        return 500;
    req->body_len = want;
    have = connection_buffered(c);
    if (have > 0) {
        if (have > want)
            have = want;
        memcpy(req->body, c->buffer + c->buf_pos, have);
        c->buf_pos = c->buf_len = 0; /* FBuffer:='' */
    }
    while (have < want) {
        int timeout = c->server->props.request_read_timeout;
        ssize_t r;

        /* The same stall guard as FillBuffer: a body that stops coming is a
         * time-out, not a blocked thread. */
        if (timeout > 0 && !socket_stream_can_read(c->socket, timeout))
            return 408;
        r = socket_stream_read(c->socket, req->body + have, want - have);
        if (r < 0)
            return 500;
        /* End of stream: the loop stops, and the request goes on to be
         * dispatched with the missing bytes as zeros (B12). */
        if (r == 0)
            break;
        have += (size_t)r;
    }
    return 0;
}

/* DoHandleRequest: read one request, set the keep-alive flag, dispatch,
 * send.  Returns 0 or the status of a raised error. */
int connection_do_handle_request(struct connection *c)
{
    struct httpserver *s = c->server;
    struct http_request *req = NULL;
    struct http_response resp;
    int rc;

    if (c->is_upgraded)
        return 0;
    rc = connection_read_request_headers(c, &req);
    if (rc)
        return rc;
    if (!req) {
        /* Empty request: no response, and this connection is done. */
        atomic_store(&c->keep_alive, 0);
        c->empty_detected = 1;
        return 0;
    }
    if (request_content_length(req) > 0)
        rc = connection_read_request_content(c, req);
    if (rc == 0) {
        if (s->props.keep_connections)
            atomic_store(&c->keep_alive,
                         reader_keep_alive(req->protocol_version,
                                           request_get_header(req,
                                                              "Connection")));
        response_init(&resp, c, req);
        /* An HTTP/1.0 client must be told its connection persists. */
        if (atomic_load(&c->keep_alive) &&
            strcmp(req->protocol_version, "1.0") == 0 &&
            !response_header_is_set(&resp, "Connection"))
            response_set_header(&resp, "Connection", "keep-alive");
        c->requests++;
        if (atomic_load(&s->active))
            httpserver_handle_request(s, req, &resp);
        if (!resp.content_sent && response_send_content(&resp) != 0)
            rc = 500;
        log_line("request conn=%llu req=%u %s %s -> %d keep-alive=%d",
                 (unsigned long long)c->id, c->requests, req->method,
                 req->url, resp.code, atomic_load(&c->keep_alive));
        response_free_content(&resp);
    }
    request_free(req);
    return rc;
}

/* HandleRequestError: the server layer only logs; no response is sent, by
 * it or after it, so the client sees the close with no status (B16). */
static void connection_handle_request_error(struct connection *c, int status)
{
    c->last_error_status = status;
    log_line("error conn=%llu status=%d %s", (unsigned long long)c->id,
             status, response_status_text(status));
}

void connection_handle_request(struct connection *c)
{
    int rc;

    /* Not upstream: an observation, for the hazard suite (a fix must never
     * let two threads serve one connection). */
    if (atomic_fetch_add(&c->serving, 1) != 0)
        log_line("error conn=%llu served by two threads at once",
                 (unsigned long long)c->id);
    atomic_store(&c->busy, 1);
    c->handled++;
    if (!c->is_socket_setup)
        connection_setup_socket(c);
    rc = connection_do_handle_request(c);
    if (rc) {
        atomic_store(&c->keep_alive, 0); /* a failed connection is not kept */
        connection_handle_request_error(c, rc);
    }
    atomic_fetch_sub(&c->serving, 1);
    atomic_store(&c->busy, 0);
    atomic_store(&c->last_request_time, os_tick_ms());
}

int connection_allow_new_request(struct connection *c)
{
    if (atomic_load(&c->busy) || c->is_upgraded || c->empty_detected)
        return 0;
    return c->server->props.keep_connections && atomic_load(&c->keep_alive) &&
           socket_stream_last_error(c->socket) == 0;
}

/* RequestPending: select() on the socket with the idle time-out.  It never
 * looks at FBuffer, so requests already read into it wait (defect B2). */
int connection_request_pending(struct connection *c)
{
    return !c->is_upgraded &&
           socket_stream_can_read(c->socket,
                                  connection_keep_connection_idle_timeout(c));
}

void connection_do_keep_connection_idle(struct connection *c)
{
    (void)c; /* OnKeepConnectionIdle is not assigned in server-min. */
}
