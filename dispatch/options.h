/* options.h - command line of the dispatch model. */
#ifndef DISPATCH_OPTIONS_H
#define DISPATCH_OPTIONS_H

enum dispatch_mode {
    DISPATCH_GLOBAL_POOL,    /* TTask.Run on TThreadPool.Default (before #553) */
    DISPATCH_INLINE,         /* epmInline: the handler runs in the loop thread */
    DISPATCH_BOUNDED_POOL,   /* epmBoundedPool: the default after #553 */
};

struct options {
    const char *address;
    int port;
    enum dispatch_mode mode;
    int loops;               /* event loops (THorseEpollWorker), one per CPU */
    int workers;             /* bounded pool */
    int queue_capacity;      /* bounded pool */
    int pool_min, pool_max;  /* global pool */
    int pool_retire_ms;      /* global pool: idle time before a worker leaves */
    int keep_alive_timeout;  /* ms an idle connection is kept */
    int verbose;             /* one log line per dispatched request */
};

const char *options_mode_name(enum dispatch_mode m);

/* 0 = run, 1 = --help printed (exit 0), -1 = error printed (exit 2). */
int options_parse(struct options *o, int argc, char **argv);

#endif
