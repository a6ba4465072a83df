/* options.c - see options.h.  Parsed with getopt_long: "--flag value" and
 * "--flag=value" alike, exact names only, applied in order. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "os.h"

const char *options_thread_mode_name(enum thread_mode m)
{
    switch (m) {
    case TM_NONE:   return "none";
    case TM_POLLED: return "polled";
    case TM_THREAD: return "thread";
    case TM_POOL:   return "pool";
    }
    return "?";
}

void options_usage(void *out)
{
    struct httpserver s;

    httpserver_init(&s);
    fprintf(out,
"usage: server-min [flags]\n"
"A C clone of Free Pascal's fphttpserver connection model (defects included).\n"
"Flags are the upstream TFPHttpServer property names in kebab case; without\n"
"flags every property has upstream's default.  A value follows its flag as\n"
"--flag V or --flag=V; flags apply in order.\n"
"\n"
"  --port N                          listen port, 0 = any free port (default %d)\n"
"  --address A                       listen address (default %s)\n"
"  --keep-connections                KeepConnections := True (default off)\n"
"  --keep-connection-timeout MS      KeepConnectionTimeout (default %d; 0 = keep-alive loop never runs)\n"
"  --keep-connection-idle-timeout MS KeepConnectionIdleTimeout (default %d)\n"
"  --thread-mode none|polled|thread|pool  ThreadMode (default %s)\n"
"  --accept-idle-timeout MS          AcceptIdleTimeout (default %d = block in accept)\n"
"  --request-read-timeout MS         RequestReadTimeout (default %d)\n"
"  --max-live-connection-count N     MaxLiveConnectionCount (default %d, 0 = no cap)\n"
"  --no-send-503-on-max-connections  Send503OnMaxConnections := False (default True)\n"
"  --max-line-length N               MaxLineLength (default %d)\n"
"  --max-header-count N              MaxHeaderCount (default %d)\n"
"  --max-body-size N                 MaxBodySize in bytes (clone default %lld)\n"
"  --no-strict-ascii-url             StrictASCIIURL := False (default True)\n"
"  --queue-size N                    listen backlog, QueueSize (default %d)\n"
"  --pool-threads N                  pool MaxThreads (MinThreads N-1; default %d =\n"
"                                    ProcessorCount, here %d)\n"
"\n"
"Application-side TCP_NODELAY mitigations (what Horse can do):\n"
"  --on-allow-connect nodelay        assign OnAllowConnect with a hook that sets\n"
"                                    TCP_NODELAY and logs 'on-allow-connect'\n"
"  --on-allow-connect refuse         assign OnAllowConnect with a hook that logs\n"
"                                    'on-allow-connect' and refuses the connection\n"
"  --socket-handler nodelay          OnGetSocketHandler supplies a handler whose\n"
"                                    Accept sets TCP_NODELAY\n"
"  --request-nodelay                 set TCP_NODELAY from the request handler\n"
"  --horse                           Horse 3.3.4's settings: --thread-mode thread\n"
"                                    --keep-connections --keep-connection-timeout 15000\n"
"                                    (later flags override)\n"
"  --stop bounded|free               what a stop does after the accept loop\n"
"                                    ended (default bounded, see below)\n"
"  -h, --help                        this text\n"
"\n"
"SIGTERM/SIGINT stop it: the accept loop ends at its next wake-up; with\n"
"--stop bounded running requests get up to 2 s; with --stop free the server\n"
"is freed as upstream's Active:=False; Free (TFPCustomHttpServer.Destroy,\n"
"waiting with no bound), then it logs 'stop: Free returned' and exits 0.\n"
"A second signal exits at once with status 3 (for a server whose accept\n"
"thread is stuck, as in B7, or whose Free does not return, B15).\n"
"Prints 'listening <address>:<port>' once it accepts connections; logs one\n"
"stderr line per served request with conn=<id> req=<n>.\n"
"Routes: GET /ping -> pong; POST /echo -> body; GET /slow?ms=N -> done; else 404.\n",
            s.props.port, s.props.address, s.props.keep_connection_timeout,
            s.props.keep_connection_idle_timeout,
            options_thread_mode_name(s.props.thread_mode),
            s.props.accept_idle_timeout, s.props.request_read_timeout,
            s.props.max_live_connection_count, s.props.max_line_length,
            s.props.max_header_count, (long long)s.props.max_body_size,
            s.props.queue_size, s.props.pool_threads, os_processor_count());
}

static int options_int(const char *flag, const char *v, long long min,
                       long long max, long long *out, char *err, size_t errlen)
{
    char *end;
    long long n;

    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < min || n > max) {
        snprintf(err, errlen, "%s: '%s' is not a whole number from %lld to %lld",
                 flag, v, min, max);
        return -1;
    }
    *out = n;
    return 0;
}

/* getopt_long values: one per flag, above every char. */
enum {
    O_PORT = 256, O_ADDRESS, O_KEEP_CONNECTIONS, O_KEEP_TIMEOUT, O_KEEP_IDLE,
    O_THREAD_MODE, O_ACCEPT_IDLE, O_READ_TIMEOUT, O_MAX_LIVE, O_NO_503,
    O_MAX_LINE, O_MAX_HEADERS, O_MAX_BODY, O_NO_STRICT_URL, O_QUEUE_SIZE,
    O_POOL_THREADS, O_ON_ALLOW_CONNECT, O_SOCKET_HANDLER, O_REQUEST_NODELAY,
    O_HORSE, O_STOP
};

static const struct option longopts[] = {
    { "port", required_argument, NULL, O_PORT },
    { "address", required_argument, NULL, O_ADDRESS },
    { "keep-connections", no_argument, NULL, O_KEEP_CONNECTIONS },
    { "keep-connection-timeout", required_argument, NULL, O_KEEP_TIMEOUT },
    { "keep-connection-idle-timeout", required_argument, NULL, O_KEEP_IDLE },
    { "thread-mode", required_argument, NULL, O_THREAD_MODE },
    { "accept-idle-timeout", required_argument, NULL, O_ACCEPT_IDLE },
    { "request-read-timeout", required_argument, NULL, O_READ_TIMEOUT },
    { "max-live-connection-count", required_argument, NULL, O_MAX_LIVE },
    { "no-send-503-on-max-connections", no_argument, NULL, O_NO_503 },
    { "max-line-length", required_argument, NULL, O_MAX_LINE },
    { "max-header-count", required_argument, NULL, O_MAX_HEADERS },
    { "max-body-size", required_argument, NULL, O_MAX_BODY },
    { "no-strict-ascii-url", no_argument, NULL, O_NO_STRICT_URL },
    { "queue-size", required_argument, NULL, O_QUEUE_SIZE },
    { "pool-threads", required_argument, NULL, O_POOL_THREADS },
    { "on-allow-connect", required_argument, NULL, O_ON_ALLOW_CONNECT },
    { "socket-handler", required_argument, NULL, O_SOCKET_HANDLER },
    { "request-nodelay", no_argument, NULL, O_REQUEST_NODELAY },
    { "horse", no_argument, NULL, O_HORSE },
    { "stop", required_argument, NULL, O_STOP },
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
static const char *options_flag(int val, char *buf, size_t len)
{
    const struct option *lo = options_long(val);

    if (lo)
        snprintf(buf, len, "--%s", lo->name);
    else
        snprintf(buf, len, "-%c", val);
    return buf;
}

/* getopt_long also takes a prefix ("--por" for --port); the flags are
 * exact names (an unknown flag is a usage error the drivers rely on), so
 * word, as written, must be the whole name of the option it matched. */
static int options_abbreviated(const char *word, int val)
{
    const struct option *lo = options_long(val);

    return lo && strncmp(word, "--", 2) == 0 &&
           strcspn(word + 2, "=") != strlen(lo->name);
}

/* The int-valued properties: where, and the range. */
static int *options_int_dst(struct options *o, int val, long long *min,
                            long long *max)
{
    struct httpserver_props *p = &o->props;

    *min = 0;
    *max = INT_MAX;
    switch (val) {
    case O_PORT: *max = 65535; return &p->port;
    case O_KEEP_TIMEOUT: return &p->keep_connection_timeout;
    case O_KEEP_IDLE: return &p->keep_connection_idle_timeout;
    case O_ACCEPT_IDLE: return &p->accept_idle_timeout;
    case O_READ_TIMEOUT: return &p->request_read_timeout;
    case O_MAX_LIVE: return &p->max_live_connection_count;
    case O_MAX_LINE: return &p->max_line_length;
    case O_MAX_HEADERS: return &p->max_header_count;
    case O_QUEUE_SIZE: *min = 1; *max = 65535; return &p->queue_size;
    case O_POOL_THREADS: *min = 1; *max = 256; return &p->pool_threads;
    }
    return NULL;
}

/* A flag that takes a word: --address, --thread-mode, --stop,
 * --on-allow-connect, --socket-handler.  0, or -1 with err set. */
static int options_word(struct options *o, int val, const char *flag,
                        const char *v, char *err, size_t errlen)
{
    static const char *const modes[] = { "none", "polled", "thread", "pool" };
    static const enum thread_mode mode_of[] = { TM_NONE, TM_POLLED, TM_THREAD, TM_POOL };
    size_t k;

    if (val == O_ADDRESS) {
        if (strlen(v) >= sizeof o->props.address) {
            snprintf(err, errlen, "%s: too long", flag);
            return -1;
        }
        snprintf(o->props.address, sizeof o->props.address, "%s", v);
        return 0;
    }
    if (val == O_THREAD_MODE) {
        for (k = 0; k < sizeof modes / sizeof modes[0]; k++)
            if (strcmp(v, modes[k]) == 0) {
                o->props.thread_mode = mode_of[k];
                return 0;
            }
        snprintf(err, errlen, "%s: '%s' is not none, polled, thread or pool", flag, v);
        return -1;
    }
    if (val == O_STOP) {
        if (strcmp(v, "bounded") != 0 && strcmp(v, "free") != 0) {
            snprintf(err, errlen, "%s: '%s' is not bounded or free", flag, v);
            return -1;
        }
        o->stop_free = strcmp(v, "free") == 0;
        return 0;
    }
    if (val == O_ON_ALLOW_CONNECT && strcmp(v, "refuse") == 0)
        o->on_allow_connect_refuse = 1;
    else if (strcmp(v, "nodelay") != 0) {
        snprintf(err, errlen, "%s: '%s' is not %s", flag, v,
                 val == O_ON_ALLOW_CONNECT ? "nodelay or refuse" : "nodelay");
        return -1;
    } else if (val == O_ON_ALLOW_CONNECT)
        o->on_allow_connect_nodelay = 1;
    else
        o->socket_handler_nodelay = 1;
    return 0;
}

/* One flag getopt_long recognised, with its value (NULL for switches). */
static int options_apply(struct options *o, int val, const char *v, char *err,
                         size_t errlen)
{
    char flag[48];
    long long n, min, max;
    int *dst = options_int_dst(o, val, &min, &max);

    options_flag(val, flag, sizeof flag);
    if (dst) {
        if (options_int(flag, v, min, max, &n, err, errlen))
            return -1;
        *dst = (int)n;
        return 0;
    }
    switch (val) {
    case O_MAX_BODY:
        if (options_int(flag, v, 0, LLONG_MAX, &n, err, errlen))
            return -1;
        o->props.max_body_size = n;
        return 0;
    case O_KEEP_CONNECTIONS: o->props.keep_connections = 1; return 0;
    case O_NO_503: o->props.send_503_on_max_connections = 0; return 0;
    case O_NO_STRICT_URL: o->props.strict_ascii_url = 0; return 0;
    case O_REQUEST_NODELAY: o->request_nodelay = 1; return 0;
    case O_HORSE:
        o->props.thread_mode = TM_THREAD;
        o->props.keep_connections = 1;
        o->props.keep_connection_timeout = 15000;
        return 0;
    }
    return options_word(o, val, flag, v, err, errlen);
}

/* What getopt_long refused (opterr is 0: it prints nothing).  word is the
 * command-line word it stopped at. */
static int options_refused(int ret, const char *word, char *err, size_t errlen)
{
    char flag[48];

    if (optopt && options_abbreviated(word, optopt))
        snprintf(err, errlen, "unknown flag '%s' (see --help)", word);
    else if (ret == ':')
        snprintf(err, errlen, "%s needs a value", options_flag(optopt, flag, sizeof flag));
    else if (optopt >= 256 || optopt == 'h')
        snprintf(err, errlen, "%s takes no value", options_flag(optopt, flag, sizeof flag));
    else if (optopt)
        snprintf(err, errlen, "unknown flag '-%c' (see --help)", optopt);
    else
        snprintf(err, errlen, "unknown flag '%s' (see --help)", word);
    return -1;
}

int options_parse(struct options *o, int argc, char **argv, char *err,
                  size_t errlen, void *out)
{
    struct httpserver s;
    int ch, li;

    httpserver_init(&s);
    memset(o, 0, sizeof *o);
    o->props = s.props;
    /* In order, stopping at the first word that is not a flag ('+'), as
     * later flags override earlier ones; getopt_long itself prints nothing
     * (opterr), missing values are ':'.  optind 0 restarts it (glibc). */
    optind = 0;
    opterr = 0;
    while ((optarg = NULL, li = -1, ch = getopt_long(argc, argv, "+:h", longopts, &li)) != -1) {
        /* The flag's word: the one before its value when that was separate. */
        const char *word = optarg && optarg == argv[optind - 1] ? argv[optind - 2]
                                                               : argv[optind - 1];

        if (ch == '?' || ch == ':')
            return options_refused(ch, word, err, errlen);
        if (li >= 0 && options_abbreviated(word, ch)) {
            snprintf(err, errlen, "unknown flag '%s' (see --help)", word);
            return -1;
        }
        if (ch == 'h') {
            options_usage(out);
            return 1;
        }
        if (options_apply(o, ch, optarg, err, errlen))
            return -1;
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
        return -1;
    }
    return 0;
}
