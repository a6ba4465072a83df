/* hostile.c - hostile-input corpus for server-min (and any server with the
 * same flags and routes).
 *
 *   build/hostile --server build/<variant>/server-min [--variant NAME]
 *                 [--cases a,b,c] [--conns N] [--slow K] [--log-dir DIR]
 *                 [--launcher CMD]... [-- extra server flags]
 *
 * Every case starts its own server (`--port 0`, waits for the
 * "listening ADDR:PORT" line on stdout by poll()), sends one hostile input or
 * scenario over raw TCP, checks what came back against the rules of
 * fphttpserver (DESIGN sections 2 and 3), then checks that the server still
 * serves a GET /ping on a fresh connection and that SIGTERM makes it exit 0.
 * Every wait is a poll() deadline; --slow K multiplies them (sanitizers,
 * valgrind).  Output: one "TEST: <variant> <case> [ OK ]" or
 * "[FAIL] <reason>" line per case, "INFO:" lines with what was measured, and
 * "N passed, N failed".  Exit status: the number of failures.
 *
 * Expectations depend on which defects the variant fixes, taken from its name
 * (DESIGN section 4): B2 buffer-aware-pending, B4 announce-close,
 * B5 keep-surplus-bytes; "all" fixes every one; anything else is treated as
 * stock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define MAX_ARGS 64

/* ---- options and global counters -------------------------------------- */

static struct {
    const char *server;
    char variant[128];
    const char *cases;       /* comma list, NULL = all */
    int conns;               /* connections of the leak cases */
    int slow;                /* deadline multiplier */
    char log_dir[512];
    const char *launcher[MAX_ARGS];
    int nlauncher;
    const char *extra[MAX_ARGS];
    int nextra;
    int fix_b2, fix_b4, fix_b5;
} opt = { .conns = 10000, .slow = 1 };

static unsigned long n_inputs, n_requests, n_connections;
static int n_pass, n_fail;

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A wait of ms milliseconds, scaled for slow builds. */
static int T(int ms)
{
    return ms * opt.slow;
}

/* ---- the server under test --------------------------------------------- */

struct srv {
    pid_t pid;
    int pidfd;
    int out;          /* read end of its stdout */
    int port;
    int reaped;
    int status;       /* waitpid status once reaped */
    char log[600];
};

static int srv_reap(struct srv *s, int block)
{
    pid_t r;

    if (s->reaped)
        return 1;
    do
        r = waitpid(s->pid, &s->status, block ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == s->pid)
        s->reaped = 1;
    return s->reaped;
}

/* Describe how the server ended: "" for exit 0. */
static void srv_exit_text(const struct srv *s, char *out, size_t cap)
{
    if (WIFEXITED(s->status) && WEXITSTATUS(s->status) == 0)
        out[0] = '\0';
    else if (WIFEXITED(s->status))
        snprintf(out, cap, "server exited with status %d",
                 WEXITSTATUS(s->status));
    else if (WIFSIGNALED(s->status))
        snprintf(out, cap, "server killed by signal %d (%s)",
                 WTERMSIG(s->status), strsignal(WTERMSIG(s->status)));
    else
        snprintf(out, cap, "server ended oddly (status 0x%x)", s->status);
}

/* Wait for the server to end, up to ms.  1 = ended. */
static int srv_wait(struct srv *s, int ms)
{
    long long end = now_ms() + ms;

    while (!srv_reap(s, 0)) {
        long long left = end - now_ms();
        struct pollfd p = { .fd = s->pidfd, .events = POLLIN };

        if (left <= 0)
            return 0;
        if (s->pidfd >= 0)
            poll(&p, 1, (int)left);
        else
            poll(NULL, 0, left < 10 ? (int)left : 10);
    }
    return 1;
}

static int srv_start(struct srv *s, const char *casename,
                     const char *const *flags, char *why, size_t whycap)
{
    const char *argv[3 * MAX_ARGS];
    int n = 0, i, pout[2], logfd;
    char line[256];
    size_t got = 0;
    long long end;

    memset(s, 0, sizeof *s);
    s->pidfd = -1;
    snprintf(s->log, sizeof s->log, "%s/%s.log", opt.log_dir, casename);
    for (i = 0; i < opt.nlauncher; i++)
        argv[n++] = opt.launcher[i];
    argv[n++] = opt.server;
    argv[n++] = "--port";
    argv[n++] = "0";
    for (i = 0; flags && flags[i]; i++)
        argv[n++] = flags[i];
    for (i = 0; i < opt.nextra; i++)
        argv[n++] = opt.extra[i];
    argv[n] = NULL;
    if (pipe2(pout, O_CLOEXEC) != 0) {
        snprintf(why, whycap, "pipe: %s", strerror(errno));
        return -1;
    }
    logfd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (logfd < 0) {
        snprintf(why, whycap, "%.200s: %s", s->log, strerror(errno));
        close(pout[0]);
        close(pout[1]);
        return -1;
    }
    s->pid = fork();
    if (s->pid == 0) {
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGPIPE, SIG_DFL);
        dup2(devnull, 0);
        dup2(pout[1], 1);
        dup2(logfd, 2);
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pout[1]);
    close(logfd);
    if (s->pid < 0) {
        snprintf(why, whycap, "fork: %s", strerror(errno));
        close(pout[0]);
        return -1;
    }
    s->out = pout[0];
    s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
    /* Readiness: the one "listening ADDR:PORT" line, by poll(). */
    end = now_ms() + T(10000);
    for (;;) {
        struct pollfd p = { .fd = s->out, .events = POLLIN };
        long long left = end - now_ms();
        char *nl, *colon;
        ssize_t r;

        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            snprintf(why, whycap, "no 'listening' line within %d ms",
                     T(10000));
            break;
        }
        r = read(s->out, line + got, sizeof line - 1 - got);
        if (r <= 0) {
            snprintf(why, whycap, "server stdout closed before 'listening'");
            break;
        }
        got += (size_t)r;
        line[got] = '\0';
        nl = strchr(line, '\n');
        if (!nl) {
            if (got == sizeof line - 1) {
                snprintf(why, whycap, "unexpected stdout: %.60s", line);
                break;
            }
            continue;
        }
        *nl = '\0';
        colon = strrchr(line, ':');
        if (strncmp(line, "listening ", 10) != 0 || !colon ||
            (s->port = atoi(colon + 1)) <= 0) {
            snprintf(why, whycap, "unexpected stdout line: %.60s", line);
            break;
        }
        return 0;
    }
    kill(s->pid, SIGKILL);
    srv_reap(s, 1);
    close(s->out);
    if (s->pidfd >= 0)
        close(s->pidfd);
    return -1;
}

/* SIGTERM, then wait; "" in why when it exited 0 in time. */
static void srv_stop(struct srv *s, char *why, size_t whycap, long long *ms)
{
    long long t0 = now_ms();

    why[0] = '\0';
    if (!s->reaped)
        kill(s->pid, SIGTERM);
    if (!srv_wait(s, (15000 + 2000 * opt.slow))) {
        /* Where is it stuck?  Each thread's syscall number (first field of
         * /proc/PID/task/TID/syscall; 43 = accept, 23 = select, 202 =
         * futex on x86-64) and wchan, for the report. */
        char where[256] = "", p[96], buf[96];
        DIR *d;
        struct dirent *e;
        size_t n = 0;

        snprintf(p, sizeof p, "/proc/%d/task", (int)s->pid);
        if ((d = opendir(p))) {
            while ((e = readdir(d)) && n < sizeof where - 40) {
                FILE *f;
                int sc = -1;

                if (e->d_name[0] == '.')
                    continue;
                snprintf(p, sizeof p, "/proc/%d/task/%.16s/syscall",
                         (int)s->pid, e->d_name);
                if ((f = fopen(p, "r"))) {
                    if (fscanf(f, "%d", &sc) != 1)
                        sc = -1;
                    fclose(f);
                }
                snprintf(p, sizeof p, "/proc/%d/task/%.16s/wchan", (int)s->pid,
                         e->d_name);
                buf[0] = '\0';
                if ((f = fopen(p, "r"))) {
                    if (!fgets(buf, sizeof buf, f))
                        buf[0] = '\0';
                    fclose(f);
                }
                n += (size_t)snprintf(where + n, sizeof where - n,
                                      " tid %.16s syscall %d %.30s;",
                                      e->d_name, sc, buf);
            }
            closedir(d);
        }
        snprintf(why, whycap, "server did not exit within %d ms of SIGTERM:%s",
                 (15000 + 2000 * opt.slow), where);
        kill(s->pid, SIGKILL);
        srv_reap(s, 1);
    } else {
        srv_exit_text(s, why, whycap);
    }
    if (ms)
        *ms = now_ms() - t0;
    close(s->out);
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->pidfd = -1;
}

/* Does the server's stderr log contain needle? */
static int srv_log_has(const struct srv *s, const char *needle)
{
    FILE *f = fopen(s->log, "r");
    char line[2048];
    int found = 0;

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void srv_log_tail(const struct srv *s, int lines)
{
    FILE *f = fopen(s->log, "r");
    static char ring[40][512];
    int n = 0, i;

    if (!f)
        return;
    if (lines > 40)
        lines = 40;
    while (fgets(ring[n % lines], sizeof ring[0], f))
        n++;
    fclose(f);
    for (i = n > lines ? n - lines : 0; i < n; i++)
        printf("    | %s", ring[i % lines]);
}

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void proc_counts(pid_t pid, int *fds, int *tasks)
{
    char p[64];

    snprintf(p, sizeof p, "/proc/%d/fd", (int)pid);
    *fds = count_dir(p);
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    *tasks = count_dir(p);
}

/* ---- client side: responses ---------------------------------------------- */

struct resp {
    int status;
    int has_connection;
    int connection_close;
    size_t body_off, body_len;
};

struct rx {
    char *buf;
    size_t len, cap, off;
    struct resp *r;
    size_t nr, rcap;
    int eof, rst, err;     /* how the connection ended (if it did) */
    long long t_first, t_end; /* ms: first byte, end of stream */
    int junk;              /* bytes that are not an HTTP response */
};

static void rx_free(struct rx *x)
{
    free(x->buf);
    free(x->r);
    memset(x, 0, sizeof *x);
}

static int hdr_is(const char *line, size_t len, const char *name,
                  const char **value, size_t *vlen)
{
    size_t n = strlen(name);

    if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
        return 0;
    *value = line + n + 1;
    *vlen = len - n - 1;
    while (*vlen && (**value == ' ' || **value == '\t')) {
        (*value)++;
        (*vlen)--;
    }
    while (*vlen && ((*value)[*vlen - 1] == ' ' || (*value)[*vlen - 1] == '\t'))
        (*vlen)--;
    return 1;
}

/* Parse every complete response in the stream so far.  A response without
 * Content-Length (the fixed 503) runs to end of stream. */
static void rx_parse(struct rx *x)
{
    while (x->off < x->len) {
        char *start = x->buf + x->off, *hend, *p;
        size_t avail = x->len - x->off, hlen;
        long long cl = -1;
        struct resp r;

        if (avail >= 5 && memcmp(start, "HTTP/", 5) != 0) {
            x->junk = 1;
            return;
        }
        hend = memmem(start, avail, "\r\n\r\n", 4);
        if (!hend)
            return;
        hlen = (size_t)(hend - start) + 4;
        memset(&r, 0, sizeof r);
        r.status = avail > 12 ? atoi(start + 9) : 0;
        p = memchr(start, '\n', hlen) + 1;
        while (p < hend + 2) {
            char *eol = memmem(p, (size_t)(hend + 2 - p), "\r\n", 2);
            const char *v;
            size_t vl;

            if (!eol)
                break;
            if (hdr_is(p, (size_t)(eol - p), "Content-Length", &v, &vl))
                cl = strtoll(v, NULL, 10);
            else if (hdr_is(p, (size_t)(eol - p), "Connection", &v, &vl)) {
                r.has_connection = 1;
                r.connection_close = vl == 5 && strncasecmp(v, "close", 5) == 0;
            }
            p = eol + 2;
        }
        if (cl < 0) {
            if (!x->eof && !x->rst)
                return;
            cl = (long long)(avail - hlen);
        }
        if (avail < hlen + (size_t)cl)
            return;
        r.body_off = x->off + hlen;
        r.body_len = (size_t)cl;
        if (x->nr == x->rcap) {
            x->rcap = x->rcap ? x->rcap * 2 : 16;
            x->r = realloc(x->r, x->rcap * sizeof *x->r);
            if (!x->r)
                abort();
        }
        x->r[x->nr++] = r;
        x->off += hlen + (size_t)cl;
    }
}

static void rx_append(struct rx *x, const char *b, size_t n)
{
    if (x->len + n + 1 > x->cap) {
        x->cap = (x->len + n + 1) * 2;
        x->buf = realloc(x->buf, x->cap);
        if (!x->buf)
            abort();
    }
    memcpy(x->buf + x->len, b, n);
    x->len += n;
    x->buf[x->len] = '\0';
}

static int rx_closed(const struct rx *x)
{
    return x->eof || x->rst || x->err;
}

static const char *rx_end_text(const struct rx *x)
{
    return x->eof ? "EOF" : x->rst ? "RST" : x->err ? "error" : "open";
}

/* One-line summary of what came back. */
static void rx_describe(const struct rx *x, long long t0, char *out, size_t cap)
{
    size_t i, n;

    n = (size_t)snprintf(out, cap, "%zu response%s", x->nr,
                         x->nr == 1 ? "" : "s");
    for (i = 0; i < x->nr && i < 3 && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%d%s", i ? "," : " [",
                              x->r[i].status,
                              x->r[i].connection_close ? "+close-hdr" : "");
    if (x->nr && n < cap)
        n += (size_t)snprintf(out + n, cap - n, "%s]", x->nr > 3 ? ",..." : "");
    if (n < cap) {
        if (rx_closed(x))
            snprintf(out + n, cap - n, ", then %s after %lld ms", rx_end_text(x),
                     x->t_end - t0);
        else
            snprintf(out + n, cap - n, ", connection still open");
    }
}

/* ---- client side: connections ------------------------------------------- */

static int cli_connect(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    n_connections++;
    return fd;
}

/* RST instead of FIN on close. */
static void cli_abort(int fd)
{
    struct linger l = { 1, 0 };

    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

/* Send out[0..outlen) while reading into x.  Stops when the connection
 * ended, when `want` (> 0) responses are complete and everything is sent, at
 * the deadline, or (idle_ms > 0) when nothing arrived for idle_ms after the
 * send finished.  Returns 1 when stopped by a condition, 0 on a time-out. */
static int xfer(int fd, const char *out, size_t outlen, struct rx *x,
                size_t want, int deadline_ms, int idle_ms)
{
    long long end = now_ms() + deadline_ms, last = now_ms();
    size_t sent = 0;
    char buf[65536];

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        long long now = now_ms(), left = end - now;

        if (rx_closed(x))
            return 1;
        if (want && x->nr >= want && sent == outlen)
            return 1;
        if (idle_ms > 0 && sent == outlen && now - last >= idle_ms)
            return 0;
        if (idle_ms > 0 && sent == outlen && idle_ms - (now - last) < left)
            left = idle_ms - (now - last);
        if (left <= 0)
            return 0;
        if (sent < outlen)
            p.events |= POLLOUT;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return 0;
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = recv(fd, buf, sizeof buf, 0);

            if (r > 0) {
                if (!x->len)
                    x->t_first = now_ms();
                rx_append(x, buf, (size_t)r);
                last = now_ms();
                rx_parse(x);
            } else if (r == 0) {
                x->eof = 1;
            } else if (errno == ECONNRESET) {
                x->rst = 1;
            } else if (errno != EAGAIN && errno != EINTR) {
                x->err = errno;
            }
            if (rx_closed(x)) {
                x->t_end = now_ms();
                rx_parse(x);
            }
        }
        if (sent < outlen && (p.revents & POLLOUT)) {
            ssize_t w = send(fd, out + sent, outlen - sent, MSG_NOSIGNAL);

            if (w > 0) {
                sent += (size_t)w;
                last = now_ms();
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                /* The server hung up while we were still sending: the rest
                 * of the input is moot; keep reading what it said. */
                sent = outlen;
            }
        }
    }
}

/* ---- test context ---------------------------------------------------------- */

struct ctx {
    struct srv *s;
    char why[512];
    int stopped;   /* the case stopped the server itself */
    int no_ping;   /* skip the after-case GET /ping */
};

static void info(const char *casename, const char *fmt, ...)
{
    va_list ap;

    printf("INFO: %s %s: ", opt.variant, casename);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static int fail(struct ctx *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    return -1;
}

/* A GET /ping on a fresh connection: 1 if it got 200 "pong". */
static int ping_ok(struct ctx *c)
{
    static const char req[] = "GET /ping HTTP/1.1\r\n\r\n";
    struct rx x = { 0 };
    int fd = cli_connect(c->s->port), ok;

    if (fd < 0)
        return 0;
    n_requests++;
    xfer(fd, req, sizeof req - 1, &x, 1, T(5000), 0);
    ok = x.nr >= 1 && x.r[0].status == 200 && x.r[0].body_len == 4 &&
         memcmp(x.buf + x.r[0].body_off, "pong", 4) == 0;
    close(fd);
    rx_free(&x);
    return ok;
}

/* Send input on a fresh connection and read until the server closes (or
 * the deadline).  x receives everything; *ms the time to the end. */
static int exchange(struct ctx *c, const char *in, size_t len, size_t want,
                    int deadline_ms, struct rx *x, long long *t0)
{
    int fd = cli_connect(c->s->port);

    if (fd < 0)
        return fail(c, "connect: %s", strerror(errno));
    n_inputs++;
    *t0 = now_ms();
    xfer(fd, in, len, x, want, deadline_ms, 0);
    close(fd);
    return 0;
}

/* The rule for a request that raises: no response, the server closes. */
static int expect_silent_close(struct ctx *c, const char *name, const char *in,
                               size_t len, int deadline_ms, int status)
{
    struct rx x = { 0 };
    char d[256], needle[32];
    long long t0;
    int rc = 0;

    if (exchange(c, in, len, 0, deadline_ms, &x, &t0))
        return -1;
    rx_describe(&x, t0, d, sizeof d);
    snprintf(needle, sizeof needle, "status=%d", status);
    info(name, "%s; log %s", d,
         status ? (srv_log_has(c->s, needle) ? needle : "lacks the status")
                : (srv_log_has(c->s, "error conn=") ? "has an error line"
                                                    : "no error line"));
    if (x.len)
        rc = fail(c, "expected no response, got %zu bytes (%s)", x.len, d);
    else if (!rx_closed(&x))
        rc = fail(c, "server did not close within %d ms", deadline_ms);
    else if (status && !srv_log_has(c->s, needle))
        rc = fail(c, "closed, but the log has no '%s'", needle);
    rx_free(&x);
    return rc;
}

/* One request that is served: check the status, the body (when given), and
 * whether the server then closes (closes = 1) or keeps the connection
 * (closes = 0; we stop reading after the response).  On a closing response
 * B4 decides the Connection header: absent on stock, "close" when fixed. */
static int expect_served(struct ctx *c, const char *name, const char *in,
                         size_t len, int status, const char *body,
                         size_t body_len, int closes)
{
    struct rx x = { 0 };
    char d[256];
    long long t0;
    int rc = 0;

    n_requests++;
    if (exchange(c, in, len, closes ? 0 : 1, T(5000), &x, &t0))
        return -1;
    rx_describe(&x, t0, d, sizeof d);
    info(name, "%s", d);
    if (x.nr != 1)
        rc = fail(c, "expected 1 response, got: %s", d);
    else if (x.r[0].status != status)
        rc = fail(c, "expected status %d, got: %s", status, d);
    else if (body && (x.r[0].body_len != body_len ||
                      memcmp(x.buf + x.r[0].body_off, body, body_len) != 0))
        rc = fail(c, "unexpected body (%zu bytes)", x.r[0].body_len);
    else if (closes && !rx_closed(&x))
        rc = fail(c, "server did not close after the response");
    else if (!closes && rx_closed(&x))
        rc = fail(c, "server closed a keep-alive connection (%s)", d);
    else if (closes && opt.fix_b4 && !x.r[0].connection_close)
        rc = fail(c, "closing response lacks Connection: close (B4 fix)");
    else if (closes && !opt.fix_b4 && x.r[0].has_connection)
        rc = fail(c, "stock-like variant sent a Connection header");
    rx_free(&x);
    return rc;
}

/* ---- the cases ----------------------------------------------------------- */

#define S(lit) lit, sizeof(lit) - 1

static int c_start_garbage(struct ctx *c)
{
    /* Start line "GARBAGE": method GARBAGE, URL "", version "" -> no 400
     * (the third word is empty), routed (404), keep-alive off (not 1.1). */
    return expect_served(c, "start-garbage", S("GARBAGE\r\n\r\n"), 404,
                         NULL, 0, 1);
}

static int c_start_ftp(struct ctx *c)
{
    return expect_silent_close(c, "start-ftp", S("GET / FTP/1.0\r\n\r\n"),
                               T(3000), 400);
}

static int c_start_non_ascii(struct ctx *c)
{
    return expect_silent_close(c, "start-non-ascii",
                               S("GET /caf\xc3\xa9\x01 HTTP/1.1\r\n\r\n"),
                               T(3000), 400);
}

static int c_start_non_ascii_lenient(struct ctx *c)
{
    /* --no-strict-ascii-url: the same line is parsed and routed (404). */
    return expect_served(c, "start-non-ascii-lenient",
                         S("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n"), 404, NULL, 0,
                         0);
}

static int c_start_empty_line(struct ctx *c)
{
    /* Empty first line: no request, keep-alive off, no error logged. */
    return expect_silent_close(c, "start-empty-line",
                               S("\r\nGET /ping HTTP/1.1\r\n\r\n"), T(3000), 0);
}

static int c_start_no_http(struct ctx *c)
{
    return expect_served(c, "start-no-http-word", S("GET /ping\r\n\r\n"), 200,
                         "pong", 4, 1);
}

static int c_start_two_spaces(struct ctx *c)
{
    /* "GET  /ping HTTP/1.1": GetNextWord gives an empty URL, then the
     * third word is "/ping" -> 400. */
    return expect_silent_close(c, "start-two-spaces",
                               S("GET  /ping HTTP/1.1\r\n\r\n"), T(3000), 400);
}

static int c_bare_lf(struct ctx *c)
{
    /* Server runs with --request-read-timeout 200: LF alone is not a line
     * end, the line never completes, the fill times out (408). */
    return expect_silent_close(c, "bare-lf", S("GET /ping HTTP/1.1\n\n"),
                               T(5000), 408);
}

static int c_cr_at_edge(struct ctx *c)
{
    /* The 4096th byte of the stream (the end of the first 4096-byte fill)
     * is the CR of a header line's CRLF; its LF comes in a second write. */
    char in[4200];
    const char *head = "GET /ping HTTP/1.1\r\nX-Pad: ";
    size_t n = strlen(head), i;
    struct rx x = { 0 };
    char d[256];
    long long t0;
    int fd, rc = 0;

    memcpy(in, head, n);
    for (i = n; i < 4095; i++)
        in[i] = 'a';
    in[4095] = '\r';
    memcpy(in + 4096, "\n\r\n", 3);
    fd = cli_connect(c->s->port);
    if (fd < 0)
        return fail(c, "connect failed");
    n_inputs++;
    n_requests++;
    t0 = now_ms();
    xfer(fd, in, 4096, &x, 0, 50, 0); /* first write, then 50 ms of quiet */
    xfer(fd, in + 4096, 3, &x, 1, T(5000), 0);
    close(fd);
    rx_describe(&x, t0, d, sizeof d);
    info("cr-at-buffer-edge", "%s", d);
    if (x.nr != 1 || x.r[0].status != 200)
        rc = fail(c, "expected 200, got %s", d);
    rx_free(&x);
    return rc;
}

/* "GET /ping HTTP/1.1\r\nX-Long: aaa...\r\n\r\n" with a header line of
 * exactly line_len bytes (CRLF excluded). */
static char *long_header_request(size_t line_len, size_t *len)
{
    const char *head = "GET /ping HTTP/1.1\r\n", *name = "X-Long: ";
    size_t hn = strlen(head), nn = strlen(name);
    char *b = malloc(hn + line_len + 8);

    memcpy(b, head, hn);
    memcpy(b + hn, name, nn);
    memset(b + hn + nn, 'a', line_len - nn);
    memcpy(b + hn + line_len, "\r\n\r\n", 4);
    *len = hn + line_len + 4;
    return b;
}

static int c_header_32k(struct ctx *c)
{
    size_t len;
    char *in = long_header_request(32768, &len);
    int rc = expect_served(c, "header-32768", in, len, 200, "pong", 4, 0);

    free(in);
    return rc;
}

static int c_header_32k1(struct ctx *c)
{
    size_t len;
    char *in = long_header_request(32769, &len);
    int rc = expect_silent_close(c, "header-32769", in, len, T(5000), 431);

    free(in);
    return rc;
}

static char *many_headers_request(int count, size_t *len)
{
    char *b = malloc(64 + (size_t)count * 24), *p = b;
    int i;

    p += sprintf(p, "GET /ping HTTP/1.1\r\n");
    for (i = 0; i < count; i++)
        p += sprintf(p, "X-H%d: %d\r\n", i, i);
    p += sprintf(p, "\r\n");
    *len = (size_t)(p - b);
    return b;
}

static int c_headers_255(struct ctx *c)
{
    size_t len;
    char *in = many_headers_request(255, &len);
    int rc = expect_served(c, "headers-255", in, len, 200, "pong", 4, 0);

    free(in);
    return rc;
}

static int c_headers_256(struct ctx *c)
{
    /* The count includes the closing empty line: 256 headers already fail. */
    size_t len;
    char *in = many_headers_request(256, &len);
    int rc = expect_silent_close(c, "headers-256", in, len, T(3000), 400);

    free(in);
    return rc;
}

static int c_headers_257(struct ctx *c)
{
    size_t len;
    char *in = many_headers_request(257, &len);
    int rc = expect_silent_close(c, "headers-257", in, len, T(3000), 400);

    free(in);
    return rc;
}

static int c_cl_negative(struct ctx *c)
{
    /* StrToIntDef("-5") = -5: no body is read, /echo answers empty. */
    return expect_served(c, "cl-negative",
                         S("POST /echo HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
                         200, "", 0, 0);
}

static int c_cl_non_numeric(struct ctx *c)
{
    return expect_served(c, "cl-non-numeric",
                         S("POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n"),
                         200, "", 0, 0);
}

static int c_cl_overflow(struct ctx *c)
{
    /* Beyond Int64: StrToIntDef falls back to 0, no 413. */
    return expect_served(c, "cl-overflow",
                         S("POST /echo HTTP/1.1\r\n"
                           "Content-Length: 99999999999999999999999\r\n\r\n"),
                         200, "", 0, 0);
}

static int c_cl_int64_max(struct ctx *c)
{
    return expect_silent_close(c, "cl-int64-max",
                               S("POST /echo HTTP/1.1\r\n"
                                 "Content-Length: 9223372036854775807\r\n\r\n"),
                               T(3000), 413);
}

static int c_cl_above_max(struct ctx *c)
{
    /* Server runs with --max-body-size 1024. */
    char in[2048];
    int n = sprintf(in, "POST /echo HTTP/1.1\r\nContent-Length: 1025\r\n\r\n");

    memset(in + n, 'b', 1025);
    return expect_silent_close(c, "cl-above-max", in, (size_t)n + 1025,
                               T(3000), 413);
}

static int c_cl_at_max(struct ctx *c)
{
    char in[2048], body[1024];
    int n = sprintf(in, "POST /echo HTTP/1.1\r\nContent-Length: 1024\r\n\r\n");

    memset(body, 'b', sizeof body);
    memcpy(in + n, body, sizeof body);
    return expect_served(c, "cl-at-max", in, (size_t)n + 1024, 200, body,
                         sizeof body, 0);
}

static const char short_body[] =
    "POST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\n0123456789";

static int c_body_short_eof(struct ctx *c)
{
    /* 10 of 100 bytes, then shutdown(SHUT_WR): ReadRequestContent stops at
     * end of stream and the body keeps its zero-filled tail. */
    struct rx x = { 0 };
    char d[256], zero[90] = { 0 };
    long long t0;
    int fd = cli_connect(c->s->port), rc = 0;

    if (fd < 0)
        return fail(c, "connect failed");
    n_inputs++;
    n_requests++;
    t0 = now_ms();
    xfer(fd, S(short_body), &x, 0, 30, 0);
    shutdown(fd, SHUT_WR);
    xfer(fd, NULL, 0, &x, 0, T(5000), 0);
    close(fd);
    rx_describe(&x, t0, d, sizeof d);
    info("body-short-eof", "%s, body %zu bytes", d,
         x.nr ? x.r[0].body_len : 0);
    if (x.nr != 1 || x.r[0].status != 200)
        rc = fail(c, "expected one 200, got %s", d);
    else if (x.r[0].body_len != 100 ||
             memcmp(x.buf + x.r[0].body_off, "0123456789", 10) != 0 ||
             memcmp(x.buf + x.r[0].body_off + 10, zero, 90) != 0)
        rc = fail(c, "body is not the 10 bytes sent + 90 zero bytes");
    else if (!rx_closed(&x))
        rc = fail(c, "server did not close after end of stream");
    rx_free(&x);
    return rc;
}

static int c_body_short_close(struct ctx *c)
{
    /* 10 of 100 bytes, then close(): the server's reply hits a closed
     * socket.  Only survival is checked (by the after-case ping). */
    struct rx x = { 0 };
    int fd = cli_connect(c->s->port);

    if (fd < 0)
        return fail(c, "connect failed");
    n_inputs++;
    n_requests++;
    xfer(fd, S(short_body), &x, 0, 20, 0);
    close(fd);
    rx_free(&x);
    info("body-short-close", "client closed after 10 of 100 body bytes");
    return 0;
}

static int c_body_short_stall(struct ctx *c)
{
    /* 10 of 100 bytes and the client keeps quiet: the body read runs into
     * SO_RCVTIMEO (--request-read-timeout 300) -> error, silent close. */
    return expect_silent_close(c, "body-short-stall", S(short_body), T(5000),
                               500);
}

static int c_slowloris(struct ctx *c)
{
    /* One byte every 100 ms for 15 bytes, with --request-read-timeout 300,
     * then silence.  The time-out is per buffer fill, so the drip is never
     * cut; 300 ms after the last byte the fill times out (408). */
    static const char drip[] = "GET /ping HTTP/1.1\r\nX-Slow: aaaaaaaaaaaa";
    const int nbytes = 15;
    struct rx x = { 0 };
    long long t0, tlast = 0;
    int fd = cli_connect(c->s->port), i, closed_at = -1, rc = 0;

    if (fd < 0)
        return fail(c, "connect failed");
    n_inputs++;
    t0 = now_ms();
    for (i = 0; i < nbytes && !rx_closed(&x); i++) {
        tlast = now_ms();
        xfer(fd, drip + i, 1, &x, 0, 100, 0);
        if (rx_closed(&x))
            closed_at = i;
    }
    if (!rx_closed(&x))
        xfer(fd, NULL, 0, &x, 0, T(5000), 0);
    close(fd);
    info("slowloris", "%s during the %d-byte drip (1 byte/100 ms); "
         "socket held %lld ms in all, closed %lld ms after the last byte, "
         "%zu response bytes, log %s",
         closed_at >= 0 ? "server closed" : "server kept the socket", nbytes,
         x.t_end - t0, x.t_end - tlast, x.len,
         srv_log_has(c->s, "status=408") ? "status=408" : "lacks status=408");
    if (!rx_closed(&x))
        rc = fail(c, "server still held the socket %d ms after the drip",
                  T(5000));
    else if (x.len)
        rc = fail(c, "expected no response, got %zu bytes", x.len);
    else if (closed_at < 0 && x.t_end - tlast > T(300) + T(1500))
        rc = fail(c, "closed %lld ms after the last byte (time-out 300)",
                  x.t_end - tlast);
    rx_free(&x);
    return rc;
}

static int c_pipeline_3(struct ctx *c)
{
    static const char in[] = "GET /ping HTTP/1.1\r\n\r\n"
                             "GET /ping HTTP/1.1\r\n\r\n"
                             "GET /ping HTTP/1.1\r\n\r\n";
    struct rx x = { 0 };
    char d[256];
    int fd = cli_connect(c->s->port), rc = 0;
    size_t want = opt.fix_b2 ? 3 : 1;
    long long t0 = now_ms();

    if (fd < 0)
        return fail(c, "connect failed");
    n_inputs++;
    n_requests += 3;
    /* Wait for all three, but give up after 1 s of silence. */
    xfer(fd, S(in), &x, 3, T(5000), T(1000));
    close(fd);
    rx_describe(&x, t0, d, sizeof d);
    info("pipeline-3", "%s", d);
    if (x.nr != want)
        rc = fail(c, "expected %zu response(s) (B2 %s), got %s", want,
                  opt.fix_b2 ? "fixed" : "present", d);
    rx_free(&x);
    return rc;
}

static int c_pipeline_1000_get(struct ctx *c)
{
    const size_t n = 1000;
    static const char one[] = "GET /ping HTTP/1.1\r\n\r\n";
    char *in = malloc(n * (sizeof one - 1));
    struct rx x = { 0 };
    char d[256];
    size_t i, bad = 0;
    int fd = cli_connect(c->s->port), rc = 0;
    long long t0 = now_ms();

    if (fd < 0)
        return fail(c, "connect failed");
    for (i = 0; i < n; i++)
        memcpy(in + i * (sizeof one - 1), one, sizeof one - 1);
    n_inputs++;
    n_requests += n;
    xfer(fd, in, n * (sizeof one - 1), &x, n, T(10000), T(1000));
    close(fd);
    for (i = 0; i < x.nr; i++)
        bad += x.r[i].status != 200;
    rx_describe(&x, t0, d, sizeof d);
    info("pipeline-1000-get", "%s (%zu of %zu answered, %zu not 200)", d,
         x.nr, n, bad);
    if (opt.fix_b2 && (x.nr != n || bad))
        rc = fail(c, "expected %zu x 200 (B2 fixed), got %zu (%zu not 200)",
                  n, x.nr, bad);
    else if (!opt.fix_b2 && (x.nr == 0 || x.nr >= n))
        rc = fail(c, "expected 1..%zu responses (B2 strands the last fill), "
                  "got %zu", n - 1, x.nr);
    free(in);
    rx_free(&x);
    return rc;
}

static int c_pipeline_1000_echo(struct ctx *c)
{
    /* POST /echo with body "<i>": the bodies prove order.  Needs B2 and B5
     * fixed to be answered in full; with B5 fixed alone every answer that
     * does come must still be in order. */
    const size_t n = 1000;
    char *in = malloc(n * 80), *p = in;
    struct rx x = { 0 };
    char d[256];
    size_t i, inorder = 0;
    int fd = cli_connect(c->s->port), rc = 0;
    long long t0 = now_ms();

    if (fd < 0)
        return fail(c, "connect failed");
    for (i = 0; i < n; i++) {
        char body[24];
        int bl = sprintf(body, "%zu", i);

        p += sprintf(p, "POST /echo HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s",
                     bl, body);
    }
    n_inputs++;
    n_requests += n;
    xfer(fd, in, (size_t)(p - in), &x, n, T(10000), T(1000));
    close(fd);
    for (i = 0; i < x.nr; i++) {
        char body[24];
        int bl = sprintf(body, "%zu", i);

        if (x.r[i].status != 200 || x.r[i].body_len != (size_t)bl ||
            memcmp(x.buf + x.r[i].body_off, body, (size_t)bl) != 0)
            break;
        inorder++;
    }
    rx_describe(&x, t0, d, sizeof d);
    info("pipeline-1000-echo", "%s (%zu answered, the first %zu in order)", d,
         x.nr, inorder);
    if (opt.fix_b2 && opt.fix_b5 && (x.nr != n || inorder != n))
        rc = fail(c, "expected %zu echoes in order, got %zu (%zu in order)",
                  n, x.nr, inorder);
    else if (opt.fix_b5 && inorder != x.nr)
        rc = fail(c, "answer %zu is out of order (B5 fixed)", inorder);
    else if (!(opt.fix_b2 && opt.fix_b5) && x.nr >= n)
        rc = fail(c, "all %zu answered although B2 or B5 is present", n);
    free(in);
    rx_free(&x);
    return rc;
}

static int c_rst_mid_response(struct ctx *c)
{
    static const char in[] = "GET /slow?ms=50 HTTP/1.1\r\n\r\n";
    struct rx x = { 0 };
    int fd = cli_connect(c->s->port);

    if (fd < 0)
        return fail(c, "connect failed");
    n_inputs++;
    n_requests++;
    xfer(fd, S(in), &x, 0, 10, 0);
    cli_abort(fd);
    /* Let the response hit the reset socket before the after-case ping. */
    poll(NULL, 0, 100);
    info("rst-mid-response", "RST sent while /slow?ms=50 ran; %s",
         srv_log_has(c->s, "request conn=1 ") ? "log shows the request done"
                                              : "no request line for conn 1");
    rx_free(&x);
    return 0;
}

static int c_half_close(struct ctx *c)
{
    static const char in[] = "GET /ping HTTP/1.1\r\n\r\n";
    struct rx x = { 0 };
    char d[256];
    int fd = cli_connect(c->s->port), rc = 0;
    long long t0 = now_ms();

    if (fd < 0)
        return fail(c, "connect failed");
    n_inputs++;
    n_requests++;
    xfer(fd, S(in), &x, 0, 20, 0);
    shutdown(fd, SHUT_WR);
    xfer(fd, NULL, 0, &x, 0, T(5000), 0);
    close(fd);
    rx_describe(&x, t0, d, sizeof d);
    info("half-close", "%s", d);
    if (x.nr != 1 || x.r[0].status != 200)
        rc = fail(c, "expected one 200, got %s", d);
    else if (!rx_closed(&x))
        rc = fail(c, "server did not close after our FIN");
    rx_free(&x);
    return rc;
}

static int c_max_live(struct ctx *c)
{
    /* --max-live-connection-count 4 in thread mode: 4 served keep-alive
     * connections, then a 5th gets the fixed 503 with Connection: close. */
    static const char in[] = "GET /ping HTTP/1.1\r\n\r\n";
    int fds[4], i, fd, rc = 0, served = 0;
    struct rx x = { 0 };
    char d[256];
    long long t0, tend;

    for (i = 0; i < 4; i++) {
        struct rx k = { 0 };

        fds[i] = cli_connect(c->s->port);
        n_requests++;
        if (fds[i] >= 0)
            xfer(fds[i], S(in), &k, 1, T(5000), 0);
        served += k.nr == 1 && k.r[0].status == 200 && !rx_closed(&k);
        rx_free(&k);
    }
    n_inputs++;
    t0 = now_ms();
    fd = cli_connect(c->s->port);
    if (fd >= 0) {
        n_requests++;
        xfer(fd, S(in), &x, 0, T(5000), 0);
        close(fd);
    }
    rx_describe(&x, t0, d, sizeof d);
    info("max-live-4", "%d of 4 kept; 5th: %s", served, d);
    if (served != 4)
        rc = fail(c, "only %d of the first 4 connections served and kept",
                  served);
    else if (x.nr != 1 || x.r[0].status != 503 || !x.r[0].connection_close)
        rc = fail(c, "5th connection: expected 503 + Connection: close, got %s",
                  d);
    else if (!rx_closed(&x))
        rc = fail(c, "5th connection not closed after the 503");
    for (i = 0; i < 4; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    rx_free(&x);
    /* The cap frees up once the server notices the closes (bounded). */
    tend = now_ms() + T(5000);
    while (rc == 0 && !ping_ok(c)) {
        if (now_ms() > tend) {
            rc = fail(c, "no connection served within %d ms after the 4 "
                      "closed", T(5000));
            break;
        }
        poll(NULL, 0, 20);
    }
    return rc;
}

static int c_sigterm_keepalive(struct ctx *c)
{
    static const char in[] = "GET /ping HTTP/1.1\r\n\r\n";
    int fds[3], i, kept = 0, closed = 0;
    char why[256];
    long long ms;

    for (i = 0; i < 3; i++) {
        struct rx k = { 0 };

        fds[i] = cli_connect(c->s->port);
        n_requests++;
        if (fds[i] >= 0)
            xfer(fds[i], S(in), &k, 1, T(5000), 0);
        kept += k.nr == 1 && !rx_closed(&k);
        rx_free(&k);
    }
    n_inputs++;
    srv_stop(c->s, why, sizeof why, &ms);
    c->stopped = 1;
    for (i = 0; i < 3; i++) {
        struct rx k = { 0 };

        if (fds[i] < 0)
            continue;
        xfer(fds[i], NULL, 0, &k, 0, T(1000), 0);
        closed += rx_closed(&k);
        close(fds[i]);
        rx_free(&k);
    }
    info("sigterm-keepalive", "%d keep-alive connections open; exit after "
         "%lld ms (%s); %d of 3 saw the close", kept, ms,
         why[0] ? why : "status 0", closed);
    if (why[0])
        return fail(c, "%s", why);
    if (kept != 3)
        return fail(c, "only %d of 3 connections were kept alive", kept);
    return 0;
}

/* n sequential connections with one GET /ping each; fds and threads must
 * return to their baseline. */
static int leak_run(struct ctx *c, const char *name)
{
    static const char in[] = "GET /ping HTTP/1.1\r\n\r\n";
    int fd0, task0, fd1, task1 = -1, i, bad = 0, rc = 0;
    long long t0 = now_ms(), tend;

    /* Baseline: fds before any connection; threads after one warm-up
     * connection has come and gone (a runtime may start a helper thread
     * with the first pthread_create, as TSan does), once the count holds
     * still for 50 ms. */
    proc_counts(c->s->pid, &fd0, &task0);
    if (!ping_ok(c))
        return fail(c, "warm-up GET /ping not answered");
    tend = now_ms() + T(2000);
    for (i = 0; now_ms() < tend && i < 5;) {
        int t;

        poll(NULL, 0, 10);
        proc_counts(c->s->pid, &fd1, &t);
        i = (fd1 <= fd0 && t == task1) ? i + 1 : 0;
        task1 = t;
    }
    task0 = task1;
    for (i = 0; i < opt.conns; i++) {
        struct rx x = { 0 };
        int fd = cli_connect(c->s->port);

        if (fd < 0) {
            bad++;
            if (bad > 10)
                break;
            continue;
        }
        n_requests++;
        xfer(fd, S(in), &x, 1, T(5000), 0);
        bad += !(x.nr == 1 && x.r[0].status == 200);
        close(fd);
        rx_free(&x);
    }
    n_inputs++;
    tend = now_ms() + T(5000);
    for (;;) {
        proc_counts(c->s->pid, &fd1, &task1);
        if ((fd1 <= fd0 && task1 <= task0) || now_ms() > tend)
            break;
        poll(NULL, 0, 10);
    }
    info(name, "%d connections in %lld ms, %d failed; fds %d -> %d, "
         "threads %d -> %d", i, now_ms() - t0, bad, fd0, fd1, task0, task1);
    if (bad)
        rc = fail(c, "%d of %d connections not answered 200", bad, i);
    else if (fd1 > fd0)
        rc = fail(c, "fd leak: %d -> %d after %d connections", fd0, fd1, i);
    else if (task1 > task0)
        rc = fail(c, "thread leak: %d -> %d after %d connections", task0,
                  task1, i);
    return rc;
}

static int c_leak_thread(struct ctx *c) { return leak_run(c, "leak-thread"); }
static int c_leak_none(struct ctx *c) { return leak_run(c, "leak-none"); }
static int c_leak_pool(struct ctx *c) { return leak_run(c, "leak-pool"); }

struct tcase {
    const char *name;
    int (*fn)(struct ctx *);
    const char *flags[12];
};

#define HORSE "--horse", "--request-read-timeout", "1000"

static const struct tcase cases[] = {
    { "start-garbage", c_start_garbage, { HORSE } },
    { "start-ftp", c_start_ftp, { HORSE } },
    { "start-non-ascii", c_start_non_ascii, { HORSE } },
    { "start-non-ascii-lenient", c_start_non_ascii_lenient,
      { HORSE, "--no-strict-ascii-url" } },
    { "start-empty-line", c_start_empty_line, { HORSE } },
    { "start-no-http-word", c_start_no_http, { HORSE } },
    { "start-two-spaces", c_start_two_spaces, { HORSE } },
    { "bare-lf", c_bare_lf, { "--horse", "--request-read-timeout", "200" } },
    { "cr-at-buffer-edge", c_cr_at_edge, { HORSE } },
    { "header-32768", c_header_32k, { HORSE } },
    { "header-32769", c_header_32k1, { HORSE } },
    { "headers-255", c_headers_255, { HORSE } },
    { "headers-256", c_headers_256, { HORSE } },
    { "headers-257", c_headers_257, { HORSE } },
    { "cl-negative", c_cl_negative, { HORSE } },
    { "cl-non-numeric", c_cl_non_numeric, { HORSE } },
    { "cl-overflow", c_cl_overflow, { HORSE } },
    { "cl-int64-max", c_cl_int64_max, { HORSE } },
    { "cl-above-max", c_cl_above_max, { HORSE, "--max-body-size", "1024" } },
    { "cl-at-max", c_cl_at_max, { HORSE, "--max-body-size", "1024" } },
    { "body-short-eof", c_body_short_eof, { HORSE } },
    { "body-short-close", c_body_short_close, { HORSE } },
    { "body-short-stall", c_body_short_stall,
      { "--horse", "--request-read-timeout", "300" } },
    { "slowloris", c_slowloris, { "--horse", "--request-read-timeout", "300" } },
    { "pipeline-3", c_pipeline_3, { HORSE } },
    { "pipeline-1000-get", c_pipeline_1000_get, { HORSE } },
    { "pipeline-1000-echo", c_pipeline_1000_echo, { HORSE } },
    { "rst-mid-response", c_rst_mid_response, { HORSE } },
    { "half-close", c_half_close, { HORSE } },
    { "max-live-4", c_max_live, { HORSE, "--max-live-connection-count", "4" } },
    { "sigterm-keepalive", c_sigterm_keepalive, { HORSE } },
    { "leak-thread", c_leak_thread, { HORSE } },
    { "leak-none", c_leak_none, { NULL } },
    { "leak-pool", c_leak_pool, { "--thread-mode", "pool" } },
};

static int selected(const char *name)
{
    const char *p = opt.cases;
    size_t n = strlen(name);

    if (!p)
        return 1;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);

        if (l == n && strncmp(p, name, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static void run_case(const struct tcase *t)
{
    struct srv s;
    struct ctx c;
    char why[256];
    int rc;

    memset(&c, 0, sizeof c);
    c.s = &s;
    fflush(stdout);
    if (srv_start(&s, t->name, t->flags, c.why, sizeof c.why) != 0) {
        printf("TEST: %s %s [FAIL] start: %s\n", opt.variant, t->name, c.why);
        n_fail++;
        return;
    }
    rc = t->fn(&c);
    if (!c.stopped) {
        if (srv_reap(&s, 0)) {
            srv_exit_text(&s, why, sizeof why);
            if (rc == 0)
                rc = fail(&c, "server ended during the case: %s",
                          why[0] ? why : "exit 0");
        } else if (rc == 0 && !c.no_ping && !ping_ok(&c)) {
            rc = fail(&c, "server no longer serves GET /ping");
        }
        srv_stop(&s, why, sizeof why, NULL);
        if (rc == 0 && why[0])
            rc = fail(&c, "%s", why);
    }
    if (rc == 0) {
        printf("TEST: %s %s [ OK ]\n", opt.variant, t->name);
        n_pass++;
    } else {
        printf("TEST: %s %s [FAIL] %s\n", opt.variant, t->name, c.why);
        printf("    server log %s (tail):\n", s.log);
        srv_log_tail(&s, 12);
        n_fail++;
    }
    fflush(stdout);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: hostile --server PATH [--variant NAME] [--cases a,b] [--conns N]\n"
"               [--slow K] [--log-dir DIR] [--launcher ARG]... [--list]\n"
"               [-- extra server flags]\n");
}

int main(int argc, char **argv)
{
    size_t i;
    int a, list = 0;

    signal(SIGPIPE, SIG_IGN);
    for (a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;

        if (strcmp(argv[a], "--") == 0) {
            for (a++; a < argc && opt.nextra < MAX_ARGS - 1; a++)
                opt.extra[opt.nextra++] = argv[a];
            break;
        } else if (strcmp(argv[a], "--server") == 0 && v) {
            opt.server = v;
            a++;
        } else if (strcmp(argv[a], "--variant") == 0 && v) {
            snprintf(opt.variant, sizeof opt.variant, "%s", v);
            a++;
        } else if (strcmp(argv[a], "--cases") == 0 && v) {
            opt.cases = v;
            a++;
        } else if (strcmp(argv[a], "--conns") == 0 && v) {
            opt.conns = atoi(v);
            a++;
        } else if (strcmp(argv[a], "--slow") == 0 && v) {
            opt.slow = atoi(v) > 0 ? atoi(v) : 1;
            a++;
        } else if (strcmp(argv[a], "--log-dir") == 0 && v) {
            snprintf(opt.log_dir, sizeof opt.log_dir, "%s", v);
            a++;
        } else if (strcmp(argv[a], "--launcher") == 0 && v &&
                   opt.nlauncher < MAX_ARGS - 1) {
            opt.launcher[opt.nlauncher++] = v;
            a++;
        } else if (strcmp(argv[a], "--list") == 0) {
            list = 1;
        } else if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (list) {
        for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    if (!opt.server) {
        usage(stderr);
        return 2;
    }
    if (!opt.variant[0]) {
        /* build/<variant>/server-min -> <variant> */
        char tmp[512], *slash;

        snprintf(tmp, sizeof tmp, "%s", opt.server);
        slash = strrchr(tmp, '/');
        if (slash) {
            *slash = '\0';
            slash = strrchr(tmp, '/');
        }
        snprintf(opt.variant, sizeof opt.variant, "%s",
                 slash ? slash + 1 : "stock");
    }
    opt.fix_b2 = strcmp(opt.variant, "buffer-aware-pending") == 0 ||
                 strcmp(opt.variant, "all") == 0;
    opt.fix_b4 = strcmp(opt.variant, "announce-close") == 0 ||
                 strcmp(opt.variant, "all") == 0;
    opt.fix_b5 = strcmp(opt.variant, "keep-surplus-bytes") == 0 ||
                 strcmp(opt.variant, "all") == 0;
    if (!opt.log_dir[0])
        snprintf(opt.log_dir, sizeof opt.log_dir, "/tmp/hostile.%d.%s",
                 (int)getpid(), opt.variant);
    if (mkdir(opt.log_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "hostile: %s: %s\n", opt.log_dir, strerror(errno));
        return 2;
    }
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (selected(cases[i].name))
            run_case(&cases[i]);
    printf("COUNTS: %s inputs=%lu requests=%lu connections=%lu\n", opt.variant,
           n_inputs, n_requests, n_connections);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail > 125 ? 125 : n_fail;
}
