/* main.c - server-min: parse flags, start the server, print the readiness
 * line, accept until SIGINT/SIGTERM, shut down cleanly. */
#include <stdio.h>

#include "app.h"
#include "httpserver.h"
#include "options.h"
#include "os.h"

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
    httpserver_destroy(&server);
    return 0;
}
