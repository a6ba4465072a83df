/* probe_scn.c - the single-socket scenarios (seq, idle-gap, compare's
 * fresh half, pipeline, post-pipeline, close) and the pooled client. */
#include "probe.h"

#include "../../common/util.h"

#include <stdlib.h>
#include <string.h>

/* One request on c and its response, both bounded by one --deadline-ms. */
static enum outcome exchange(struct run *R, struct conn *c, const char *req, size_t rlen, const struct opts *o,
                             struct rec *r)
{
    fill_rec_conn(r, c);
    c->rx_bytes = false;
    enum outcome oc = send_req(c, req, rlen, o->deadline_ms, NULL, NULL);
    R->requests_sent++;
    if (oc == OC_NONE)
        return read_resp(R, c, false, c->sent_us + (int64_t)o->deadline_ms * 1000, c->sent_us, o, r, NULL, 0,
                         NULL);
    if (oc == OC_RESET || oc == OC_EPIPE)
        note_close(R, c, oc == OC_RESET ? "econnreset" : "epipe");
    return oc;
}

static void mark_not_sent(struct run *R, struct rec *r)
{
    r->oc = OC_NOT_SENT;
    count(R, r->oc);
}

/* After a scenario stopped early: records from..nreq-1 were never sent. */
static void mark_rest_not_sent(struct run *R, int from)
{
    for (int i = from; i < R->nreq; i++)
        mark_not_sent(R, &R->recs[i]);
}

/* seq / idle-gap: n requests on ONE socket, never reconnecting.  Returns 0,
 * or 1 with msg set when the socket could not be opened at all. */
int scn_seq(struct run *R, const struct opts *o, int gap_ms, char *msg, size_t msglen)
{
    struct conn c = {.fd = -1};
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, false);
    if (conn_open(R, &c, 0, o, msg, msglen) != TC_CONN_OK)
        return 1;
    bool stopped = false;
    int i;
    for (i = 0; i < R->nreq && !stopped; i++) {
        struct rec *r = &R->recs[i];
        if (i > 0 && gap_ms > 0)
            tc_sleep_until_us(tc_now_us() + (int64_t)gap_ms * 1000); /* the stimulus itself */
        r->oc = exchange(R, &c, req, rlen, o, r);
        count(R, r->oc);
        /* A silent server (timeout) would cost one deadline per request, and
         * after garbage nothing can be attributed: stop using the socket.
         * EOF/RST/EPIPE are cheap and are exactly what a reusing client sees,
         * so those keep being attempted and classified. */
        stopped = r->oc == OC_TIMEOUT || r->oc == OC_BAD || r->oc == OC_OTHER || r->oc == OC_TOO_LARGE;
    }
    mark_rest_not_sent(R, i);
    peek_close(R, &c);
    conn_close(&c);
    free(c.buf);
    return 0;
}

/* compare (b): each request on a fresh socket with Connection: close. */
int scn_fresh(struct run *R, const struct opts *o, char *msg, size_t msglen)
{
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, true);
    struct conn c = {.fd = -1};
    bool stopped = false;
    int i;
    for (i = 0; i < R->nreq && !stopped; i++) {
        struct rec *r = &R->recs[i];
        enum tc_conn_err e = conn_open(R, &c, i, o, msg, msglen);
        if (e == TC_CONN_RESOLVE)
            return 1;
        r->oc = e == TC_CONN_OK ? exchange(R, &c, req, rlen, o, r) : OC_CONNECT_FAILED;
        count(R, r->oc);
        conn_close(&c);
        stopped = r->oc == OC_TIMEOUT; /* bound the run by one deadline for a silent server */
    }
    mark_rest_not_sent(R, i);
    /* Each socket was closed by us after its (announced) close: a FIN seen
     * here is the expected end, not a finding, so do not report it. */
    R->server_closed = false;
    R->server_closed_after_ms = -1;
    R->close_kind = NULL;
    free(c.buf);
    return 0;
}

/* The pipelined batch: k GETs, or POST /echo "hello" + k-1 GETs.  ends[j] =
 * offset just past request j. */
static char *build_batch(const struct opts *o, int k, bool post, size_t *ends, size_t *blen)
{
    size_t one_cap = 2048 + strlen(o->path);
    char *batch = xreallocarray(NULL, (size_t)k + 1, one_cap);
    *blen = 0;
    for (int j = 0; j < k; j++) {
        if (post && j == 0)
            *blen += (size_t)snprintf(batch + *blen, one_cap,
                                      "POST /echo HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhello",
                                      o->hosthdr);
        else
            *blen += build_get(batch + *blen, one_cap, o, false);
        ends[j] = *blen;
    }
    return batch;
}

/* Read the batch's responses in order until one is missing; returns the
 * index of the first unanswered request and its outcome in *oc. */
static int read_batch(struct run *R, struct conn *c, const struct opts *o, bool post, enum outcome *oc)
{
    int64_t deadline = c->sent_us + (int64_t)o->deadline_ms * 1000;
    int j = 0;
    for (; j < R->nreq; j++) {
        char body[64];
        size_t bgot = 0;
        struct rec *r = &R->recs[j];
        bool want_body = post && j == 0;
        fill_rec_conn(r, c);
        *oc = read_resp(R, c, false, deadline, c->sent_us, o, r, want_body ? body : NULL, sizeof body,
                        want_body ? &bgot : NULL);
        if (*oc != OC_RESPONSE)
            break;
        r->oc = *oc;
        count(R, *oc);
        if (want_body)
            R->echo_ok = bgot == 5 && r->body_len == 5 && memcmp(body, "hello", 5) == 0;
    }
    return j;
}

/* pipeline / post-pipeline: the whole batch in one send(). */
int scn_pipeline(struct run *R, const struct opts *o, bool post, char *msg, size_t msglen)
{
    struct conn c = {.fd = -1};
    int k = R->nreq, j = 0;
    size_t *ends = xreallocarray(NULL, (size_t)k, sizeof *ends), blen, sent = 0;
    char *batch = build_batch(o, k, post, ends, &blen);
    if (conn_open(R, &c, 0, o, msg, msglen) != TC_CONN_OK) {
        free(batch);
        free(ends);
        return 1;
    }
    enum outcome oc = send_req(&c, batch, blen, o->deadline_ms, &R->writes, &sent);
    for (int i = 0; i < k; i++)
        if (ends[i] <= sent)
            R->requests_sent++;
    if (oc == OC_NONE)
        j = read_batch(R, &c, o, post, &oc);
    else if (oc == OC_RESET || oc == OC_EPIPE)
        note_close(R, &c, oc == OC_RESET ? "econnreset" : "epipe");
    /* The first unanswered request got oc; the ones behind it share its fate
     * (the connection ended or the deadline passed for the whole batch). */
    for (; j < k; j++) {
        fill_rec_conn(&R->recs[j], &c);
        R->recs[j].oc = oc;
        count(R, oc);
    }
    peek_close(R, &c);
    conn_close(&c);
    free(c.buf);
    free(batch);
    free(ends);
    return 0;
}

/* close, after response 1: wait (bounded) for the server's FIN/RST; bytes
 * that arrive meanwhile answer nothing. */
static void close_wait(struct run *R, struct conn *c, const struct opts *o, int64_t t1)
{
    int64_t t_resp = tc_now_us();
    int64_t deadline = t_resp + (int64_t)o->deadline_ms * 1000;
    while (!R->server_closed) {
        char tmp[4096];
        size_t got = 0;
        int err = 0;
        enum tc_io io = tc_recv(c->fd, tmp, sizeof tmp, deadline, &got, &err);
        if (io == TC_IO_OK) {
            R->unexpected_bytes += (long long)got;
            continue;
        }
        if (io == TC_IO_EOF)
            note_close(R, c, "fin");
        else if (io == TC_IO_ERR)
            note_close_err(R, c, err);
        break;
    }
    if (R->server_closed) {
        double after = R->server_closed_after_ms - (double)(t_resp - t1) / 1000.0;
        R->closed_after_response_ms = after < 0 ? 0 : after;
    }
}

/* close, then the reuse attempt as a pooled client would make it.
 * server_closed keeps meaning "seen before the reuse". */
static void close_reuse(struct run *R, struct conn *c, const char *req, size_t rlen, const struct opts *o)
{
    bool closed_before_reuse = R->server_closed;
    double closed_ms = R->server_closed_after_ms;
    const char *kind = R->close_kind;
    struct rec *r2 = &R->recs[1];
    c->len = 0;
    r2->oc = exchange(R, c, req, rlen, o, r2);
    count(R, r2->oc);
    R->reuse_outcome = oc_name[r2->oc];
    R->server_closed = closed_before_reuse;
    R->server_closed_after_ms = closed_before_reuse ? closed_ms : -1;
    R->close_kind = closed_before_reuse ? kind : NULL;
}

/* close: one request, wait for the server's close, then try to reuse. */
int scn_close(struct run *R, const struct opts *o, char *msg, size_t msglen)
{
    struct conn c = {.fd = -1};
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, false);
    if (conn_open(R, &c, 0, o, msg, msglen) != TC_CONN_OK)
        return 1;
    struct rec *r1 = &R->recs[0];
    r1->oc = exchange(R, &c, req, rlen, o, r1);
    count(R, r1->oc);
    R->announced_close = r1->oc == OC_RESPONSE && r1->connection &&
                         hr_has_token(r1->connection, strlen(r1->connection), "close");
    if (r1->oc == OC_TIMEOUT || r1->oc == OC_BAD || r1->oc == OC_TOO_LARGE) {
        /* No usable first exchange: a reuse attempt would measure nothing. */
        mark_not_sent(R, &R->recs[1]);
        R->reuse_outcome = "not_attempted";
    } else {
        close_wait(R, &c, o, c.sent_us);
        close_reuse(R, &c, req, rlen, o);
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

/* Retire a pooled socket the way common pools do: an announced close, or
 * idle longer than the announced Keep-Alive timeout. */
static void pool_retire(struct run *R, struct conn *c)
{
    if (c->fd >= 0 && c->announced_close) {
        R->retired_announced++;
        conn_close(c);
    } else if (c->fd >= 0 && c->ka_timeout_s >= 0 &&
               tc_now_us() - c->last_used_us > (int64_t)c->ka_timeout_s * 1000000) {
        R->retired_keepalive_timeout++;
        conn_close(c);
    }
}

struct pool {
    struct conn *cs;
    int next_index;
    bool any_connect;
    char req[2048];
    size_t rlen;
};

/* One round on slot c: -1 cannot run at all, else the final outcome. */
static int pool_round(struct run *R, struct pool *P, struct conn *c, const struct opts *o, struct rec *r,
                      char *msg, size_t msglen)
{
    bool fresh = false;
    pool_retire(R, c);
    if (c->fd < 0) {
        enum tc_conn_err e = conn_open(R, c, P->next_index++, o, msg, msglen);
        if (e == TC_CONN_RESOLVE || (e != TC_CONN_OK && !P->any_connect))
            return -1;
        if (e != TC_CONN_OK)
            return OC_CONNECT_FAILED;
        P->any_connect = fresh = true;
    }
    enum outcome oc = exchange(R, c, P->req, P->rlen, o, r);
    if (!fresh && !c->rx_bytes && (oc == OC_EOF || oc == OC_RESET || oc == OC_EPIPE)) {
        /* A stale pooled socket: count it, retry once on a fresh one. */
        R->stale_failures++;
        count(R, oc);
        conn_close(c);
        if (conn_open(R, c, P->next_index++, o, msg, msglen) != TC_CONN_OK)
            return OC_CONNECT_FAILED;
        R->reconnects++;
        oc = exchange(R, c, P->req, P->rlen, o, r);
    }
    if (oc != OC_RESPONSE)
        conn_close(c); /* a pool drops a socket that failed */
    else
        c->last_used_us = tc_now_us();
    return oc;
}

int scn_pool(struct run *R, const struct opts *o, char *msg, size_t msglen)
{
    int C = o->connections, rc = 0;
    struct pool P = {.cs = xreallocarray(NULL, (size_t)C, sizeof *P.cs)};
    for (int i = 0; i < C; i++)
        P.cs[i] = (struct conn){.fd = -1, .index = i, .ka_timeout_s = -1};
    P.rlen = build_get(P.req, sizeof P.req, o, false);
    uint64_t seed = o->seed;
    bool stopped = false;
    int round;
    for (round = 0; round < R->nreq && !stopped; round++) {
        struct rec *r = &R->recs[round];
        int i = (int)(rng_next(&seed) % (uint64_t)C);
        int idle = (int)(rng_next(&seed) % (uint64_t)(o->max_idle_ms + 1));
        tc_sleep_until_us(tc_now_us() + (int64_t)idle * 1000); /* the stimulus */
        int oc = pool_round(R, &P, &P.cs[i], o, r, msg, msglen);
        if (oc < 0) {
            rc = 1; /* cannot run at all */
            break;
        }
        r->oc = (enum outcome)oc;
        count(R, r->oc);
        stopped = r->oc == OC_TIMEOUT;
    }
    if (rc == 0)
        mark_rest_not_sent(R, round);
    for (int i = 0; i < C; i++) {
        conn_close(&P.cs[i]);
        free(P.cs[i].buf);
    }
    free(P.cs);
    return rc;
}
