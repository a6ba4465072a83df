/* tests/hostile/hostile.h - the hostile-input driver's shared types.
 *
 *   server.c  the server under test: start (readiness by poll on its
 *             "listening" line), stop by PID (SIGTERM, 3 s), /proc figures
 *   client.c  one client connection over common/tcpclient, its responses
 *             parsed by common/http_response, summarised as an outcome
 *   cases.c   the case table (one row per case) and the case runners
 *   hostile.c options, the variant's defect state, the run loop, output
 */
#ifndef KIT_HOSTILE_H
#define KIT_HOSTILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_ARGS 64

/* A variant's defect state, as bits: FX(n) = defect Bn is fixed
 * (`patchset.py fixed VARIANT`), AP(n) = the patch for Bn is applied, even
 * when what it needs is not (keep-surplus-bytes alone: AP(5), not FX(5)). */
#define FX(n) (UINT64_C(1) << (n))
#define AP(n) (UINT64_C(1) << (32 + (n)))
/* Defects B1..B31 fit (bit 0 and 32 unused). */
#define HS_MAX_DEFECT 31

/* ---- options (hostile.c) ---------------------------------------------- */

struct options {
    const char *server;
    char variant[128];
    char mode[32];       /* plain, asan, tsan, valgrind, real-trunk */
    const char *cases;   /* comma list, NULL = all */
    int conns;           /* connections of the leak cases */
    int slow;            /* deadline multiplier */
    int clone;           /* the server is server-min: its log has error lines */
    char log_dir[512];
    const char *launcher[MAX_ARGS];
    int nlauncher;
    const char *extra[MAX_ARGS];
    int nextra;
    uint64_t state;      /* FX/AP bits */
    int conformance;     /* --conformance: the RFC table (conformance.c), +K marks */
};
extern struct options opt;

/* A wait of ms milliseconds, scaled for slow builds, in microseconds. */
int64_t hs_us(int ms);

/* ---- the server under test (server.c) ---------------------------------- */

struct srv {
    pid_t pid;
    int pidfd;
    int out;        /* read end of its stdout */
    int port;
    char port_s[16];
    int reaped;
    int status;     /* waitpid status once reaped */
    char log[600];
};

/* 0 started; -1 failed (why); 1 the server refused the flags ("unsupported:"
 * and exit 2: the case is skipped, why says which flag). */
int srv_start(struct srv *s, const char *casename, const char *const *flags, char *why,
              size_t whycap);
/* SIGTERM, wait up to 3 s (scaled); "" in why when it exited 0 in time,
 * else why it did not (a KILL is reported, never silent). */
void srv_stop(struct srv *s, char *why, size_t whycap, long long *ms);
int srv_reap(struct srv *s, int block);
void srv_exit_text(const struct srv *s, char *out, size_t cap);
int srv_log_has(const struct srv *s, const char *needle);
int srv_log_count(const struct srv *s, const char *needle);
void srv_log_tail(const struct srv *s, int lines);
/* /proc/PID figures: open fds, threads; a number field of its status file
 * (VmHWM and VmRSS in KiB, TracerPid, PPid; -1 unknown). */
void srv_proc_counts(pid_t pid, int *fds, int *tasks);
long srv_proc_status(pid_t pid, const char *field);
long srv_unread(int server_port, int client_port);
int srv_holds_socket(pid_t pid, unsigned long inode);
int srv_wait_consumed(const struct srv *s, int fd, int ms);
int srv_settled(const struct srv *s);
int srv_conn_fds(const struct srv *s, int *fd_by_id, int n);

/* ---- one client connection (client.c) ---------------------------------- */

struct rsp {
    int status;
    int conn_close;            /* Connection: close */
    int conn_keep_alive;       /* Connection: keep-alive (shown as +K in --conformance) */
    int to_close;              /* no length: its body ended with the connection (RFC 9112 6.3 rule 8) */
    size_t body_off;           /* into rx.buf (Content-Length / to-close bodies) */
    unsigned long long body_len;
};

struct rx {
    int fd;
    char *buf;
    size_t len, cap;
    size_t off;                /* start of the response being parsed */
    struct rsp *r;
    size_t nr, rcap;
    int in_body;               /* parsing the body of r[nr] */
    struct rsp cur;
    void *body;                /* struct hr_body (private) */
    size_t body_pos;
    int eof, rst, err, bad;    /* how it ended (bad: not HTTP) */
    int64_t t_start, t_end;    /* us */
    size_t sent;
    const struct srv *s;       /* the server: rx_xfer's idle wait asks it */
};

int rx_open(struct rx *x, const struct srv *s, char *why, size_t whycap);
void rx_free(struct rx *x);     /* closes the socket too */
int rx_closed(const struct rx *x);
/* Send out (interleaved with reading) and read until: the connection ended,
 * `want` (> 0) responses are complete with everything sent, the deadline,
 * or (idle_ms > 0) nothing moved for idle_ms after the send finished.
 * Returns 1 when ended by a condition, 0 on a time-out. */
int rx_xfer(struct rx *x, const char *out, size_t outlen, size_t want, int deadline_ms,
            int idle_ms);
void rx_half_close(struct rx *x);
void rx_abort(struct rx *x);    /* RST: SO_LINGER 0, close */
int rx_body_is(const struct rx *x, size_t i, const char *b, size_t n);
/* The compared outcome: "S/LB[+C]" per response (runs of equal ones as
 * "*N"), "-" for none, then ";open" or ";closed". */
void rx_outcome(const struct rx *x, char *out, size_t cap);
/* Figures for the report: "EOF after 12 ms", ... */
void rx_detail(const struct rx *x, char *out, size_t cap);

/* ---- cases (cases.c) ---------------------------------------------------- */

struct ctx {
    struct srv *s;
    const struct hcase *t;
    char outcome[256];  /* compared against the row's expectation */
    char detail[512];   /* figures, reported */
    char why[512];      /* set when a check inside the runner failed */
    int stopped;        /* the case stopped the server itself */
    int no_ping;        /* the after-case GET /ping is not expected to work */
};

struct expect {
    uint64_t when;      /* FX/AP bits the variant must have; 0 = stock */
    const char *outcome;
};

struct hcase {
    const char *name;
    int (*run)(struct ctx *);
    const char *flags[16];     /* server flags (before `--` extras) */
    const char *in;            /* the input, for the generic exchange runners */
    size_t inlen;              /* 0 = strlen(in) */
    char *(*build)(size_t *len); /* or: builds the input (malloc'd) */
    int idle_ms;               /* how long silence means "nothing more" */
    int heavy;                 /* many connections or MiB: --light skips it */
    struct expect expect[5];   /* expect[0].when == 0: the stock outcome */
};

extern const struct hcase hs_cases[];
extern const size_t hs_ncases;
const char *hs_expected(const struct hcase *t, uint64_t state);
int hs_fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int hs_ping_ok(const struct srv *s);
int hs_ping_within(const struct srv *s, int ms); /* retried until answered or ms */
/* The generic runners, shared with the conformance table: the input in one
 * write, then read until the connection ends or goes quiet. */
int hs_run_one(struct ctx *c);
/* How long silence means "nothing more" (longer when a close is expected). */
int hs_idle_for(const struct ctx *c, int base);

/* ---- the RFC 9110 / 9112 conformance table (conformance.c) -------------- */

/* A case of the hostile driver (name, runner, flags, input, the measured
 * outcome per defect state) plus what the RFC asks and which outcomes meet
 * it.  The verdict is derived from the outcome, never written down. */
struct cfcase {
    struct hcase c;
    const char *section;     /* "RFC 9112 9.3" */
    const char *level;       /* "MUST" or "SHOULD": what a violation breaks */
    const char *requirement; /* one line, the kit's own words */
    const char *conforms;    /* patterns ('~' within a response, '~~' any), '|'-separated */
    const char *fixed_by;    /* "B4", "B2 B5": the patches that make it conform; NULL none */
    const char *at_merge;    /* a defect being filed outside this tree ("B10"): NULL none */
    const char *candidate;   /* a violation no Bn covers: what it would be filed as */
};

extern const struct cfcase cf_cases[];
extern const size_t cf_ncases;
/* "conforms", "violates (MUST)" or "violates (SHOULD)" for this outcome. */
const char *cf_verdict(const struct cfcase *k, const char *outcome);
/* --describe: the table as JSON on stdout (the report's source). */
void cf_describe(uint64_t state);

#endif
