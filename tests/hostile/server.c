/* tests/hostile/server.c - the server under test: started with --port 0,
 * ready when its one "listening ADDR:PORT" line arrives (poll on its
 * stdout), stopped by PID with SIGTERM.  A server that needs KILL, or exits
 * non-zero, is reported; nothing is killed by name. */
#include "hostile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/tcpclient.h"

/* How long a server may take to exit after SIGTERM (scaled by --slow). */
#define STOP_MS 3000
/* How long a server that has exited may take to be torn down by the
 * kernel (srv_exiting): a bound only. */
#define TEARDOWN_MS 30000

int srv_reap(struct srv *s, int block)
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

void srv_exit_text(const struct srv *s, char *out, size_t cap)
{
    if (WIFEXITED(s->status) && WEXITSTATUS(s->status) == 0)
        out[0] = '\0';
    else if (WIFEXITED(s->status))
        snprintf(out, cap, "server exited with status %d", WEXITSTATUS(s->status));
    else if (WIFSIGNALED(s->status))
        snprintf(out, cap, "server killed by signal %d (%s)", WTERMSIG(s->status),
                 strsignal(WTERMSIG(s->status)));
    else
        snprintf(out, cap, "server ended oddly (status 0x%x)", s->status);
}

/* Wait for the server to end, up to ms: 1 = ended.  pidfd when we have one. */
static int srv_wait(struct srv *s, int ms)
{
    int64_t end = tc_now_us() + (int64_t)ms * 1000;

    while (!srv_reap(s, 0)) {
        int err;

        if (tc_now_us() >= end)
            return 0;
        if (s->pidfd >= 0)
            tc_wait(s->pidfd, POLLIN, end, &err);
        else
            tc_sleep_until_us(tc_now_us() + 5000 < end ? tc_now_us() + 5000 : end);
    }
    return 1;
}

static void srv_close_fds(struct srv *s)
{
    if (s->out >= 0)
        close(s->out);
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->out = s->pidfd = -1;
}

static pid_t srv_spawn(const char *const *argv, int outfd, int logfd)
{
    pid_t pid = fork();

    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGPIPE, SIG_DFL);
        dup2(devnull, 0);
        dup2(outfd, 1);
        dup2(logfd, 2);
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

/* Read the first stdout line (bounded) and take the port from it. */
static int srv_ready(struct srv *s, char *why, size_t whycap)
{
    char line[256];
    size_t got = 0;
    int64_t end = tc_now_us() + hs_us(10000);

    for (;;) {
        char *nl, *colon;
        ssize_t r;
        int err;

        if (tc_wait(s->out, POLLIN, end, &err) <= 0) {
            snprintf(why, whycap, "no 'listening' line within %d ms", 10 * opt.slow);
            return -1;
        }
        r = read(s->out, line + got, sizeof line - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, whycap, "server stdout closed before 'listening'");
            return -1;
        }
        got += (size_t)r;
        line[got] = '\0';
        if (!(nl = strchr(line, '\n'))) {
            if (got == sizeof line - 1) {
                snprintf(why, whycap, "unexpected stdout: %.60s", line);
                return -1;
            }
            continue;
        }
        *nl = '\0';
        colon = strrchr(line, ':');
        if (strncmp(line, "listening ", 10) != 0 || !colon || (s->port = atoi(colon + 1)) <= 0) {
            snprintf(why, whycap, "unexpected stdout line: %.60s", line);
            return -1;
        }
        snprintf(s->port_s, sizeof s->port_s, "%d", s->port);
        return 0;
    }
}

/* The server said "unsupported: FLAG ..." and exited 2: copy that line. */
static int srv_unsupported(struct srv *s, char *why, size_t whycap)
{
    FILE *f;
    char line[512];
    int found = 0;

    if (!srv_wait(s, 1000 * opt.slow) || !WIFEXITED(s->status) || WEXITSTATUS(s->status) != 2)
        return 0;
    if (!(f = fopen(s->log, "r")))
        return 0;
    while (!found && fgets(line, sizeof line, f))
        if ((found = strncmp(line, "unsupported:", 12) == 0 || strstr(line, "unknown flag"))) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(why, whycap, "%s", line);
        }
    fclose(f);
    return found;
}

int srv_start(struct srv *s, const char *casename, const char *const *flags, char *why,
              size_t whycap)
{
    const char *argv[3 * MAX_ARGS];
    char scaled[24];
    int n = 0, i, pout[2], logfd;

    memset(s, 0, sizeof *s);
    s->pidfd = s->out = -1;
    snprintf(s->log, sizeof s->log, "%s/%s.log", opt.log_dir, casename);
    for (i = 0; i < opt.nlauncher; i++)
        argv[n++] = opt.launcher[i];
    argv[n++] = opt.server;
    argv[n++] = "--port";
    argv[n++] = "0";
    for (i = 0; flags && flags[i]; i++) {
        argv[n++] = flags[i];
        /* The server's read time-out is what a case's client paces itself
         * against (a drip's gap a tenth of it, a stall past it), and the
         * client's waits are scaled by --slow: the time-out is scaled with
         * them, or under TSan (x5) a drip's gap is half the time-out and a
         * niced client late by 500 ms is cut (tsan/stock/drip-1-none). */
        if (strcmp(flags[i], "--request-read-timeout") == 0 && flags[i + 1] && opt.slow > 1) {
            snprintf(scaled, sizeof scaled, "%lld", (long long)atoll(flags[i + 1]) * opt.slow);
            argv[n++] = scaled;
            i++;
        }
    }
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
    s->pid = srv_spawn(argv, pout[1], logfd);
    close(pout[1]);
    close(logfd);
    s->out = pout[0];
    if (s->pid < 0) {
        snprintf(why, whycap, "fork: %s", strerror(errno));
        srv_close_fds(s);
        return -1;
    }
    s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
    if (srv_ready(s, why, whycap) == 0)
        return 0;
    if (srv_unsupported(s, why, whycap)) {
        srv_close_fds(s);
        return 1;
    }
    kill(s->pid, SIGKILL);
    srv_reap(s, 1);
    srv_close_fds(s);
    return -1;
}

/* The fields of /proc/PID/task/TID/stat after the ") " that ends the
 * thread's name, its state letter first, in buf; NULL if unreadable. */
static const char *task_stat(pid_t pid, const char *tid, char *buf, size_t cap)
{
    char p[96];
    const char *e;
    FILE *f;
    size_t n;

    snprintf(p, sizeof p, "/proc/%d/task/%.16s/stat", (int)pid, tid);
    if (!(f = fopen(p, "r")))
        return NULL;
    n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (e = strrchr(buf, ')')) && e[1] == ' ' ? e + 2 : NULL;
}

/* The system call one thread is in (/proc/PID/task/TID/syscall), -1 if
 * none or unknown (running in user space, or gone). */
static int task_syscall(pid_t pid, const char *tid)
{
    char p[96];
    FILE *f;
    int sc = -1;

    snprintf(p, sizeof p, "/proc/%d/task/%.16s/syscall", (int)pid, tid);
    if ((f = fopen(p, "r"))) {
        if (fscanf(f, "%d", &sc) != 1)
            sc = -1;
        fclose(f);
    }
    return sc;
}

/* Whether every thread of pid is in a state ok() accepts (a thread gone
 * between the listing and the read is accepted); gone if the process is. */
static int all_threads(pid_t pid, int (*ok)(char), int gone)
{
    char p[64], buf[512];
    DIR *d;
    struct dirent *e;
    int all = 1;

    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    if (!(d = opendir(p)))
        return gone;
    while (all && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            const char *st = task_stat(pid, e->d_name, buf, sizeof buf);
            all = ok(st ? st[0] : 0);
        }
    closedir(d);
    return all;
}

/* CPU ticks (utime + stime) of one thread, -1 if unknown. */
static long thread_ticks(pid_t pid, const char *tid)
{
    char buf[1024];
    const char *e = task_stat(pid, tid, buf, sizeof buf);
    unsigned long ut, st;

    /* After the state: utime is the 12th field, stime the 13th. */
    if (!e || sscanf(e, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (long)(ut + st);
}

/* Where is a server that ignores SIGTERM stuck?  Each thread's syscall
 * number (-1: running in user space; 43 accept, 23 select, 202 futex on
 * x86-64), wchan, and CPU ticks over 300 ms (a spinning thread shows). */
static void srv_where(pid_t pid, char *where, size_t cap)
{
    char p[128], buf[96], tids[8][20];
    long t0[8];
    DIR *d;
    struct dirent *e;
    size_t n = 0;
    int nt = 0, i;

    where[0] = '\0';
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    if (!(d = opendir(p)))
        return;
    while ((e = readdir(d)) && nt < 8)
        if (e->d_name[0] != '.') {
            snprintf(tids[nt], sizeof tids[nt], "%.16s", e->d_name);
            t0[nt] = thread_ticks(pid, tids[nt]);
            nt++;
        }
    closedir(d);
    tc_sleep_until_us(tc_now_us() + 300000); /* the sampling interval */
    for (i = 0; i < nt && n < cap - 64; i++) {
        FILE *f;
        int sc = task_syscall(pid, tids[i]);
        long t1 = thread_ticks(pid, tids[i]);

        snprintf(p, sizeof p, "/proc/%d/task/%.16s/wchan", (int)pid, tids[i]);
        buf[0] = '\0';
        if ((f = fopen(p, "r"))) {
            if (!fgets(buf, sizeof buf, f))
                buf[0] = '\0';
            fclose(f);
        }
        n += (size_t)snprintf(where + n, cap - n, " tid %.16s syscall %d %.24s cpu %ld/30;", tids[i],
                              sc, buf, t0[i] >= 0 && t1 >= 0 ? t1 - t0[i] : -1);
    }
}

static int in_exit_path(char st)
{
    return st == 'D' || st == 'Z' || st == 'X' || st == 0;
}

/* Has the server exited, with only the kernel's teardown left: its main
 * thread a zombie, or itself blocked in exit_group, and every other thread
 * in uninterruptible sleep (the exit path) or gone?  (c47: seven servers
 * that had caught SIGTERM and exited each had a thread blocked over 3 s in
 * exit_mmap, wchan unlink_file_vma_batch_process, waiting for a lock held
 * elsewhere on the host.  c108: two whose main thread, their last, was
 * that thread: state D in exit_group, not Z.)  A main thread gone while
 * another runs or waits in user space is no exit: that server still
 * hangs. */
static int srv_exiting(pid_t pid)
{
    char tid[16], buf[512];
    const char *lead;

    snprintf(tid, sizeof tid, "%d", (int)pid);
    lead = task_stat(pid, tid, buf, sizeof buf);
    if (!lead)
        return 0;
    if (lead[0] != 'Z' && lead[0] != 'X' &&
        !(lead[0] == 'D' && task_syscall(pid, tid) == SYS_exit_group))
        return 0;
    return all_threads(pid, in_exit_path, 0);
}

static int in_trace_or_exit(char st)
{
    return st == 't' || in_exit_path(st);
}

/* Is the server in LeakSanitizer's leak check at exit?  LSan stops every
 * thread with ptrace from a task of its own, the server's child, to scan
 * their stacks.  (c99: an ASan server that had caught SIGTERM was still in
 * its leak check 9 s later, beside the suite on a 2-core machine, every
 * thread in ptrace_stop; it was called hung.) */
static int srv_leak_checking(pid_t pid)
{
    long tracer = srv_proc_status(pid, "TracerPid");

    return tracer > 0 && srv_proc_status((pid_t)tracer, "PPid") == (long)pid
           && all_threads(pid, in_trace_or_exit, 0);
}

/* SIGTERM's bit in the main thread's masks (/proc/PID/status): pending to
 * the thread, pending to the process, blocked, caught.  A server that
 * ignored SIGTERM says here whether it ever saw it. */
static void srv_sigterm_state(pid_t pid, char *out, size_t cap)
{
    static const char *const keys[] = {"SigPnd:", "ShdPnd:", "SigBlk:", "SigCgt:"};
    char p[64], line[128];
    int bit[4] = {-1, -1, -1, -1}, i;
    FILE *f;

    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    if ((f = fopen(p, "r"))) {
        while (fgets(line, sizeof line, f))
            for (i = 0; i < 4; i++)
                if (!strncmp(line, keys[i], strlen(keys[i])))
                    bit[i] = (int)((strtoull(line + strlen(keys[i]), NULL, 16) >> (SIGTERM - 1)) & 1);
        fclose(f);
    }
    snprintf(out, cap, " SIGTERM in main thread: pending %d, process-pending %d, blocked %d, caught %d;",
             bit[0], bit[1], bit[2], bit[3]);
}

void srv_stop(struct srv *s, char *why, size_t whycap, long long *ms)
{
    int64_t t0 = tc_now_us();

    why[0] = '\0';
    /* To the main thread (tid == pid), not to the process: the server
     * blocks SIGTERM in its own threads, but a sanitizer runtime's
     * background thread does not, and TSan holds a signal that lands there
     * until that thread next wakes (seen: 15 s, a server blocked in
     * accept() never told). */
    if (!s->reaped && syscall(SYS_tgkill, s->pid, s->pid, SIGTERM) != 0)
        kill(s->pid, SIGTERM);
    int waited = srv_wait(s, STOP_MS * opt.slow);
    int leak_check = !waited && srv_leak_checking(s->pid);
    int exiting = !waited && (leak_check || srv_exiting(s->pid));

    if (exiting) {
        int64_t t1 = tc_now_us();

        if (srv_wait(s, TEARDOWN_MS))
            fprintf(stderr, "hostile: server %d exited on SIGTERM; %s took %lld ms more%s\n",
                    (int)s->pid, leak_check ? "its leak check" : "the kernel",
                    (long long)((tc_now_us() - t1) / 1000), leak_check ? "" : " to tear it down");
    }
    if (!s->reaped) {
        char where[480], sig[128], late[64] = "";

        if (exiting)
            snprintf(late, sizeof late, " (exited, then not torn down in %d ms more)", TEARDOWN_MS);
        srv_sigterm_state(s->pid, sig, sizeof sig);
        srv_where(s->pid, where, sizeof where);
        snprintf(why, whycap, "server needed SIGKILL: not gone %d ms after SIGTERM%s:%s%s",
                 STOP_MS * opt.slow, late, sig, where);
        kill(s->pid, SIGKILL);
        srv_reap(s, 1);
    } else {
        srv_exit_text(s, why, whycap);
    }
    if (ms)
        *ms = (tc_now_us() - t0) / 1000;
    srv_close_fds(s);
}

int srv_log_count(const struct srv *s, const char *needle)
{
    FILE *f = fopen(s->log, "r");
    char line[2048];
    int n = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

int srv_log_has(const struct srv *s, const char *needle)
{
    return srv_log_count(s, needle) > 0;
}

void srv_log_tail(const struct srv *s, int lines)
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

void srv_proc_counts(pid_t pid, int *fds, int *tasks)
{
    char p[64];

    snprintf(p, sizeof p, "/proc/%d/fd", (int)pid);
    *fds = count_dir(p);
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    *tasks = count_dir(p);
}

/* A number field of /proc/PID/status: VmHWM and VmRSS in KiB, TracerPid,
 * PPid; -1 unknown. */
long srv_proc_status(pid_t pid, const char *field)
{
    char p[64], line[256];
    size_t n = strlen(field);
    long v = -1;
    FILE *f;

    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    if (!(f = fopen(p, "r")))
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* Does the server still hold the socket with this inode (tc_peer_inode,
 * read while the connection was up): a link socket:[inode] among
 * /proc/PID/fd?  1 yes, 0 no (closed by the server).  Not the socket's TCP
 * state: a server writing to a connection its client has closed gets a
 * reset, and the kernel drops the socket from its tables while the server
 * has yet to see the error, log the request and close its descriptor. */
int srv_holds_socket(pid_t pid, unsigned long inode)
{
    char p[64], want[48], link[64];
    struct dirent *e;
    DIR *d;
    int held = 0;

    snprintf(p, sizeof p, "/proc/%d/fd", (int)pid);
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    if (!(d = opendir(p)))
        return 0;
    while (!held && (e = readdir(d))) {
        char fd[64 + 256];
        ssize_t n;

        if (e->d_name[0] == '.')
            continue;
        snprintf(fd, sizeof fd, "%s/%s", p, e->d_name);
        n = readlink(fd, link, sizeof link - 1);
        held = n > 0 && (size_t)n == strlen(want) && memcmp(link, want, (size_t)n) == 0;
    }
    closedir(d);
    return held;
}

/* Bytes the server has not read yet on its end of our connection (the
 * Recv-Q of its socket with local port server_port and remote port
 * client_port), -1 if there is no such socket.  Lets a case wait until the
 * server has consumed what it sent, instead of sleeping.  One sock_diag
 * lookup, not /proc/net/tcp: that lists every socket of the host, and
 * srv_wait_consumed polls every 2 ms. */
long srv_unread(int server_port, int client_port)
{
    return tc_peer_rqueue(server_port, client_port, NULL);
}

/* Wait until the server has read everything sent on fd, up to ms:
 * 1 consumed, 0 not by then. */
int srv_wait_consumed(const struct srv *s, int fd, int ms)
{
    int64_t end = tc_now_us() + hs_us(ms);
    int cport = tc_local_port(fd);

    for (;;) {
        if (srv_unread(s->port, cport) == 0)
            return 1;
        if (tc_now_us() >= end)
            return 0;
        tc_sleep_until_us(tc_now_us() + 2000); /* polling pace */
    }
}

/* Has the server done all it can with what it got: none of its threads is
 * runnable (state R in /proc/PID/task/TID/stat)?  Bytes we sent make the
 * thread waiting for them runnable before send() returns, so until then
 * its silence is the scheduler's (a niced TSan build on a loaded machine
 * can take seconds to get to our request), not an outcome.  A connection
 * it does not accept or read leaves it settled.  1 settled, 0 not yet. */
static int not_running(char st)
{
    return st != 'R';
}

int srv_settled(const struct srv *s)
{
    return all_threads(s->pid, not_running, 1); /* gone: nothing more will come */
}

/* The server's fd per connection ID (1-based, accept order) from its log:
 * server-min's "connect conn=N fd=M", fpserver's "connection-open cid=N
 * fd=M".  fd_by_id[i] = -1 when not logged.  Returns how many were found. */
int srv_conn_fds(const struct srv *s, int *fd_by_id, int n)
{
    FILE *f = fopen(s->log, "r");
    char line[512];
    int i, found = 0;

    for (i = 0; i < n; i++)
        fd_by_id[i] = -1;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "connect conn="), *q = strstr(line, " fd=");
        int id;

        if (!p && (p = strstr(line, "connection-open cid=")))
            p += strlen("connection-open cid=");
        else if (p)
            p += strlen("connect conn=");
        if (!p || !q)
            continue;
        id = atoi(p);
        if (id >= 1 && id <= n) {
            fd_by_id[id - 1] = atoi(q + 4);
            found++;
        }
    }
    fclose(f);
    return found;
}
