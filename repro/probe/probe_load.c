/* probe_load.c - the many-socket scenarios, one poll() loop each:
 *   load     C keep-alive connections, each sending n sequential requests,
 *            until all are answered or the deadline (defect B7's trigger);
 *   fdscale  N idle connections opened in order, then a request on the
 *            first K and the last K (defect B8: a select()-based server
 *            never reads fds >= 1024).
 * Both print their own JSON / human output.  Verdicts are counts. */
#include "probe_async.h"
#include "probe_stats.h"

#include "../../common/util.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

/* poll() the exchanges that wait for something, until the deadline;
 * returns 0 at the deadline, 1 after stepping the ready ones. */
static int poll_step(struct ax **as, int n, struct pollfd *pfd, int64_t deadline, const struct opts *o)
{
    int np = 0;
    for (int i = 0; i < n; i++)
        if (ax_events(as[i]))
            pfd[np++] = (struct pollfd){.fd = as[i]->fd, .events = ax_events(as[i])};
    int64_t left = deadline - tc_now_us();
    if (np == 0 || left <= 0)
        return 0;
    int r = poll(pfd, (nfds_t)np, (int)((left + 999) / 1000));
    if (r <= 0)
        return tc_now_us() < deadline; /* EINTR or an early wake: go round */
    for (int i = 0, k = 0; i < n; i++)
        if (ax_events(as[i]) && pfd[k++].revents)
            ax_step(as[i], o);
    return 1;
}

static int count_active(struct ax **as, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += ax_events(as[i]) != 0;
    return k;
}

/* ---- load ---------------------------------------------------------------- */

struct load {
    int C, connects, requests_sent, answered_total, stalled, done;
    struct ax *ax;
    struct ax **ptr;
    int *answered, *ports;
    double **lat_us; /* per connection: each answered request's latency */
    const char **state; /* per connection: done, stalled, or a failure outcome */
    int errors[OC_COUNT];
    double elapsed_ms;
};

/* An exchange finished: count it; start the next request or retire. */
static void load_after(struct load *L, int i, const struct opts *o)
{
    struct ax *a = &L->ax[i];
    if (a->oc != OC_RESPONSE) {
        L->errors[a->oc]++;
        L->state[i] = oc_name[a->oc];
        a->state = AX_IDLE;
        tc_close(a->fd); /* a failed connection is not reused */
        a->fd = -1;
        return;
    }
    /* answered[i] samples so far: grow in powers of two. */
    if ((L->answered[i] & (L->answered[i] - 1)) == 0)
        L->lat_us[i] = xreallocarray(L->lat_us[i], (size_t)(L->answered[i] ? 2 * L->answered[i] : 1),
                                     sizeof **L->lat_us);
    L->lat_us[i][L->answered[i]] = (double)(a->t_done - a->t_sent);
    L->answered[i]++;
    L->answered_total++;
    if (L->answered[i] < o->n) {
        ax_start(a, a->req, a->rlen);
        L->requests_sent++;
    } else {
        a->state = AX_IDLE;
        L->state[i] = "done";
        L->done++;
    }
}

static int load_open(struct load *L, const struct opts *o, const char *req, size_t rlen, char *msg, size_t msglen)
{
    int64_t start = tc_now_us();
    /* Every slot is valid before the first connect: a run that cannot
     * start still frees all C of them. */
    for (int i = 0; i < L->C; i++) {
        L->ax[i] = (struct ax){.fd = -1, .index = i, .port = -1, .state = AX_IDLE};
        L->ptr[i] = &L->ax[i];
        L->state[i] = "connect_failed";
    }
    for (int i = 0; i < L->C; i++) {
        struct ax *a = &L->ax[i];
        enum tc_conn_err e = tc_connect(o->host, o->port_s, start + (int64_t)o->deadline_ms * 1000, &a->fd, msg, msglen);
        if (e != TC_CONN_OK && (i == 0 || e == TC_CONN_RESOLVE))
            return 1; /* cannot run at all */
        if (e != TC_CONN_OK) {
            L->errors[OC_CONNECT_FAILED]++;
            continue;
        }
        L->connects++;
        a->port = L->ports[i] = tc_local_port(a->fd);
        L->state[i] = "running";
        /* The request leaves right after the connect, as a load generator's
         * does: a server whose workers block reading a connection must not
         * be starved by requests we have not sent yet. */
        ax_start(a, req, rlen);
        ax_step(a, o);
        L->requests_sent++;
    }
    return 0;
}

static void load_json(FILE *f, const struct load *L, const struct opts *o)
{
    json_t *j = json_head("load", o, "load"), *st = json_array();
    kj_set(j, "connections", json_integer(L->C));
    kj_set(j, "connects", json_integer(L->connects));
    kj_set(j, "requests_sent", json_integer(L->requests_sent));
    kj_set(j, "responses", json_integer(L->answered_total));
    kj_set(j, "answered_total", json_integer(L->answered_total));
    kj_set(j, "completed_connections", json_integer(L->done));
    kj_set(j, "stalled", json_integer(L->stalled));
    kj_set(j, "answered", kj_ints(L->answered, L->C));
    /* Per connection, the median latency of its answered requests (null
     * when none was): what a fairness verdict compares. */
    json_t *p50 = json_array();
    for (int i = 0; i < L->C; i++) {
        struct pst_summary sm;
        pst_summarise(L->lat_us[i], (size_t)L->answered[i], &sm);
        kj_push(p50, sm.n ? json_integer((json_int_t)sm.p50) : json_null());
    }
    kj_set(j, "p50_us", p50);
    kj_set(j, "local_ports", kj_ints(L->ports, L->C));
    for (int i = 0; i < L->C; i++)
        kj_push(st, kj_bytes(L->state[i]));
    kj_set(j, "conn_state", st);
    kj_set(j, "errors", jerrors(L->errors));
    kj_set(j, "elapsed_ms", kj_fixed(true, L->elapsed_ms, 3));
    json_out(f, j);
}

static void load_human(FILE *f, const struct load *L, const struct opts *o)
{
    fprintf(f, "== load  %s:%d  path %s, %d connections x %d requests, deadline %d ms\n", o->host, o->port, o->path,
            L->C, o->n, o->deadline_ms);
    fprintf(f, "connects %d, requests sent %d, answered %d, connections completed %d, stalled at the deadline %d\n",
            L->connects, L->requests_sent, L->answered_total, L->done, L->stalled);
    for (int i = 0; i < L->C; i++)
        fprintf(f, "  conn %3d  lport %5d  answered %6d  %s\n", i, L->ports[i], L->answered[i], L->state[i]);
    fputs("errors:", f);
    for (int oc = OC_EOF; oc < OC_COUNT; oc++)
        fprintf(f, " %s=%d", oc_errkey[oc], L->errors[oc]);
    fprintf(f, "\nelapsed %.3f ms\n", L->elapsed_ms);
}

static void load_free(struct load *L)
{
    for (int i = 0; i < L->C; i++) {
        ax_free(&L->ax[i]);
        free(L->lat_us[i]);
    }
    free(L->lat_us);
    free(L->ax);
    free(L->ptr);
    free(L->answered);
    free(L->ports);
    free(L->state);
}

int scn_load(const struct opts *o, char *msg, size_t msglen)
{
    struct load L = {.C = o->connections};
    L.ax = xreallocarray(NULL, (size_t)L.C, sizeof *L.ax);
    L.ptr = xreallocarray(NULL, (size_t)L.C, sizeof *L.ptr);
    L.answered = calloc((size_t)L.C, sizeof *L.answered);
    L.lat_us = calloc((size_t)L.C, sizeof *L.lat_us);
    L.ports = xreallocarray(NULL, (size_t)L.C, sizeof *L.ports);
    L.state = xreallocarray(NULL, (size_t)L.C, sizeof *L.state);
    struct pollfd *pfd = xreallocarray(NULL, (size_t)L.C, sizeof *pfd);
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, false);
    if (!L.answered || !L.lat_us)
        die("%s: out of memory", prog);
    for (int i = 0; i < L.C; i++)
        L.ports[i] = -1;
    int64_t t0 = tc_now_us(), deadline = t0 + (int64_t)o->deadline_ms * 1000;
    int rc = load_open(&L, o, req, rlen, msg, msglen);
    /* Finished exchanges are counted before each wait: the first ones may
     * already be done by the end of load_open. */
    do {
        for (int i = 0; i < L.C; i++)
            if (L.ax[i].state == AX_DONE)
                load_after(&L, i, o);
    } while (!rc && poll_step(L.ptr, L.C, pfd, deadline, o));
    L.elapsed_ms = (double)(tc_now_us() - t0) / 1000.0;
    L.stalled = count_active(L.ptr, L.C);
    for (int i = 0; i < L.C; i++)
        if (ax_events(&L.ax[i]))
            L.state[i] = "stalled";
    if (!rc)
        o->json ? load_json(stdout, &L, o) : load_human(stdout, &L, o);
    free(pfd);
    load_free(&L);
    return rc;
}

/* ---- fdscale ------------------------------------------------------------- */

struct fdscale {
    int N, opened, lo, hi; /* samples: indexes [0, lo) and [opened - hi, opened) */
    int *fds, *ports;
    struct ax *ax; /* lo + hi exchanges */
    struct ax **ptr;
    int answered_low, answered_high; /* round 1 */
    int rounds, round_low[100], round_high[100]; /* answered in each round (--sample-requests) */
    long nofile;
    long accept_queue; /* left in the server's accept queue when sampling (-1: not visible) */
    double accept_wait_ms;
    const char *accept_end; /* why the wait ended: empty, stalled, bound, not visible */
    char connect_error[256];
};

/* Open the idle connections one after another; stop at the first failure
 * (recorded: it is a finding, e.g. the server's backlog or fd limit). */
static int fds_open(struct fdscale *F, const struct opts *o, char *msg, size_t msglen)
{
    for (F->opened = 0; F->opened < F->N; F->opened++) {
        int fd;
        int64_t dl = tc_now_us() + (int64_t)o->deadline_ms * 1000;
        enum tc_conn_err e = tc_connect(o->host, o->port_s, dl, &fd, msg, msglen);
        if (e != TC_CONN_OK && (F->opened == 0 || e == TC_CONN_RESOLVE))
            return 1;
        if (e != TC_CONN_OK) {
            snprintf(F->connect_error, sizeof F->connect_error, "%s", msg);
            msg[0] = 0;
            break;
        }
        F->fds[F->opened] = fd;
        F->ports[F->opened] = tc_local_port(fd);
    }
    return 0;
}

/* Readings in a row without the listener, once seen, before the wait
 * takes it as gone (100 ms at the polling pace). */
#define FDS_UNSEEN_MAX 20

/* Before the sample: wait until the server has accept()ed every connection
 * (its listener's accept queue is empty), so that "not answered" means the
 * server holds the connection and does not read it, never that it has not
 * taken it yet.  Only visible when the server is on this host; bounded by
 * --accept-wait-ms and, when given, by --accept-stall-ms without a single
 * accept; what is left is reported, and why the wait ended. */
static void fds_wait_accepted(struct fdscale *F, const struct opts *o)
{
    int64_t t0 = tc_now_us(), deadline = t0 + (int64_t)o->accept_wait_ms * 1000;
    int64_t stall = (int64_t)o->accept_stall_ms * 1000, last_accept = t0;
    long fewest = -1;
    int seen = 0, unseen = 0;
    /* No answer once the listener has been seen is a reading that failed,
     * not a listener gone, and is polled again: c98's TSan server had
     * logged 258 of 1,100 connects when one of ~3,000 readings in 15 s
     * answered none and ended the wait (the last ten then "not answered").
     * Never seen, or unseen FDS_UNSEEN_MAX times in a row: not visible
     * from here (another host or namespace, or a server gone). */
    F->accept_end = "bound";
    while ((F->accept_queue = tc_listen_queue(o->port)) != 0) {
        int64_t now = tc_now_us();
        if (F->accept_queue > 0) {
            seen = 1, unseen = 0;
            if (fewest < 0 || F->accept_queue < fewest)
                fewest = F->accept_queue, last_accept = now;
        } else if (!seen || ++unseen >= FDS_UNSEEN_MAX) {
            F->accept_end = "not visible";
            break;
        }
        /* A server slowed by a sanitizer beside a loaded machine takes
         * minutes, and is waited for while it keeps accepting. */
        if (stall > 0 && now - last_accept >= stall) {
            F->accept_end = "stalled";
            break;
        }
        if (now >= deadline)
            break;
        tc_sleep_until_us(now + 5000); /* a poll of a kernel counter */
    }
    if (F->accept_queue == 0)
        F->accept_end = "empty";
    F->accept_wait_ms = (double)(tc_now_us() - t0) / 1000.0;
}

/* Index of sample s among the opened connections. */
static int fds_index(const struct fdscale *F, int s)
{
    return s < F->lo ? s : F->opened - F->hi + (s - F->lo);
}

/* --sample-requests rounds: in each, one request on every sampled
 * connection that was answered in the round before, all at once; a round
 * starts when the last one ended (answered or the deadline).  Round 2 is
 * the next request on a kept-alive connection. */
static void fds_sample(struct fdscale *F, const struct opts *o, const char *req, size_t rlen)
{
    int ns = F->lo + F->hi;
    struct pollfd *pfd = xreallocarray(NULL, (size_t)ns + 1, sizeof *pfd);
    for (int s = 0; s < ns; s++) {
        int i = fds_index(F, s);
        F->ax[s] = (struct ax){.fd = F->fds[i], .index = i, .port = F->ports[i]};
    }
    for (F->rounds = 0; F->rounds < o->sample_requests; F->rounds++) {
        int n = 0;
        for (int s = 0; s < ns; s++) {
            if (F->rounds > 0 && F->ax[s].oc != OC_RESPONSE)
                continue; /* not answered before: nothing to ask again */
            F->ptr[n++] = &F->ax[s];
            ax_start(&F->ax[s], req, rlen);
        }
        int64_t deadline = tc_now_us() + (int64_t)o->deadline_ms * 1000;
        while (poll_step(F->ptr, n, pfd, deadline, o)) {
        }
        int *lo = &F->round_low[F->rounds], *hi = &F->round_high[F->rounds];
        *lo = *hi = 0;
        for (int k = 0; k < n; k++) {
            struct ax *a = F->ptr[k];
            if (a->state != AX_DONE)
                a->oc = OC_TIMEOUT;
            if (a->oc == OC_RESPONSE)
                *(a - F->ax < F->lo ? lo : hi) += 1;
        }
    }
    F->answered_low = F->round_low[0];
    F->answered_high = F->round_high[0];
    free(pfd);
}

static void fds_json(FILE *f, const struct fdscale *F, const struct opts *o)
{
    json_t *j = json_head("fdscale", o, "fdscale"), *per = json_array();
    kj_set(j, "opened", json_integer(F->opened));
    kj_set(j, "connects", json_integer(F->opened));
    kj_set(j, "connect_error", kj_bytes(F->connect_error[0] ? F->connect_error : NULL));
    kj_set(j, "nofile_limit", json_integer(F->nofile));
    kj_set(j, "sample", json_integer(o->sample));
    kj_set(j, "sample_low", json_integer(F->lo));
    kj_set(j, "sample_high", json_integer(F->hi));
    kj_set(j, "accept_queue_left", json_integer(F->accept_queue));
    kj_set(j, "accept_wait_ms", kj_fixed(true, F->accept_wait_ms, 1));
    kj_set(j, "accept_wait_end", json_string(F->accept_end));
    kj_set(j, "answered_low", json_integer(F->answered_low));
    kj_set(j, "answered_high", json_integer(F->answered_high));
    json_t *rounds = json_array();
    for (int r = 0; r < F->rounds; r++) {
        json_t *e = json_object();
        kj_set(e, "answered_low", json_integer(F->round_low[r]));
        kj_set(e, "answered_high", json_integer(F->round_high[r]));
        kj_push(rounds, e);
    }
    kj_set(j, "rounds", rounds);
    for (int s = 0; s < F->lo + F->hi; s++) {
        const struct ax *a = &F->ax[s];
        bool ok = a->oc == OC_RESPONSE;
        json_t *e = json_object();
        kj_set(e, "index", json_integer(a->index));
        kj_set(e, "local_port", json_integer(a->port));
        kj_set(e, "outcome", kj_bytes(oc_name[a->oc]));
        kj_set(e, "status", ok ? json_integer(a->status) : json_null());
        kj_set(e, "latency_us", kj_fixed(ok, (double)(a->t_done - a->t_sent), 1));
        kj_push(per, e);
    }
    kj_set(j, "per_index", per);
    json_out(f, j);
}

static void fds_human(FILE *f, const struct fdscale *F, const struct opts *o)
{
    fprintf(f, "== fdscale  %s:%d  path %s, %d connections asked, %d opened (RLIMIT_NOFILE %ld)\n", o->host,
            o->port, o->path, F->N, F->opened, F->nofile);
    if (F->connect_error[0])
        fprintf(f, "opening stopped: %s\n", F->connect_error);
    if (F->accept_queue >= 0)
        fprintf(f, "accept queue before the sample: %ld left after %.1f ms (%s)\n", F->accept_queue,
                F->accept_wait_ms, F->accept_end);
    else
        fputs("accept queue before the sample: not visible (server not on this host)\n", f);
    for (int r = 0; r < F->rounds; r++)
        fprintf(f, "answered, request %d: first %d: %d, last %d: %d\n", r + 1, F->lo, F->round_low[r], F->hi,
                F->round_high[r]);
    for (int s = 0; s < F->lo + F->hi; s++) {
        const struct ax *a = &F->ax[s];
        fprintf(f, "  #%-6d lport %5d  %-14s", a->index, a->port, oc_name[a->oc]);
        if (a->oc == OC_RESPONSE)
            fprintf(f, " %d  %.3f ms", a->status, (double)(a->t_done - a->t_sent) / 1000.0);
        fputc('\n', f);
    }
}

int scn_fdscale(const struct opts *o, char *msg, size_t msglen)
{
    struct fdscale F = {.N = o->connections, .nofile = tc_raise_nofile()};
    F.fds = xreallocarray(NULL, (size_t)F.N, sizeof *F.fds);
    F.ports = xreallocarray(NULL, (size_t)F.N, sizeof *F.ports);
    F.ax = xreallocarray(NULL, 2 * (size_t)o->sample, sizeof *F.ax);
    F.ptr = xreallocarray(NULL, 2 * (size_t)o->sample, sizeof *F.ptr);
    char req[2048];
    size_t rlen = build_get(req, sizeof req, o, false);
    int rc = fds_open(&F, o, msg, msglen);
    if (!rc) {
        F.lo = o->sample < F.opened ? o->sample : F.opened;
        F.hi = o->sample < F.opened - F.lo ? o->sample : F.opened - F.lo;
        fds_wait_accepted(&F, o);
        fds_sample(&F, o, req, rlen);
        o->json ? fds_json(stdout, &F, o) : fds_human(stdout, &F, o);
        for (int s = 0; s < F.lo + F.hi; s++)
            free(F.ax[s].buf); /* fds are closed below */
    }
    for (int i = 0; i < F.opened; i++)
        tc_close(F.fds[i]);
    free(F.fds);
    free(F.ports);
    free(F.ax);
    free(F.ptr);
    return rc;
}
