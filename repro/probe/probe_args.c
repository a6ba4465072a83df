/* probe_args.c - the probe's command line, parsed with getopt_long: every
 * option as before (PROBE.md "CLI"), exact names, "--opt=value" and
 * "--opt value" alike, options before or after HOST PORT.  Usage errors
 * are one line naming the option, then "try 'probe --help'", exit 2. */
#include "probe.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const scenarios[] = {"seq",  "idle-gap", "pipeline", "post-pipeline", "close",
                                        "pool", "compare",  "load",     "fdscale"};

void probe_usage(FILE *f)
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
            "  --sample-requests R   fdscale: R requests in turn on each sampled connection, each round\n"
            "                 once the last one ended (default 1; 2: the next request on a kept-alive one)\n"
            "  --accept-wait-ms MS   fdscale: how long to wait for the server to accept every\n"
            "                 connection before the sample (a bound; default 60000)\n"
            "  --accept-stall-ms MS  fdscale: end that wait sooner if the server accepted none\n"
            "                 for MS (default 0: no such bound, only --accept-wait-ms)\n"
            "  --max-body B   largest response body accepted, in bytes; bodies are counted, never\n"
            "                 stored, and a larger one is classified body_too_large (default 1073741824)\n"
            "  --json         one JSON object on stdout instead of the human table\n"
            "  -h/--help\n"
            "Long options take --opt=V or --opt V, options go before or after HOST PORT.\n"
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

/* getopt_long values of the long-only options. */
enum { O_SCENARIO = 256, O_GAP, O_PATH, O_DEADLINE, O_ROUNDS, O_MAX_IDLE, O_SEED, O_SAMPLE, O_SAMPLE_REQUESTS, O_ACCEPT_WAIT, O_ACCEPT_STALL, O_MAX_BODY, O_JSON };

static const struct option longopts[] = {
    {"scenario", required_argument, NULL, O_SCENARIO},  {"gap-ms", required_argument, NULL, O_GAP},
    {"path", required_argument, NULL, O_PATH},          {"deadline-ms", required_argument, NULL, O_DEADLINE},
    {"connections", required_argument, NULL, 'c'},      {"rounds", required_argument, NULL, O_ROUNDS},
    {"max-idle-ms", required_argument, NULL, O_MAX_IDLE}, {"seed", required_argument, NULL, O_SEED},
    {"sample", required_argument, NULL, O_SAMPLE},      {"sample-requests", required_argument, NULL, O_SAMPLE_REQUESTS},
    {"accept-wait-ms", required_argument, NULL, O_ACCEPT_WAIT}, {"accept-stall-ms", required_argument, NULL, O_ACCEPT_STALL},
    {"max-body", required_argument, NULL, O_MAX_BODY},
    {"json", no_argument, NULL, O_JSON},                {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

/* The integer options: value, name in messages, destination, range. */
struct int_opt {
    int val;
    const char *name;
    size_t off;
    long long lo, hi;
};
static const struct int_opt int_opts[] = {
    {'n', "-n", offsetof(struct opts, n), 1, 1000000},
    {O_GAP, "--gap-ms", offsetof(struct opts, gap_ms), 0, 3600000},
    {'k', "-k", offsetof(struct opts, k), 1, 1000},
    {O_DEADLINE, "--deadline-ms", offsetof(struct opts, deadline_ms), 1, 86400000},
    {'c', "-c/--connections", offsetof(struct opts, connections), 1, 100000},
    {O_ROUNDS, "--rounds", offsetof(struct opts, rounds), 1, 100000},
    {O_MAX_IDLE, "--max-idle-ms", offsetof(struct opts, max_idle_ms), 0, 3600000},
    {O_SAMPLE, "--sample", offsetof(struct opts, sample), 1, 50000},
    {O_SAMPLE_REQUESTS, "--sample-requests", offsetof(struct opts, sample_requests), 1, 100},
    {O_ACCEPT_WAIT, "--accept-wait-ms", offsetof(struct opts, accept_wait_ms), 0, 3600000},
    {O_ACCEPT_STALL, "--accept-stall-ms", offsetof(struct opts, accept_stall_ms), 0, 3600000},
};

/* One option with its value: 0, or a usage error (2). */
static int set_option(struct opts *o, int val, const char *arg)
{
    long long v = 0;
    switch (val) {
    case O_JSON: o->json = true; return 0;
    case O_SCENARIO:
        for (size_t j = 0; j < sizeof scenarios / sizeof *scenarios; j++)
            if (!strcmp(arg, scenarios[j])) {
                o->scenario = scenarios[j];
                return 0;
            }
        return usage_err("unknown scenario '%s'", arg);
    case O_PATH:
        if (arg[0] != '/' || strpbrk(arg, " \r\n") || strlen(arg) > 1024)
            return usage_err("--path must start with '/', have no spaces/CR/LF and be <= 1024 bytes");
        o->path = arg;
        return 0;
    case O_SEED:
    case O_MAX_BODY:
        if (!parse_int(arg, 0, INT64_MAX, &v))
            return usage_err("invalid value '%s' for %s", arg, val == O_SEED ? "--seed" : "--max-body");
        *(val == O_SEED ? &o->seed : &o->max_body) = (unsigned long long)v;
        return 0;
    }
    for (size_t j = 0; j < sizeof int_opts / sizeof *int_opts; j++) {
        const struct int_opt *io = &int_opts[j];
        if (io->val != val)
            continue;
        if (!parse_int(arg, io->lo, io->hi, &v))
            return usage_err("invalid value '%s' for %s (range %lld..%lld)", arg, io->name, io->lo, io->hi);
        *(int *)((char *)o + io->off) = (int)v;
        return 0;
    }
    return usage_err("internal: option %d has no handler", val);
}

/* getopt_long also takes a prefix ("--dead" for --deadline-ms); the
 * options are exact names, as they always were, so word must be the whole
 * name of the option val it matched. */
static bool abbreviated(const char *word, int val)
{
    for (const struct option *lo = longopts; lo->name; lo++)
        if (lo->val == val)
            return !strncmp(word, "--", 2) && strcspn(word + 2, "=") != strlen(lo->name);
    return false;
}

/* What getopt_long refused (it prints nothing: opterr = 0).  word is the
 * command-line word it stopped at. */
static int getopt_refused(int ret, const char *word)
{
    int len = (int)strcspn(word, "=");
    if (!optopt || abbreviated(word, optopt))
        return usage_err("unknown option '%s'", word);
    if (ret == ':')
        return usage_err("option '%.*s' needs a value", len, word);
    if (optopt >= 256 || optopt == 'h') /* --json=x, --help=x */
        return usage_err("option '%.*s' takes no value", len, word);
    return usage_err("unknown option '-%c'", optopt);
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

int probe_parse_args(struct opts *o, int argc, char **argv)
{
    int ch, li, rc;
    optind = 0; /* a full restart of getopt's state (glibc), for the tests */
    opterr = 0;
    while ((optarg = NULL, li = -1, ch = getopt_long(argc, argv, ":n:k:c:h", longopts, &li)) != -1) {
        /* The option's word: the one before its value when that was separate. */
        const char *word = optarg && optarg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
        if (ch == '?' || ch == ':')
            return getopt_refused(ch, word);
        if (li >= 0 && abbreviated(word, ch))
            return usage_err("unknown option '%s'", word);
        if (ch == 'h') {
            probe_usage(stdout);
            return -1;
        }
        if ((rc = set_option(o, ch, optarg)) != 0)
            return rc;
    }
    if (argc - optind > 2)
        return usage_err("unexpected argument '%s'", argv[optind + 2]);
    if (argc - optind != 2)
        return usage_err("need HOST and PORT");
    return set_target(o, argv[optind], argv[optind + 1]);
}
