/* app.c - see app.h. */
#include "app.h"

#include <stdlib.h>
#include <string.h>

#include "os.h"

long app_query_ms(const char *query)
{
    const char *p = strstr(query, "ms=");
    char *end;
    long ms;

    if (!p || (p != query && p[-1] != '&'))
        return -1;
    ms = strtol(p + 3, &end, 10);
    if (end == p + 3 || ms < 0 || (*end != '\0' && *end != '&'))
        return -1;
    return ms > APP_SLOW_MAX_MS ? APP_SLOW_MAX_MS : ms;
}

static void app_text(struct app_response *out, int code, const char *text)
{
    out->code = code;
    out->content_type = "text/plain";
    out->body = text;
    out->body_len = strlen(text);
}

void app_handle(const struct http_request *req, const char *body,
                struct app_response *out)
{
    long ms;

    if (strcmp(req->method, "GET") == 0 && strcmp(req->path, "/ping") == 0) {
        app_text(out, 200, "pong");
    } else if (strcmp(req->method, "POST") == 0 &&
               strcmp(req->path, "/echo") == 0) {
        out->code = 200;
        out->content_type = "application/octet-stream";
        out->body = body;
        out->body_len = req->body_len;
    } else if (strcmp(req->method, "GET") == 0 &&
               strcmp(req->path, "/slow") == 0 &&
               (ms = app_query_ms(req->query)) >= 0) {
        os_sleep_ms((int)ms);   /* the deliberately blocking handler */
        app_text(out, 200, "done");
    } else {
        app_text(out, 404, "not found");
    }
}
