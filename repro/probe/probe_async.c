/* probe_async.c - poll-driven exchanges; see probe_async.h. */
#include "probe_async.h"

#include "../../common/util.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

void ax_start(struct ax *a, const char *req, size_t rlen)
{
    a->req = req;
    a->rlen = rlen;
    a->sent = 0;
    a->last = 0;
    a->status = 0;
    a->oc = OC_NONE;
    a->state = AX_SEND;
    a->t_sent = tc_now_us();
}

short ax_events(const struct ax *a)
{
    if (a->state == AX_SEND)
        return POLLOUT;
    return (a->state == AX_HEAD || a->state == AX_BODY) ? POLLIN : 0;
}

static void ax_finish(struct ax *a, enum outcome oc)
{
    a->state = AX_DONE;
    a->oc = oc;
    a->t_done = tc_now_us();
}

static void ax_consume(struct ax *a, size_t n)
{
    memmove(a->buf, a->buf + n, a->len - n);
    a->len -= n;
}

/* Parse what is buffered: head (skipping interim 1xx), then body. */
static void ax_parse(struct ax *a, const struct opts *o)
{
    static struct hr_response r; /* big; single-threaded */
    while (a->state == AX_HEAD && a->len > 0) {
        long long n = hr_parse_head(a->buf, a->len, a->last, 0, &r);
        a->last = a->len;
        if (n == HR_INCOMPLETE)
            return;
        if (n < 0) {
            ax_finish(a, OC_BAD);
            return;
        }
        ax_consume(a, (size_t)n);
        a->last = 0;
        if (r.status >= 100 && r.status < 200 && r.status != 101)
            continue; /* interim: not the answer */
        a->status = r.status;
        if (hr_body_init(&a->body, &r, o->max_body) < 0) {
            ax_finish(a, OC_TOO_LARGE);
            return;
        }
        a->state = AX_BODY;
    }
    if (a->state != AX_BODY)
        return;
    long long used = hr_body_feed(&a->body, a->buf, a->len, NULL, 0, NULL);
    if (used < 0) {
        ax_finish(a, used == HR_TOO_LARGE ? OC_TOO_LARGE : OC_BAD);
        return;
    }
    ax_consume(a, (size_t)used);
    if (a->body.done)
        ax_finish(a, OC_RESPONSE);
}

/* The peer's FIN: it ends a close-delimited body, else the exchange. */
static void ax_eof(struct ax *a)
{
    if (a->state == AX_BODY)
        ax_finish(a, hr_body_eof(&a->body) == 0 ? OC_RESPONSE : OC_BAD);
    else
        ax_finish(a, a->len > 0 ? OC_BAD : OC_EOF);
}

static void ax_send(struct ax *a)
{
    size_t n = 0;
    int err = 0;
    enum tc_io io = tc_send_all(a->fd, a->req + a->sent, a->rlen - a->sent, 0, &n, NULL, &err);
    a->sent += n;
    if (io == TC_IO_OK)
        a->state = AX_HEAD;
    else if (io == TC_IO_ERR)
        ax_finish(a, errno_outcome(err));
}

void ax_step(struct ax *a, const struct opts *o)
{
    if (a->state == AX_SEND)
        ax_send(a);
    while (a->state == AX_HEAD || a->state == AX_BODY) {
        if (a->cap - a->len < RECV_CHUNK) {
            a->cap = a->len + RECV_CHUNK;
            a->buf = xrealloc(a->buf, a->cap);
        }
        size_t got = 0;
        int err = 0;
        enum tc_io io = tc_recv(a->fd, a->buf + a->len, RECV_CHUNK, 0, &got, &err);
        if (io == TC_IO_TIMEOUT)
            return; /* nothing more yet: back to poll */
        if (io == TC_IO_EOF) {
            ax_eof(a);
        } else if (io == TC_IO_ERR) {
            ax_finish(a, errno_outcome(err));
        } else {
            a->len += got;
            ax_parse(a, o);
        }
    }
}

void ax_free(struct ax *a)
{
    tc_close(a->fd);
    a->fd = -1;
    free(a->buf);
    a->buf = NULL;
    a->len = a->cap = 0;
}
