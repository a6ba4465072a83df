/* probe: a raw TCP HTTP/1.1 client that makes connection reuse provable
 * (one connect(), one local port) and turns a server's connection handling
 * into counts, orderings and latencies.  See repro/probe/PROBE.md; the module
 * layout is in probe.h.  This file runs the scenario the command line
 * (probe_args.c) asked for. */
#include "probe.h"

#include <errno.h>
#include <string.h>

const char *prog = "probe";

/* The single-run scenarios: run, print, free.  0, or 1 (msg set). */
static int run_one(const struct opts *o, char *msg, size_t msglen)
{
    const char *scn = o->scenario;
    struct run A;
    int rc;
    if (!strcmp(scn, "seq") || !strcmp(scn, "idle-gap")) {
        run_init(&A, scn, o->n);
        rc = scn_seq(&A, o, !strcmp(scn, "idle-gap") ? o->gap_ms : 0, msg, msglen);
    } else if (!strcmp(scn, "pipeline") || !strcmp(scn, "post-pipeline")) {
        bool post = !strcmp(scn, "post-pipeline");
        run_init(&A, scn, post ? 2 : o->k);
        A.pipelined = A.nreq;
        rc = scn_pipeline(&A, o, post, msg, msglen);
    } else if (!strcmp(scn, "close")) {
        run_init(&A, scn, 2);
        rc = scn_close(&A, o, msg, msglen);
    } else {
        run_init(&A, scn, o->rounds);
        rc = scn_pool(&A, o, msg, msglen);
    }
    if (!rc && o->json) {
        json_out(stdout, json_run(&A, o, scn));
    } else if (!rc) {
        human_run(stdout, &A, o, scn);
    }
    run_free(&A);
    return rc;
}

/* compare: (a) seq on one keep-alive socket, (b) a fresh socket each. */
static int run_compare(const struct opts *o, char *msg, size_t msglen)
{
    struct run A, B;
    run_init(&A, "seq", o->n);
    run_init(&B, "fresh", o->n);
    int rc = scn_seq(&A, o, 0, msg, msglen);
    if (!rc)
        rc = scn_fresh(&B, o, msg, msglen);
    if (!rc)
        o->json ? json_out(stdout, json_compare(&A, &B, o)) : human_compare(stdout, &A, &B, o);
    run_free(&A);
    run_free(&B);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {.scenario = "seq", .path = "/ping", .n = 30, .gap_ms = 300, .k = 3, .deadline_ms = 3000,
                     .connections = 4, .rounds = 40, .max_idle_ms = 400, .seed = 1, .sample = 10, .sample_requests = 1,
                     .accept_wait_ms = 60000, .accept_stall_ms = 0,
                     .max_body = 1ull << 30};
    int rc = probe_parse_args(&o, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    /* fdscale needs > 1024 sockets; every scenario benefits from headroom. */
    tc_raise_nofile();
    tc_ignore_sigpipe();
    char msg[1024] = "";
    if (!strcmp(o.scenario, "compare"))
        rc = run_compare(&o, msg, sizeof msg);
    else if (!strcmp(o.scenario, "load"))
        rc = scn_load(&o, msg, sizeof msg);
    else if (!strcmp(o.scenario, "fdscale"))
        rc = scn_fdscale(&o, msg, sizeof msg);
    else
        rc = run_one(&o, msg, sizeof msg);
    if (rc)
        fprintf(stderr, "%s: %s\n", prog, msg[0] ? msg : "could not run");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: writing output: %s\n", prog, strerror(errno));
        return 1;
    }
    return rc ? 1 : 0;
}
