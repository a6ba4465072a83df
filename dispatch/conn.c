/* conn.c - see conn.h. */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "../server-min/log.h"
#include "os.h"

#define CONN_BUF_INITIAL 4096

struct conn *conn_new(int fd, unsigned long id, struct loop *l)
{
    struct conn *c = calloc(1, sizeof *c);

    if (!c)
        return NULL;
    c->buf = malloc(CONN_BUF_INITIAL);
    if (!c->buf) {
        free(c);
        return NULL;
    }
    c->cap = CONN_BUF_INITIAL;
    c->fd = fd;
    c->id = id;
    c->loop = l;
    return c;
}

void conn_free(struct conn *c)
{
    if (!c)
        return;
    os_close(c->fd);
    free(c->buf);
    free(c);
}

/* Room for at least one more byte, doubling up to CONN_BUF_MAX.
 * 0, or -1 when the buffer is at its limit or memory ran out. */
static int conn_grow(struct conn *c)
{
    size_t ncap;
    char *nb;

    if (c->len < c->cap)
        return 0;
    if (c->cap >= CONN_BUF_MAX)
        return -1;
    ncap = c->cap * 2 > CONN_BUF_MAX ? CONN_BUF_MAX : c->cap * 2;
    nb = realloc(c->buf, ncap);
    if (!nb)
        return -1;
    c->buf = nb;
    c->cap = ncap;
    return 0;
}

int conn_fill(struct conn *c)
{
    for (;;) {
        ssize_t n;

        if (conn_grow(c) != 0)
            return 0;   /* full: framing decides (it always can at the limit) */
        n = os_recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (n > 0) {
            c->len += (size_t)n;
            continue;
        }
        if (n == 0) {
            c->peer_closed = 1;
            return 0;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -1;
    }
}

/* Send one response; a failure closes the connection after this request. */
static void conn_send(struct conn *c, int code, const char *ctype,
                      const char *body, size_t body_len, int keep_alive)
{
    char err[OS_ERR_LEN], *out;
    size_t out_len;

    if (http_build_response(&out, &out_len, code, ctype, body, body_len,
                            keep_alive) != 0) {
        log_line("conn=%lu response: out of memory", c->id);
        c->close_after = 1;
        return;
    }
    if (os_send_all(err, c->fd, out, out_len, CONN_SEND_TIMEOUT_MS) != 0)
        c->close_after = 1;   /* the peer went away: nothing to report */
    free(out);
}

/* Drop the first n buffered bytes, keeping whatever follows them. */
static void conn_consume(struct conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

void conn_serve(struct conn *c)
{
    struct app_response r;
    int keep = c->req.keep_alive;

    app_handle(&c->req, c->buf + c->req.head_len, &r);
    conn_send(c, r.code, r.content_type, r.body, r.body_len, keep);
    conn_consume(c, c->req_len);
    if (!keep)
        c->close_after = 1;
}

void conn_reject(struct conn *c, int status)
{
    const char *reason = http_reason(status);

    conn_send(c, status, "text/plain", reason, strlen(reason), 0);
    c->close_after = 1;
}
