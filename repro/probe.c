/* probe: a raw TCP HTTP/1.1 client that makes connection reuse provable
 * (one connect(), one local port) and turns a server's connection handling
 * into counts, orderings and latencies.  See repro/PROBE.md; the module
 * layout is in probe.h.  This file is the command line. */
#include "probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *prog = "probe";

static const char *const scenarios[] = {"seq",  "idle-gap", "pipeline", "post-pipeline", "close",
                                        "pool", "compare",  "load",     "fdscale"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [options] HOST PORT\n"
            "  --scenario S   seq | idle-gap | pipeline | post-pipeline | close | pool | compare | load | fdscale\n"
            "                 (default seq)\n"
            "  -n N           requests (seq, idle-gap, compare; per connection for load; default 30)\n"
            "  --gap-ms MS    idle gap between requests (idle-gap; default 300)\n"
            "  -k K           requests written in one send() (pipeline; default 3)\n"
            "  --path P       request path (default /ping)\n"
            "  --deadline-ms MS  how long to wait for a response / for the server's close (default 3000;\n"
            "                 load: the whole run; fdscale: each connect, then the sampled requests)\n"
            "  --connections C, -c C   sockets (pool, load: default 4; fdscale: idle connections to open)\n"
            "  --rounds R --max-idle-ms MS --seed S   (pool; defaults 40, 400, 1)\n"
            "  --sample K     fdscale: requests on the first K and the last K connections (default 10)\n"
            "  --max-body B   largest response body accepted, in bytes; bodies are counted, never\n"
            "                 stored, and a larger one is classified body_too_large (default 1073741824)\n"
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

/* Integer options: name, where, range. */
struct int_opt {
    const char *name;
    int *p;
    long long lo, hi;
};

/* One "--opt value": 0, or a usage error (2). */
static int set_option(struct opts *o, const char *name, const char *val)
{
    long long v = 0;
    if (!strcmp(name, "--scenario")) {
        for (size_t j = 0; j < sizeof scenarios / sizeof *scenarios; j++)
            if (!strcmp(val, scenarios[j])) {
                o->scenario = scenarios[j];
                return 0;
            }
        return usage_err("unknown scenario '%s'", val);
    }
    if (!strcmp(name, "--path")) {
        if (val[0] != '/' || strpbrk(val, " \r\n") || strlen(val) > 1024)
            return usage_err("--path must start with '/', have no spaces/CR/LF and be <= 1024 bytes");
        o->path = val;
        return 0;
    }
    if (!strcmp(name, "--seed") || !strcmp(name, "--max-body")) {
        if (!parse_int(val, 0, INT64_MAX, &v))
            return usage_err("invalid value '%s' for %s", val, name);
        *(!strcmp(name, "--seed") ? &o->seed : &o->max_body) = (unsigned long long)v;
        return 0;
    }
    struct int_opt iv[] = {{"-n", &o->n, 1, 1000000},           {"--gap-ms", &o->gap_ms, 0, 3600000},
                           {"-k", &o->k, 1, 1000},              {"--deadline-ms", &o->deadline_ms, 1, 86400000},
                           {"--connections", &o->connections, 1, 100000}, {"-c", &o->connections, 1, 100000},
                           {"--rounds", &o->rounds, 1, 100000}, {"--max-idle-ms", &o->max_idle_ms, 0, 3600000},
                           {"--sample", &o->sample, 1, 50000}};
    for (size_t j = 0; j < sizeof iv / sizeof *iv; j++)
        if (!strcmp(name, iv[j].name)) {
            if (!parse_int(val, iv[j].lo, iv[j].hi, &v))
                return usage_err("invalid value '%s' for %s (range %lld..%lld)", val, name, iv[j].lo, iv[j].hi);
            *iv[j].p = (int)v;
            return 0;
        }
    return usage_err("unknown option '%s'", name);
}

/* Split "--opt=V" / "--opt V"; returns the argv index consumed, or -1 after
 * a usage error (*rc = 2). */
static int take_option(struct opts *o, int argc, char **argv, int i, int *rc)
{
    static const char *const valued[] = {"--scenario", "-n", "--gap-ms", "-k", "--path", "--deadline-ms",
                                         "--connections", "-c", "--rounds", "--max-idle-ms", "--seed",
                                         "--sample", "--max-body"};
    char name[64];
    const char *a = argv[i], *val = NULL, *eq = strchr(a, '=');
    if (a[1] == '-' && eq && (size_t)(eq - a) < sizeof name) {
        memcpy(name, a, (size_t)(eq - a));
        name[eq - a] = 0;
        val = eq + 1;
    } else {
        snprintf(name, sizeof name, "%s", a);
    }
    bool known = false;
    for (size_t j = 0; j < sizeof valued / sizeof *valued; j++)
        known |= !strcmp(name, valued[j]);
    if (!known)
        return *rc = usage_err("unknown option '%s'", a), -1;
    if (!val) {
        if (i + 1 >= argc)
            return *rc = usage_err("option '%s' needs a value", name), -1;
        val = argv[++i];
    }
    return (*rc = set_option(o, name, val)) ? -1 : i;
}

/* HOST and PORT, and the Host header made of them. */
static int set_target(struct opts *o, const char *host, const char *port_s)
{
    long long port;
    o->host = host;
    o->port_s = port_s;
    if (!parse_int(port_s, 1, 65535, &port))
        return usage_err("invalid port '%s'", port_s);
    o->port = (int)port;
    if (strlen(host) > 512)
        return usage_err("host name too long");
    /* An IPv6 literal needs brackets in the Host header. */
    snprintf(o->hosthdr, sizeof o->hosthdr, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port_s);
    return 0;
}

/* 0 to run, 2 usage error, -1 help printed. */
static int parse_args(struct opts *o, int argc, char **argv)
{
    const char *pos[2];
    int npos = 0, rc = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (a[0] != '-' || !a[1]) {
            if (npos == 2)
                return usage_err("unexpected argument '%s'", a);
            pos[npos++] = a;
        } else if ((i = take_option(o, argc, argv, i, &rc)) < 0) {
            return rc;
        }
    }
    if (npos != 2)
        return usage_err("need HOST and PORT");
    return set_target(o, pos[0], pos[1]);
}

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
        json_run(stdout, &A, o, scn);
        fputc('\n', stdout);
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
        o->json ? json_compare(stdout, &A, &B, o) : human_compare(stdout, &A, &B, o);
    run_free(&A);
    run_free(&B);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {.scenario = "seq", .path = "/ping", .n = 30, .gap_ms = 300, .k = 3, .deadline_ms = 3000,
                     .connections = 4, .rounds = 40, .max_idle_ms = 400, .seed = 1, .sample = 10,
                     .max_body = 1ull << 30};
    int rc = parse_args(&o, argc, argv);
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
    if (fflush(stdout) != 0) {
        fprintf(stderr, "%s: writing output: %s\n", prog, strerror(errno));
        return 1;
    }
    return rc ? 1 : 0;
}
