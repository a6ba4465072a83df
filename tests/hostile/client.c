/* tests/hostile/client.c - one client connection of the hostile driver.
 * Sockets and waits come from common/tcpclient, response parsing from
 * common/http_response (the kit's one reader); what is left here is the
 * bookkeeping of what came back and how the connection ended. */
#include "hostile.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/http_response.h"
#include "../../common/tcpclient.h"
#include "../../common/util.h"

int rx_open(struct rx *x, const struct srv *s, char *why, size_t whycap)
{
    memset(x, 0, sizeof *x);
    x->fd = -1;
    x->body = xrealloc(NULL, sizeof(struct hr_body));
    x->t_start = tc_now_us();
    if (tc_connect("127.0.0.1", s->port_s, tc_now_us() + hs_us(5000), &x->fd, why, whycap) !=
        TC_CONN_OK)
        return -1;
    x->s = s;
    return 0;
}

void rx_free(struct rx *x)
{
    tc_close(x->fd);
    free(x->buf);
    free(x->r);
    free(x->body);
    memset(x, 0, sizeof *x);
    x->fd = -1;
}

int rx_closed(const struct rx *x)
{
    return x->eof || x->rst || x->err;
}

static void rx_push(struct rx *x)
{
    if (x->nr == x->rcap) {
        x->rcap = x->rcap ? x->rcap * 2 : 16;
        x->r = xreallocarray(x->r, x->rcap, sizeof *x->r);
    }
    x->r[x->nr++] = x->cur;
    x->in_body = 0;
}

/* Parse every complete response in the bytes so far (and, after the end of
 * the stream, complete a body that runs to close). */
static void rx_parse(struct rx *x)
{
    struct hr_body *b = x->body;

    while (!x->bad) {
        if (!x->in_body) {
            struct hr_response r;
            long long n;

            if (x->off >= x->len)
                return;
            n = hr_parse_head(x->buf + x->off, x->len - x->off, 0, 0, &r);
            if (n == HR_INCOMPLETE && !rx_closed(x))
                return;
            if (n < 0) {
                x->bad = 1; /* not HTTP, or cut off by the close */
                return;
            }
            memset(&x->cur, 0, sizeof x->cur);
            x->cur.status = r.status;
            x->cur.conn_close = r.conn_close;
            x->cur.conn_keep_alive = r.conn_keep_alive;
            x->cur.to_close = r.framing == HR_BODY_CLOSE;
            x->cur.body_off = x->off + (size_t)n;
            x->body_pos = x->cur.body_off;
            if (hr_body_init(b, &r, HR_BODY_UNLIMITED) != 0) {
                x->bad = 1;
                return;
            }
            x->in_body = 1;
        }
        if (!b->done && x->body_pos < x->len) {
            size_t outlen = 0;
            long long used = hr_body_feed(b, x->buf + x->body_pos, x->len - x->body_pos, NULL, 0,
                                          &outlen);

            if (used < 0) {
                x->bad = 1;
                return;
            }
            x->body_pos += (size_t)used;
        }
        if (!b->done && rx_closed(x) && hr_body_eof(b) != 0) {
            x->bad = 1; /* body cut short by the close */
            return;
        }
        if (!b->done && !rx_closed(x))
            return;
        if (!b->done)
            return;
        x->cur.body_len = b->body_len;
        x->off = x->body_pos;
        rx_push(x);
    }
}

static void rx_append(struct rx *x, const char *p, size_t n)
{
    if (x->len + n + 1 > x->cap) {
        x->cap = (x->len + n + 1) * 2;
        x->buf = xrealloc(x->buf, x->cap);
    }
    memcpy(x->buf + x->len, p, n);
    x->len += n;
    x->buf[x->len] = '\0';
}

/* One read of what is there now: 1 progress, 0 nothing. */
static int rx_read_some(struct rx *x)
{
    char buf[65536];
    size_t got = 0;
    int err = 0;

    switch (tc_recv(x->fd, buf, sizeof buf, 0, &got, &err)) {
    case TC_IO_OK:
        rx_append(x, buf, got);
        rx_parse(x);
        return 1;
    case TC_IO_EOF:
        x->eof = 1;
        break;
    case TC_IO_ERR:
        if (err == ECONNRESET)
            x->rst = 1;
        else
            x->err = err ? err : EIO;
        break;
    case TC_IO_TIMEOUT:
        return 0;
    }
    x->t_end = tc_now_us();
    rx_parse(x);
    return 1;
}

/* The idle wait (idle_ms of silence means "nothing more") counts only
 * from the moment the server has settled (srv_settled): until then its
 * silence is the scheduler's, not an outcome.  Settling is polled at this
 * pace, bounded by the deadline like every wait. */
#define SETTLE_POLL_US 5000

int rx_xfer(struct rx *x, const char *out, size_t outlen, size_t want, int deadline_ms,
            int idle_ms)
{
    int64_t end = tc_now_us() + hs_us(deadline_ms), last = tc_now_us();
    size_t sent = 0;
    int settled = 0;

    for (;;) {
        int64_t now = tc_now_us(), until = end;
        short ev = POLLIN;
        int err;

        if (rx_closed(x))
            return 1;
        if (want && x->nr >= want && sent == outlen)
            return 1;
        if (sent == outlen && idle_ms > 0 && !settled) {
            settled = !x->s || srv_settled(x->s);
            if (!settled) {
                last = now;
                if (now + SETTLE_POLL_US < until)
                    until = now + SETTLE_POLL_US;
            }
        }
        if (sent == outlen && idle_ms > 0 && settled) {
            if (now - last >= hs_us(idle_ms))
                return 0;
            if (last + hs_us(idle_ms) < until)
                until = last + hs_us(idle_ms);
        }
        if (now >= end)
            return 0;
        if (sent < outlen) {
            size_t n = 0;
            enum tc_io io = tc_send_all(x->fd, out + sent, outlen - sent, 0, &n, NULL, &err);

            sent += n;
            x->sent += n;
            if (n)
                last = tc_now_us();
            if (io == TC_IO_ERR)
                sent = outlen; /* the server hung up: keep reading what it said */
            if (sent < outlen)
                ev |= POLLOUT;
            else if (idle_ms > 0 && last + hs_us(idle_ms) < until)
                until = last + hs_us(idle_ms); /* all sent: the idle wait starts */
        }
        if (tc_wait(x->fd, ev, until, &err) > 0 && rx_read_some(x))
            last = tc_now_us();
    }
}

void rx_half_close(struct rx *x)
{
    shutdown(x->fd, SHUT_WR);
}

void rx_abort(struct rx *x)
{
    struct linger l = {1, 0};

    setsockopt(x->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    tc_close(x->fd);
    x->fd = -1;
}

int rx_body_is(const struct rx *x, size_t i, const char *b, size_t n)
{
    return i < x->nr && x->r[i].body_len == n && memcmp(x->buf + x->r[i].body_off, b, n) == 0;
}

void rx_outcome(const struct rx *x, char *out, size_t cap)
{
    size_t i = 0, n = 0;

    out[0] = '\0';
    if (!x->nr)
        n += (size_t)snprintf(out, cap, "-");
    while (i < x->nr && n < cap) {
        size_t j = i + 1;

        while (j < x->nr && x->r[j].status == x->r[i].status &&
               x->r[j].body_len == x->r[i].body_len && x->r[j].conn_close == x->r[i].conn_close &&
               x->r[j].conn_keep_alive == x->r[i].conn_keep_alive)
            j++;
        n += (size_t)snprintf(out + n, cap - n, "%s%d/%lluB%s", i ? "," : "", x->r[i].status,
                              x->r[i].body_len, x->r[i].conn_close            ? "+C"
                              : opt.conformance && x->r[i].conn_keep_alive ? "+K"
                                                                            : "");
        if (j - i > 1 && n < cap)
            n += (size_t)snprintf(out + n, cap - n, "*%zu", j - i);
        i = j;
    }
    if (n < cap)
        snprintf(out + n, cap - n, "%s;%s", x->bad ? ";garbage" : "",
                 rx_closed(x) ? "closed" : "open");
}

void rx_detail(const struct rx *x, char *out, size_t cap)
{
    if (rx_closed(x))
        snprintf(out, cap, "%zu responses, %s after %lld ms", x->nr,
                 x->eof ? "EOF" : x->rst ? "RST" : strerror(x->err),
                 (long long)(x->t_end - x->t_start) / 1000);
    else
        snprintf(out, cap, "%zu responses, connection open after %lld ms", x->nr,
                 (long long)(tc_now_us() - x->t_start) / 1000);
}
