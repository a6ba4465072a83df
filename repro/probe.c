/* probe: a raw TCP HTTP/1.1 client that makes connection reuse provable
 * (one connect(), one local port) and turns a server's connection handling
 * into counts, orderings and latencies.  See repro/PROBE.md.
 *
 * Module layout: probe_net (OS calls, pn_), probe_http (response parser,
 * ph_), probe_stats (percentiles, pst_); this file holds the scenarios and
 * output, all static. */
#include "probe_http.h"
#include "probe_net.h"
#include "probe_stats.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one request ended with.  Misbehaviour is data: every class is
 * counted, none aborts the run. */
enum outcome {
    OC_NONE, /* internal: "no failure yet" */
    OC_RESPONSE,
    OC_EOF,   /* FIN before any byte of the response */
    OC_RESET, /* ECONNRESET */
    OC_EPIPE,
    OC_TIMEOUT,
    OC_BAD, /* bytes that are not an HTTP response, or a truncated one */
    OC_CONNECT_FAILED,
    OC_OTHER, /* any other socket errno */
    OC_NOT_SENT, /* not attempted: an earlier timeout/garbage made the socket unusable */
    OC_COUNT
};

static const char *const oc_name[OC_COUNT] = {"none",    "response",     "eof",          "econnreset",
                                              "epipe",   "timeout",      "bad_response", "connect_failed",
                                              "other_error", "not_sent"};
/* JSON "errors" keys; index = outcome. */
static const char *const oc_errkey[OC_COUNT] = {NULL,    NULL,           "eof_before_response", "econnreset",
                                                "epipe", "timeout",      "bad_response",        "connect_failed",
                                                "other_error", "not_sent"};

struct rec {
    enum outcome oc;
    int status; /* 0 = none */
    int minor;  /* HTTP/1.x */
    char *connection;
    char *keep_alive;
    long long body_len; /* -1 = none */
    double latency_us;  /* valid when oc == OC_RESPONSE */
    int conn_index;     /* -1 = none */
    int local_port;
};

struct run {
    const char *scenario;
    int nreq;
    struct rec *recs;
    int requests_sent, responses, connects;
    int errors[OC_COUNT];
    int *ports;
    int nports, cap_ports;
    bool server_closed;
    double server_closed_after_ms; /* < 0 = null */
    const char *close_kind;        /* "fin", "econnreset", ... or NULL */
    int writes;                    /* pipeline: send() calls for the batch */
    int pipelined;
    int echo_ok; /* -1 = null */
    /* close */
    bool announced_close, unannounced_close;
    const char *reuse_outcome;
    double closed_after_response_ms; /* < 0 = null */
    long long unexpected_bytes;
    /* pool */
    int stale_failures, reconnects, retired_announced, retired_keepalive_timeout;
};

struct conn {
    int fd;
    int index;
    int port;
    char *buf;
    size_t len, cap;
    int64_t sent_us;    /* last request write */
    int64_t last_rx_us; /* time of the recv that delivered the newest bytes */
    int64_t last_used_us;
    bool announced_close;
    long ka_timeout_s; /* -1 = not announced */
};

struct opts {
    const char *host, *port_s, *scenario, *path;
    int port, n, gap_ms, k, deadline_ms, connections, rounds, max_idle_ms;
    unsigned long long seed;
    bool json;
    char hosthdr[600];
};

static const char *prog = "probe";

static void die_oom(void)
{
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die_oom();
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *d = xrealloc(NULL, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* ---- connection handling ---------------------------------------------- */

static void run_init(struct run *R, const char *scenario, int nreq)
{
    memset(R, 0, sizeof *R);
    R->scenario = scenario;
    R->nreq = nreq;
    R->recs = xrealloc(NULL, (size_t)nreq * sizeof *R->recs);
    for (int i = 0; i < nreq; i++)
        R->recs[i] = (struct rec){.oc = OC_NONE, .body_len = -1, .conn_index = -1, .local_port = -1};
    R->server_closed_after_ms = -1;
    R->closed_after_response_ms = -1;
    R->echo_ok = -1;
}

static void run_free(struct run *R)
{
    for (int i = 0; i < R->nreq; i++) {
        free(R->recs[i].connection);
        free(R->recs[i].keep_alive);
    }
    free(R->recs);
    free(R->ports);
}

static void count(struct run *R, enum outcome oc)
{
    if (oc == OC_RESPONSE)
        R->responses++;
    else if (oc > OC_RESPONSE && oc < OC_COUNT)
        R->errors[oc]++;
}

static enum pn_conn_err conn_open(struct run *R, struct conn *c, int index, const struct opts *o, char *msg,
                                  size_t msglen)
{
    c->fd = -1;
    c->index = index;
    c->len = 0;
    c->announced_close = false;
    c->ka_timeout_s = -1;
    enum pn_conn_err e =
        pn_connect(o->host, o->port_s, pn_now_us() + (int64_t)o->deadline_ms * 1000, &c->fd, msg, msglen);
    if (e != PN_CONN_OK)
        return e;
    R->connects++;
    c->port = pn_local_port(c->fd);
    if (R->nports == R->cap_ports) {
        R->cap_ports = R->cap_ports ? R->cap_ports * 2 : 8;
        R->ports = xrealloc(R->ports, (size_t)R->cap_ports * sizeof *R->ports);
    }
    R->ports[R->nports++] = c->port;
    c->last_used_us = pn_now_us();
    return PN_CONN_OK;
}

static void conn_close(struct conn *c)
{
    pn_close(c->fd);
    c->fd = -1;
    c->len = 0;
}

static enum outcome errno_outcome(int err)
{
    if (err == ECONNRESET)
        return OC_RESET;
    if (err == EPIPE)
        return OC_EPIPE;
    return OC_OTHER;
}

static void note_close(struct run *R, const struct conn *c, const char *kind)
{
    if (R->server_closed)
        return;
    R->server_closed = true;
    R->server_closed_after_ms = (double)(pn_now_us() - c->sent_us) / 1000.0;
    R->close_kind = kind;
}

static void note_close_err(struct run *R, const struct conn *c, int err)
{
    note_close(R, c, err == ECONNRESET ? "econnreset" : err == EPIPE ? "epipe" : "error");
}

static void conn_append(struct conn *c, const char *p, size_t n)
{
    if (c->len + n > c->cap) {
        while (c->len + n > c->cap)
            c->cap = c->cap ? c->cap * 2 : 16384;
        c->buf = xrealloc(c->buf, c->cap);
    }
    memcpy(c->buf + c->len, p, n);
    c->len += n;
}

/* Write one request (or a pipelined batch).  Returns OC_NONE on success. */
static enum outcome send_req(struct conn *c, const char *req, size_t len, int deadline_ms, int *writes,
                             size_t *sent)
{
    int err = 0, w = 0;
    size_t s = 0;
    c->sent_us = pn_now_us();
    enum pn_io io = pn_send_all(c->fd, req, len, c->sent_us + (int64_t)deadline_ms * 1000, &s, &w, &err);
    if (writes)
        *writes = w;
    if (sent)
        *sent = s;
    if (io == PN_IO_OK)
        return OC_NONE;
    if (io == PN_IO_TIMEOUT)
        return OC_TIMEOUT;
    return errno_outcome(err);
}

/* Read one response for a request written at t_sent.  Bytes after it stay
 * in c->buf for the next call (pipelining).  *got_bytes tells a pool whether
 * the failure happened before any response byte (a stale socket). */
static enum outcome read_resp(struct run *R, struct conn *c, bool head, int64_t deadline, int64_t t_sent,
                              struct rec *rec, char *body, size_t body_cap, size_t *body_got, bool *got_bytes)
{
    static struct ph_response resp; /* big (headers array); single-threaded */
    bool at_eof = false;
    char tmp[16384];
    if (got_bytes)
        *got_bytes = false;
    for (;;) {
        if (c->len > 0) {
            unsigned flags = (head ? PH_REQ_HEAD : 0) | (at_eof ? PH_AT_EOF : 0);
            long long n = ph_parse_response(c->buf, c->len, flags, &resp);
            if (n >= 0 && resp.status >= 100 && resp.status < 200 && resp.status != 101) {
                /* Interim 1xx: not the response to this request. */
                memmove(c->buf, c->buf + n, c->len - (size_t)n);
                c->len -= (size_t)n;
                continue;
            }
            if (n >= 0) {
                rec->status = resp.status;
                rec->minor = resp.minor_version;
                rec->body_len = (long long)resp.body_len;
                rec->latency_us = (double)(c->last_rx_us - t_sent);
                const struct ph_header *h = ph_find_header(&resp, "Connection");
                free(rec->connection);
                free(rec->keep_alive);
                rec->connection = h ? xstrndup(h->value, h->value_len) : NULL;
                c->announced_close = h ? ph_has_token(h->value, h->value_len, "close")
                                       : resp.minor_version == 0; /* HTTP/1.0 defaults to close */
                if (h && resp.minor_version == 0 && ph_has_token(h->value, h->value_len, "keep-alive"))
                    c->announced_close = false;
                h = ph_find_header(&resp, "Keep-Alive");
                rec->keep_alive = h ? xstrndup(h->value, h->value_len) : NULL;
                c->ka_timeout_s = h ? ph_keepalive_timeout(h->value, h->value_len) : -1;
                if (body && body_got)
                    *body_got = ph_copy_body(c->buf, &resp, body, body_cap);
                memmove(c->buf, c->buf + n, c->len - (size_t)n);
                c->len -= (size_t)n;
                if (got_bytes)
                    *got_bytes = true;
                return OC_RESPONSE;
            }
            if (n == -1) {
                if (got_bytes)
                    *got_bytes = true;
                c->len = 0; /* framing is lost; nothing after it can be attributed */
                return OC_BAD;
            }
        }
        if (at_eof) {
            if (got_bytes)
                *got_bytes = c->len > 0;
            if (c->len > 0) {
                c->len = 0;
                return OC_BAD; /* truncated response */
            }
            return OC_EOF;
        }
        size_t got = 0;
        int err = 0;
        enum pn_io io = pn_recv(c->fd, tmp, sizeof tmp, deadline, &got, &err);
        c->last_rx_us = pn_now_us();
        if (io == PN_IO_OK) {
            conn_append(c, tmp, got);
        } else if (io == PN_IO_EOF) {
            note_close(R, c, "fin");
            at_eof = true;
        } else if (io == PN_IO_TIMEOUT) {
            if (got_bytes)
                *got_bytes = c->len > 0;
            return OC_TIMEOUT;
        } else {
            note_close_err(R, c, err);
            if (got_bytes)
                *got_bytes = c->len > 0;
            return errno_outcome(err);
        }
    }
}

/* After a run, see without waiting whether the server has already closed:
 * "server_closed" reports what was observed, never a guess. */
static void peek_close(struct run *R, struct conn *c)
{
    if (c->fd < 0 || R->server_closed)
        return;
    char tmp[4096];
    size_t got = 0;
    int err = 0;
    enum pn_io io = pn_recv(c->fd, tmp, sizeof tmp, 0, &got, &err);
    if (io == PN_IO_EOF)
        note_close(R, c, "fin");
    else if (io == PN_IO_ERR)
        note_close_err(R, c, err);
    else if (io == PN_IO_OK)
        R->unexpected_bytes += (long long)got;
}

static size_t build_get(char *dst, size_t cap, const struct opts *o, bool close_hdr)
{
    int n = snprintf(dst, cap, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", o->path, o->hosthdr,
                     close_hdr ? "Connection: close\r\n" : "");
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static void fill_rec_conn(struct rec *r, const struct conn *c)
{
    r->conn_index = c->index;
    r->local_port = c->port;
}

/* ---- scenarios ------------------------------------------------------ */

/* seq / idle-gap: n requests on ONE socket, never reconnecting.  Returns 0,
 * or 1 with msg set when the socket could not be opened at all. */
static int scn_seq(struct run *R, const struct opts *o, int gap_ms, char *msg, size_t msglen)
{
    struct conn c = {.fd = -1};
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, false);
    if (conn_open(R, &c, 0, o, msg, msglen) != PN_CONN_OK)
        return 1;
    bool stopped = false;
    for (int i = 0; i < R->nreq; i++) {
        struct rec *r = &R->recs[i];
        if (stopped) {
            r->oc = OC_NOT_SENT;
            count(R, r->oc);
            continue;
        }
        if (i > 0 && gap_ms > 0)
            pn_sleep_until_us(pn_now_us() + (int64_t)gap_ms * 1000); /* the stimulus itself */
        fill_rec_conn(r, &c);
        enum outcome oc = send_req(&c, req, rlen, o->deadline_ms, NULL, NULL);
        R->requests_sent++;
        if (oc == OC_NONE)
            oc = read_resp(R, &c, false, c.sent_us + (int64_t)o->deadline_ms * 1000, c.sent_us, r, NULL, 0,
                           NULL, NULL);
        else if (oc == OC_RESET || oc == OC_EPIPE)
            note_close(R, &c, oc == OC_RESET ? "econnreset" : "epipe");
        r->oc = oc;
        count(R, oc);
        /* A silent server (timeout) would cost one deadline per request, and
         * after garbage nothing can be attributed: stop using the socket.
         * EOF/RST/EPIPE are cheap and are exactly what a reusing client sees,
         * so those keep being attempted and classified. */
        if (oc == OC_TIMEOUT || oc == OC_BAD || oc == OC_OTHER)
            stopped = true;
    }
    peek_close(R, &c);
    conn_close(&c);
    free(c.buf);
    return 0;
}

/* compare (b): each request on a fresh socket with Connection: close. */
static int scn_fresh(struct run *R, const struct opts *o, char *msg, size_t msglen)
{
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, true);
    struct conn c = {.fd = -1};
    bool stopped = false;
    for (int i = 0; i < R->nreq; i++) {
        struct rec *r = &R->recs[i];
        if (stopped) {
            r->oc = OC_NOT_SENT;
            count(R, r->oc);
            continue;
        }
        enum pn_conn_err e = conn_open(R, &c, i, o, msg, msglen);
        if (e == PN_CONN_RESOLVE)
            return 1;
        if (e != PN_CONN_OK) {
            r->oc = OC_CONNECT_FAILED;
            count(R, r->oc);
            continue;
        }
        fill_rec_conn(r, &c);
        enum outcome oc = send_req(&c, req, rlen, o->deadline_ms, NULL, NULL);
        R->requests_sent++;
        if (oc == OC_NONE)
            oc = read_resp(R, &c, false, c.sent_us + (int64_t)o->deadline_ms * 1000, c.sent_us, r, NULL, 0,
                           NULL, NULL);
        r->oc = oc;
        count(R, oc);
        conn_close(&c);
        if (oc == OC_TIMEOUT)
            stopped = true; /* bound the run by one deadline for a silent server */
    }
    /* Each socket was closed by us after its (announced) close: a FIN seen
     * here is the expected end, not a finding, so do not report it. */
    R->server_closed = false;
    R->server_closed_after_ms = -1;
    R->close_kind = NULL;
    free(c.buf);
    return 0;
}

/* pipeline / post-pipeline: the whole batch in one send(). */
static int scn_pipeline(struct run *R, const struct opts *o, bool post, char *msg, size_t msglen)
{
    struct conn c = {.fd = -1};
    int k = R->nreq;
    size_t one_cap = 2048 + strlen(o->path);
    char *batch = xrealloc(NULL, one_cap * (size_t)k + 256);
    size_t *ends = xrealloc(NULL, (size_t)k * sizeof *ends);
    size_t blen = 0;
    for (int j = 0; j < k; j++) {
        if (post && j == 0)
            blen += (size_t)snprintf(batch + blen, one_cap,
                                     "POST /echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhello",
                                     o->hosthdr);
        else
            blen += build_get(batch + blen, one_cap, o, false);
        ends[j] = blen;
    }
    if (conn_open(R, &c, 0, o, msg, msglen) != PN_CONN_OK) {
        free(batch);
        free(ends);
        return 1;
    }
    size_t sent = 0;
    enum outcome oc = send_req(&c, batch, blen, o->deadline_ms, &R->writes, &sent);
    for (int j = 0; j < k; j++)
        if (ends[j] <= sent)
            R->requests_sent++;
    int64_t deadline = c.sent_us + (int64_t)o->deadline_ms * 1000;
    int j = 0;
    if (oc == OC_NONE) {
        for (; j < k; j++) {
            char body[64];
            size_t bgot = 0;
            struct rec *r = &R->recs[j];
            fill_rec_conn(r, &c);
            bool want_body = post && j == 0;
            oc = read_resp(R, &c, false, deadline, c.sent_us, r, want_body ? body : NULL, sizeof body,
                           want_body ? &bgot : NULL, NULL);
            if (oc != OC_RESPONSE)
                break;
            r->oc = oc;
            count(R, oc);
            if (want_body)
                R->echo_ok = bgot == 5 && r->body_len == 5 && memcmp(body, "hello", 5) == 0;
        }
    } else if (oc == OC_RESET || oc == OC_EPIPE) {
        note_close(R, &c, oc == OC_RESET ? "econnreset" : "epipe");
    }
    /* The first unanswered request got oc; the ones behind it share its fate
     * (the connection ended or the deadline passed for the whole batch). */
    for (; j < k; j++) {
        fill_rec_conn(&R->recs[j], &c);
        R->recs[j].oc = oc;
        count(R, oc);
    }
    if (post && R->echo_ok < 0 && R->recs[0].oc != OC_RESPONSE)
        R->echo_ok = -1;
    peek_close(R, &c);
    conn_close(&c);
    free(c.buf);
    free(batch);
    free(ends);
    return 0;
}

/* close: one request, wait for the server's close, then try to reuse. */
static int scn_close(struct run *R, const struct opts *o, char *msg, size_t msglen)
{
    struct conn c = {.fd = -1};
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, false);
    if (conn_open(R, &c, 0, o, msg, msglen) != PN_CONN_OK)
        return 1;
    struct rec *r1 = &R->recs[0], *r2 = &R->recs[1];
    fill_rec_conn(r1, &c);
    enum outcome oc = send_req(&c, req, rlen, o->deadline_ms, NULL, NULL);
    R->requests_sent++;
    int64_t t1 = c.sent_us;
    if (oc == OC_NONE)
        oc = read_resp(R, &c, false, t1 + (int64_t)o->deadline_ms * 1000, t1, r1, NULL, 0, NULL, NULL);
    r1->oc = oc;
    count(R, oc);
    R->announced_close = oc == OC_RESPONSE && r1->connection && ph_has_token(r1->connection, strlen(r1->connection), "close");

    if (oc == OC_TIMEOUT || oc == OC_BAD) {
        /* No usable first exchange: a reuse attempt would measure nothing. */
        r2->oc = OC_NOT_SENT;
        count(R, r2->oc);
        R->reuse_outcome = "not_attempted";
    } else {
        /* Wait (bounded) for the server's FIN/RST. */
        int64_t t_resp = pn_now_us();
        int64_t deadline = t_resp + (int64_t)o->deadline_ms * 1000;
        while (!R->server_closed) {
            char tmp[4096];
            size_t got = 0;
            int err = 0;
            enum pn_io io = pn_recv(c.fd, tmp, sizeof tmp, deadline, &got, &err);
            if (io == PN_IO_OK) {
                R->unexpected_bytes += (long long)got; /* data nobody asked for */
                continue;
            }
            if (io == PN_IO_EOF)
                note_close(R, &c, "fin");
            else if (io == PN_IO_ERR)
                note_close_err(R, &c, err);
            break;
        }
        if (R->server_closed)
            R->closed_after_response_ms =
                R->server_closed_after_ms - (double)(t_resp - t1) / 1000.0 < 0
                    ? 0
                    : R->server_closed_after_ms - (double)(t_resp - t1) / 1000.0;
        bool closed_before_reuse = R->server_closed;
        double closed_ms = R->server_closed_after_ms;
        const char *kind = R->close_kind;

        /* The reuse attempt, as a pooled client would make it. */
        c.len = 0;
        fill_rec_conn(r2, &c);
        oc = send_req(&c, req, rlen, o->deadline_ms, NULL, NULL);
        R->requests_sent++;
        if (oc == OC_NONE)
            oc = read_resp(R, &c, false, c.sent_us + (int64_t)o->deadline_ms * 1000, c.sent_us, r2, NULL, 0,
                           NULL, NULL);
        r2->oc = oc;
        count(R, oc);
        R->reuse_outcome = oc_name[oc];
        /* server_closed means "seen before the reuse" in this scenario. */
        R->server_closed = closed_before_reuse;
        R->server_closed_after_ms = closed_before_reuse ? closed_ms : -1;
        R->close_kind = closed_before_reuse ? kind : NULL;
    }
    R->unannounced_close = R->server_closed && !R->announced_close && r1->oc == OC_RESPONSE && r1->minor == 1;
    conn_close(&c);
    free(c.buf);
    return 0;
}

/* splitmix64: tiny, seedable, identical on every platform. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One request on c for the pool. */
static enum outcome pool_attempt(struct run *R, struct conn *c, const char *req, size_t rlen,
                                 const struct opts *o, struct rec *r, bool *got_bytes)
{
    *got_bytes = false;
    fill_rec_conn(r, c);
    enum outcome oc = send_req(c, req, rlen, o->deadline_ms, NULL, NULL);
    R->requests_sent++;
    if (oc == OC_NONE)
        return read_resp(R, c, false, c->sent_us + (int64_t)o->deadline_ms * 1000, c->sent_us, r, NULL, 0,
                         NULL, got_bytes);
    if (oc == OC_RESET || oc == OC_EPIPE)
        note_close(R, c, oc == OC_RESET ? "econnreset" : "epipe");
    return oc;
}

static int scn_pool(struct run *R, const struct opts *o, char *msg, size_t msglen)
{
    int C = o->connections;
    struct conn *cs = xrealloc(NULL, (size_t)C * sizeof *cs);
    for (int i = 0; i < C; i++)
        cs[i] = (struct conn){.fd = -1, .index = i, .ka_timeout_s = -1};
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, false);
    uint64_t seed = o->seed;
    int next_index = 0;
    bool stopped = false, any_connect = false;
    int rc = 0;
    for (int round = 0; round < R->nreq; round++) {
        struct rec *r = &R->recs[round];
        if (stopped) {
            r->oc = OC_NOT_SENT;
            count(R, r->oc);
            continue;
        }
        int i = (int)(rng_next(&seed) % (uint64_t)C);
        int idle = (int)(rng_next(&seed) % (uint64_t)(o->max_idle_ms + 1));
        pn_sleep_until_us(pn_now_us() + (int64_t)idle * 1000); /* the stimulus */
        struct conn *c = &cs[i];
        /* Retire the way common pools do: an announced close, or idle longer
         * than the announced Keep-Alive timeout. */
        if (c->fd >= 0 && c->announced_close) {
            R->retired_announced++;
            conn_close(c);
        } else if (c->fd >= 0 && c->ka_timeout_s >= 0 &&
                   pn_now_us() - c->last_used_us > (int64_t)c->ka_timeout_s * 1000000) {
            R->retired_keepalive_timeout++;
            conn_close(c);
        }
        bool fresh = false;
        if (c->fd < 0) {
            enum pn_conn_err e = conn_open(R, c, next_index++, o, msg, msglen);
            if (e == PN_CONN_RESOLVE || (e != PN_CONN_OK && !any_connect)) {
                rc = 1; /* cannot run at all */
                break;
            }
            if (e != PN_CONN_OK) {
                r->oc = OC_CONNECT_FAILED;
                count(R, r->oc);
                continue;
            }
            any_connect = true;
            fresh = true;
        }
        bool got_bytes = false;
        enum outcome oc = pool_attempt(R, c, req, rlen, o, r, &got_bytes);
        if (!fresh && !got_bytes && (oc == OC_EOF || oc == OC_RESET || oc == OC_EPIPE)) {
            /* A stale pooled socket: count it, retry once on a fresh one. */
            R->stale_failures++;
            count(R, oc);
            conn_close(c);
            enum pn_conn_err e = conn_open(R, c, next_index++, o, msg, msglen);
            if (e != PN_CONN_OK) {
                r->oc = OC_CONNECT_FAILED;
                count(R, r->oc);
                continue;
            }
            R->reconnects++;
            oc = pool_attempt(R, c, req, rlen, o, r, &got_bytes);
        }
        r->oc = oc;
        count(R, oc);
        if (oc != OC_RESPONSE)
            conn_close(c); /* a pool drops a socket that failed */
        else
            c->last_used_us = pn_now_us();
        if (oc == OC_TIMEOUT)
            stopped = true;
    }
    for (int i = 0; i < C; i++) {
        conn_close(&cs[i]);
        free(cs[i].buf);
    }
    free(cs);
    return rc;
}

/* ---- output --------------------------------------------------------- */

struct lat_stats {
    struct pst_summary all, rest;
    bool has_first;
    double first;
};

static void compute_stats(const struct run *R, struct lat_stats *s)
{
    double *v = xrealloc(NULL, (size_t)(R->nreq + 1) * sizeof *v);
    size_t n = 0;
    for (int i = 0; i < R->nreq; i++)
        if (R->recs[i].oc == OC_RESPONSE)
            v[n++] = R->recs[i].latency_us;
    pst_summarise(v, n, &s->all);
    s->has_first = R->nreq > 0 && R->recs[0].oc == OC_RESPONSE;
    s->first = s->has_first ? R->recs[0].latency_us : 0;
    n = 0;
    for (int i = 1; i < R->nreq; i++)
        if (R->recs[i].oc == OC_RESPONSE)
            v[n++] = R->recs[i].latency_us;
    pst_summarise(v, n, &s->rest);
    free(v);
}

static void jstr(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\u%04x", *p); /* bytes as Latin-1: always valid JSON */
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, bool present, double v)
{
    if (present)
        fprintf(f, "%.1f", v);
    else
        fputs("null", f);
}

static void jsummary(FILE *f, const struct pst_summary *s)
{
    bool p = s->n > 0;
    fprintf(f, "{\"n\":%zu,\"min\":", s->n);
    jnum(f, p, s->min);
    fputs(",\"p50\":", f);
    jnum(f, p, s->p50);
    fputs(",\"p95\":", f);
    jnum(f, p, s->p95);
    fputs(",\"p99\":", f);
    jnum(f, p, s->p99);
    fputs(",\"max\":", f);
    jnum(f, p, s->max);
    fputc('}', f);
}

static void jparams(FILE *f, const struct opts *o, const char *scn)
{
    fprintf(f, "{\"path\":");
    jstr(f, o->path);
    fprintf(f, ",\"deadline_ms\":%d", o->deadline_ms);
    if (!strcmp(scn, "seq") || !strcmp(scn, "idle-gap") || !strcmp(scn, "compare"))
        fprintf(f, ",\"n\":%d", o->n);
    if (!strcmp(scn, "idle-gap"))
        fprintf(f, ",\"gap_ms\":%d", o->gap_ms);
    if (!strcmp(scn, "pipeline"))
        fprintf(f, ",\"k\":%d", o->k);
    if (!strcmp(scn, "pool"))
        fprintf(f, ",\"connections\":%d,\"rounds\":%d,\"max_idle_ms\":%d,\"seed\":%llu", o->connections,
                o->rounds, o->max_idle_ms, o->seed);
    fputc('}', f);
}

static bool run_reused(const struct run *R)
{
    /* Reuse is proven when some connection served 2+ responses. */
    for (int i = 0; i < R->nreq; i++)
        for (int j = i + 1; j < R->nreq; j++)
            if (R->recs[i].oc == OC_RESPONSE && R->recs[j].oc == OC_RESPONSE && R->recs[i].conn_index >= 0 &&
                R->recs[i].conn_index == R->recs[j].conn_index && R->recs[i].local_port == R->recs[j].local_port)
                return true;
    return false;
}

static void json_run(FILE *f, const struct run *R, const struct opts *o, const char *params_scn)
{
    struct lat_stats s;
    compute_stats(R, &s);
    fprintf(f, "{\"probe\":1,\"scenario\":");
    jstr(f, R->scenario);
    fprintf(f, ",\"host\":");
    jstr(f, o->host);
    fprintf(f, ",\"port\":%d,\"params\":", o->port);
    jparams(f, o, params_scn);
    fprintf(f, ",\"requests_sent\":%d,\"responses\":%d,\"connects\":%d,\"local_ports\":[", R->requests_sent,
            R->responses, R->connects);
    for (int i = 0; i < R->nports; i++)
        fprintf(f, "%s%d", i ? "," : "", R->ports[i]);
    fprintf(f, "],\"reused\":%s,\"latency_us\":[", run_reused(R) ? "true" : "false");
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jnum(f, R->recs[i].oc == OC_RESPONSE, R->recs[i].latency_us);
    }
    fputs("],\"stats_us\":{\"all\":", f);
    jsummary(f, &s.all);
    fputs(",\"first\":", f);
    jnum(f, s.has_first, s.first);
    fputs(",\"rest\":", f);
    jsummary(f, &s.rest);
    fputs("},\"status\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        if (R->recs[i].oc == OC_RESPONSE)
            fprintf(f, "%s%d", i ? "," : "", R->recs[i].status);
        else
            fprintf(f, "%snull", i ? "," : "");
    }
    fputs("],\"connection_header\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jstr(f, R->recs[i].oc == OC_RESPONSE ? R->recs[i].connection : NULL);
    }
    fputs("],\"keep_alive_header\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jstr(f, R->recs[i].oc == OC_RESPONSE ? R->recs[i].keep_alive : NULL);
    }
    fputs("],\"body_len\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        if (R->recs[i].oc == OC_RESPONSE)
            fprintf(f, "%s%lld", i ? "," : "", R->recs[i].body_len);
        else
            fprintf(f, "%snull", i ? "," : "");
    }
    fputs("],\"outcome\":[", f);
    for (int i = 0; i < R->nreq; i++) {
        fputs(i ? "," : "", f);
        jstr(f, oc_name[R->recs[i].oc]);
    }
    fputs("],\"conn_index\":[", f);
    for (int i = 0; i < R->nreq; i++)
        fprintf(f, "%s%d", i ? "," : "", R->recs[i].conn_index);
    fputs("],\"req_local_port\":[", f);
    for (int i = 0; i < R->nreq; i++)
        fprintf(f, "%s%d", i ? "," : "", R->recs[i].local_port);
    fputs("],\"errors\":{", f);
    bool first = true;
    for (int oc = OC_EOF; oc < OC_COUNT; oc++) {
        fprintf(f, "%s\"%s\":%d", first ? "" : ",", oc_errkey[oc], R->errors[oc]);
        first = false;
    }
    fprintf(f, "},\"server_closed\":%s,\"server_closed_after_ms\":", R->server_closed ? "true" : "false");
    if (R->server_closed_after_ms >= 0)
        fprintf(f, "%.3f", R->server_closed_after_ms);
    else
        fputs("null", f);
    fputs(",\"close_kind\":", f);
    jstr(f, R->close_kind);
    fprintf(f, ",\"unexpected_bytes\":%lld", R->unexpected_bytes);
    if (!strcmp(R->scenario, "pipeline") || !strcmp(R->scenario, "post-pipeline"))
        fprintf(f, ",\"pipelined\":%d,\"writes\":%d", R->pipelined, R->writes);
    if (!strcmp(R->scenario, "post-pipeline"))
        fprintf(f, ",\"echo_ok\":%s", R->echo_ok < 0 ? "null" : R->echo_ok ? "true" : "false");
    if (!strcmp(R->scenario, "close")) {
        fprintf(f, ",\"announced_close\":%s,\"unannounced_close\":%s,\"reuse_outcome\":",
                R->announced_close ? "true" : "false", R->unannounced_close ? "true" : "false");
        jstr(f, R->reuse_outcome);
        fputs(",\"closed_after_response_ms\":", f);
        if (R->closed_after_response_ms >= 0)
            fprintf(f, "%.3f", R->closed_after_response_ms);
        else
            fputs("null", f);
    }
    if (!strcmp(R->scenario, "pool"))
        fprintf(f, ",\"stale_failures\":%d,\"reconnects\":%d,\"retired_announced\":%d,\"retired_keepalive_timeout\":%d",
                R->stale_failures, R->reconnects, R->retired_announced, R->retired_keepalive_timeout);
    fputc('}', f);
}

static void human_ms(FILE *f, bool present, double us)
{
    if (present)
        fprintf(f, "%10.3f", us / 1000.0);
    else
        fprintf(f, "%10s", "-");
}

static void human_summary(FILE *f, const char *label, const struct pst_summary *s)
{
    fprintf(f, "  %-6s n=%-4zu", label, s->n);
    if (!s->n) {
        fputs(" (no responses)\n", f);
        return;
    }
    fprintf(f, " min %.3f  p50 %.3f  p95 %.3f  p99 %.3f  max %.3f\n", s->min / 1000, s->p50 / 1000,
            s->p95 / 1000, s->p99 / 1000, s->max / 1000);
}

static void human_run(FILE *f, const struct run *R, const struct opts *o, const char *title)
{
    struct lat_stats s;
    compute_stats(R, &s);
    fprintf(f, "== %s  %s:%d  path %s\n", title, o->host, o->port, o->path);
    fprintf(f, "requests sent %d, responses %d, connects %d, reused %s, local ports", R->requests_sent,
            R->responses, R->connects, run_reused(R) ? "yes" : "no");
    for (int i = 0; i < R->nports && i < 12; i++)
        fprintf(f, " %d", R->ports[i]);
    fputs(R->nports > 12 ? " ...\n" : "\n", f);
    if (R->nreq <= 40) {
        fprintf(f, "  %4s %4s %6s %6s %10s %8s  %-14s %-18s %s\n", "#", "conn", "lport", "status", "ms",
                "body", "outcome", "Connection", "Keep-Alive");
        for (int i = 0; i < R->nreq; i++) {
            const struct rec *r = &R->recs[i];
            bool ok = r->oc == OC_RESPONSE;
            fprintf(f, "  %4d %4d %6d ", i + 1, r->conn_index, r->local_port);
            if (ok)
                fprintf(f, "%6d ", r->status);
            else
                fprintf(f, "%6s ", "-");
            human_ms(f, ok, r->latency_us);
            if (ok)
                fprintf(f, " %8lld", r->body_len);
            else
                fprintf(f, " %8s", "-");
            fprintf(f, "  %-14s %-18s %s\n", oc_name[r->oc], ok && r->connection ? r->connection : "-",
                    ok && r->keep_alive ? r->keep_alive : "-");
        }
    }
    fputs("latency ms (nearest-rank percentiles)\n", f);
    human_summary(f, "all", &s.all);
    if (s.has_first)
        fprintf(f, "  first  %.3f\n", s.first / 1000);
    else
        fputs("  first  -\n", f);
    human_summary(f, "rest", &s.rest);
    fputs("errors:", f);
    for (int oc = OC_EOF; oc < OC_COUNT; oc++)
        fprintf(f, " %s=%d", oc_errkey[oc], R->errors[oc]);
    fputc('\n', f);
    if (R->server_closed)
        fprintf(f, "server closed: yes (%s, %.3f ms after the last send before it)\n",
                R->close_kind ? R->close_kind : "?", R->server_closed_after_ms);
    else
        fputs("server closed: not observed\n", f);
    if (R->unexpected_bytes)
        fprintf(f, "unexpected bytes after responses: %lld\n", R->unexpected_bytes);
    if (!strcmp(R->scenario, "pipeline") || !strcmp(R->scenario, "post-pipeline"))
        fprintf(f, "pipelined %d requests, written with %d send() call%s\n", R->pipelined, R->writes,
                R->writes == 1 ? "" : "s");
    if (!strcmp(R->scenario, "post-pipeline"))
        fprintf(f, "echo body == \"hello\": %s\n", R->echo_ok < 0 ? "n/a" : R->echo_ok ? "yes" : "no");
    if (!strcmp(R->scenario, "close")) {
        fprintf(f, "announced close: %s; server closed before reuse: %s", R->announced_close ? "yes" : "no",
                R->server_closed ? "yes" : "no");
        if (R->closed_after_response_ms >= 0)
            fprintf(f, " (%.3f ms after the response)", R->closed_after_response_ms);
        fprintf(f, "; unannounced close: %s\nreuse attempt saw: %s\n", R->unannounced_close ? "yes" : "no",
                R->reuse_outcome ? R->reuse_outcome : "-");
    }
    if (!strcmp(R->scenario, "pool"))
        fprintf(f, "stale failures %d, reconnects %d, retired (Connection: close) %d, retired (Keep-Alive timeout) %d\n",
                R->stale_failures, R->reconnects, R->retired_announced, R->retired_keepalive_timeout);
}

/* ---- command line --------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [options] HOST PORT\n"
            "  --scenario S   seq | idle-gap | pipeline | post-pipeline | close | pool | compare   (default seq)\n"
            "  -n N           requests (seq, idle-gap, compare; default 30)\n"
            "  --gap-ms MS    idle gap between requests (idle-gap; default 300)\n"
            "  -k K           requests written in one send() (pipeline; default 3)\n"
            "  --path P       request path (default /ping)\n"
            "  --deadline-ms MS  how long to wait for a response / for the server's close (default 3000)\n"
            "  --connections C --rounds R --max-idle-ms MS --seed S   (pool; defaults 4, 40, 400, 1)\n"
            "  --json         one JSON object on stdout instead of the human table\n"
            "  -h/--help\n"
            "exit status: 0 scenario ran (server misbehaviour is data), 1 probe could not run, 2 usage\n",
            prog);
}

static int usage_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry '%s --help'\n", prog);
    return 2;
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    struct opts o = {.scenario = "seq", .path = "/ping", .n = 30, .gap_ms = 300, .k = 3, .deadline_ms = 3000,
                     .connections = 4, .rounds = 40, .max_idle_ms = 400, .seed = 1};
    const char *pos[2];
    int npos = 0;
    static const char *const scenarios[] = {"seq", "idle-gap", "pipeline", "post-pipeline", "close", "pool", "compare"};

    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            o.json = true;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (npos == 2)
                return usage_err("unexpected argument '%s'", a);
            pos[npos++] = a;
            continue;
        }
        /* Options with a value: "--opt V" or "--opt=V". */
        char name[64];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        if (a[1] == '-' && eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        static const char *const valued[] = {"--scenario", "-n", "--gap-ms", "-k", "--path", "--deadline-ms",
                                             "--connections", "--rounds", "--max-idle-ms", "--seed"};
        bool known = false;
        for (size_t j = 0; j < sizeof valued / sizeof *valued; j++)
            known |= !strcmp(name, valued[j]);
        if (!known)
            return usage_err("unknown option '%s'", a);
        if (!val) {
            if (i + 1 >= argc)
                return usage_err("option '%s' needs a value", name);
            val = argv[++i];
        }
        long long v = 0;
        if (!strcmp(name, "--scenario")) {
            bool ok = false;
            for (size_t j = 0; j < sizeof scenarios / sizeof *scenarios; j++)
                if (!strcmp(val, scenarios[j])) {
                    o.scenario = scenarios[j];
                    ok = true;
                }
            if (!ok)
                return usage_err("unknown scenario '%s'", val);
        } else if (!strcmp(name, "--path")) {
            if (val[0] != '/' || strpbrk(val, " \r\n") || strlen(val) > 1024)
                return usage_err("--path must start with '/', have no spaces/CR/LF and be <= 1024 bytes");
            o.path = val;
        } else if (!strcmp(name, "--seed")) {
            if (!parse_int(val, 0, INT64_MAX, &v))
                return usage_err("invalid value '%s' for %s", val, name);
            o.seed = (unsigned long long)v;
        } else {
            struct {
                const char *n;
                int *p;
                long long lo, hi;
            } iv[] = {{"-n", &o.n, 1, 100000},
                      {"--gap-ms", &o.gap_ms, 0, 3600000},
                      {"-k", &o.k, 1, 1000},
                      {"--deadline-ms", &o.deadline_ms, 1, 86400000},
                      {"--connections", &o.connections, 1, 1000},
                      {"--rounds", &o.rounds, 1, 100000},
                      {"--max-idle-ms", &o.max_idle_ms, 0, 3600000}};
            for (size_t j = 0; j < sizeof iv / sizeof *iv; j++)
                if (!strcmp(name, iv[j].n)) {
                    if (!parse_int(val, iv[j].lo, iv[j].hi, &v))
                        return usage_err("invalid value '%s' for %s (range %lld..%lld)", val, name, iv[j].lo,
                                         iv[j].hi);
                    *iv[j].p = (int)v;
                }
        }
    }
    if (npos != 2)
        return usage_err("need HOST and PORT");
    o.host = pos[0];
    o.port_s = pos[1];
    long long port;
    if (!parse_int(o.port_s, 1, 65535, &port))
        return usage_err("invalid port '%s'", o.port_s);
    o.port = (int)port;
    if (strlen(o.host) > 512)
        return usage_err("host name too long");
    /* An IPv6 literal needs brackets in the Host header. */
    snprintf(o.hosthdr, sizeof o.hosthdr, strchr(o.host, ':') ? "[%s]:%s" : "%s:%s", o.host, o.port_s);

    pn_init();
    char msg[1024] = "";
    int rc = 0;
    const char *scn = o.scenario;
    struct run A, B;
    bool two = false;
    if (!strcmp(scn, "seq") || !strcmp(scn, "idle-gap")) {
        run_init(&A, scn, o.n);
        rc = scn_seq(&A, &o, !strcmp(scn, "idle-gap") ? o.gap_ms : 0, msg, sizeof msg);
    } else if (!strcmp(scn, "compare")) {
        run_init(&A, "seq", o.n);
        run_init(&B, "fresh", o.n);
        two = true;
        rc = scn_seq(&A, &o, 0, msg, sizeof msg);
        if (!rc)
            rc = scn_fresh(&B, &o, msg, sizeof msg);
    } else if (!strcmp(scn, "pipeline") || !strcmp(scn, "post-pipeline")) {
        bool post = !strcmp(scn, "post-pipeline");
        run_init(&A, scn, post ? 2 : o.k);
        A.pipelined = A.nreq;
        rc = scn_pipeline(&A, &o, post, msg, sizeof msg);
    } else if (!strcmp(scn, "close")) {
        run_init(&A, scn, 2);
        rc = scn_close(&A, &o, msg, sizeof msg);
    } else {
        run_init(&A, scn, o.rounds);
        rc = scn_pool(&A, &o, msg, sizeof msg);
    }
    if (rc) {
        fprintf(stderr, "%s: %s\n", prog, msg[0] ? msg : "could not run");
    } else if (o.json) {
        if (two) {
            struct lat_stats sa, sb;
            compute_stats(&A, &sa);
            compute_stats(&B, &sb);
            fprintf(stdout, "{\"probe\":1,\"scenario\":\"compare\",\"host\":");
            jstr(stdout, o.host);
            fprintf(stdout, ",\"port\":%d,\"params\":", o.port);
            jparams(stdout, &o, "compare");
            fputs(",\"keepalive\":", stdout);
            json_run(stdout, &A, &o, "seq");
            fputs(",\"fresh\":", stdout);
            json_run(stdout, &B, &o, "seq");
            fputs(",\"ratio_p50\":", stdout);
            bool ok = sa.rest.n > 0 && sb.all.n > 0 && sb.all.p50 > 0;
            if (ok)
                fprintf(stdout, "%.3f", sa.rest.p50 / sb.all.p50);
            else
                fputs("null", stdout);
            fputs("}\n", stdout);
        } else {
            json_run(stdout, &A, &o, scn);
            fputc('\n', stdout);
        }
    } else {
        if (two) {
            struct lat_stats sa, sb;
            compute_stats(&A, &sa);
            compute_stats(&B, &sb);
            human_run(stdout, &A, &o, "compare (a) keep-alive, one socket");
            fputc('\n', stdout);
            human_run(stdout, &B, &o, "compare (b) fresh socket per request, Connection: close");
            if (sa.rest.n > 0 && sb.all.n > 0 && sb.all.p50 > 0)
                printf("\nratio_p50 = p50(a, requests 2..n) / p50(b) = %.3f / %.3f = %.3f\n", sa.rest.p50 / 1000,
                       sb.all.p50 / 1000, sa.rest.p50 / sb.all.p50);
            else
                printf("\nratio_p50 = n/a (missing responses)\n");
        } else {
            human_run(stdout, &A, &o, scn);
        }
    }
    run_free(&A);
    if (two)
        run_free(&B);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "%s: writing output: %s\n", prog, strerror(errno));
        return 1;
    }
    return rc ? 1 : 0;
}
