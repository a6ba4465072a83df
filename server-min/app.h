/* app.h - the application on top of the server: the routes of DESIGN
 * section 7 and the three application-side TCP_NODELAY mitigations. */
#ifndef SERVER_MIN_APP_H
#define SERVER_MIN_APP_H

#include "options.h"

struct httpserver;

/* Wires OnRequest and whichever mitigations the options ask for. */
void app_install(struct httpserver *s, const struct options *o);

#endif
