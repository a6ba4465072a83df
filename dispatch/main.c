/* main.c - the dispatch model of Horse's epoll provider.
 *
 *   dispatch --dispatch global-pool|inline|bounded-pool [--port 0] ...
 *
 * Prints `listening <address>:<port>` on stdout when every loop accepts,
 * serves until SIGINT/SIGTERM, then drains (stop accepting, finish the
 * accepted work) and exits 0. */
#include <stdio.h>
#include <string.h>

#include "../server-min/log.h"
#include "options.h"
#include "os.h"
#include "server.h"

int main(int argc, char **argv)
{
    struct options o;
    struct server s;
    char err[OS_ERR_LEN];
    int rc = options_parse(&o, argc, argv), sig;

    if (rc != 0)
        return rc > 0 ? 0 : 2;
    /* Before any thread: every thread inherits the blocked stop signals. */
    os_take_stop_signals();
    memset(&s, 0, sizeof s);
    if (server_start(err, &s, &o) != 0) {
        fprintf(stderr, "dispatch: %s\n", err);
        return 1;
    }
    log_line("dispatch=%s loops=%d workers=%d queue-capacity=%d pool-min=%d "
             "pool-max=%d", options_mode_name(o.mode), o.loops, o.workers,
             o.queue_capacity, o.pool_min, o.pool_max);
    printf("listening %s:%d\n", o.address, s.port);
    fflush(stdout);
    sig = os_wait_stop_signal();
    log_line("stop: signal %d, draining", sig);
    server_drain(&s);
    return 0;
}
