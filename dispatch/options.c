/* options.c - see options.h.  Defaults are derived from the CPU count the
 * way Horse's provider derives them: loops = CPUs, bounded workers = CPUs
 * x 8 (8 CPUs -> 64 workers in the PR's validation), global pool minimum
 * = CPUs x 8 and maximum 2048 (what the provider set on TThreadPool.Default). */
#include "options.h"

#include <errno.h>
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
"  --help                   this text\n",
           d->port, d->address, options_mode_name(d->mode), d->loops,
           d->workers, d->queue_capacity, d->pool_min, d->pool_max,
           d->pool_retire_ms, d->keep_alive_timeout);
}

static int options_int(const char *flag, const char *v, int lo, int hi, int *out)
{
    char *end;
    long x;

    errno = 0;
    x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "dispatch: %s: '%s' is not a number in %d..%d\n",
                flag, v ? v : "(missing)", lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int options_mode(const char *v, enum dispatch_mode *m)
{
    if (v && strcmp(v, "global-pool") == 0)
        *m = DISPATCH_GLOBAL_POOL;
    else if (v && strcmp(v, "inline") == 0)
        *m = DISPATCH_INLINE;
    else if (v && strcmp(v, "bounded-pool") == 0)
        *m = DISPATCH_BOUNDED_POOL;
    else {
        fprintf(stderr, "dispatch: --dispatch: '%s' is not global-pool, inline "
                        "or bounded-pool\n", v ? v : "(missing)");
        return -1;
    }
    return 0;
}

int options_parse(struct options *o, int argc, char **argv)
{
    static const struct {
        const char *flag;
        size_t off;
        int lo, hi;
    } ints[] = {
        { "--port", offsetof(struct options, port), 0, 65535 },
        { "--loops", offsetof(struct options, loops), 1, 256 },
        { "--workers", offsetof(struct options, workers), 1, 4096 },
        { "--queue-capacity", offsetof(struct options, queue_capacity), 1, 1 << 20 },
        { "--pool-min", offsetof(struct options, pool_min), 0, 4096 },
        { "--pool-max", offsetof(struct options, pool_max), 1, 4096 },
        { "--pool-retire-ms", offsetof(struct options, pool_retire_ms), 1, INT_MAX },
        { "--keep-alive-timeout", offsetof(struct options, keep_alive_timeout), 1, INT_MAX },
    };
    int i;

    options_defaults(o);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t k;
        int done = 0;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            options_usage(o);
            return 1;
        }
        if (strcmp(a, "--verbose") == 0) {
            o->verbose = 1;
            continue;
        }
        if (strcmp(a, "--address") == 0 && v) {
            o->address = v;
            i++;
            continue;
        }
        if (strcmp(a, "--dispatch") == 0) {
            if (options_mode(v, &o->mode))
                return -1;
            i++;
            continue;
        }
        for (k = 0; k < sizeof ints / sizeof ints[0] && !done; k++) {
            if (strcmp(a, ints[k].flag) != 0)
                continue;
            if (options_int(a, v, ints[k].lo, ints[k].hi,
                            (int *)((char *)o + ints[k].off)))
                return -1;
            i++;
            done = 1;
        }
        if (!done) {
            fprintf(stderr, "dispatch: unknown option or missing value: %s "
                            "(try --help)\n", a);
            return -1;
        }
    }
    if (o->pool_min > o->pool_max) {
        fprintf(stderr, "dispatch: --pool-min %d is above --pool-max %d\n",
                o->pool_min, o->pool_max);
        return -1;
    }
    return 0;
}
