/* probe_conn.c - one client connection: open, write a request, read one
 * response.  Bodies are streamed through the common reader's decoder and
 * only counted (plus the few bytes a scenario wants to compare), so memory
 * stays bounded whatever a server announces. */
#include "probe.h"

#include "../../common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const oc_name[OC_COUNT] = {"none",         "response",       "eof",         "econnreset",
                                       "epipe",        "timeout",        "bad_response", "connect_failed",
                                       "other_error",  "not_sent",       "body_too_large"};
const char *const oc_errkey[OC_COUNT] = {NULL,          NULL,             "eof_before_response", "econnreset",
                                         "epipe",       "timeout",        "bad_response",        "connect_failed",
                                         "other_error", "not_sent",       "body_too_large"};

static char *xstrndup(const char *s, size_t n)
{
    char *d = xrealloc(NULL, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

void run_init(struct run *R, const char *scenario, int nreq)
{
    memset(R, 0, sizeof *R);
    R->scenario = scenario;
    R->nreq = nreq;
    R->recs = xreallocarray(NULL, (size_t)nreq, sizeof *R->recs);
    for (int i = 0; i < nreq; i++)
        R->recs[i] = (struct rec){.oc = OC_NONE, .body_len = -1, .conn_index = -1, .local_port = -1};
    R->server_closed_after_ms = -1;
    R->closed_after_response_ms = -1;
    R->echo_ok = -1;
}

void run_free(struct run *R)
{
    for (int i = 0; i < R->nreq; i++) {
        free(R->recs[i].connection);
        free(R->recs[i].keep_alive);
    }
    free(R->recs);
    free(R->ports);
}

void count(struct run *R, enum outcome oc)
{
    if (oc == OC_RESPONSE)
        R->responses++;
    else if (oc > OC_RESPONSE && oc < OC_COUNT)
        R->errors[oc]++;
}

void record_port(struct run *R, int port)
{
    if (R->nports == R->cap_ports) {
        R->cap_ports = R->cap_ports ? R->cap_ports * 2 : 8;
        R->ports = xreallocarray(R->ports, (size_t)R->cap_ports, sizeof *R->ports);
    }
    R->ports[R->nports++] = port;
}

enum tc_conn_err conn_open(struct run *R, struct conn *c, int index, const struct opts *o, char *msg,
                           size_t msglen)
{
    c->fd = -1;
    c->index = index;
    c->len = 0;
    c->announced_close = false;
    c->ka_timeout_s = -1;
    enum tc_conn_err e =
        tc_connect(o->host, o->port_s, tc_now_us() + (int64_t)o->deadline_ms * 1000, &c->fd, msg, msglen);
    if (e != TC_CONN_OK)
        return e;
    R->connects++;
    c->port = tc_local_port(c->fd);
    record_port(R, c->port);
    c->last_used_us = tc_now_us();
    return TC_CONN_OK;
}

void conn_close(struct conn *c)
{
    tc_close(c->fd);
    c->fd = -1;
    c->len = 0;
}

enum outcome errno_outcome(int err)
{
    if (err == ECONNRESET)
        return OC_RESET;
    if (err == EPIPE)
        return OC_EPIPE;
    return OC_OTHER;
}

void note_close(struct run *R, const struct conn *c, const char *kind)
{
    if (R->server_closed)
        return;
    R->server_closed = true;
    R->server_closed_after_ms = (double)(tc_now_us() - c->sent_us) / 1000.0;
    R->close_kind = kind;
}

void note_close_err(struct run *R, const struct conn *c, int err)
{
    note_close(R, c, err == ECONNRESET ? "econnreset" : err == EPIPE ? "epipe" : "error");
}

/* Write one request (or a pipelined batch).  Returns OC_NONE on success. */
enum outcome send_req(struct conn *c, const char *req, size_t len, int deadline_ms, int *writes, size_t *sent)
{
    int err = 0, w = 0;
    size_t s = 0;
    c->sent_us = tc_now_us();
    enum tc_io io = tc_send_all(c->fd, req, len, c->sent_us + (int64_t)deadline_ms * 1000, &s, &w, &err);
    if (writes)
        *writes = w;
    if (sent)
        *sent = s;
    if (io == TC_IO_OK)
        return OC_NONE;
    if (io == TC_IO_TIMEOUT)
        return OC_TIMEOUT;
    return errno_outcome(err);
}

static void conn_consume(struct conn *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* One recv appended to c->buf; a FIN or an error is noted as the server's
 * close. */
static enum tc_io conn_recv(struct run *R, struct conn *c, int64_t deadline, int *err)
{
    if (c->cap - c->len < RECV_CHUNK) {
        c->cap = c->len + RECV_CHUNK;
        c->buf = xrealloc(c->buf, c->cap);
    }
    size_t got = 0;
    enum tc_io io = tc_recv(c->fd, c->buf + c->len, RECV_CHUNK, deadline, &got, err);
    c->last_rx_us = tc_now_us();
    if (io == TC_IO_OK) {
        c->len += got;
        c->rx_bytes = true;
    } else if (io == TC_IO_EOF) {
        note_close(R, c, "fin");
    } else if (io == TC_IO_ERR) {
        note_close_err(R, c, *err);
    }
    return io;
}

static enum outcome io_outcome(enum tc_io io, int err)
{
    return io == TC_IO_TIMEOUT ? OC_TIMEOUT : io == TC_IO_EOF ? OC_EOF : errno_outcome(err);
}

/* Read until a final (non-1xx) head is complete at the start of c->buf. */
static enum outcome read_head(struct run *R, struct conn *c, bool head, int64_t deadline,
                              struct hr_response *resp, bool *at_eof)
{
    size_t last = 0;
    for (;;) {
        if (c->len > 0) {
            long long n = hr_parse_head(c->buf, c->len, last, head ? HR_REQ_HEAD : 0, resp);
            last = c->len;
            if (n >= 0 && resp->status >= 100 && resp->status < 200 && resp->status != 101) {
                conn_consume(c, (size_t)n); /* interim 1xx: not the answer to this request */
                last = 0;
                continue;
            }
            if (n >= 0)
                return OC_NONE;
            if (n == HR_BAD) {
                c->len = 0; /* framing is lost; nothing after it can be attributed */
                return OC_BAD;
            }
        }
        if (*at_eof) {
            enum outcome oc = c->len > 0 ? OC_BAD : OC_EOF; /* truncated head, or nothing */
            c->len = 0;
            return oc;
        }
        int err = 0;
        enum tc_io io = conn_recv(R, c, deadline, &err);
        if (io == TC_IO_EOF)
            *at_eof = true;
        else if (io != TC_IO_OK)
            return io_outcome(io, err);
    }
}

/* Stream the body through the decoder; keep the first body_cap bytes. */
static enum outcome read_body(struct run *R, struct conn *c, const struct hr_response *resp, int64_t deadline,
                              bool at_eof, const struct opts *o, struct rec *rec, char *body, size_t body_cap,
                              size_t *body_got)
{
    struct hr_body b;
    size_t dummy = 0;
    if (!body_got)
        body_got = &dummy;
    *body_got = 0;
    if (hr_body_init(&b, resp, o->max_body) < 0) {
        c->len = 0;
        return OC_TOO_LARGE;
    }
    for (;;) {
        long long used = hr_body_feed(&b, c->buf, c->len, body, body ? body_cap : 0, body_got);
        if (used < 0) {
            c->len = 0;
            return used == HR_TOO_LARGE ? OC_TOO_LARGE : OC_BAD;
        }
        conn_consume(c, (size_t)used);
        if (b.done)
            break;
        if (at_eof) {
            if (hr_body_eof(&b) < 0)
                return OC_BAD; /* truncated by the close */
            break;
        }
        int err = 0;
        enum tc_io io = conn_recv(R, c, deadline, &err);
        if (io == TC_IO_EOF)
            at_eof = true;
        else if (io != TC_IO_OK)
            return io_outcome(io, err);
    }
    rec->body_len = (long long)b.body_len;
    return OC_RESPONSE;
}

/* What a pool and the output need from a head, copied before the head's
 * bytes are dropped. */
static void keep_head(struct conn *c, struct rec *rec, const struct hr_response *resp)
{
    rec->status = resp->status;
    rec->minor = resp->minor_version;
    const struct hr_header *h = hr_find_header(resp, "Connection");
    free(rec->connection);
    rec->connection = h ? xstrndup(h->value, h->value_len) : NULL;
    h = hr_find_header(resp, "Keep-Alive");
    free(rec->keep_alive);
    rec->keep_alive = h ? xstrndup(h->value, h->value_len) : NULL;
    c->announced_close = hr_announces_close(resp);
    c->ka_timeout_s = resp->keep_alive_timeout;
}

/* Read one response for a request written at t_sent.  Bytes after it stay
 * in c->buf for the next call (pipelining).  c->rx_bytes tells a pool
 * whether a failure came before any response byte (a stale socket). */
enum outcome read_resp(struct run *R, struct conn *c, bool head, int64_t deadline, int64_t t_sent,
                       const struct opts *o, struct rec *rec, char *body, size_t body_cap, size_t *body_got)
{
    static struct hr_response resp; /* big (headers array); single-threaded */
    bool at_eof = false;
    c->rx_bytes = c->len > 0;
    enum outcome oc = read_head(R, c, head, deadline, &resp, &at_eof);
    if (oc != OC_NONE)
        return oc;
    keep_head(c, rec, &resp);
    conn_consume(c, resp.head_len);
    oc = read_body(R, c, &resp, deadline, at_eof, o, rec, body, body_cap, body_got);
    if (oc == OC_RESPONSE)
        rec->latency_us = (double)(c->last_rx_us - t_sent);
    return oc;
}

/* After a run, see without waiting whether the server has already closed:
 * "server_closed" reports what was observed, never a guess. */
void peek_close(struct run *R, struct conn *c)
{
    if (c->fd < 0 || R->server_closed)
        return;
    char tmp[4096];
    size_t got = 0;
    int err = 0;
    enum tc_io io = tc_recv(c->fd, tmp, sizeof tmp, 0, &got, &err);
    if (io == TC_IO_EOF)
        note_close(R, c, "fin");
    else if (io == TC_IO_ERR)
        note_close_err(R, c, err);
    else if (io == TC_IO_OK)
        R->unexpected_bytes += (long long)got;
}

size_t build_get(char *dst, size_t cap, const struct opts *o, bool close_hdr)
{
    int n = snprintf(dst, cap, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", o->path, o->hosthdr,
                     close_hdr ? "Connection: close\r\n" : "");
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

void fill_rec_conn(struct rec *r, const struct conn *c)
{
    r->conn_index = c->index;
    r->local_port = c->port;
}
