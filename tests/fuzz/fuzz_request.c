/* fuzz_request.c - libFuzzer target over server-min's request reader.
 *
 * Drives the real connection code: an httpserver (httpserver_init, then
 * request_read_timeout 0, keep_connections 1, a small max_body_size), a
 * socketpair whose client end gets the whole input and then
 * shutdown(SHUT_WR), and a connection (socket_handler_new,
 * socket_stream_new, connection_new) on the other end.
 * connection_handle_request runs as long as the connection may serve another
 * request (AllowNewRequest: keep-alive on, no empty request seen, no socket
 * error) and a request is there (bytes in FBuffer or a readable socket).
 * Responses are drained after every request so no write ever blocks.
 *
 * The pure reader functions get the same input: reader_scan_line,
 * reader_parse_start_line (strict and lenient), reader_split_header,
 * reader_content_length, reader_keep_alive.
 *
 * Build (tests/fuzz/run.sh does this):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iserver-min \
 *     tests/fuzz/fuzz_request.c (server-min C files but main.c app.c log.c)
 * log.c is replaced by a silent log_line below (the server logs one line per
 * connection, which would drown libFuzzer's output).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "connection.h"
#include "httpserver.h"
#include "log.h"
#include "reader.h"
#include "request.h"
#include "response.h"
#include "ssockets.h"

#define FUZZ_MAX_INPUT (64 * 1024)
#define FUZZ_MAX_REQUESTS 4096

/* The server log, silenced.  Formats are still checked by the compiler. */
void log_line(const char *fmt, ...)
{
    (void)fmt;
}

static struct httpserver server;
static unsigned long handled;

/* OnRequest: a small body, plus the request's own bits echoed into a header
 * and the body so the response path sees hostile data. */
static void fuzz_on_request(void *data, struct http_request *req,
                            struct http_response *resp)
{
    char body[64];
    size_t n;

    (void)data;
    handled++;
    resp->code = req->body_len ? 200 : 404;
    response_set_header(resp, "Content-Type", "text/plain");
    response_set_header(resp, "X-Method", req->method);
    if (req->header_count)
        response_set_header(resp, req->headers[0].name, req->headers[0].value);
    n = req->body_len < 32 ? req->body_len : 32;
    memcpy(body, "ok:", 3);
    if (n)
        memcpy(body + 3, req->body, n);
    if (response_set_content(resp, body, n + 3) != 0)
        resp->code = 500;
}

static void fuzz_init(void)
{
    static int done;

    if (done)
        return;
    done = 1;
    httpserver_init(&server);
    server.props.request_read_timeout = 0;
    server.props.keep_connections = 1;
    server.props.keep_connection_timeout = 1000;
    server.props.max_body_size = 4096;
    server.on_request = fuzz_on_request;
    atomic_store(&server.active, 1);
}

static void drain(int fd)
{
    char buf[65536];

    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

struct writer {
    int fd;
    const uint8_t *data;
    size_t len;
};

/* The rest of an input the socket buffer did not take at once. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;

    while (w->len > 0) {
        ssize_t r = send(w->fd, w->data, w->len, MSG_NOSIGNAL);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        w->data += r;
        w->len -= (size_t)r;
    }
    shutdown(w->fd, SHUT_WR);
    return NULL;
}

static void fuzz_connection(const uint8_t *data, size_t size)
{
    int sv[2], big = 1 << 20, fl, rounds = 0;
    struct socket_handler *h;
    struct socket_stream *s;
    struct connection *c;
    struct writer w;
    pthread_t thr;
    int threaded = 0;
    size_t off = 0;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    /* Client end: as much as goes in at once without blocking. */
    fl = fcntl(sv[0], F_GETFL);
    fcntl(sv[0], F_SETFL, fl | O_NONBLOCK);
    while (off < size) {
        ssize_t r = send(sv[0], data + off, size - off, MSG_NOSIGNAL);

        if (r <= 0)
            break;
        off += (size_t)r;
    }
    fcntl(sv[0], F_SETFL, fl);
    if (off < size) {
        w.fd = sv[0];
        w.data = data + off;
        w.len = size - off;
        if (pthread_create(&thr, NULL, writer_main, &w) != 0)
            abort();
        threaded = 1;
    } else {
        shutdown(sv[0], SHUT_WR);
    }

    h = socket_handler_new(NULL);
    s = h ? socket_stream_new(sv[1], h) : NULL;
    c = s ? connection_new(&server, s) : NULL;
    if (!c)
        abort();
    do {
        connection_handle_request(c);
        drain(sv[0]);
    } while (++rounds < FUZZ_MAX_REQUESTS && connection_allow_new_request(c) &&
             (connection_buffered(c) > 0 ||
              socket_stream_can_read(connection_socket(c), 0)));
    /* Invariants of the reader's buffer. */
    if (c->buf_pos > c->buf_len || c->buf_len > sizeof c->buffer)
        abort();
    if (threaded) {
        /* The writer may still be blocked on a full buffer: unblock it. */
        shutdown(sv[1], SHUT_RD);
        pthread_join(thr, NULL);
    }
    connection_free(c); /* closes sv[1] */
    close(sv[0]);
}

static void fuzz_pure(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *name, *value;
    size_t name_len, value_len, pos;
    struct reader_start_line sl;
    struct reader_chunk ch;
    char *z;
    int pending = 0;

    if (size == 0)
        return;
    /* The line scanner over the input in chunks of varying size, the way
     * ReadString walks successive buffer fills. */
    for (pos = 0; pos < size;) {
        size_t n = size - pos, cap = 1 + (data[pos] % 64);

        if (n > cap)
            n = cap;
        reader_scan_line(p + pos, n, pending, &ch);
        if (ch.consumed == 0 || ch.consumed > n ||
            ch.take_from + ch.take_len > n)
            abort();
        pending = ch.pending_cr;
        pos += ch.consumed;
    }
    if (reader_parse_start_line(p, size, 1, &sl) == 0 &&
        (sl.method_len + sl.url_len > size || sl.version_len > size))
        abort();
    if (reader_parse_start_line(p, size, 0, &sl) == 0 &&
        (sl.method_len + sl.url_len > size || sl.version_len > size))
        abort();
    if (reader_split_header(p, size, &name, &name_len, &value, &value_len) &&
        (name_len + value_len >= size + 1 || value < p ||
         value + value_len > p + size))
        abort();
    (void)reader_content_length(p, size);
    z = malloc(size + 1);
    if (!z)
        abort();
    memcpy(z, data, size);
    z[size] = '\0';
    (void)reader_keep_alive(z, z);
    (void)reader_keep_alive("1.1", z);
    free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_init();
    if (size > FUZZ_MAX_INPUT)
        return -1;
    fuzz_pure(data, size);
    fuzz_connection(data, size);
    return 0;
}
