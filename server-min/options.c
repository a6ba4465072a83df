/* options.c - see options.h. */
#include "options.h"

#include <errno.h>
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
"flags every property has upstream's default.\n"
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
"  -h, --help                        this text\n"
"\n"
"SIGTERM/SIGINT stop it: the accept loop ends at its next wake-up, running\n"
"requests get up to 2 s; a second signal exits at once with status 3 (for a\n"
"server whose accept thread is stuck, as in B7).\n"
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

int options_parse(struct options *o, int argc, char **argv, char *err,
                  size_t errlen, void *out)
{
    struct httpserver s;
    int i;

    httpserver_init(&s);
    memset(o, 0, sizeof *o);
    o->props = s.props;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        struct { const char *flag; int *dst; long long min, max; } ints[] = {
            { "--port", &o->props.port, 0, 65535 },
            { "--keep-connection-timeout", &o->props.keep_connection_timeout, 0, INT_MAX },
            { "--keep-connection-idle-timeout", &o->props.keep_connection_idle_timeout, 0, INT_MAX },
            { "--accept-idle-timeout", &o->props.accept_idle_timeout, 0, INT_MAX },
            { "--request-read-timeout", &o->props.request_read_timeout, 0, INT_MAX },
            { "--max-live-connection-count", &o->props.max_live_connection_count, 0, INT_MAX },
            { "--max-line-length", &o->props.max_line_length, 0, INT_MAX },
            { "--max-header-count", &o->props.max_header_count, 0, INT_MAX },
            { "--queue-size", &o->props.queue_size, 1, 65535 },
            { "--pool-threads", &o->props.pool_threads, 1, 256 },
        };
        size_t k;
        int matched = 0;
        long long n;

        for (k = 0; k < sizeof ints / sizeof ints[0]; k++) {
            if (strcmp(a, ints[k].flag) != 0)
                continue;
            if (!v) {
                snprintf(err, errlen, "%s needs a value", a);
                return -1;
            }
            if (options_int(a, v, ints[k].min, ints[k].max, &n, err, errlen))
                return -1;
            *ints[k].dst = (int)n;
            i++;
            matched = 1;
            break;
        }
        if (matched)
            continue;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            options_usage(out);
            return 1;
        } else if (strcmp(a, "--address") == 0 && v) {
            if (strlen(v) >= sizeof o->props.address) {
                snprintf(err, errlen, "--address: too long");
                return -1;
            }
            snprintf(o->props.address, sizeof o->props.address, "%s", v);
            i++;
        } else if (strcmp(a, "--max-body-size") == 0 && v) {
            if (options_int(a, v, 0, LLONG_MAX, &n, err, errlen))
                return -1;
            o->props.max_body_size = n;
            i++;
        } else if (strcmp(a, "--thread-mode") == 0 && v) {
            if (strcmp(v, "none") == 0)
                o->props.thread_mode = TM_NONE;
            else if (strcmp(v, "polled") == 0)
                o->props.thread_mode = TM_POLLED;
            else if (strcmp(v, "thread") == 0)
                o->props.thread_mode = TM_THREAD;
            else if (strcmp(v, "pool") == 0)
                o->props.thread_mode = TM_POOL;
            else {
                snprintf(err, errlen,
                         "--thread-mode: '%s' is not none, polled, thread or pool", v);
                return -1;
            }
            i++;
        } else if ((strcmp(a, "--on-allow-connect") == 0 ||
                    strcmp(a, "--socket-handler") == 0) && v) {
            if (a[2] == 'o' && strcmp(v, "refuse") == 0) {
                o->on_allow_connect_refuse = 1;
            } else if (strcmp(v, "nodelay") != 0) {
                snprintf(err, errlen, "%s: '%s' is not %s", a, v,
                         a[2] == 'o' ? "nodelay or refuse" : "nodelay");
                return -1;
            } else if (a[2] == 'o') {
                o->on_allow_connect_nodelay = 1;
            } else {
                o->socket_handler_nodelay = 1;
            }
            i++;
        } else if (strcmp(a, "--keep-connections") == 0) {
            o->props.keep_connections = 1;
        } else if (strcmp(a, "--no-send-503-on-max-connections") == 0) {
            o->props.send_503_on_max_connections = 0;
        } else if (strcmp(a, "--no-strict-ascii-url") == 0) {
            o->props.strict_ascii_url = 0;
        } else if (strcmp(a, "--request-nodelay") == 0) {
            o->request_nodelay = 1;
        } else if (strcmp(a, "--horse") == 0) {
            o->props.thread_mode = TM_THREAD;
            o->props.keep_connections = 1;
            o->props.keep_connection_timeout = 15000;
        } else if (!v && (strcmp(a, "--address") == 0 ||
                          strcmp(a, "--max-body-size") == 0 ||
                          strcmp(a, "--thread-mode") == 0 ||
                          strcmp(a, "--on-allow-connect") == 0 ||
                          strcmp(a, "--socket-handler") == 0)) {
            snprintf(err, errlen, "%s needs a value", a);
            return -1;
        } else {
            snprintf(err, errlen, "unknown flag '%s' (see --help)", a);
            return -1;
        }
    }
    return 0;
}
