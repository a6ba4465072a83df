/* options.h - server-min's command line: upstream property names in kebab
 * case (DESIGN section 7), applied in order so later flags override --horse. */
#ifndef SERVER_MIN_OPTIONS_H
#define SERVER_MIN_OPTIONS_H

#include "httpserver.h"

struct options {
    struct httpserver_props props;
    int on_allow_connect_nodelay;  /* --on-allow-connect nodelay */
    int on_allow_connect_refuse;   /* --on-allow-connect refuse */
    int socket_handler_nodelay;    /* --socket-handler nodelay */
    int request_nodelay;           /* --request-nodelay */
    int stop_free;                 /* --stop free (else bounded) */
};

/* Fills o from argv (props start at upstream defaults).  Returns 0 to run,
 * 1 when --help was printed to out, -1 with a message in err (usage error). */
int options_parse(struct options *o, int argc, char **argv, char *err,
                  size_t errlen, void *out);

/* Prints --help (every flag and its default) to out (a FILE *). */
void options_usage(void *out);

const char *options_thread_mode_name(enum thread_mode m);

#endif
