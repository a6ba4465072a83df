/* strace_analyse.c - per-connection syscall evidence from an strace log.
 *
 * Build: make build/strace-analyse (with the common sources).
 *
 * Input: strace -f -tt -T -s 65535 -e trace=network,select,pselect6,poll,read,write,close -o FILE
 * Usage: strace-analyse [--json] FILE
 * Exit 0 ok, 1 bad input, 2 usage error.
 */
#include "strace_analyse.h"

#include "../common/http_request.h"
#include "../common/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Pure helpers                                                        */
/* ------------------------------------------------------------------ */

static const char *skip_sp(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Parse " <0.000123>" at the end; returns µs or -1 and sets *endp to the
 * position of '<' (or e). */
static int64_t parse_dur(const char *s, const char *e, const char **endp)
{
    const char *p = e;
    int64_t sec = 0, us = 0;
    int digits = 0;
    while (p > s && (p[-1] == ' ' || p[-1] == '\r'))
        p--;
    *endp = e;
    if (p == s || p[-1] != '>')
        return -1;
    {
        const char *q = p - 1;
        while (q > s && q[-1] != '<')
            q--;
        if (q == s)
            return -1;
        *endp = q - 1;
        while (q < p - 1 && isdigit((unsigned char)*q))
            sec = sec * 10 + (*q++ - '0');
        if (q < p - 1 && *q == '.') {
            q++;
            while (q < p - 1 && isdigit((unsigned char)*q) && digits < 6) {
                us = us * 10 + (*q++ - '0');
                digits++;
            }
            while (digits++ < 6)
                us *= 10;
        }
    }
    return sec * 1000000 + us;
}

/* Find " = " that separates args from the return value: the last one
 * outside quotes at paren depth 0 after the opening paren of the call. */
static const char *find_ret_sep(const char *s, const char *e, int depth0)
{
    const char *p;
    int depth = depth0, inq = 0;
    for (p = s; p < e; p++) {
        if (inq) {
            if (*p == '\\' && p + 1 < e)
                p++;
            else if (*p == '"')
                inq = 0;
            continue;
        }
        if (*p == '"')
            inq = 1;
        else if (*p == '(' || *p == '[' || *p == '{')
            depth++;
        else if (*p == ')' || *p == ']' || *p == '}') {
            depth--;
            if (depth < 0 && *p == ')') {   /* ")   = " closing the call */
                const char *r = skip_sp(p + 1, e);
                if (r > p + 1 && r + 1 < e && r[0] == '=' && r[1] == ' ')
                    return p;
                return NULL;
            }
        }
    }
    return NULL;
}

enum st_kind strace_parse_line(const char *line, size_t len, struct st_line *out)
{
    const char *p = line, *e = line + len, *q;
    memset(out, 0, sizeof *out);
    out->t_us = -1;
    out->dur_us = -1;
    while (e > p && (e[-1] == '\n' || e[-1] == '\r'))
        e--;
    p = skip_sp(p, e);
    /* pid: "1234 " or "[pid 1234] " */
    if (e - p > 5 && memcmp(p, "[pid", 4) == 0) {
        p = skip_sp(p + 4, e);
        while (p < e && isdigit((unsigned char)*p))
            out->pid = out->pid * 10 + (*p++ - '0');
        if (p >= e || *p != ']')
            return ST_BAD;
        p = skip_sp(p + 1, e);
    } else {
        q = p;
        while (q < e && isdigit((unsigned char)*q))
            q++;
        if (q > p && q < e && (*q == ' ' || *q == '\t')) {   /* a time is followed by ':' or '.' */
            for (; p < q; p++)
                out->pid = out->pid * 10 + (*p - '0');
            p = skip_sp(q, e);
        }
    }
    /* time: HH:MM:SS.uuuuuu (or seconds.uuuuuu for -ttt) */
    if (p < e && isdigit((unsigned char)*p)) {
        int64_t h = 0, m = 0, s = 0, us = 0;
        int digits = 0;
        q = p;
        while (q < e && isdigit((unsigned char)*q))
            h = h * 10 + (*q++ - '0');
        if (q < e && *q == ':') {
            q++;
            while (q < e && isdigit((unsigned char)*q))
                m = m * 10 + (*q++ - '0');
            if (q >= e || *q != ':')
                return ST_BAD;
            q++;
            while (q < e && isdigit((unsigned char)*q))
                s = s * 10 + (*q++ - '0');
        } else {
            s = h;
            h = 0;
        }
        if (q < e && *q == '.') {
            q++;
            while (q < e && isdigit((unsigned char)*q)) {
                if (digits < 6) {
                    us = us * 10 + (*q - '0');
                    digits++;
                }
                q++;
            }
            while (digits++ < 6)
                us *= 10;
        }
        if (q >= e || *q != ' ')
            return ST_BAD;
        out->t_us = ((h * 60 + m) * 60 + s) * 1000000 + us;
        p = skip_sp(q, e);
    }
    if (p >= e)
        return ST_BAD;
    if (e - p >= 3 && memcmp(p, "+++", 3) == 0)
        return out->kind = ST_EXIT;
    if (e - p >= 3 && memcmp(p, "---", 3) == 0)
        return out->kind = ST_SIGNAL;
    if (e - p >= 5 && memcmp(p, "<... ", 5) == 0) {
        /* <... name resumed>rest) = ret <dur> */
        size_t nl = 0;
        p += 5;
        while (p < e && (isalnum((unsigned char)*p) || *p == '_') && nl + 1 < sizeof out->name)
            out->name[nl++] = *p++;
        out->name[nl] = 0;
        if (!nl || e - p < 9 || memcmp(p, " resumed>", 9) != 0)
            return ST_BAD;
        p += 9;
        out->kind = ST_RESUMED;
        q = find_ret_sep(p, e, 0);
        if (!q)
            return ST_BAD;
    } else {
        size_t nl = 0;
        while (p < e && (isalnum((unsigned char)*p) || *p == '_') && nl + 1 < sizeof out->name)
            out->name[nl++] = *p++;
        out->name[nl] = 0;
        if (!nl || p >= e || *p != '(' || isdigit((unsigned char)out->name[0]))
            return ST_BAD;
        p++;
        {
            static const char unf[] = "<unfinished ...>";
            size_t ul = sizeof unf - 1;
            if ((size_t)(e - p) >= ul && memcmp(e - ul, unf, ul) == 0) {
                const char *a = e - ul;
                while (a > p && a[-1] == ' ')
                    a--;
                out->args = p;
                out->args_len = (size_t)(a - p);
                return out->kind = ST_UNFINISHED;
            }
        }
        out->kind = ST_CALL;
        q = find_ret_sep(p, e, 0);
        if (!q)
            return ST_BAD;
    }
    out->args = p;
    out->args_len = (size_t)(q - p);
    /* q points at ')' of ")   = " */
    p = skip_sp(q + 1, e) + 2;
    {
        const char *dend;
        out->dur_us = parse_dur(p, e, &dend);
        if (p < dend && *p == '?') {
            out->ret = -1;
            out->ret_known = 0;
            p++;
        } else {
            int neg = 0;
            long v = 0;
            if (p < dend && *p == '-') {
                neg = 1;
                p++;
            }
            if (p >= dend || !isdigit((unsigned char)*p))
                return out->kind = ST_BAD;
            if (dend - p > 2 && p[0] == '0' && p[1] == 'x') {
                p += 2;
                while (p < dend && isxdigit((unsigned char)*p))
                    p++;
                v = 0;
            } else {
                while (p < dend && isdigit((unsigned char)*p))
                    v = v * 10 + (*p++ - '0');
            }
            out->ret = neg ? -v : v;
            out->ret_known = 1;
        }
        p = skip_sp(p, dend);
        out->detail = p;
        while (dend > p && dend[-1] == ' ')
            dend--;
        out->detail_len = (size_t)(dend - p);
    }
    return out->kind;
}

int st_split_args(const char *a, size_t n, const char **starts, size_t *lens, int max)
{
    size_t i, s = 0;
    int depth = 0, inq = 0, cnt = 0;
    if (n == 0)
        return 0;
    for (i = 0; i <= n; i++) {
        if (i < n) {
            char c = a[i];
            if (inq) {
                if (c == '\\' && i + 1 < n)
                    i++;
                else if (c == '"')
                    inq = 0;
                continue;
            }
            if (c == '"') {
                inq = 1;
                continue;
            }
            if (c == '(' || c == '[' || c == '{') {
                depth++;
                continue;
            }
            if (c == ')' || c == ']' || c == '}') {
                depth--;
                continue;
            }
            if (c != ',' || depth > 0)
                continue;
        }
        if (cnt < max) {
            size_t b = s, e = i;
            while (b < e && a[b] == ' ')
                b++;
            while (e > b && a[e - 1] == ' ')
                e--;
            starts[cnt] = a + b;
            lens[cnt] = e - b;
        }
        cnt++;
        s = i + 1;
    }
    return cnt;
}

long st_unescape(const char *s, size_t n, unsigned char *out, size_t cap, size_t *used)
{
    size_t i = 1;
    long o = 0;
    if (n == 0 || s[0] != '"')
        return -1;
    while (i < n && s[i] != '"') {
        int c = (unsigned char)s[i];
        if (c == '\\' && i + 1 < n) {
            i++;
            c = (unsigned char)s[i];
            switch (c) {
            case 'n': c = '\n'; i++; break;
            case 'r': c = '\r'; i++; break;
            case 't': c = '\t'; i++; break;
            case 'v': c = '\v'; i++; break;
            case 'f': c = '\f'; i++; break;
            case 'a': c = '\a'; i++; break;
            case 'b': c = '\b'; i++; break;
            case 'e': c = 27; i++; break;
            case 'x': {
                int v = 0, d = 0;
                i++;
                while (i < n && d < 2 && isxdigit((unsigned char)s[i])) {
                    int h = tolower((unsigned char)s[i]);
                    v = v * 16 + (h <= '9' ? h - '0' : h - 'a' + 10);
                    i++;
                    d++;
                }
                c = v;
                break;
            }
            default:
                if (c >= '0' && c <= '7') {
                    int v = 0, d = 0;
                    while (i < n && d < 3 && s[i] >= '0' && s[i] <= '7') {
                        v = v * 8 + (s[i] - '0');
                        i++;
                        d++;
                    }
                    c = v & 0xff;
                } else {
                    i++;   /* \\ \" \' and unknown: the char itself */
                }
            }
        } else {
            i++;
        }
        if ((size_t)o < cap)
            out[o] = (unsigned char)c;
        o++;
    }
    if (i >= n)
        return -1;   /* unterminated */
    i++;
    if (i + 3 <= n && memcmp(s + i, "...", 3) == 0)
        i += 3;
    if (used)
        *used = i;
    return o;
}

static int is_name(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(name, *list) == 0)
            return 1;
    return 0;
}

static const char *const iov_calls[] = {"writev", "readv", "sendmsg", "recvmsg", "pwritev", "preadv", NULL};

unsigned char *st_call_data(const char *name, const char *args, size_t n, size_t *len)
{
    unsigned char *buf = NULL;
    size_t total = 0;
    *len = 0;
    if (is_name(name, iov_calls)) {
        /* every iov_base="..." */
        size_t i = 0;
        int found = 0;
        while (i + 10 <= n) {
            if (memcmp(args + i, "iov_base=\"", 10) == 0) {
                size_t used;
                long l = st_unescape(args + i + 9, n - i - 9, NULL, 0, &used);
                if (l < 0)
                    break;
                buf = realloc(buf, total + (size_t)l + 1);
                if (!buf)
                    return NULL;
                st_unescape(args + i + 9, n - i - 9, buf + total, (size_t)l, &used);
                total += (size_t)l;
                i += 9 + used;
                found = 1;
            } else if (args[i] == '"') {
                size_t used;
                if (st_unescape(args + i, n - i, NULL, 0, &used) < 0)
                    break;
                i += used;
            } else {
                i++;
            }
        }
        if (!found)
            return NULL;
    } else {
        const char *st[3];
        size_t sl[3];
        long l;
        size_t used;
        if (st_split_args(args, n, st, sl, 3) < 2 || sl[1] == 0 || st[1][0] != '"')
            return NULL;
        l = st_unescape(st[1], sl[1], NULL, 0, &used);
        if (l < 0)
            return NULL;
        buf = malloc((size_t)l + 1);
        if (!buf)
            return NULL;
        st_unescape(st[1], sl[1], buf, (size_t)l, &used);
        total = (size_t)l;
    }
    *len = total;
    return buf;
}

static long num_after(const char *s, size_t n, const char *key, int *ok)
{
    size_t kl = strlen(key), i;
    long v = 0;
    *ok = 0;
    for (i = 0; i + kl <= n; i++)
        if (memcmp(s + i, key, kl) == 0) {
            i += kl;
            while (i < n && isdigit((unsigned char)s[i])) {
                v = v * 10 + (s[i++] - '0');
                *ok = 1;
            }
            return v;
        }
    return 0;
}

long st_timeout_ms(const char *s, size_t n, int nsec)
{
    int ok1, ok2;
    long sec, sub;
    if (n == 4 && memcmp(s, "NULL", 4) == 0)
        return -1;
    if (n > 0 && (isdigit((unsigned char)s[0]) || s[0] == '-')) {
        long v = strtol(s, NULL, 10);
        return v < 0 ? -1 : v;
    }
    if (n < 2 || s[0] != '{')
        return -2;
    sec = num_after(s, n, "tv_sec=", &ok1);
    if (ok1) {
        sub = num_after(s, n, nsec ? "tv_nsec=" : "tv_usec=", &ok2);
        if (!ok2)
            sub = num_after(s, n, nsec ? "tv_usec=" : "tv_nsec=", &ok2), nsec = !nsec;
        if (!ok2)
            return -2;
    } else {
        /* old format {0, 50000} */
        char *end;
        sec = strtol(s + 1, &end, 10);
        if (end == s + 1 || *end != ',')
            return -2;
        sub = strtol(end + 1, NULL, 10);
    }
    return sec * 1000 + (nsec ? sub / 1000000 : sub / 1000);
}

int st_fdset_has(const char *s, size_t n, long fd)
{
    size_t i = 0;
    if (n == 0 || s[0] != '[')
        return 0;
    while (i < n) {
        long v;
        if (i + 3 < n && memcmp(s + i, "fd=", 3) == 0)
            i += 3;
        if (i < n && isdigit((unsigned char)s[i]) && (i == 0 || !isalnum((unsigned char)s[i - 1]) || s[i - 1] == '=')) {
            v = 0;
            while (i < n && isdigit((unsigned char)s[i]))
                v = v * 10 + (s[i++] - '0');
            if (v == fd)
                return 1;
            continue;
        }
        /* skip words like events=POLLIN, revents=... */
        if (i + 7 < n && memcmp(s + i, "events=", 7) == 0) {
            while (i < n && s[i] != ',' && s[i] != '}')
                i++;
            continue;
        }
        i++;
    }
    return 0;
}

#ifndef SA_NO_MAIN

#include <getopt.h>

/* ------------------------------------------------------------------ */
/* Tracking                                                            */
/* ------------------------------------------------------------------ */

#define MAX_TIMEOUTS 8

struct selects {
    int count, timed_out, timed_out_buffered;
    long timeouts[MAX_TIMEOUTS];
    int ntimeouts;
    int64_t max_dur_us, timed_out_dur_us;
};

struct sconn {
    long fd, accept_pid;
    int64_t t_accept;
    char peer[64];
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
static long fdmap[65536];        /* fd -> conn index + 1, 0 = none */
static int listener[65536];      /* fd is a listening socket */
static struct pending *pend;
static size_t npend, cappend;
static const char *in_file = "";
static char listener_opts[512];
static int listener_setsockopt_n, accepts, calls_parsed;
static struct selects listener_sel;
static int64_t t_first = -1;

static long arg_long(const char *s, size_t n)
{
    char tmp[32];
    if (n == 0 || n >= sizeof tmp || !(isdigit((unsigned char)s[0]) || s[0] == '-'))
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    return strtol(tmp, NULL, 10);
}

static struct sconn *conn_of(long fd)
{
    if (fd < 0 || fd >= 65536 || !fdmap[fd])
        return NULL;
    return &conns[fdmap[fd] - 1];
}

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
        s->timed_out_dur_us += dur > 0 ? dur : 0;
        if (buffered)
            s->timed_out_buffered++;
    }
}

static void on_select(const char *name, const char *args, size_t n, long ret, int64_t dur)
{
    const char *st[6];
    size_t sl[6];
    int na = st_split_args(args, n, st, sl, 6), isp = strcmp(name, "poll") == 0 || strcmp(name, "ppoll") == 0;
    long tmo;
    int k;
    const char *sets[3];
    size_t setl[3];
    int nsets = 0;
    if (isp) {
        if (na < 3)
            return;
        tmo = st_timeout_ms(st[2], sl[2], strcmp(name, "ppoll") == 0);
        sets[0] = st[0];
        setl[0] = sl[0];
        nsets = 1;
    } else {
        if (na < 5)
            return;
        tmo = st_timeout_ms(st[4], sl[4], strcmp(name, "pselect6") == 0);
        for (k = 1; k <= 3; k++) {
            sets[nsets] = st[k];
            setl[nsets++] = sl[k];
        }
    }
    /* listener */
    {
        long fd;
        for (fd = 0; fd < 1024; fd++) {
            int in = 0;
            for (k = 0; k < nsets; k++)
                in |= st_fdset_has(sets[k], setl[k], fd);
            if (!in)
                continue;
            if (listener[fd])
                sel_add(&listener_sel, tmo, ret, dur, 0);
            else {
                struct sconn *c = conn_of(fd);
                if (c)
                    sel_add(&c->sel, tmo, ret, dur, c->requests_read > c->responses);
            }
        }
    }
}

static void on_setsockopt(const char *args, size_t n)
{
    const char *st[5];
    size_t sl[5];
    long fd;
    char opt[48];
    struct sconn *c;
    if (st_split_args(args, n, st, sl, 5) < 3)
        return;
    fd = arg_long(st[0], sl[0]);
    snprintf(opt, sizeof opt, "%.*s", (int)(sl[2] < 40 ? sl[2] : 40), st[2]);
    if (fd >= 0 && fd < 65536 && listener[fd]) {
        listener_setsockopt_n++;
        if (!strstr(listener_opts, opt) && strlen(listener_opts) + strlen(opt) + 2 < sizeof listener_opts) {
            if (listener_opts[0])
                strcat(listener_opts, ",");
            strcat(listener_opts, opt);
        }
        return;
    }
    c = conn_of(fd);
    if (!c) {
        /* before listen(): remember on a socket that may become the listener */
        if (fd >= 0 && fd < 65536) {
            listener_setsockopt_n++;
            if (!strstr(listener_opts, opt) && strlen(listener_opts) + strlen(opt) + 2 < sizeof listener_opts) {
                if (listener_opts[0])
                    strcat(listener_opts, ",");
                strcat(listener_opts, opt);
            }
        }
        return;
    }
    if (strcmp(opt, "TCP_NODELAY") == 0)
        c->tcp_nodelay++;
    else if (strncmp(opt, "SO_RCVTIMEO", 11) == 0)
        c->so_rcvtimeo++;
    else if (strncmp(opt, "SO_SNDTIMEO", 11) == 0)
        c->so_sndtimeo++;
    else
        c->setsockopt_other++;
}

static void on_accept(const char *args, size_t n, long ret, long pid, int64_t t)
{
    const char *st[2];
    size_t sl[2];
    struct sconn *c;
    long lfd;
    if (ret < 0 || ret >= 65536)
        return;
    if (st_split_args(args, n, st, sl, 2) < 1)
        return;
    lfd = arg_long(st[0], sl[0]);
    if (lfd >= 0 && lfd < 65536)
        listener[lfd] = 1;
    if (nconns == capconns) {
        capconns = capconns ? capconns * 2 : 16;
        conns = xrealloc(conns, capconns * sizeof *conns);
    }
    c = &conns[nconns];
    memset(c, 0, sizeof *c);
    c->fd = ret;
    c->accept_pid = pid;
    c->t_accept = t;
    {
        int ok1;
        long port = num_after(args, n, "sin_port=htons(", &ok1);
        const char *a = memmem(args, n, "inet_addr(\"", 11);
        if (!a)
            a = memmem(args, n, "inet_pton(AF_INET6, \"", 21);
        if (ok1 && a) {
            const char *b = memchr(a, '"', (size_t)(args + n - a));
            const char *e2 = b ? memchr(b + 1, '"', (size_t)(args + n - b - 1)) : NULL;
            if (b && e2)
                snprintf(c->peer, sizeof c->peer, "%.*s:%ld", (int)(e2 - b - 1 < 46 ? e2 - b - 1 : 46), b + 1, port);
        }
    }
    fdmap[ret] = (long)++nconns;
    accepts++;
}

static void on_write(struct sconn *c, const char *name, const char *args, size_t n, long ret)
{
    size_t dl;
    unsigned char *d = st_call_data(name, args, n, &dl);
    if (ret > 0)
        c->bytes_written += (size_t)ret;
    if (d && dl >= 7 && memcmp(d, "HTTP/1.", 7) == 0) {
        if (c->responses == c->cap_sends) {
            c->cap_sends = c->cap_sends ? c->cap_sends * 2 : 8;
            c->sends = xrealloc(c->sends, (size_t)c->cap_sends * sizeof *c->sends);
        }
        c->sends[c->responses++] = 1;
    } else if (c->responses > 0) {
        c->sends[c->responses - 1]++;
    } else {
        c->sends_before_first++;
    }
    free(d);
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
    if (!d)
        return;
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

static void on_call(long pid, const char *name, const char *args, size_t n, long ret, int ret_known, int64_t t,
                    int64_t dur)
{
    const char *st[2];
    size_t sl[2];
    long fd = -1;
    struct sconn *c;
    (void)ret_known;
    calls_parsed++;
    if (st_split_args(args, n, st, sl, 2) >= 1)
        fd = arg_long(st[0], sl[0]);
    if (strcmp(name, "accept") == 0 || strcmp(name, "accept4") == 0) {
        on_accept(args, n, ret, pid, t + (dur > 0 ? dur : 0));
        return;
    }
    if (strcmp(name, "listen") == 0 && fd >= 0 && fd < 65536) {
        listener[fd] = 1;
        return;
    }
    if (strcmp(name, "setsockopt") == 0) {
        on_setsockopt(args, n);
        return;
    }
    if (strcmp(name, "select") == 0 || strcmp(name, "pselect6") == 0 || strcmp(name, "poll") == 0 ||
        strcmp(name, "ppoll") == 0 || strcmp(name, "_newselect") == 0) {
        on_select(name, args, n, ret, dur);
        return;
    }
    c = conn_of(fd);
    if (strcmp(name, "socket") == 0 && ret >= 0 && ret < 65536) {
        listener[ret] = 0;
        fdmap[ret] = 0;
        return;
    }
    if (!c) {
        if (strcmp(name, "close") == 0 && fd >= 0 && fd < 65536)
            listener[fd] = 0;
        return;
    }
    if (is_name(name, write_calls))
        on_write(c, name, args, n, ret);
    else if (is_name(name, read_calls))
        on_read(c, name, args, n, ret);
    else if (strcmp(name, "shutdown") == 0)
        c->shutdowns++;
    else if (strcmp(name, "close") == 0) {
        c->closed = 1;
        fdmap[fd] = 0;
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

static void print_timeouts(const struct selects *s)
{
    int i;
    printf("[");
    for (i = 0; i < s->ntimeouts; i++)
        printf("%s%ld", i ? ", " : "", s->timeouts[i]);
    printf("]");
}

static void print_json(void)
{
    size_t i;
    int j, smax = 0, smin = 0, have = 0, nodelay = 0, resp = 0, req = 0, tob = 0;
    printf("{\n  \"connections\": [");
    for (i = 0; i < nconns; i++) {
        struct sconn *c = &conns[i];
        printf("%s\n    {\"conn\": %zu, \"fd\": %ld, \"pid\": %ld, \"t_accept_us\": %" PRId64 ", \"peer\": \"%s\", "
               "\"tcp_nodelay\": %d, \"so_rcvtimeo\": %d, \"so_sndtimeo\": %d, \"setsockopt_other\": %d, "
               "\"responses\": %d, \"sends_per_response\": [",
               i ? "," : "", i + 1, c->fd, c->accept_pid, c->t_accept, c->peer, c->tcp_nodelay, c->so_rcvtimeo,
               c->so_sndtimeo, c->setsockopt_other, c->responses);
        for (j = 0; j < c->responses; j++) {
            printf("%s%d", j ? ", " : "", c->sends[j]);
            if (!have || c->sends[j] > smax)
                smax = c->sends[j];
            if (!have || c->sends[j] < smin)
                smin = c->sends[j];
            have = 1;
        }
        printf("], \"sends_before_first_response\": %d, \"requests_read\": %d, \"truncated_reads\": %d, \"reads\": %d, \"bytes_read\": %zu, "
               "\"bytes_written\": %zu, \"eof\": %s, \"shutdowns\": %d, \"closed\": %s, "
               "\"selects\": {\"count\": %d, \"timeouts\": ",
               c->sends_before_first, c->requests_read, c->truncated, c->reads, c->bytes_read, c->bytes_written,
               c->eof ? "true" : "false", c->shutdowns, c->closed ? "true" : "false", c->sel.count);
        print_timeouts(&c->sel);
        printf(", \"timed_out\": %d, \"timed_out_with_buffered_request\": %d, \"timed_out_total_us\": %" PRId64
               ", \"max_duration_us\": %" PRId64 "}}",
               c->sel.timed_out, c->sel.timed_out_buffered, c->sel.timed_out_dur_us, c->sel.max_dur_us);
        nodelay += c->tcp_nodelay;
        resp += c->responses;
        req += c->requests_read;
        tob += c->sel.timed_out_buffered;
    }
    printf("\n  ],\n  \"accepts\": %d,\n  \"tcp_nodelay_total\": %d,\n  \"responses_total\": %d,\n"
           "  \"requests_read_total\": %d,\n  \"timed_out_with_buffered_request_total\": %d,\n",
           accepts, nodelay, resp, req, tob);
    printf("  \"listener_setsockopt\": [");
    {
        char tmp[sizeof listener_opts], *tok, *sv = NULL;
        int first = 1;
        memcpy(tmp, listener_opts, sizeof tmp);
        for (tok = strtok_r(tmp, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
            printf("%s\"%s\"", first ? "" : ", ", tok);
            first = 0;
        }
    }
    printf("],\n  \"listener_setsockopt_calls\": %d,\n", listener_setsockopt_n);
    printf("  \"listener_selects\": {\"count\": %d, \"timeouts\": ", listener_sel.count);
    print_timeouts(&listener_sel);
    printf(", \"timed_out\": %d},\n", listener_sel.timed_out);
    if (have)
        printf("  \"sends_per_response_max\": %d,\n  \"sends_per_response_min\": %d\n}\n", smax, smin);
    else
        printf("  \"sends_per_response_max\": null,\n  \"sends_per_response_min\": null\n}\n");
}

static void print_table(void)
{
    size_t i;
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
        size_t o = 0;
        for (j = 0; j < c->responses && o + 4 < sizeof spr; j++)
            o += (size_t)snprintf(spr + o, sizeof spr - o, "%s%d", j ? "," : "", c->sends[j]);
        if (j < c->responses && o + 1 < sizeof spr)
            spr[o - 1] = '+';
        printf("%4zu %4ld %-22s %7d %6d %6d %5d %5d %-16s %6d %6d %7d ", i + 1, c->fd, c->peer[0] ? c->peer : "-",
               c->tcp_nodelay, c->so_rcvtimeo, c->so_sndtimeo, c->requests_read, c->responses, spr[0] ? spr : "-",
               c->sel.count, c->sel.timed_out, c->sel.timed_out_buffered);
        print_timeouts(&c->sel);
        printf("\n");
        nodelay += c->tcp_nodelay;
        trunc += c->truncated;
    }
    printf("\nTCP_NODELAY setsockopt total: %d\n", nodelay);
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
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, ch, nlines = 0, nbad = 0, ok_lines = 0;
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int last_nl = 1;
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
    f = fopen(in_file, "r");
    if (!f)
        die("fopen %s: %s", in_file, strerror(errno));
    while ((n = getline(&line, &cap, f)) > 0) {
        struct st_line L;
        enum st_kind k;
        nlines++;
        last_nl = line[n - 1] == '\n';
        if (memchr(line, 0, (size_t)n)) {
            free(line);
            fclose(f);
            die("strace-analyse %s: line %d: binary data, not an strace log", in_file, nlines);
        }
        if (!last_nl) {   /* strace ends every line with a newline */
            free(line);
            fclose(f);
            die("strace-analyse %s: line %d: truncated (last line has no newline)", in_file, nlines);
        }
        k = strace_parse_line(line, (size_t)n, &L);
        if (k == ST_BAD) {
            nbad++;
            continue;
        }
        ok_lines++;
        process_line(line, (size_t)n);
    }
    free(line);
    if (ferror(f)) {
        fclose(f);
        die("read %s: %s", in_file, strerror(errno));
    }
    fclose(f);
    if (nlines == 0)
        die("strace-analyse %s: empty input", in_file);
    if (ok_lines == 0)
        die("strace-analyse %s: no strace syscall lines in %d lines (not an strace -f -tt -T log?)", in_file, nlines);
    if (nbad * 2 > nlines)
        die("strace-analyse %s: %d of %d lines are not strace lines (garbage input?)", in_file, nbad, nlines);
    if (calls_parsed == 0)
        die("strace-analyse %s: no complete syscalls in input", in_file);
    if (json)
        print_json();
    else
        print_table();
    free_all();
    return 0;
}

#endif /* SA_NO_MAIN */
