/* options.c - see options.h.  Defaults are derived from the CPU count the
 * way Horse's provider derives them: loops = CPUs, bounded workers = CPUs
 * x 8 (8 CPUs -> 64 workers in the PR's validation), global pool minimum
 * = CPUs x 8 and maximum 2048 (what the provider set on TThreadPool.Default). */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os.h"

#define DEFAULT_QUEUE_CAPACITY 1024   /* the model's choice; #553 makes it a setting */
#define DEFAULT_RETIRE_MS 40000       /* IdleTimeout of the RTL's TThreadPool */
#define DEFAULT_KEEP_ALIVE_MS 15000

const char *options_mode_name(enum dispatch_mode m)
{
    switch (m) {
    case DISPATCH_GLOBAL_POOL: return "global-pool";
    case DISPATCH_INLINE: return "inline";
    case DISPATCH_BOUNDED_POOL: return "bounded-pool";
    }
    return "?";
}

static void options_defaults(struct options *o)
{
    int cpus = os_processor_count();

    memset(o, 0, sizeof *o);
    o->address = "127.0.0.1";
    o->mode = DISPATCH_BOUNDED_POOL;
    o->loops = cpus;
    o->workers = cpus * 8;
    o->queue_capacity = DEFAULT_QUEUE_CAPACITY;
    o->pool_min = cpus * 8;
    o->pool_max = 2048;
    o->pool_retire_ms = DEFAULT_RETIRE_MS;
    o->keep_alive_timeout = DEFAULT_KEEP_ALIVE_MS;
}

static void options_usage(const struct options *d)
{
    printf("usage: dispatch [options]\n"
"  --port N                 listen port, 0 = any free port (default %d)\n"
"  --address A              IPv4 listen address (default %s)\n"
"  --dispatch MODE          global-pool | inline | bounded-pool (default %s)\n"
"  --loops N                event loops, one epoll each (default %d = CPUs)\n"
"  --workers N              bounded-pool workers (default %d = CPUs x 8)\n"
"  --queue-capacity N       bounded-pool queue slots (default %d)\n"
"  --pool-min N             global-pool minimum (default %d = CPUs x 8)\n"
"  --pool-max N             global-pool maximum (default %d)\n"
"  --pool-retire-ms MS      global-pool idle time before a worker retires (default %d)\n"
"  --keep-alive-timeout MS  idle connection lifetime (default %d)\n"
"  --verbose                log every dispatched request\n"
"  --help                   this text\n"
"A value follows its option as --option V or --option=V.\n",
           d->port, d->address, options_mode_name(d->mode), d->loops,
           d->workers, d->queue_capacity, d->pool_min, d->pool_max,
           d->pool_retire_ms, d->keep_alive_timeout);
}

static int options_int(const char *flag, const char *v, int lo, int hi, int *out)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "dispatch: %s: '%s' is not a number in %d..%d\n",
                flag, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int options_mode(const char *v, enum dispatch_mode *m)
{
    if (strcmp(v, "global-pool") == 0)
        *m = DISPATCH_GLOBAL_POOL;
    else if (strcmp(v, "inline") == 0)
        *m = DISPATCH_INLINE;
    else if (strcmp(v, "bounded-pool") == 0)
        *m = DISPATCH_BOUNDED_POOL;
    else {
        fprintf(stderr, "dispatch: --dispatch: '%s' is not global-pool, inline "
                        "or bounded-pool\n", v);
        return -1;
    }
    return 0;
}

/* getopt_long values, above every char; the int options first, in the
 * order of ints[] below. */
enum { O_PORT = 256, O_LOOPS, O_WORKERS, O_QUEUE, O_POOL_MIN, O_POOL_MAX,
       O_RETIRE, O_KEEP_ALIVE, O_ADDRESS, O_DISPATCH, O_VERBOSE };
#define O_NINTS (O_KEEP_ALIVE - O_PORT + 1)

static const struct option longopts[] = {
    { "port", required_argument, NULL, O_PORT },
    { "address", required_argument, NULL, O_ADDRESS },
    { "dispatch", required_argument, NULL, O_DISPATCH },
    { "loops", required_argument, NULL, O_LOOPS },
    { "workers", required_argument, NULL, O_WORKERS },
    { "queue-capacity", required_argument, NULL, O_QUEUE },
    { "pool-min", required_argument, NULL, O_POOL_MIN },
    { "pool-max", required_argument, NULL, O_POOL_MAX },
    { "pool-retire-ms", required_argument, NULL, O_RETIRE },
    { "keep-alive-timeout", required_argument, NULL, O_KEEP_ALIVE },
    { "verbose", no_argument, NULL, O_VERBOSE },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* The long option of a getopt_long value, NULL for none. */
static const struct option *options_long(int val)
{
    const struct option *lo;

    for (lo = longopts; lo->name; lo++)
        if (lo->val == val)
            return lo;
    return NULL;
}

/* "--name" of a getopt_long value, for messages. */
static const char *options_flag(int val)
{
    static char buf[48];
    const struct option *lo = options_long(val);

    if (lo)
        snprintf(buf, sizeof buf, "--%s", lo->name);
    else
        snprintf(buf, sizeof buf, "-%c", val);
    return buf;
}

/* getopt_long also takes a prefix ("--work" for --workers); the options
 * are exact names, as before, so word must be the whole name. */
static int options_abbreviated(const char *word, int val)
{
    const struct option *lo = options_long(val);

    return lo && strncmp(word, "--", 2) == 0 &&
           strcspn(word + 2, "=") != strlen(lo->name);
}

/* What getopt_long refused (opterr is 0: it prints nothing); word is the
 * command-line word it stopped at.  Always -1. */
static int options_refused(int ret, const char *word)
{
    if (!optopt || options_abbreviated(word, optopt))
        fprintf(stderr, "dispatch: unknown option '%s' (try --help)\n", word);
    else if (ret == ':')
        fprintf(stderr, "dispatch: %s needs a value (try --help)\n", options_flag(optopt));
    else if (optopt >= O_PORT || optopt == 'h')
        fprintf(stderr, "dispatch: %s takes no value (try --help)\n", options_flag(optopt));
    else
        fprintf(stderr, "dispatch: unknown option '-%c' (try --help)\n", optopt);
    return -1;
}

int options_parse(struct options *o, int argc, char **argv)
{
    static const struct {
        size_t off;
        int lo, hi;
    } ints[O_NINTS] = {
        [O_PORT - O_PORT] = { offsetof(struct options, port), 0, 65535 },
        [O_LOOPS - O_PORT] = { offsetof(struct options, loops), 1, 256 },
        [O_WORKERS - O_PORT] = { offsetof(struct options, workers), 1, 4096 },
        [O_QUEUE - O_PORT] = { offsetof(struct options, queue_capacity), 1, 1 << 20 },
        [O_POOL_MIN - O_PORT] = { offsetof(struct options, pool_min), 0, 4096 },
        [O_POOL_MAX - O_PORT] = { offsetof(struct options, pool_max), 1, 4096 },
        [O_RETIRE - O_PORT] = { offsetof(struct options, pool_retire_ms), 1, INT_MAX },
        [O_KEEP_ALIVE - O_PORT] = { offsetof(struct options, keep_alive_timeout), 1, INT_MAX },
    };
    int ch, li;

    options_defaults(o);
    optind = 0; /* restarts getopt (glibc): options_parse may run twice */
    opterr = 0;
    while ((optarg = NULL, li = -1, ch = getopt_long(argc, argv, "+:h", longopts, &li)) != -1) {
        /* The option's word: the one before its value when that was separate. */
        const char *word = optarg && optarg == argv[optind - 1] ? argv[optind - 2]
                                                               : argv[optind - 1];

        if (ch == '?' || ch == ':')
            return options_refused(ch, word);
        if (li >= 0 && options_abbreviated(word, ch)) {
            fprintf(stderr, "dispatch: unknown option '%s' (try --help)\n", word);
            return -1;
        }
        if (ch == 'h') {
            options_usage(o);
            return 1;
        }
        if (ch == O_VERBOSE)
            o->verbose = 1;
        else if (ch == O_ADDRESS)
            o->address = optarg;
        else if (ch == O_DISPATCH) {
            if (options_mode(optarg, &o->mode))
                return -1;
        } else if (ch >= O_PORT && ch <= O_KEEP_ALIVE) {
            int k = ch - O_PORT;

            if (options_int(options_flag(ch), optarg, ints[k].lo, ints[k].hi,
                            (int *)((char *)o + ints[k].off)))
                return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "dispatch: unexpected argument '%s' (try --help)\n", argv[optind]);
        return -1;
    }
    if (o->pool_min > o->pool_max) {
        fprintf(stderr, "dispatch: --pool-min %d is above --pool-max %d\n",
                o->pool_min, o->pool_max);
        return -1;
    }
    return 0;
}
