/* strace_analyse.c - per-connection syscall evidence from an strace log.
 *
 * Build: make build/strace-analyse (with strace_parse.c, strace_fds.c and
 * the common sources).
 *
 * Input: strace -f -tt -T -s 65535 -o FILE (any -e trace= set that includes
 * the network, select/poll/epoll and read/write calls).
 * Usage: strace-analyse [--json] FILE
 * Exit 0 ok, 1 bad input, 2 usage error.
 *
 * A connection is an fd returned by accept/accept4, or an fd that carries
 * HTTP (a request read, a response written) without an accept seen in its
 * process: "discovered": true.  That is how a win64 server under Wine
 * looks: the wineserver process accepts and hands the fd over, the
 * program's threads recvmsg/sendmsg/writev on their own copy and wait with
 * poll/ppoll/epoll_wait.  setsockopt calls and waits on an fd before it is
 * known count for it once it is.  An accepted connection its process never
 * touched, while discovered ones exist in another process, is left out of
 * "connections" and counted in "handed_over" ("accepts" counts every
 * accept).  Counts are the same kind whatever the syscalls: sends per
 * response (any write-like call; a response starts with "HTTP/1."),
 * setsockopt(TCP_NODELAY) per connection, accepts, waits and their
 * timeouts per connection.  A TCP_NODELAY set on an fd that never becomes
 * a connection (Wine sets it on a transient dup in the accepting thread)
 * still counts in "tcp_nodelay_total", and in "tcp_nodelay_unattached".
 * Under strace -y ("12<socket:[4711]>") an fd's socket is known: an fd
 * whose number now names another socket is forgotten, and data on a copy
 * of a connection's socket counts for that connection (arg_inode).
 */
#include "strace_analyse.h"

#include "../common/http_request.h"
#include "../common/kjson.h"
#include "../common/util.h"
#include "strace_fds.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <getopt.h>

/* ------------------------------------------------------------------ */
/* Tracking                                                            */
/* ------------------------------------------------------------------ */

struct sconn {
    long fd, accept_pid, group;
    int64_t t_accept;
    char peer[64];
    int discovered;               /* no accept() seen: found by its traffic */
    unsigned long inode;          /* its socket (strace -y), 0 = unknown */
    int tcp_nodelay, so_rcvtimeo, so_sndtimeo, setsockopt_other;
    int responses, *sends;        /* sends[i] for response i */
    int cap_sends, sends_before_first;
    int requests_read, reads, shutdowns, closed, eof, truncated;
    size_t bytes_read, bytes_written;
    unsigned char *rbuf;
    size_t rlen, rcap, roff;
    struct selects sel;
};

struct pending {
    long pid;
    char name[32];
    char *args;
    size_t len;
    int64_t t_us;
};

static struct sconn *conns;
static size_t nconns, capconns;
static struct pending *pend;
static size_t npend, cappend;
static const char *in_file = "";
static char listener_opts[512];
static int listener_setsockopt_n, accepts, calls_parsed, handed_over;
static struct selects listener_sel;
static int nodelay_unattached; /* TCP_NODELAY on an fd never tied to a connection */
static long disc_groups[16]; /* processes where connections were discovered */
static int ndisc_groups;
static int64_t t_first = -1;

static long arg_long(const char *s, size_t n)
{
    char tmp[32];
    if (n == 0 || n >= sizeof tmp || !(isdigit((unsigned char)s[0]) || s[0] == '-'))
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    return strtol(tmp, NULL, 10); /* saturates: no UB on any length */
}

static struct sconn *conn_of(long pid, long fd)
{
    struct sf_ent *e = fd < 0 ? NULL : sf_get(sf_group(pid), fd, 0);
    return e && e->conn ? &conns[e->conn - 1] : NULL;
}

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static void sel_add(struct selects *s, long tmo, long ret, int64_t dur, int buffered)
{
    int i;
    s->count++;
    for (i = 0; i < s->ntimeouts; i++)
        if (s->timeouts[i] == tmo)
            break;
    if (i == s->ntimeouts && s->ntimeouts < MAX_TIMEOUTS)
        s->timeouts[s->ntimeouts++] = tmo;
    if (dur > s->max_dur_us)
        s->max_dur_us = dur;
    if (ret == 0) {
        s->timed_out++;
        s->timed_out_dur_us = sat_add(s->timed_out_dur_us, dur > 0 ? dur : 0);
        if (buffered)
            s->timed_out_buffered++;
    }
}

/* One wait (select, poll, epoll) that covered fd. */
static void wait_on_fd(long pid, long fd, long tmo, long ret, int64_t dur)
{
    struct sf_ent *e = sf_get(sf_group(pid), fd, 1);
    if (e->listener)
        sel_add(&listener_sel, tmo, ret, dur, 0);
    else if (e->conn) {
        struct sconn *c = &conns[e->conn - 1];
        sel_add(&c->sel, tmo, ret, dur, c->requests_read > c->responses);
    } else {
        sel_add(&e->pend_sel, tmo, ret, dur, 0); /* counts if it turns out to be a connection */
    }
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* select/pselect6 (3 fd sets) and poll/ppoll (one array): every fd listed,
 * of any number, once. */
static void on_select(long pid, const char *name, const char *args, size_t n, long ret, int64_t dur)
{
    const char *st[6];
    size_t sl[6], pos;
    int na = st_split_args(args, n, st, sl, 6), isp = name[0] == 'p' && strstr(name, "poll") != NULL;
    int first = isp ? 0 : 1, last = isp ? 0 : 3;
    long tmo, fd, *v = NULL;
    size_t nv = 0, cap = 0;
    if (na < (isp ? 3 : 5))
        return;
    tmo = isp ? st_timeout_ms(st[2], sl[2], strcmp(name, "ppoll") == 0)
              : st_timeout_ms(st[4], sl[4], strcmp(name, "pselect6") == 0);
    for (int k = first; k <= last; k++)
        for (pos = 0; st_fdset_next(st[k], sl[k], &pos, &fd);) {
            if (nv == cap)
                v = xreallocarray(v, cap = cap ? cap * 2 : 16, sizeof *v);
            v[nv++] = fd;
        }
    if (nv == 0)
        return; /* (qsort's pointer must not be NULL, even for 0 items) */
    qsort(v, nv, sizeof *v, cmp_long);
    for (size_t i = 0; i < nv; i++)
        if (i == 0 || v[i] != v[i - 1])
            wait_on_fd(pid, v[i], tmo, ret, dur);
    free(v);
}

/* epoll_wait/epoll_pwait(epfd, events, max, timeout ms), epoll_pwait2 (a
 * timespec): the wait covers every fd registered in epfd. */
static void on_epoll_wait(long pid, const char *name, const char *args, size_t n, long ret, int64_t dur)
{
    const char *st[4];
    size_t sl[4];
    if (st_split_args(args, n, st, sl, 4) < 4)
        return;
    long tmo = st_timeout_ms(st[3], sl[3], 1);
    struct sf_ent *ep = sf_get(sf_group(pid), arg_long(st[0], sl[0]), 0);
    (void)name;
    for (size_t i = 0; ep && i < ep->nmembers; i++)
        wait_on_fd(pid, ep->members[i], tmo, ret, dur);
}

static void on_epoll_ctl(long pid, const char *args, size_t n, long ret)
{
    const char *st[4];
    size_t sl[4];
    if (ret < 0 || st_split_args(args, n, st, sl, 4) < 3)
        return;
    int add = sl[1] >= 13 && memcmp(st[1], "EPOLL_CTL_ADD", 13) == 0;
    int del = sl[1] >= 13 && memcmp(st[1], "EPOLL_CTL_DEL", 13) == 0;
    if (add || del)
        sf_epoll_ctl(sf_group(pid), arg_long(st[0], sl[0]), arg_long(st[2], sl[2]), add);
}

static void add_opt_name(char *list, size_t cap, const char *opt)
{
    if (!strstr(list, opt) && strlen(list) + strlen(opt) + 2 < cap) {
        if (list[0])
            strcat(list, ",");
        strcat(list, opt);
    }
}

/* setsockopt counts of a socket that turned out to be the listener. */
static void pending_to_listener(struct sf_ent *e)
{
    char tmp[sizeof e->pend_names], *tok, *sv = NULL;
    listener_setsockopt_n += e->pend_nodelay + e->pend_rcvtimeo + e->pend_sndtimeo + e->pend_other;
    nodelay_unattached -= e->pend_nodelay;
    memcpy(tmp, e->pend_names, sizeof tmp);
    for (tok = strtok_r(tmp, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv))
        add_opt_name(listener_opts, sizeof listener_opts, tok);
    e->pend_nodelay = e->pend_rcvtimeo = e->pend_sndtimeo = e->pend_other = 0;
    e->pend_names[0] = 0;
}

static void count_opt(const char *opt, int *nodelay, int *rcv, int *snd, int *other)
{
    if (strcmp(opt, "TCP_NODELAY") == 0)
        (*nodelay)++;
    else if (strncmp(opt, "SO_RCVTIMEO", 11) == 0)
        (*rcv)++;
    else if (strncmp(opt, "SO_SNDTIMEO", 11) == 0)
        (*snd)++;
    else
        (*other)++;
}

static void on_setsockopt(long pid, const char *args, size_t n)
{
    const char *st[5];
    size_t sl[5];
    char opt[48];
    if (st_split_args(args, n, st, sl, 5) < 3)
        return;
    long fd = arg_long(st[0], sl[0]);
    snprintf(opt, sizeof opt, "%.*s", (int)(sl[2] < 40 ? sl[2] : 40), st[2]);
    struct sf_ent *e = fd < 0 ? NULL : sf_get(sf_group(pid), fd, 1);
    if (!e)
        return;
    if (e->listener) {
        listener_setsockopt_n++;
        add_opt_name(listener_opts, sizeof listener_opts, opt);
    } else if (e->conn) {
        struct sconn *c = &conns[e->conn - 1];
        count_opt(opt, &c->tcp_nodelay, &c->so_rcvtimeo, &c->so_sndtimeo, &c->setsockopt_other);
    } else {
        /* not known yet: a future listener, or a connection accepted in
         * another process (Wine) that shows itself by its traffic later */
        count_opt(opt, &e->pend_nodelay, &e->pend_rcvtimeo, &e->pend_sndtimeo, &e->pend_other);
        add_opt_name(e->pend_names, sizeof e->pend_names, opt);
        nodelay_unattached += strcmp(opt, "TCP_NODELAY") == 0;
    }
}

static struct sconn *new_conn(long pid, long fd, int64_t t)
{
    if (nconns == capconns) {
        capconns = capconns ? capconns * 2 : 16;
        conns = xreallocarray(conns, capconns, sizeof *conns);
    }
    struct sconn *c = &conns[nconns];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->accept_pid = pid;
    c->group = sf_group(pid);
    c->t_accept = t;
    struct sf_ent *e = sf_get(c->group, fd, 1);
    sf_reset(e);
    e->conn = (long)++nconns;
    return c;
}

static void peer_of(struct sconn *c, const char *args, size_t n)
{
    int ok1;
    int64_t port = 0;
    const char *a = memmem(args, n, "sin_port=htons(", 15);
    ok1 = a != NULL && a + 15 < args + n && isdigit((unsigned char)a[15]);
    if (ok1)
        port = strtol(a + 15, NULL, 10);
    a = memmem(args, n, "inet_addr(\"", 11);
    if (!a)
        a = memmem(args, n, "inet_pton(AF_INET6, \"", 21);
    if (ok1 && a) {
        const char *b = memchr(a, '"', (size_t)(args + n - a));
        const char *e2 = b ? memchr(b + 1, '"', (size_t)(args + n - b - 1)) : NULL;
        if (b && e2)
            snprintf(c->peer, sizeof c->peer, "%.*s:%ld", (int)(e2 - b - 1 < 46 ? e2 - b - 1 : 46), b + 1, (long)port);
    }
}

static void on_accept(long pid, const char *args, size_t n, long ret, int64_t t)
{
    const char *st[2];
    size_t sl[2];
    if (ret < 0)
        return;
    accepts++;
    if (st_split_args(args, n, st, sl, 2) >= 1) {
        long lfd = arg_long(st[0], sl[0]);
        if (lfd >= 0)
            sf_get(sf_group(pid), lfd, 1)->listener = 1;
    }
    peer_of(new_conn(pid, ret, t), args, n);
}

/* setsockopt counts of an fd that turned out to carry connection c. */
static void pending_to_conn(struct sconn *c, struct sf_ent *e)
{
    c->tcp_nodelay += e->pend_nodelay;
    nodelay_unattached -= e->pend_nodelay;
    c->so_rcvtimeo += e->pend_rcvtimeo;
    c->so_sndtimeo += e->pend_sndtimeo;
    c->setsockopt_other += e->pend_other;
    e->pend_nodelay = e->pend_rcvtimeo = e->pend_sndtimeo = e->pend_other = 0;
    e->pend_names[0] = 0;
}

/* An fd we did not see accepted carries HTTP: a connection accepted in
 * another process (Wine's wineserver accepts and hands the fd over).  Its
 * earlier setsockopt calls now count for it. */
static struct sconn *discover(long pid, long fd, int64_t t)
{
    struct sf_ent *e = sf_get(sf_group(pid), fd, 1);
    struct sf_ent saved = *e;
    if (e->listener)
        return NULL;
    struct sconn *c = new_conn(pid, fd, t);
    c->discovered = 1;
    c->inode = sf_get(c->group, fd, 1)->inode = saved.inode;
    int k = 0;
    while (k < ndisc_groups && disc_groups[k] != c->group)
        k++;
    if (k == ndisc_groups && k < 16)
        disc_groups[ndisc_groups++] = c->group;
    pending_to_conn(c, &saved);
    c->sel = saved.pend_sel;
    return c;
}

/* strace -y names the socket behind an fd: "12<socket:[4711]>" (the kit
 * traces win64 servers so).  Wine hands a program a fresh copy of a
 * socket's fd for a call and closes it unseen (those traces have no
 * close), so the number one connection goes by can change between two
 * sends of a response: a thread's exit had freed a lower one (horse trunk
 * (win64): sendto per response [1, 2], the body's send on a number not
 * yet known, in 1 of 12 runs).  The inode ties the copies together. */
static unsigned long arg_inode(const char *s, size_t n)
{
    const char *p = memmem(s, n, "<socket:[", 9), *e = s + n;
    unsigned long v = 0;
    if (!p)
        return 0;
    for (p += 9; p < e && isdigit((unsigned char)*p); p++) {
        if (v > (ULONG_MAX - 9) / 10)
            return 0;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    return p < e && *p == ']' ? v : 0;
}

/* The fd names socket ino now: a number that named another socket before
 * is forgotten first, as a close would have made it. */
static void note_inode(long pid, long fd, unsigned long ino)
{
    struct sf_ent *e = sf_get(sf_group(pid), fd, 1);
    if (e->inode && e->inode != ino)
        sf_reset(e);
    e->inode = ino;
    if (e->conn && !conns[e->conn - 1].inode)
        conns[e->conn - 1].inode = ino;
}

/* A copy of a known connection's socket, on a number not tied to it yet:
 * the connection of the same process with that socket (the latest). */
static struct sconn *adopt(long pid, long fd)
{
    struct sf_ent *e = sf_get(sf_group(pid), fd, 0);
    size_t i;
    if (!e || !e->inode || e->listener)
        return NULL;
    for (i = nconns; i-- > 0;)
        if (conns[i].group == e->group && conns[i].inode == e->inode) {
            pending_to_conn(&conns[i], e);
            e->conn = (long)i + 1;
            return &conns[i];
        }
    return NULL;
}

static int starts_http(const char *name, const char *args, size_t n, int response)
{
    size_t dl;
    unsigned char *d = st_call_data(name, args, n, &dl);
    int yes = d && (response ? dl >= 7 && memcmp(d, "HTTP/1.", 7) == 0 : hq_is_request_start(d, dl));
    free(d);
    return yes;
}

static void on_write(struct sconn *c, const char *name, const char *args, size_t n, long ret)
{
    if (ret > 0)
        c->bytes_written += (size_t)ret;
    if (starts_http(name, args, n, 1)) {
        if (c->responses == c->cap_sends) {
            c->cap_sends = c->cap_sends ? c->cap_sends * 2 : 8;
            c->sends = xreallocarray(c->sends, (size_t)c->cap_sends, sizeof *c->sends);
        }
        c->sends[c->responses++] = 1;
    } else if (c->responses > 0) {
        c->sends[c->responses - 1]++;
    } else {
        c->sends_before_first++;
    }
}

static void on_read(struct sconn *c, const char *name, const char *args, size_t n, long ret)
{
    size_t dl;
    unsigned char *d;
    c->reads++;
    if (ret == 0)
        c->eof = 1;
    if (ret <= 0)
        return;
    c->bytes_read += (size_t)ret;
    d = st_call_data(name, args, n, &dl);
    if (!d || dl < (size_t)ret)
        c->truncated++;   /* strace -s too small: request count is a lower bound */
    if (!d || dl == 0) {
        free(d);
        return;
    }
    if (c->rlen + dl > c->rcap) {
        c->rcap = (c->rlen + dl) * 2;
        c->rbuf = xrealloc(c->rbuf, c->rcap);
    }
    memcpy(c->rbuf + c->rlen, d, dl);
    c->rlen += dl;
    free(d);
    c->requests_read += hq_count_requests(c->rbuf, c->rlen, &c->roff);
}

static const char *const write_calls[] = {"write", "send", "sendto", "writev", "sendmsg", "pwritev", NULL};
static const char *const read_calls[] = {"read", "recv", "recvfrom", "readv", "recvmsg", NULL};
static const char *const wait_calls[] = {"select", "pselect6", "poll", "ppoll", "_newselect", NULL};
static const char *const epoll_waits[] = {"epoll_wait", "epoll_pwait", "epoll_pwait2", NULL};

/* Thread and process creation: who shares whose fd table. */
static void on_clone(long pid, const char *name, const char *args, size_t n, long ret)
{
    if (ret > 0)
        sf_clone(pid, ret, strcmp(name, "clone") == 0 || strcmp(name, "clone3") == 0
                               ? memmem(args, n, "CLONE_FILES", 11) != NULL
                               : 0);
}

/* Calls that are not about one connection's data. */
static int on_socket_call(long pid, const char *name, const char *args, size_t n, long fd, long ret, int64_t t,
                          int64_t dur)
{
    if (strcmp(name, "accept") == 0 || strcmp(name, "accept4") == 0)
        on_accept(pid, args, n, ret, t + (dur > 0 ? dur : 0));
    else if (strcmp(name, "listen") == 0 && fd >= 0) {
        struct sf_ent *e = sf_get(sf_group(pid), fd, 1);
        e->listener = 1;
        pending_to_listener(e);
    } else if (strcmp(name, "setsockopt") == 0)
        on_setsockopt(pid, args, n);
    else if (st_is_name(name, wait_calls))
        on_select(pid, name, args, n, ret, dur);
    else if (st_is_name(name, epoll_waits))
        on_epoll_wait(pid, name, args, n, ret, dur);
    else if (strcmp(name, "epoll_ctl") == 0)
        on_epoll_ctl(pid, args, n, ret);
    else if (strcmp(name, "clone") == 0 || strcmp(name, "clone3") == 0 || strcmp(name, "fork") == 0 ||
             strcmp(name, "vfork") == 0)
        on_clone(pid, name, args, n, ret);
    else if ((strcmp(name, "socket") == 0 || strcmp(name, "epoll_create1") == 0 ||
              strcmp(name, "epoll_create") == 0) && ret >= 0) {
        struct sf_ent *e = sf_get(sf_group(pid), ret, 0);
        if (e)
            sf_reset(e); /* a new socket on a reused fd number */
    } else
        return 0;
    return 1;
}

static void on_call(long pid, const char *name, const char *args, size_t n, long ret, int ret_known, int64_t t,
                    int64_t dur)
{
    const char *st[2];
    size_t sl[2];
    long fd = -1;
    (void)ret_known;
    calls_parsed++;
    unsigned long ino = 0;
    if (st_split_args(args, n, st, sl, 2) >= 1) {
        fd = arg_long(st[0], sl[0]);
        ino = fd >= 0 ? arg_inode(st[0], sl[0]) : 0;
    }
    if (ino)
        note_inode(pid, fd, ino);
    if (on_socket_call(pid, name, args, n, fd, ret, t, dur))
        return;
    struct sconn *c = conn_of(pid, fd);
    if (!c && ino && (st_is_name(name, read_calls) || st_is_name(name, write_calls)))
        c = adopt(pid, fd);
    if (!c && fd >= 0 && ret > 0 &&
        ((st_is_name(name, read_calls) && starts_http(name, args, n, 0)) ||
         (st_is_name(name, write_calls) && starts_http(name, args, n, 1))))
        c = discover(pid, fd, t);
    if (!c) {
        struct sf_ent *e = strcmp(name, "close") == 0 && fd >= 0 ? sf_get(sf_group(pid), fd, 0) : NULL;
        if (e)
            sf_reset(e);
        return;
    }
    if (st_is_name(name, write_calls))
        on_write(c, name, args, n, ret);
    else if (st_is_name(name, read_calls))
        on_read(c, name, args, n, ret);
    else if (strcmp(name, "shutdown") == 0)
        c->shutdowns++;
    else if (strcmp(name, "close") == 0) {
        c->closed = 1;
        sf_reset(sf_get(c->group, fd, 1));
    }
}

static struct pending *pend_find(long pid)
{
    size_t i;
    for (i = 0; i < npend; i++)
        if (pend[i].pid == pid && pend[i].args)
            return &pend[i];
    return NULL;
}

static void process_line(const char *line, size_t len)
{
    struct st_line L;
    enum st_kind k = strace_parse_line(line, len, &L);
    if (L.t_us >= 0 && t_first < 0)
        t_first = L.t_us;
    if (k == ST_CALL) {
        on_call(L.pid, L.name, L.args, L.args_len, L.ret, L.ret_known, L.t_us - t_first, L.dur_us);
    } else if (k == ST_UNFINISHED) {
        struct pending *p = pend_find(L.pid);
        if (!p) {
            size_t i;
            for (i = 0; i < npend && pend[i].args; i++)
                ;
            if (i == npend) {
                if (npend == cappend) {
                    cappend = cappend ? cappend * 2 : 8;
                    pend = xrealloc(pend, cappend * sizeof *pend);
                }
                memset(&pend[npend], 0, sizeof pend[npend]);
                npend++;
            }
            p = &pend[i];
        } else {
            free(p->args);
        }
        p->pid = L.pid;
        snprintf(p->name, sizeof p->name, "%s", L.name);
        p->args = xrealloc(NULL, L.args_len + 1);
        memcpy(p->args, L.args, L.args_len);
        p->len = L.args_len;
        p->t_us = L.t_us;
    } else if (k == ST_RESUMED) {
        struct pending *p = pend_find(L.pid);
        if (p && strcmp(p->name, L.name) == 0) {
            char *all = xrealloc(NULL, p->len + L.args_len + 1);
            memcpy(all, p->args, p->len);
            memcpy(all + p->len, L.args, L.args_len);
            on_call(L.pid, L.name, all, p->len + L.args_len, L.ret, L.ret_known, p->t_us - t_first, L.dur_us);
            free(all);
            free(p->args);
            p->args = NULL;
        } else {
            /* resumed without its start (log began mid-call): use what we have */
            on_call(L.pid, L.name, L.args, L.args_len, L.ret, L.ret_known, L.t_us - t_first, L.dur_us);
        }
    } else if (k == ST_EXIT) {
        struct pending *p = pend_find(L.pid);
        if (p) {
            free(p->args);
            p->args = NULL;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* An accepted connection its process never touched, while connections
 * found by their traffic exist: the fd was handed to another process
 * (Wine's wineserver accepts; the program's threads do the I/O).  A native
 * server has no discovered connections, so its never-read connections (B8)
 * stay listed.  Such a
 * connection appears once, as the discovered one; `accepts` still counts
 * the accept. */
static int handed_over_conn(const struct sconn *c)
{
    if (c->discovered || c->reads || c->bytes_written || c->responses || c->sends_before_first || c->sel.count ||
        c->tcp_nodelay || c->so_rcvtimeo || c->so_sndtimeo || c->setsockopt_other || c->shutdowns)
        return 0;
    /* Any process: without clone/fork in the trace every tid shares one
     * fd table, so the wineserver and the program cannot be told apart. */
    return ndisc_groups > 0;
}

static void print_timeouts(const struct selects *s)
{
    int i;
    printf("[");
    for (i = 0; i < s->ntimeouts; i++)
        printf("%s%ld", i ? ", " : "", s->timeouts[i]);
    printf("]");
}

/* A byte count as a JSON integer (saturated at INT64_MAX, which only an
 * absurd log reaches: every count is a sum of longs). */
static json_t *jsize(size_t v)
{
    return json_integer(v > (size_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* {"count": , "timeouts": [...], "timed_out": } of a select/poll census;
 * a connection's has the buffered-request and duration keys too. */
static json_t *json_selects(const struct selects *s, int conn)
{
    json_t *o = json_object(), *t = json_array();
    kj_set(o, "count", json_integer(s->count));
    for (int i = 0; i < s->ntimeouts; i++)
        kj_push(t, json_integer(s->timeouts[i]));
    kj_set(o, "timeouts", t);
    kj_set(o, "timed_out", json_integer(s->timed_out));
    if (conn) {
        kj_set(o, "timed_out_with_buffered_request", json_integer(s->timed_out_buffered));
        kj_set(o, "timed_out_total_us", json_integer(s->timed_out_dur_us));
        kj_set(o, "max_duration_us", json_integer(s->max_dur_us));
    }
    return o;
}

struct totals {
    int smax, smin, have, nodelay, resp, req, tob;
};

static json_t *json_conn(const struct sconn *c, size_t num, struct totals *T)
{
    json_t *o = json_object(), *spr = json_array();
    kj_set(o, "conn", jsize(num));
    kj_set(o, "fd", json_integer(c->fd));
    kj_set(o, "pid", json_integer(c->accept_pid));
    kj_set(o, "t_accept_us", json_integer(c->t_accept));
    kj_set(o, "peer", kj_name(c->peer));
    kj_set(o, "discovered", json_boolean(c->discovered));
    kj_set(o, "tcp_nodelay", json_integer(c->tcp_nodelay));
    kj_set(o, "so_rcvtimeo", json_integer(c->so_rcvtimeo));
    kj_set(o, "so_sndtimeo", json_integer(c->so_sndtimeo));
    kj_set(o, "setsockopt_other", json_integer(c->setsockopt_other));
    kj_set(o, "responses", json_integer(c->responses));
    for (int j = 0; j < c->responses; j++) {
        kj_push(spr, json_integer(c->sends[j]));
        if (!T->have || c->sends[j] > T->smax)
            T->smax = c->sends[j];
        if (!T->have || c->sends[j] < T->smin)
            T->smin = c->sends[j];
        T->have = 1;
    }
    kj_set(o, "sends_per_response", spr);
    kj_set(o, "sends_before_first_response", json_integer(c->sends_before_first));
    kj_set(o, "requests_read", json_integer(c->requests_read));
    kj_set(o, "truncated_reads", json_integer(c->truncated));
    kj_set(o, "reads", json_integer(c->reads));
    kj_set(o, "bytes_read", jsize(c->bytes_read));
    kj_set(o, "bytes_written", jsize(c->bytes_written));
    kj_set(o, "eof", json_boolean(c->eof));
    kj_set(o, "shutdowns", json_integer(c->shutdowns));
    kj_set(o, "closed", json_boolean(c->closed));
    kj_set(o, "selects", json_selects(&c->sel, 1));
    T->nodelay += c->tcp_nodelay;
    T->resp += c->responses;
    T->req += c->requests_read;
    T->tob += c->sel.timed_out_buffered;
    return o;
}

static json_t *json_listener_opts(void)
{
    char tmp[sizeof listener_opts], *tok, *sv = NULL;
    json_t *a = json_array();
    memcpy(tmp, listener_opts, sizeof tmp);
    for (tok = strtok_r(tmp, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv))
        kj_push(a, kj_name(tok));
    return a;
}

static void print_json(void)
{
    struct totals T = {0};
    struct kj_rows w;
    size_t num = 0;
    kj_rows_begin(&w, stdout);
    kj_rows_list_begin(&w, "connections");
    for (size_t i = 0; i < nconns; i++)
        if (!handed_over_conn(&conns[i]))
            kj_rows_item(&w, json_conn(&conns[i], ++num, &T));
    kj_rows_list_end(&w);
    kj_rows_member(&w, "accepts", json_integer(accepts));
    kj_rows_member(&w, "handed_over", json_integer(handed_over));
    kj_rows_member(&w, "tcp_nodelay_total", json_integer(T.nodelay + nodelay_unattached));
    kj_rows_member(&w, "tcp_nodelay_unattached", json_integer(nodelay_unattached));
    kj_rows_member(&w, "responses_total", json_integer(T.resp));
    kj_rows_member(&w, "requests_read_total", json_integer(T.req));
    kj_rows_member(&w, "timed_out_with_buffered_request_total", json_integer(T.tob));
    kj_rows_member(&w, "listener_setsockopt", json_listener_opts());
    kj_rows_member(&w, "listener_setsockopt_calls", json_integer(listener_setsockopt_n));
    kj_rows_member(&w, "listener_selects", json_selects(&listener_sel, 0));
    kj_rows_member(&w, "sends_per_response_max", T.have ? json_integer(T.smax) : json_null());
    kj_rows_member(&w, "sends_per_response_min", T.have ? json_integer(T.smin) : json_null());
    if (kj_rows_end(&w) != 0)
        die("strace-analyse: writing the JSON: %s", strerror(errno));
}

static void print_table(void)
{
    size_t i, num = 0;
    int j, nodelay = 0, trunc = 0;
    printf("file: %s\n", in_file);
    printf("accepts %d; listener setsockopt: %s (%d calls); listener selects %d (timed out %d, timeouts ms ", accepts,
           listener_opts[0] ? listener_opts : "none", listener_setsockopt_n, listener_sel.count, listener_sel.timed_out);
    print_timeouts(&listener_sel);
    printf(")\n\n%4s %4s %-22s %7s %6s %6s %5s %5s %-16s %6s %6s %7s %8s\n", "conn", "fd", "peer", "NODELAY", "RCVTMO",
           "SNDTMO", "reqs", "resps", "sends/resp", "selects", "tmo'd", "tmo+buf", "timeouts");
    for (i = 0; i < nconns; i++) {
        struct sconn *c = &conns[i];
        char spr[17] = "";
        if (handed_over_conn(c))
            continue;
        num++;
        size_t o = 0;
        for (j = 0; j < c->responses && o + 4 < sizeof spr; j++)
            o += (size_t)snprintf(spr + o, sizeof spr - o, "%s%d", j ? "," : "", c->sends[j]);
        if (j < c->responses && o + 1 < sizeof spr)
            spr[o - 1] = '+';
        printf("%4zu %4ld %-22s %7d %6d %6d %5d %5d %-16s %6d %6d %7d ", num, c->fd, c->peer[0] ? c->peer : "-",
               c->tcp_nodelay, c->so_rcvtimeo, c->so_sndtimeo, c->requests_read, c->responses, spr[0] ? spr : "-",
               c->sel.count, c->sel.timed_out, c->sel.timed_out_buffered);
        print_timeouts(&c->sel);
        printf("\n");
        nodelay += c->tcp_nodelay;
        trunc += c->truncated;
    }
    printf("\nTCP_NODELAY setsockopt total: %d", nodelay + nodelay_unattached);
    if (nodelay_unattached)
        printf(" (%d on fds never tied to a connection, e.g. Wine's transient dups)", nodelay_unattached);
    printf("\n");
    if (handed_over)
        printf("%d accepted connections were handed to another process (shown where their traffic is)\n",
               handed_over);
    if (trunc)
        printf("warning: %d reads had data truncated by strace -s; request counts are lower bounds\n", trunc);
}

static void free_all(void)
{
    size_t i;
    for (i = 0; i < nconns; i++) {
        free(conns[i].sends);
        free(conns[i].rbuf);
    }
    for (i = 0; i < npend; i++)
        free(pend[i].args);
    free(pend);
    free(conns);
    sf_free();
    /* back to the start state: the fuzz target analyses many logs */
    conns = NULL;
    pend = NULL;
    nconns = capconns = npend = cappend = 0;
    listener_opts[0] = 0;
    listener_setsockopt_n = accepts = calls_parsed = handed_over = ndisc_groups = nodelay_unattached = 0;
    memset(&listener_sel, 0, sizeof listener_sel);
    t_first = -1;
}

#ifndef SA_NO_MAIN
/* Every line of the log through process_line; dies with one line on input
 * that is not an strace -f -tt -T log. */
static void read_log(FILE *f)
{
    int nlines = 0, nbad = 0, ok_lines = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        struct st_line L;
        nlines++;
        if (memchr(line, 0, (size_t)n))
            die("strace-analyse %s: line %d: binary data, not an strace log", in_file, nlines);
        if (line[n - 1] != '\n') /* strace ends every line with a newline */
            die("strace-analyse %s: line %d: truncated (last line has no newline)", in_file, nlines);
        if (strace_parse_line(line, (size_t)n, &L) == ST_BAD) {
            nbad++;
            continue;
        }
        ok_lines++;
        process_line(line, (size_t)n);
    }
    free(line);
    if (ferror(f))
        die("read %s: %s", in_file, strerror(errno));
    if (nlines == 0)
        die("strace-analyse %s: empty input", in_file);
    if (ok_lines == 0)
        die("strace-analyse %s: no strace syscall lines in %d lines (not an strace -f -tt -T log?)", in_file, nlines);
    if (nbad * 2 > nlines)
        die("strace-analyse %s: %d of %d lines are not strace lines (garbage input?)", in_file, nbad, nlines);
    if (calls_parsed == 0)
        die("strace-analyse %s: no complete syscalls in input", in_file);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, ch;
    while ((ch = getopt_long(argc, argv, "jh", lo, NULL)) != -1) {
        switch (ch) {
        case 'j': json = 1; break;
        case 'h': printf("usage: strace-analyse [--json] FILE\n"); return 0;
        default: fprintf(stderr, "usage: strace-analyse [--json] FILE\n"); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: strace-analyse [--json] FILE\n");
        return 2;
    }
    in_file = argv[optind];
    FILE *f = fopen(in_file, "r");
    if (!f)
        die("fopen %s: %s", in_file, strerror(errno));
    read_log(f);
    fclose(f);
    for (size_t i = 0; i < nconns; i++)
        handed_over += handed_over_conn(&conns[i]);
    if (json)
        print_json();
    else
        print_table();
    free_all();
    return 0;
}
#endif /* SA_NO_MAIN */
