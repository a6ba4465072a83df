/* main.c - server-min: parse flags, start the server, print the readiness
 * line, accept until SIGINT/SIGTERM, shut down within a bounded time, or
 * (--stop free) as upstream's Active:=False; Free, however long it takes. */
#include <stdio.h>

#include "app.h"
#include "httpserver.h"
#include "log.h"
#include "options.h"
#include "os.h"

/* How long Destroy may take after the accept loop ended. */
#define MAIN_DESTROY_MAX_MS 2000

static void main_log_abandoned(void)
{
    log_line("stop: connections still busy %d ms after the accept loop "
             "ended; exiting without waiting for them", MAIN_DESTROY_MAX_MS);
}

int main(int argc, char **argv)
{
    static struct httpserver server;
    struct options opts;
    char err[OS_ERR_LEN];
    int rc;

    rc = options_parse(&opts, argc, argv, err, sizeof err, stdout);
    if (rc == 1)
        return 0;
    if (rc < 0) {
        fprintf(stderr, "server-min: %s\n", err);
        return 2;
    }
    os_install_stop_signals();
    httpserver_init(&server);
    server.props = opts.props;
    atomic_store(&server.threads_see_stop, !opts.stop_free);
    app_install(&server, &opts);
    if (httpserver_start(&server, err) != 0) {
        fprintf(stderr, "server-min: %s\n", err);
        return 1;
    }
    fprintf(stderr, "server-min: thread-mode=%s keep-connections=%d "
            "keep-connection-timeout=%d idle-timeout=%d accept-idle-timeout=%d\n",
            options_thread_mode_name(server.props.thread_mode),
            server.props.keep_connections, server.props.keep_connection_timeout,
            server.props.keep_connection_idle_timeout,
            server.props.accept_idle_timeout);
    printf("listening %s:%d\n", server.props.address, server.props.port);
    fflush(stdout);
    httpserver_run(&server);
    if (opts.stop_free) {
        /* Active:=False; Free: no bound; a second signal still exits (3). */
        log_line("stop: accept loop ended; Free");
        httpserver_free(&server);
        log_line("stop: Free returned");
        return 0;
    }
    /* Destroy waits for running requests (WaitForRequests, unbounded
     * upstream); the clone gives it DESTROY_MAX_MS, then leaves anyway, so
     * a stop is bounded whatever a connection thread waits on. */
    os_exit_after(MAIN_DESTROY_MAX_MS, main_log_abandoned);
    httpserver_destroy(&server);
    return 0;
}
