/* app.h - the routes, the same as server-min's (DESIGN contract):
 * GET /ping -> 200 text/plain "pong"; GET /slow?ms=N -> waits N ms then
 * "done"; POST /echo -> the body; anything else -> 404. */
#ifndef DISPATCH_APP_H
#define DISPATCH_APP_H

#include <stddef.h>

#include "http.h"

#define APP_SLOW_MAX_MS 60000   /* a typo cannot park a thread for hours */

struct app_response {
    int code;
    const char *content_type;
    const char *body;      /* static text or a view into the request body */
    size_t body_len;
};

/* The request handler: runs in a loop thread (inline) or a pool worker. */
void app_handle(const struct http_request *req, const char *body,
                struct app_response *out);

/* ?ms=N from a query string, clamped to APP_SLOW_MAX_MS; -1 when absent or
 * malformed. */
long app_query_ms(const char *query);

#endif
