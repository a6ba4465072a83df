/* probe.h - the probe's shared types.  See repro/probe/PROBE.md for what it does.
 *
 * Files: probe.c (main), probe_args.c (the command line), probe_conn.c
 * (one connection: send a request, read one response with the common
 * reader, streaming bodies it only counts), probe_scn.c (seq, idle-gap,
 * compare, pipeline, post-pipeline, close, pool), probe_async.c +
 * probe_load.c (load, fdscale: many sockets driven by one poll loop),
 * probe_json.c and probe_human.c (output), probe_stats.c (percentiles).
 * OS calls: common/tcpclient; HTTP parsing: common/http_response; JSON:
 * common/kjson (jansson). */
#ifndef PROBE_H
#define PROBE_H

#include "../../common/http_response.h"
#include "../../common/kjson.h"
#include "../../common/tcpclient.h"
#include "probe_stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
    OC_OTHER,    /* any other socket errno */
    OC_NOT_SENT, /* not attempted: an earlier timeout/garbage made the socket unusable */
    OC_TOO_LARGE, /* the response announced or sent a body above --max-body */
    OC_COUNT
};

extern const char *const oc_name[OC_COUNT];   /* per-request "outcome" */
extern const char *const oc_errkey[OC_COUNT]; /* "errors" keys (NULL: none) */

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

/* One client socket.  buf holds received bytes not yet consumed: at most a
 * head (HR_MAX_HEAD) plus one recv, since bodies are streamed. */
struct conn {
    int fd;
    int index;
    int port;
    char *buf;
    size_t len, cap;
    bool rx_bytes;      /* read_resp saw a byte of this response */
    int64_t sent_us;    /* last request write */
    int64_t last_rx_us; /* time of the recv that delivered the newest bytes */
    int64_t last_used_us;
    bool announced_close;
    long ka_timeout_s; /* -1 = not announced */
};

struct opts {
    const char *host, *port_s, *scenario, *path;
    int port, n, gap_ms, k, deadline_ms, connections, rounds, max_idle_ms, sample, sample_requests, accept_wait_ms,
        accept_stall_ms;
    unsigned long long seed, max_body;
    bool json;
    char hosthdr[600];
};

extern const char *prog;
#define RECV_CHUNK 16384

/* probe_args.c: fill o (defaults already set) from argv.  0 to run, 2
 * after a usage error (message on stderr), -1 after --help. */
int probe_parse_args(struct opts *o, int argc, char **argv);
void probe_usage(FILE *f);

/* probe_conn.c */
void run_init(struct run *R, const char *scenario, int nreq);
void run_free(struct run *R);
void count(struct run *R, enum outcome oc);
enum tc_conn_err conn_open(struct run *R, struct conn *c, int index, const struct opts *o, char *msg,
                           size_t msglen);
void conn_close(struct conn *c);
void note_close(struct run *R, const struct conn *c, const char *kind);
void note_close_err(struct run *R, const struct conn *c, int err);
enum outcome errno_outcome(int err);
enum outcome send_req(struct conn *c, const char *req, size_t len, int deadline_ms, int *writes, size_t *sent);
enum outcome read_resp(struct run *R, struct conn *c, bool head, int64_t deadline, int64_t t_sent,
                       const struct opts *o, struct rec *rec, char *body, size_t body_cap, size_t *body_got);
void peek_close(struct run *R, struct conn *c);
size_t build_get(char *dst, size_t cap, const struct opts *o, bool close_hdr);
void fill_rec_conn(struct rec *r, const struct conn *c);
void record_port(struct run *R, int port);

/* probe_scn.c: 0, or 1 with msg set when the probe could not run at all. */
int scn_seq(struct run *R, const struct opts *o, int gap_ms, char *msg, size_t msglen);
int scn_fresh(struct run *R, const struct opts *o, char *msg, size_t msglen);
int scn_pipeline(struct run *R, const struct opts *o, bool post, char *msg, size_t msglen);
int scn_close(struct run *R, const struct opts *o, char *msg, size_t msglen);
int scn_pool(struct run *R, const struct opts *o, char *msg, size_t msglen);

/* probe_load.c: run, print (JSON or human) and free; same return value. */
int scn_load(const struct opts *o, char *msg, size_t msglen);
int scn_fdscale(const struct opts *o, char *msg, size_t msglen);

/* probe_json.c */
struct lat_stats {
    struct pst_summary all, rest; /* all requests; requests 2..n */
    bool has_first;
    double first;
};
void compute_stats(const struct run *R, struct lat_stats *s);
bool run_reused(const struct run *R); /* some connection carried 2+ responses */
/* The output objects (jansson, common/kjson.h), and json_out, which writes
 * one as a line and drops it.  json_head: {"probe":1,"scenario", "host",
 * "port", "params"}, what every object starts with; jerrors: the "errors"
 * counts by outcome. */
json_t *json_head(const char *scenario, const struct opts *o, const char *params_scn);
json_t *jerrors(const int *errors);
json_t *json_run(const struct run *R, const struct opts *o, const char *params_scn);
json_t *json_compare(const struct run *A, const struct run *B, const struct opts *o);
void json_out(FILE *f, json_t *j);

/* probe_human.c */
void human_run(FILE *f, const struct run *R, const struct opts *o, const char *title);
void human_compare(FILE *f, const struct run *A, const struct run *B, const struct opts *o);

#endif
